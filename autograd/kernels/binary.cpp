// Kernels of the binary elementwise ops and comparisons; their rules are in binary.cpp.
#include "autograd/kernels/binary.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "autograd/kernels/common.h"

namespace ag::kernels {

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Pow: return "pow";
  }
  return "?";
}

// x^y for integers by squaring (wrapping on overflow, as PyTorch's); a negative power is PyTorch's error.
static int64_t int_pow(int64_t x, int64_t y) {
  if (y < 0) throw std::invalid_argument("[pow] Integers to negative integer powers are not allowed.");
  uint64_t result = 1, base = static_cast<uint64_t>(x);
  for (auto e = static_cast<uint64_t>(y); e; e >>= 1, base *= base)
    if (e & 1) result *= base;
  return static_cast<int64_t>(result);
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const Size& shape, DType dt) {
  if (dt == kInt64) {
    // wrapping on overflow (INT64_MAX + 1 == INT64_MIN), as PyTorch's; no signed overflow (UB) here
    if (op == BinaryOp::Add) return detail::map_binary<int64_t, int64_t, int64_t>(a, b, shape, dt, [](int64_t x, int64_t y) { return detail::wrap_add(x, y); });
    if (op == BinaryOp::Sub) return detail::map_binary<int64_t, int64_t, int64_t>(a, b, shape, dt, [](int64_t x, int64_t y) { return detail::wrap_sub(x, y); });
    if (op == BinaryOp::Pow) return detail::map_binary<int64_t, int64_t, int64_t>(a, b, shape, dt, int_pow);
    return detail::map_binary<int64_t, int64_t, int64_t>(a, b, shape, dt, [](int64_t x, int64_t y) { return detail::wrap_mul(x, y); });
  }
  return dispatch_float(dt, op_name(op), [&]<typename T>() {
    switch (op) {
      case BinaryOp::Add: return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return x + y; });
      case BinaryOp::Sub: return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return x - y; });
      case BinaryOp::Mul: return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return x * y; });
      case BinaryOp::Div: return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return x / y; });
      default: return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return static_cast<T>(std::pow(x, y)); });
    }
  });
}

Tensor min_max(bool is_max, const Tensor& a, const Tensor& b, const Size& shape, DType dt) {
  return dispatch_all(dt, [&]<typename T>() {
    // NaN propagates (x != x); otherwise std::min / std::max, which keep a on ties (-0.0 vs 0.0)
    if (is_max) return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return x != x ? x : y != y ? y : std::max(x, y); });
    return detail::map_binary<T, T, T>(a, b, shape, dt, [](T x, T y) { return x != x ? x : y != y ? y : std::min(x, y); });
  });
}

// out (shape) = cond ? a : b, laid out as TensorIterator lays out (cond, a, b)'s result
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const Size& shape, DType dt) {
  return dispatch_all(dt, [&]<typename T>() {
    Tensor out = detail::make_tensor(shape, detail::elementwise_strides(shape, {&cond, &a, &b}), dt);
    T* po = out.data_ptr<T>();
    const auto* pc = static_cast<const uint8_t*>(cond.impl()->storage->data);
    const T* pa = static_cast<const T*>(a.impl()->storage->data);
    const T* pb = static_cast<const T*>(b.impl()->storage->data);
    if (out.is_contiguous() && cond.is_contiguous() && a.is_contiguous() && b.is_contiguous() && cond.shape() == shape &&
        a.shape() == shape && b.shape() == shape) {  // the common case: one flat loop the compiler vectorizes
      pc += cond.storage_offset();
      pa += a.storage_offset();
      pb += b.storage_offset();
      const int64_t n = out.numel();
      for (int64_t i = 0; i < n; ++i) po[i] = pc[i] ? pa[i] : pb[i];
      return out;
    }
    const Strides sc = detail::broadcast_strides(cond, shape), sa = detail::broadcast_strides(a, shape),
                  sb = detail::broadcast_strides(b, shape);
    detail::walk_in_memory_order<4>(shape, {&out.strides(), &sc, &sa, &sb},
                                    {0, cond.storage_offset(), a.storage_offset(), b.storage_offset()},
                                    [&](const std::array<int64_t, 4>& o) {
                                      const T x = pa[o[2]], y = pb[o[3]];  // both read: a select, not a branch
                                      po[o[0]] = pc[o[1]] ? x : y;
                                    });
    return out;
  });
}

Tensor compare(CompareOp op, const Tensor& a, const Tensor& b, const Size& shape, DType dt) {
  return dispatch_all(dt, [&]<typename T>() {
    auto run = [&](auto f) { return detail::map_binary<uint8_t, T, T>(a, b, shape, kBool, f); };
    switch (op) {
      case CompareOp::Gt: return run([](auto x, auto y) -> uint8_t { return x > y; });
      case CompareOp::Lt: return run([](auto x, auto y) -> uint8_t { return x < y; });
      case CompareOp::Ge: return run([](auto x, auto y) -> uint8_t { return x >= y; });
      case CompareOp::Le: return run([](auto x, auto y) -> uint8_t { return x <= y; });
      case CompareOp::Eq: return run([](auto x, auto y) -> uint8_t { return x == y; });
      case CompareOp::Ne: return run([](auto x, auto y) -> uint8_t { return x != y; });
      case CompareOp::And: return run([](auto x, auto y) -> uint8_t { return x != 0 && y != 0; });
      default: return run([](auto x, auto y) -> uint8_t { return x != 0 || y != 0; });
    }
  });
}

Tensor logical_not(const Tensor& t) {
  return dispatch_all(t.dtype(), [&]<typename T>() {
    return detail::map_unary<uint8_t, T>(t, kBool, [](T x) -> uint8_t { return x == T(0); });
  });
}

}  // namespace ag::kernels
