// Binary elementwise ops with broadcasting and type promotion: + - * / pow, tensor or scalar
// operands; minimum, maximum and where (three operands broadcast together); comparisons. Backward reduces each gradient back to its input's shape (sum_to). The rules are
// written in ag ops, so they record their own graph when differentiated with create_graph. The
// typed loops are in kernels/binary.cpp.
#include <cmath>
#include <utility>

#include "autograd/kernels/binary.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

using kernels::op_name;
using Op = kernels::BinaryOp;

// A jvp's terms summed, a missing (zero) term skipped; the sum broadcast to the output's shape.
struct TangentSum {
  Tensor sum;
  void add(const Tensor& term) { sum = sum.defined() ? ag::add(sum, term) : term; }
  Tensor to(const Size& shape) const { return !sum.defined() || sum.shape() == shape ? sum : expand(sum, shape.vec()); }
};

// The common dtype both operands are converted to before the kernel runs.
DType result_dtype(Op op, const Tensor& a, const Tensor& b) {
  DType r = result_type(a, b);
  if (r == kBool) r = kInt64;
  if (op == Op::Div && !is_floating(r)) r = kFloat32;  // true division; an integer power stays int64
  return r;
}

Tensor binary(Op op, const Tensor& a0, const Tensor& b0, const char* grad_name) {
  detail::check_defined(a0, op_name(op));
  detail::check_defined(b0, op_name(op));
  if (op == Op::Sub && (a0.dtype() == kBool || b0.dtype() == kBool)) {
    throw std::invalid_argument("[sub] Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                                "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  }
  if (op == Op::Pow && result_type(a0, b0) == kBool) {  // PyTorch has no bool pow kernel (bool ** 2 is int64)
    throw std::invalid_argument("[pow] \"pow\" not implemented for 'Bool' (shapes " + a0.shape().str() + " and " +
                                b0.shape().str() + ")");
  }
  if ((op == Op::Add || op == Op::Mul) && result_type(a0, b0) == kBool) {  // or / and of two masks, bool as PyTorch's
    NoGradGuard no_grad;
    return binary(op, a0.to(kInt64), b0.to(kInt64), grad_name).to(kBool);
  }
  const DType dt = result_dtype(op, a0, b0);
  const Tensor a = a0.to(dt), b = b0.to(dt);
  const Size shape = broadcast_shapes(a.shape(), b.shape(), op_name(op));
  Tensor out = kernels::binary(op, a, b, shape, dt);
  if (!needs_grad(a, b)) return out;
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  // a is needed by db (mul, div, pow) and by pow's da; b by da (mul, div, pow) and by div's and
  // pow's db (PyTorch saves the same: x * w with only w requiring grad keeps x alone)
  SavedTensor sa(op == Op::Add || op == Op::Sub || (!gb && op != Op::Pow) ? Tensor() : a);
  SavedTensor sb(op == Op::Add || op == Op::Sub || (!ga && op == Op::Mul) ? Tensor() : b);
  SavedTensor so(op == Op::Pow && gb ? out : Tensor(), /*is_output=*/true);
  // jvp, the rules below applied forward (a term is skipped where its input has no tangent):
  //   add: dy = da + db,  sub: dy = da - db,  mul: dy = da b + a db,  div: dy = da / b - db a / b^2,
  //   pow: dy = da b a^(b-1) (0 where b = 0) + db y log(a) (0 where a = 0 and b >= 0)
  auto jvp = [&](const Tangents& t) {
    const Tensor &da = t[0], &db = t[1];
    TangentSum dy;
    switch (op) {
      case Op::Add:
        if (da.defined()) dy.add(da);
        if (db.defined()) dy.add(db);
        break;
      case Op::Sub:
        if (da.defined()) dy.add(da);
        if (db.defined()) dy.add(neg(db));
        break;
      case Op::Mul:
        if (da.defined()) dy.add(mul(da, b));
        if (db.defined()) dy.add(mul(a, db));
        break;
      case Op::Div:
        if (da.defined()) dy.add(div(da, b));
        if (db.defined()) dy.add(neg(div(mul(db, a), mul(b, b))));
        break;
      case Op::Pow:
        if (da.defined()) dy.add(mul(da, where(eq(b, 0.0), 0.0, mul(b, pow(a, sub(b, 1.0))))));
        if (db.defined()) dy.add(mul(db, where(logical_and(eq(a, 0.0), ge(b, 0.0)), 0.0, mul(out, log(a)))));
        break;
    }
    return dy.to(shape);
  };
  record(out, grad_name, {a, b}, [op, ga, gb, sa, sb, so, as = a.shape(), bs = b.shape()](const Tensor& g) -> Grads {
    Tensor da, db;
    switch (op) {
      case Op::Add:  // out = a + b
        if (ga) da = sum_to(g, as);
        if (gb) db = sum_to(g, bs);
        break;
      case Op::Sub:  // out = a - b
        if (ga) da = sum_to(g, as);
        if (gb) db = sum_to(neg(g), bs);
        break;
      case Op::Mul: {  // out = a * b (a unpacked first, b second, as PyTorch's MulBackward0 does)
        const Tensor av = sa.get(), bv = sb.get();
        if (ga) da = sum_to(mul(g, bv), as);
        if (gb) db = sum_to(mul(g, av), bs);
        break;
      }
      case Op::Div: {  // out = a / b  =>  da = g / b, db = -g * a / b^2
        const Tensor av = sa.get(), bv = sb.get();
        if (ga) da = sum_to(div(g, bv), as);
        if (gb) db = sum_to(neg(div(mul(g, av), mul(bv, bv))), bs);
        break;
      }
      case Op::Pow: {  // out = a^b  =>  da = g * b * a^(b-1) (0 where b = 0), db = g * out * log(a) (0 where a = 0 and b >= 0)
        const Tensor av = sa.get(), bv = sb.get();
        if (ga) da = sum_to(mul(g, where(eq(bv, 0.0), 0.0, mul(bv, pow(av, sub(bv, 1.0))))), as);
        if (gb) db = sum_to(mul(g, where(logical_and(eq(av, 0.0), ge(bv, 0.0)), 0.0, mul(so.get(), log(av)))), bs);
        break;
      }
    }
    return {da, db};
  }, jvp);
  return out;
}

// A scalar operand becomes a 0-dim tensor of the tensor's dtype (an integral scalar keeps an
// int64 tensor int64, as in PyTorch); it never requires grad.
Tensor scalar_like(const Tensor& a, double v, const char* op) {
  detail::check_defined(a, op);
  DType dt = a.dtype();
  if (!is_floating(dt)) dt = is_whole_number(v) ? kInt64 : kFloat32;
  return full({}, v, dt);
}

}  // namespace

// PyTorch's rule: a 0-dim tensor takes part only when its category (bool < integer < floating) is
// above the dimensioned operand's, so float32 x * tensor(2.0, float64) stays float32.
DType result_type(const Tensor& a, const Tensor& b) {
  if ((a.dim() == 0) == (b.dim() == 0)) return promote(a.dtype(), b.dtype());
  const DType dimensioned = a.dim() > 0 ? a.dtype() : b.dtype(), zero_dim = a.dim() > 0 ? b.dtype() : a.dtype();
  auto category = [](DType t) { return is_floating(t) ? 2 : t == kInt64 ? 1 : 0; };
  return category(zero_dim) > category(dimensioned) ? promote(dimensioned, zero_dim) : dimensioned;
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(Op::Add, a, b, "AddBackward0"); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(Op::Sub, a, b, "SubBackward0"); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(Op::Mul, a, b, "MulBackward0"); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(Op::Div, a, b, "DivBackward0"); }
Tensor pow(const Tensor& a, const Tensor& e) { return binary(Op::Pow, a, e, "PowBackward1"); }

Tensor add(const Tensor& a, double b) { return binary(Op::Add, a, scalar_like(a, b, "add"), "AddBackward0"); }
Tensor sub(const Tensor& a, double b) { return binary(Op::Sub, a, scalar_like(a, b, "sub"), "SubBackward0"); }
Tensor rsub(const Tensor& a, double b) { return binary(Op::Sub, scalar_like(a, b, "rsub"), a, "RsubBackward1"); }
Tensor mul(const Tensor& a, double b) { return binary(Op::Mul, a, scalar_like(a, b, "mul"), "MulBackward0"); }
Tensor div(const Tensor& a, double b) { return binary(Op::Div, a, scalar_like(a, b, "div"), "DivBackward0"); }
Tensor rdiv(const Tensor& a, double b) { return binary(Op::Div, scalar_like(a, b, "div"), a, "MulBackward0"); }

// ---- minimum, maximum, where ----

namespace {

// a and b converted to their common dtype (bool stays bool, as in PyTorch); the conversion is
// recorded (ToCopyBackward0) when it happens to a tensor that requires grad.
std::pair<Tensor, Tensor> common_dtype(const Tensor& a, const Tensor& b, const char* op) {
  detail::check_defined(a, op);
  detail::check_defined(b, op);
  const DType dt = result_type(a, b);
  return {a.to(dt), b.to(dt)};
}

Tensor min_max(const Tensor& a0, const Tensor& b0, bool is_max) {
  const char* op = is_max ? "maximum" : "minimum";
  const std::pair<Tensor, Tensor> ab = common_dtype(a0, b0, op);  // (a structured binding: clang 14 cannot capture it)
  const Tensor &a = ab.first, &b = ab.second;
  const Size shape = broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = kernels::min_max(is_max, a, b, shape, a.dtype());
  if (!needs_grad(a, b)) return out;
  // y = minimum(a, b)  =>  da = g where a < b, g / 2 where a == b, 0 where a > b; db the mirror
  // (maximum: the same with > and < swapped). A NaN in either gives both the whole g, as in
  // PyTorch. The masks are constants: the second derivative is 0.
  record(out, is_max ? "MaximumBackward0" : "MinimumBackward0", {a, b},
         [sa = SavedTensor(a), sb = SavedTensor(b), is_max, ga = a.requires_grad(), gb = b.requires_grad()](
             const Tensor& g) -> Grads {
           const Tensor a = sa.get(), b = sb.get();
           const Tensor shared = where(eq(a, b), g / 2.0, g);
           const Tensor a_loses = is_max ? lt(a, b) : gt(a, b);
           const Tensor b_loses = is_max ? gt(a, b) : lt(a, b);
           Tensor da, db;
           if (ga) da = sum_to(masked_fill(shared, a_loses, 0.0), a.shape());
           if (gb) db = sum_to(masked_fill(shared, b_loses, 0.0), b.shape());
           return {da, db};
         },
         // jvp: the same masks on the tangents, dy = ma da + mb db (ma = 1 where a wins, 1/2 on a tie)
         [&](const Tangents& t) {
           const Tensor a_loses = is_max ? lt(a, b) : gt(a, b), b_loses = is_max ? gt(a, b) : lt(a, b);
           TangentSum dy;
           if (t[0].defined()) dy.add(masked_fill(where(eq(a, b), t[0] / 2.0, t[0]), a_loses, 0.0));
           if (t[1].defined()) dy.add(masked_fill(where(eq(a, b), t[1] / 2.0, t[1]), b_loses, 0.0));
           return dy.to(shape);
         });
  return out;
}

}  // namespace

Tensor minimum(const Tensor& a, const Tensor& b) { return min_max(a, b, false); }
Tensor maximum(const Tensor& a, const Tensor& b) { return min_max(a, b, true); }

Tensor where(const Tensor& cond, const Tensor& a0, const Tensor& b0) {
  detail::check_defined(cond, "where");
  if (cond.dtype() != kBool) {
    throw std::invalid_argument("[where] expected condition to be a boolean tensor, but got a tensor with dtype " +
                                dtype_name(cond.dtype()));
  }
  const auto [a, b] = common_dtype(a0, b0, "where");
  const Size shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = kernels::where(cond, a, b, shape, a.dtype());
  if (!needs_grad(a, b)) return out;
  // y = cond ? a : b  =>  da = g where cond, else 0; db = g where not cond, else 0
  record(out, "WhereBackward0", {a, b},
         [c = SavedTensor(cond), ga = a.requires_grad(), gb = b.requires_grad(), as = a.shape(), bs = b.shape()](
             const Tensor& g) -> Grads {
           const Tensor cond = c.get();
           Tensor da, db;
           if (ga) da = sum_to(where(cond, g, 0.0), as);
           if (gb) db = sum_to(where(cond, 0.0, g), bs);
           return {da, db};
         },
         // jvp: dy = da where cond, db elsewhere
         [&](const Tangents& t) {
           TangentSum dy;
           if (t[0].defined()) dy.add(where(cond, t[0], 0.0));
           if (t[1].defined()) dy.add(where(cond, 0.0, t[1]));
           return dy.to(shape);
         });
  return out;
}

// A number becomes a 0-dim tensor as in the arithmetic ops (scalar_like): of the tensor's dtype if
// that is floating, else int64 for a whole number and float32 otherwise.
Tensor where(const Tensor& cond, const Tensor& a, double b) { return where(cond, a, scalar_like(a, b, "where")); }
Tensor where(const Tensor& cond, double a, const Tensor& b) { return where(cond, scalar_like(b, a, "where"), b); }

// ---- comparisons: bool results, no history ----

using kernels::CompareOp;

static Tensor compare(const Tensor& a, const Tensor& b, const char* op, CompareOp cmp) {
  detail::check_defined(a, op);
  detail::check_defined(b, op);
  const DType dt = result_type(a, b);
  const Tensor x = a.detach().to(dt), y = b.detach().to(dt);
  const Size shape = broadcast_shapes(x.shape(), y.shape(), op);
  return kernels::compare(cmp, x, y, shape, dt);
}

Tensor gt(const Tensor& a, double b) { return compare(a, scalar_like(a, b, "gt"), "gt", CompareOp::Gt); }
Tensor lt(const Tensor& a, double b) { return compare(a, scalar_like(a, b, "lt"), "lt", CompareOp::Lt); }
Tensor ge(const Tensor& a, double b) { return compare(a, scalar_like(a, b, "ge"), "ge", CompareOp::Ge); }
Tensor le(const Tensor& a, double b) { return compare(a, scalar_like(a, b, "le"), "le", CompareOp::Le); }
Tensor eq(const Tensor& a, double b) { return compare(a, scalar_like(a, b, "eq"), "eq", CompareOp::Eq); }
Tensor ne(const Tensor& a, double b) { return compare(a, scalar_like(a, b, "ne"), "ne", CompareOp::Ne); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(a, b, "gt", CompareOp::Gt); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(a, b, "lt", CompareOp::Lt); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(a, b, "ge", CompareOp::Ge); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(a, b, "le", CompareOp::Le); }
Tensor eq(const Tensor& a, const Tensor& b) { return compare(a, b, "eq", CompareOp::Eq); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(a, b, "ne", CompareOp::Ne); }

Tensor logical_and(const Tensor& a, const Tensor& b) { return compare(a, b, "logical_and", CompareOp::And); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return compare(a, b, "logical_or", CompareOp::Or); }

Tensor logical_not(const Tensor& t) {
  detail::check_defined(t, "logical_not");
  return kernels::logical_not(t);
}

}  // namespace ag
