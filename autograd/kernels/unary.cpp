// Kernels of the unary elementwise ops; their rules and formulas are in unary.cpp.
#include "autograd/kernels/unary.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <type_traits>

#include "autograd/kernels/common.h"

namespace ag::kernels {

namespace {

constexpr double kSqrt1_2 = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kK = 0.79788456080286535588;           // sqrt(2 / pi)
constexpr double kC = 0.044715;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)

// out = f(x) elementwise, in x's floating dtype (integers compute in float32).
template <class F>
Tensor map_float(const Tensor& x, const char* op, F f) {
  const Tensor xf = is_floating(x.dtype()) ? x : detail::preserved_copy(x, kFloat32);
  return dispatch_float(xf.dtype(), op, [&]<typename T>() { return detail::map_unary<T, T>(xf, xf.dtype(), [&](T v) { return f(v); }); });
}

// out = f(x) in x's own dtype, floating or int64 (abs, sign and clamp keep integers integers).
template <class F>
Tensor map_same(const Tensor& x, const char* op, F f) {
  if (x.dtype() == kInt64) return detail::map_unary<int64_t, int64_t>(x, kInt64, [&](int64_t v) { return f(v); });
  return dispatch_float(x.dtype(), op, [&]<typename T>() { return detail::map_unary<T, T>(x, x.dtype(), [&](T v) { return f(v); }); });
}

// out = f(x) for floating x; integers are refused, as PyTorch refuses them (softplus, silu, ...).
template <class F>
Tensor map_floating(const Tensor& x, const char* op, F f) {
  return dispatch_float(x.dtype(), op, [&]<typename T>() { return detail::map_unary<T, T>(x, x.dtype(), [&](T v) { return f(v); }); });
}

// out = f(g, s) elementwise over a gradient and a saved tensor of the same shape.
template <class F>
Tensor zip(const Tensor& g, const Tensor& s, F f) {
  return dispatch_float(g.dtype(), "backward", [&]<typename T>() {
    return detail::map_binary<T, T, T>(g, s, g.shape(), g.dtype(), [&](T a, T b) { return f(a, b); });
  });
}

}  // namespace

Tensor neg(const Tensor& x) { return map_float(x, "neg", [](auto v) { return -v; }); }
Tensor exp(const Tensor& x) { return map_float(x, "exp", [](auto v) { return std::exp(v); }); }
Tensor log(const Tensor& x) { return map_float(x, "log", [](auto v) { return std::log(v); }); }
Tensor sqrt(const Tensor& x) { return map_float(x, "sqrt", [](auto v) { return std::sqrt(v); }); }
Tensor tanh(const Tensor& x) { return map_float(x, "tanh", [](auto v) { return std::tanh(v); }); }
Tensor sigmoid(const Tensor& x) {
  return map_float(x, "sigmoid", [](auto v) { return decltype(v)(1) / (1 + std::exp(-v)); });
}
// NaN stays NaN; negatives give +0 (not -0)
Tensor relu(const Tensor& x) { return map_same(x, "relu", [](auto v) { return v > 0 || v != v ? v : decltype(v)(0); }); }
Tensor erf(const Tensor& x) { return map_float(x, "erf", [](auto v) { return std::erf(v); }); }

Tensor gelu(const Tensor& x, bool tanh_approx) {
  return map_floating(x, "gelu", [tanh_approx](auto v) {
    using T = decltype(v);
    if (tanh_approx) return T(0.5) * v * (1 + std::tanh(T(kK) * (v + T(kC) * v * v * v)));
    return T(0.5) * v * (1 + std::erf(v * T(kSqrt1_2)));
  });
}

Tensor pow(const Tensor& x, double e) {
  return map_float(x, "pow", [e](auto v) {
    using T = decltype(v);
    if (e == 2.0) return v * v;
    if (e == 0.5) return std::sqrt(v);
    return static_cast<T>(std::pow(v, static_cast<T>(e)));
  });
}

Tensor sin(const Tensor& x) { return map_float(x, "sin", [](auto v) { return std::sin(v); }); }
Tensor cos(const Tensor& x) { return map_float(x, "cos", [](auto v) { return std::cos(v); }); }
Tensor log1p(const Tensor& x) { return map_float(x, "log1p", [](auto v) { return std::log1p(v); }); }
Tensor expm1(const Tensor& x) { return map_float(x, "expm1", [](auto v) { return std::expm1(v); }); }
Tensor rsqrt(const Tensor& x) { return map_float(x, "rsqrt", [](auto v) { return decltype(v)(1) / std::sqrt(v); }); }
Tensor reciprocal(const Tensor& x) { return map_float(x, "reciprocal", [](auto v) { return decltype(v)(1) / v; }); }

Tensor abs(const Tensor& x) {
  if (x.dtype() == kBool) throw std::invalid_argument("[abs] not implemented for torch.bool");
  // integers: |INT64_MIN| wraps to INT64_MIN, as PyTorch's (std::abs of it is undefined behaviour)
  return map_same(x, "abs", [](auto v) {
    if constexpr (std::is_integral_v<decltype(v)>) return v < 0 ? detail::wrap_neg(v) : v;
    else return std::abs(v);
  });
}

// (0 < x) - (x < 0): NaN and -0.0 give +0.0, as in PyTorch
Tensor sign(const Tensor& x) {
  if (x.dtype() == kBool) return detail::map_unary<uint8_t, uint8_t>(x, kBool, [](uint8_t v) { return v; });
  return map_same(x, "sign", [](auto v) { return static_cast<decltype(v)>((0 < v) - (v < 0)); });
}

Tensor square_int(const Tensor& x) {
  const Tensor xi = x.dtype() == kInt64 ? x : detail::preserved_copy(x, kInt64);
  return detail::map_unary<int64_t, int64_t>(xi, kInt64, [](int64_t v) { return detail::wrap_mul(v, v); });  // wraps, as PyTorch's
}

// std::max(v, lo) keeps v when v is NaN or equal (so -0.0 stays -0.0), and a NaN bound is ignored.
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  return map_same(x, "clamp", [lo, hi](auto v) {
    using T = decltype(v);
    if (lo) v = std::max(v, static_cast<T>(*lo));
    if (hi) v = std::min(v, static_cast<T>(*hi));
    return v;
  });
}

namespace {

// f(x) for the rounding ops: x's floating dtype, an int64 copy of int64 x, bool refused as
// PyTorch refuses it (its kernel is named <op>_vml_cpu).
template <class F>
Tensor map_rounding(const Tensor& x, const char* op, F f) {
  if (x.dtype() == kBool) throw std::invalid_argument(std::string("[") + op + "] \"" + op + "_vml_cpu\" not implemented for 'Bool'");
  if (x.dtype() == kInt64) return detail::map_unary<int64_t, int64_t>(x, kInt64, [](int64_t v) { return v; });
  return map_floating(x, op, f);
}

// PyTorch refuses integer and bool input to frac and round(decimals): "frac_cpu" not implemented for 'Long'.
void require_floating(const Tensor& x, const char* op, const char* kernel) {
  if (is_floating(x.dtype())) return;
  throw std::invalid_argument(std::string("[") + op + "] \"" + kernel + "\" not implemented for '" +
                              (x.dtype() == kBool ? "Bool" : "Long") + "'");
}

}  // namespace

Tensor round(const Tensor& x) { return map_rounding(x, "round", [](auto v) { return std::nearbyint(v); }); }
Tensor floor(const Tensor& x) { return map_rounding(x, "floor", [](auto v) { return std::floor(v); }); }
Tensor ceil(const Tensor& x) { return map_rounding(x, "ceil", [](auto v) { return std::ceil(v); }); }
Tensor trunc(const Tensor& x) { return map_rounding(x, "trunc", [](auto v) { return std::trunc(v); }); }

// x - trunc(x): -0.0 gives +0.0 and +-inf gives NaN, as PyTorch's
Tensor frac(const Tensor& x) {
  require_floating(x, "frac", "frac_cpu");
  return map_floating(x, "frac", [](auto v) { return v - std::trunc(v); });
}

Tensor round_decimals(const Tensor& x, int64_t decimals) {
  require_floating(x, "round", "round_cpu");
  const bool negative = decimals < 0;
  const double power = std::pow(10.0, negative ? -static_cast<double>(decimals) : static_cast<double>(decimals));
  return map_floating(x, "round", [negative, power](auto v) {
    using T = decltype(v);
    const T p = static_cast<T>(power);
    return negative ? static_cast<T>(std::nearbyint(v / p) * p) : static_cast<T>(std::nearbyint(v * p) / p);
  });
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  return map_floating(x, "softplus", [beta, threshold](auto v) {
    using T = decltype(v);
    const T b = static_cast<T>(beta);
    return v * b > static_cast<T>(threshold) ? v : std::log1p(std::exp(v * b)) / b;
  });
}

Tensor silu(const Tensor& x) { return map_floating(x, "silu", [](auto v) { return v / (1 + std::exp(-v)); }); }

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return map_floating(x, "leaky_relu", [negative_slope](auto v) { return v > 0 ? v : v * static_cast<decltype(v)>(negative_slope); });
}

// PyTorch's kernel computes exp(x) - 1, not expm1(x)
Tensor elu(const Tensor& x, double alpha) {
  return map_floating(x, "elu", [alpha](auto v) {
    using T = decltype(v);
    return v <= 0 ? (std::exp(v) - 1) * static_cast<T>(alpha) : v;
  });
}

Tensor exp_backward(const Tensor& g, const Tensor& y) { return zip(g, y, [](auto gv, auto yv) { return gv * yv; }); }
Tensor log_backward(const Tensor& g, const Tensor& x) { return zip(g, x, [](auto gv, auto xv) { return gv / xv; }); }
Tensor sqrt_backward(const Tensor& g, const Tensor& y) { return zip(g, y, [](auto gv, auto yv) { return gv / (2 * yv); }); }
Tensor tanh_backward(const Tensor& g, const Tensor& y) { return zip(g, y, [](auto gv, auto yv) { return gv * (1 - yv * yv); }); }
Tensor sigmoid_backward(const Tensor& g, const Tensor& y) {
  return zip(g, y, [](auto gv, auto yv) { return gv * yv * (1 - yv); });
}
Tensor relu_backward(const Tensor& g, const Tensor& y) {
  return zip(g, y, [](auto gv, auto yv) { return yv <= 0 ? decltype(gv)(0) : gv; });
}

Tensor gelu_backward(const Tensor& g, const Tensor& x, bool tanh_approx) {
  return zip(g, x, [tanh_approx](auto gv, auto v) {
    using T = decltype(v);
    if (tanh_approx) {
      const T u = T(kK) * (v + T(kC) * v * v * v), t = std::tanh(u);
      return gv * (T(0.5) * (1 + t) + T(0.5) * v * (1 - t * t) * T(kK) * (1 + 3 * T(kC) * v * v));
    }
    const T cdf = T(0.5) * (1 + std::erf(v * T(kSqrt1_2)));
    const T pdf = std::exp(T(-0.5) * v * v) * T(kInvSqrt2Pi);
    return gv * (cdf + v * pdf);
  });
}

Tensor pow_backward(const Tensor& g, const Tensor& x, double e) {
  return zip(g, x, [e](auto gv, auto v) {
    using T = decltype(v);
    if (e == 0.0) return T(0);
    return static_cast<T>(gv * T(e) * std::pow(v, static_cast<T>(e - 1)));
  });
}

}  // namespace ag::kernels
