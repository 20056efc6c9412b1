// Binary elementwise ops with broadcasting and type promotion: + - * / pow, tensor or scalar
// operands. Backward reduces each gradient back to its input's shape (sum_to). The rules are
// written in ag ops, so they record their own graph when differentiated with create_graph. The
// typed loops are in kernels/binary.cpp.
#include <cmath>

#include "autograd/kernels/binary.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

using kernels::op_name;
using Op = kernels::BinaryOp;

// The common dtype both operands are converted to before the kernel runs.
DType result_dtype(Op op, DType a, DType b) {
  DType r = promote(a, b);
  if (r == kBool) r = kInt64;
  if ((op == Op::Div || op == Op::Pow) && !is_floating(r)) r = kFloat32;
  return r;
}

Tensor binary(Op op, const Tensor& a0, const Tensor& b0, const char* grad_name) {
  detail::check_defined(a0, op_name(op));
  detail::check_defined(b0, op_name(op));
  const DType dt = result_dtype(op, a0.dtype(), b0.dtype());
  const Tensor a = a0.to(dt), b = b0.to(dt);
  const Size shape = broadcast_shapes(a.shape(), b.shape(), op_name(op));
  Tensor out = kernels::binary(op, a, b, shape, dt);
  if (!needs_grad(a, b)) return out;
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  // a is needed by db (mul, div, pow) and by pow's da
  SavedTensor sa(op == Op::Add || op == Op::Sub || (!gb && op != Op::Pow) ? Tensor() : a);
  SavedTensor sb(op == Op::Add || op == Op::Sub ? Tensor() : b);
  SavedTensor so(op == Op::Pow && gb ? out : Tensor(), /*is_output=*/true);
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
      case Op::Mul:  // out = a * b
        if (ga) da = sum_to(mul(g, sb.get()), as);
        if (gb) db = sum_to(mul(g, sa.get()), bs);
        break;
      case Op::Div:  // out = a / b  =>  da = g / b, db = -g * a / b^2
        if (ga) da = sum_to(div(g, sb.get()), as);
        if (gb) db = sum_to(neg(div(mul(g, sa.get()), mul(sb.get(), sb.get()))), bs);
        break;
      case Op::Pow:  // out = a^b  =>  da = g * b * a^(b-1), db = g * out * log(a)
        if (ga) da = sum_to(mul(g, mul(sb.get(), pow(sa.get(), sub(sb.get(), 1.0)))), as);
        if (gb) db = sum_to(mul(g, mul(so.get(), log(sa.get()))), bs);
        break;
    }
    return {da, db};
  });
  return out;
}

// A scalar operand becomes a 0-dim tensor of the tensor's dtype (an integral scalar keeps an
// int64 tensor int64, as in PyTorch); it never requires grad.
Tensor scalar_like(const Tensor& a, double v, const char* op) {
  detail::check_defined(a, op);
  DType dt = a.dtype();
  if (!is_floating(dt)) dt = std::floor(v) == v ? kInt64 : kFloat32;
  return full({}, v, dt);
}

}  // namespace

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

// ---- comparisons: bool results, no history ----

using kernels::CompareOp;

static Tensor compare(const Tensor& a, const Tensor& b, const char* op, CompareOp cmp) {
  detail::check_defined(a, op);
  detail::check_defined(b, op);
  const DType dt = promote(a.dtype(), b.dtype());
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
Tensor eq(const Tensor& a, const Tensor& b) { return compare(a, b, "eq", CompareOp::Eq); }

Tensor logical_and(const Tensor& a, const Tensor& b) { return compare(a, b, "logical_and", CompareOp::And); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return compare(a, b, "logical_or", CompareOp::Or); }

Tensor logical_not(const Tensor& t) { return kernels::logical_not(t); }

}  // namespace ag
