// Kernels of the binary elementwise ops and comparisons; their rules are in binary.cpp.
#include "autograd/kernels/binary.h"

#include <cmath>
#include <cstdint>

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

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const Size& shape, DType dt) {
  if (dt == kInt64) {
    if (op == BinaryOp::Add) return detail::map_binary<int64_t, int64_t, int64_t>(a, b, shape, dt, [](int64_t x, int64_t y) { return x + y; });
    if (op == BinaryOp::Sub) return detail::map_binary<int64_t, int64_t, int64_t>(a, b, shape, dt, [](int64_t x, int64_t y) { return x - y; });
    return detail::map_binary<int64_t, int64_t, int64_t>(a, b, shape, dt, [](int64_t x, int64_t y) { return x * y; });
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
