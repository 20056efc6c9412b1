// Kernels of the unary elementwise ops; their rules and formulas are in unary.cpp.
#include "autograd/kernels/unary.h"

#include <cmath>

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
  const Tensor xf = is_floating(x.dtype()) ? x : x.detach().to(kFloat32);
  return dispatch_float(xf.dtype(), op, [&]<typename T>() { return detail::map_unary<T, T>(xf, xf.dtype(), [&](T v) { return f(v); }); });
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
Tensor relu(const Tensor& x) { return map_float(x, "relu", [](auto v) { return v > 0 || v != v ? v : decltype(v)(0); }); }
Tensor erf(const Tensor& x) { return map_float(x, "erf", [](auto v) { return std::erf(v); }); }

Tensor gelu(const Tensor& x, bool tanh_approx) {
  return map_float(x, "gelu", [tanh_approx](auto v) {
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
