// Binary elementwise ops with broadcasting and type promotion: + - * / pow, tensor or scalar
// operands. Backward reduces each gradient back to its input's shape (sum_to). The rules are
// written in ag ops, so they record their own graph when differentiated with create_graph.
#include <cmath>
#include <stdexcept>

#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

enum class Op { Add, Sub, Mul, Div, Pow };

const char* op_name(Op op) {
  switch (op) {
    case Op::Add: return "add";
    case Op::Sub: return "sub";
    case Op::Mul: return "mul";
    case Op::Div: return "div";
    case Op::Pow: return "pow";
  }
  return "?";
}

// The common dtype both operands are converted to before the kernel runs.
DType result_dtype(Op op, DType a, DType b) {
  DType r = promote(a, b);
  if (r == kBool) r = kInt64;
  if ((op == Op::Div || op == Op::Pow) && !is_floating(r)) r = kFloat32;
  return r;
}

Tensor kernel(Op op, const Tensor& a, const Tensor& b, const Size& shape, DType dt) {
  if (dt == kInt64) {
    if (op == Op::Add) return detail::map_binary<int64_t, int64_t, int64_t>(a, b, shape, dt, [](int64_t x, int64_t y) { return x + y; });
    if (op == Op::Sub) return detail::map_binary<int64_t, int64_t, int64_t>(a, b, shape, dt, [](int64_t x, int64_t y) { return x - y; });
    return detail::map_binary<int64_t, int64_t, int64_t>(a, b, shape, dt, [](int64_t x, int64_t y) { return x * y; });
  }
  return dispatch_float(dt, op_name(op), [&]<typename T>() {
    switch (op) {
      case Op::Add: return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return x + y; });
      case Op::Sub: return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return x - y; });
      case Op::Mul: return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return x * y; });
      case Op::Div: return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return x / y; });
      default: return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return static_cast<T>(std::pow(x, y)); });
    }
  });
}

Tensor binary(Op op, const Tensor& a0, const Tensor& b0, const char* grad_name) {
  const DType dt = result_dtype(op, a0.dtype(), b0.dtype());
  const Tensor a = a0.to(dt), b = b0.to(dt);
  const Size shape = broadcast_shapes(a.shape(), b.shape(), op_name(op));
  Tensor out = kernel(op, a, b, shape, dt);
  if (!needs_grad(a, b)) return out;
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  SavedTensor sa(op == Op::Add || op == Op::Sub || !gb ? Tensor() : a);
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
Tensor scalar_like(const Tensor& a, double v) {
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

Tensor add(const Tensor& a, double b) { return binary(Op::Add, a, scalar_like(a, b), "AddBackward0"); }
Tensor sub(const Tensor& a, double b) { return binary(Op::Sub, a, scalar_like(a, b), "SubBackward0"); }
Tensor rsub(const Tensor& a, double b) { return binary(Op::Sub, scalar_like(a, b), a, "RsubBackward1"); }
Tensor mul(const Tensor& a, double b) { return binary(Op::Mul, a, scalar_like(a, b), "MulBackward0"); }
Tensor div(const Tensor& a, double b) { return binary(Op::Div, a, scalar_like(a, b), "DivBackward0"); }
Tensor rdiv(const Tensor& a, double b) { return binary(Op::Div, scalar_like(a, b), a, "MulBackward0"); }

// ---- comparisons: bool results, no history ----

template <class F>
static Tensor compare(const Tensor& a, const Tensor& b, const char* op, F f) {
  const DType dt = promote(a.dtype(), b.dtype());
  const Tensor x = a.detach().to(dt), y = b.detach().to(dt);
  const Size shape = broadcast_shapes(x.shape(), y.shape(), op);
  return dispatch_all(dt, [&]<typename T>() { return detail::map_binary<uint8_t, T, T>(x, y, shape, kBool, f); });
}

Tensor gt(const Tensor& a, double b) { return compare(a, scalar_like(a, b), "gt", [](auto x, auto y) -> uint8_t { return x > y; }); }
Tensor lt(const Tensor& a, double b) { return compare(a, scalar_like(a, b), "lt", [](auto x, auto y) -> uint8_t { return x < y; }); }
Tensor ge(const Tensor& a, double b) { return compare(a, scalar_like(a, b), "ge", [](auto x, auto y) -> uint8_t { return x >= y; }); }
Tensor le(const Tensor& a, double b) { return compare(a, scalar_like(a, b), "le", [](auto x, auto y) -> uint8_t { return x <= y; }); }
Tensor eq(const Tensor& a, double b) { return compare(a, scalar_like(a, b), "eq", [](auto x, auto y) -> uint8_t { return x == y; }); }
Tensor ne(const Tensor& a, double b) { return compare(a, scalar_like(a, b), "ne", [](auto x, auto y) -> uint8_t { return x != y; }); }
Tensor eq(const Tensor& a, const Tensor& b) { return compare(a, b, "eq", [](auto x, auto y) -> uint8_t { return x == y; }); }

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return compare(a, b, "logical_and", [](auto x, auto y) -> uint8_t { return x != 0 && y != 0; });
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return compare(a, b, "logical_or", [](auto x, auto y) -> uint8_t { return x != 0 || y != 0; });
}

Tensor logical_not(const Tensor& t) {
  return dispatch_all(t.dtype(), [&]<typename T>() {
    return detail::map_unary<uint8_t, T>(t, kBool, [](T x) -> uint8_t { return x == T(0); });
  });
}

}  // namespace ag
