// Unary elementwise ops: neg, exp, log, sqrt, tanh, sigmoid, relu, gelu, pow with a scalar
// exponent. Each backward is one fused elementwise pass over (grad, saved value).
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "autograd/kernels.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

constexpr double kSqrt1_2 = 0.70710678118654752440;  // 1 / sqrt(2)
constexpr double kK = 0.79788456080286535588;        // sqrt(2 / pi)
constexpr double kC = 0.044715;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)

// out = f(x) elementwise, in x's floating dtype.
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

// Records a unary op whose backward is dx = f(g, saved) elementwise.
template <class F>
void record_unary(Tensor& out, const char* name, const Tensor& x, const Tensor& saved, F f) {
  record(out, name, {x}, [s = SavedTensor(saved), f](const Tensor& g) -> Grads { return {zip(g, s.get(), f)}; });
}

}  // namespace

Tensor neg(const Tensor& x) {
  if (!is_floating(x.dtype())) return mul(x, -1.0);
  Tensor y = map_float(x, "neg", [](auto v) { return -v; });
  // y = -x  =>  dx = -g
  if (needs_grad(x)) record(y, "NegBackward0", {x}, [](const Tensor& g) -> Grads { return {neg(g)}; });
  return y;
}

Tensor exp(const Tensor& x) {
  Tensor y = map_float(x, "exp", [](auto v) { return std::exp(v); });
  // y = exp(x)  =>  dx = g * y
  if (needs_grad(x)) record_unary(y, "ExpBackward0", x, y, [](auto g, auto yv) { return g * yv; });
  return y;
}

Tensor log(const Tensor& x) {
  Tensor y = map_float(x, "log", [](auto v) { return std::log(v); });
  // y = log(x)  =>  dx = g / x
  if (needs_grad(x)) record_unary(y, "LogBackward0", x, x, [](auto g, auto xv) { return g / xv; });
  return y;
}

Tensor sqrt(const Tensor& x) {
  Tensor y = map_float(x, "sqrt", [](auto v) { return std::sqrt(v); });
  // y = sqrt(x)  =>  dx = g / (2 y)
  if (needs_grad(x)) record_unary(y, "SqrtBackward0", x, y, [](auto g, auto yv) { return g / (2 * yv); });
  return y;
}

Tensor tanh(const Tensor& x) {
  Tensor y = map_float(x, "tanh", [](auto v) { return std::tanh(v); });
  // y = tanh(x)  =>  dx = g (1 - y^2)
  if (needs_grad(x)) record_unary(y, "TanhBackward0", x, y, [](auto g, auto yv) { return g * (1 - yv * yv); });
  return y;
}

Tensor sigmoid(const Tensor& x) {
  Tensor y = map_float(x, "sigmoid", [](auto v) { return decltype(v)(1) / (1 + std::exp(-v)); });
  // y = 1 / (1 + exp(-x))  =>  dx = g y (1 - y)
  if (needs_grad(x)) record_unary(y, "SigmoidBackward0", x, y, [](auto g, auto yv) { return g * yv * (1 - yv); });
  return y;
}

Tensor relu(const Tensor& x) {
  // NaN stays NaN; negatives give +0 (not -0)
  Tensor y = map_float(x, "relu", [](auto v) { return v > 0 || v != v ? v : decltype(v)(0); });
  // y = max(x, 0)  =>  dx = g where y > 0
  if (needs_grad(x)) record_unary(y, "ReluBackward0", x, y, [](auto g, auto yv) { return yv > 0 ? g : decltype(g)(0); });
  return y;
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh") {
    throw std::invalid_argument("[gelu] approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  }
  const bool tanh_approx = approximate == "tanh";
  // exact:  y = x Phi(x),  Phi(x) = (1 + erf(x / sqrt 2)) / 2
  // tanh:   y = x (1 + tanh(k (x + c x^3))) / 2,  k = sqrt(2 / pi), c = 0.044715
  Tensor y = map_float(x, "gelu", [tanh_approx](auto v) {
    using T = decltype(v);
    if (tanh_approx) return T(0.5) * v * (1 + std::tanh(T(kK) * (v + T(kC) * v * v * v)));
    return T(0.5) * v * (1 + std::erf(v * T(kSqrt1_2)));
  });
  // dx = g (Phi(x) + x phi(x))  (exact)  or the derivative of the tanh form
  if (needs_grad(x)) {
    record_unary(y, "GeluBackward0", x, x, [tanh_approx](auto g, auto v) {
      using T = decltype(v);
      if (tanh_approx) {
        const T u = T(kK) * (v + T(kC) * v * v * v), t = std::tanh(u);
        return g * (T(0.5) * (1 + t) + T(0.5) * v * (1 - t * t) * T(kK) * (1 + 3 * T(kC) * v * v));
      }
      const T cdf = T(0.5) * (1 + std::erf(v * T(kSqrt1_2)));
      const T pdf = std::exp(T(-0.5) * v * v) * T(kInvSqrt2Pi);
      return g * (cdf + v * pdf);
    });
  }
  return y;
}

Tensor pow(const Tensor& x, double e) {
  Tensor y = map_float(x, "pow", [e](auto v) {
    using T = decltype(v);
    if (e == 2.0) return v * v;
    if (e == 0.5) return std::sqrt(v);
    return static_cast<T>(std::pow(v, static_cast<T>(e)));
  });
  // y = x^e  =>  dx = g e x^(e-1)
  if (needs_grad(x)) {
    record_unary(y, "PowBackward0", x, x, [e](auto g, auto v) {
      using T = decltype(v);
      if (e == 0.0) return T(0);
      return static_cast<T>(g * T(e) * std::pow(v, static_cast<T>(e - 1)));
    });
  }
  return y;
}

}  // namespace ag
