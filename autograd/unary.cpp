// Unary elementwise ops: neg, exp, log, sqrt, tanh, sigmoid, relu, erf, gelu, pow with a scalar
// exponent. Each rule is written in ag ops, so a backward pass that records its graph
// (create_graph) can be differentiated again; the loops (forward, and the same rule as one fused
// pass for when nothing is recorded) are in kernels/unary.cpp.
#include <cmath>
#include <stdexcept>

#include "autograd/kernels/unary.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

constexpr double kSqrt1_2 = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kK = 0.79788456080286535588;           // sqrt(2 / pi)
constexpr double kC = 0.044715;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double k2InvSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi)

// Records the node of y = f(x) whose rule is dx = rule(g, s) for a saved s (y or x). `fast` is
// the same formula as one kernel loop: it runs when no graph of the backward is being recorded.
template <class Rule, class Fast>
void record_unary(Tensor& y, const char* name, const Tensor& x, SavedTensor saved, Rule rule, Fast fast) {
  record(y, name, {x}, [s = std::move(saved), rule, fast](const Tensor& g) -> Grads {
    const Tensor v = s.get();
    if (!needs_grad(g, v)) return {fast(g, v)};
    return {rule(g, v)};
  });
}

}  // namespace

Tensor neg(const Tensor& x) {
  detail::check_defined(x, "neg");
  if (!is_floating(x.dtype())) return mul(x, -1.0);
  Tensor y = kernels::neg(x);
  // y = -x  =>  dx = -g
  if (needs_grad(x)) record(y, "NegBackward0", {x}, [](const Tensor& g) -> Grads { return {neg(g)}; });
  return y;
}

Tensor exp(const Tensor& x) {
  detail::check_defined(x, "exp");
  Tensor y = kernels::exp(x);
  // y = exp(x)  =>  dx = g y
  if (needs_grad(x)) {
    record_unary(y, "ExpBackward0", x, SavedTensor(y, true), [](const Tensor& g, const Tensor& y) { return g * y; },
                 kernels::exp_backward);
  }
  return y;
}

Tensor log(const Tensor& x) {
  detail::check_defined(x, "log");
  Tensor y = kernels::log(x);
  // y = log(x)  =>  dx = g / x
  if (needs_grad(x)) {
    record_unary(y, "LogBackward0", x, SavedTensor(x), [](const Tensor& g, const Tensor& x) { return g / x; },
                 kernels::log_backward);
  }
  return y;
}

Tensor sqrt(const Tensor& x) {
  detail::check_defined(x, "sqrt");
  Tensor y = kernels::sqrt(x);
  // y = sqrt(x)  =>  dx = g / (2 y)
  if (needs_grad(x)) {
    record_unary(y, "SqrtBackward0", x, SavedTensor(y, true), [](const Tensor& g, const Tensor& y) { return g / (y * 2.0); },
                 kernels::sqrt_backward);
  }
  return y;
}

Tensor tanh(const Tensor& x) {
  detail::check_defined(x, "tanh");
  Tensor y = kernels::tanh(x);
  // y = tanh(x)  =>  dx = g (1 - y^2)
  if (needs_grad(x)) {
    record_unary(y, "TanhBackward0", x, SavedTensor(y, true), [](const Tensor& g, const Tensor& y) { return g * (1.0 - y * y); },
                 kernels::tanh_backward);
  }
  return y;
}

Tensor sigmoid(const Tensor& x) {
  detail::check_defined(x, "sigmoid");
  Tensor y = kernels::sigmoid(x);
  // y = 1 / (1 + exp(-x))  =>  dx = g y (1 - y)
  if (needs_grad(x)) {
    record_unary(y, "SigmoidBackward0", x, SavedTensor(y, true),
                 [](const Tensor& g, const Tensor& y) { return g * y * (1.0 - y); }, kernels::sigmoid_backward);
  }
  return y;
}

Tensor relu(const Tensor& x) {
  detail::check_defined(x, "relu");
  Tensor y = kernels::relu(x);
  // y = max(x, 0)  =>  dx = 0 where y <= 0, else g (a NaN passes g, as in PyTorch; the mask is a
  // constant: relu's second derivative is 0)
  if (needs_grad(x)) {
    record_unary(y, "ReluBackward0", x, SavedTensor(y, true),
                 [](const Tensor& g, const Tensor& y) { return masked_fill(g, le(y, 0.0), 0.0); },
                 kernels::relu_backward);
  }
  return y;
}

Tensor erf(const Tensor& x) {
  detail::check_defined(x, "erf");
  Tensor y = kernels::erf(x);
  // y = erf(x)  =>  dx = g (2 / sqrt(pi)) exp(-x^2)
  if (needs_grad(x)) {
    record(y, "ErfBackward0", {x}, [sx = SavedTensor(x)](const Tensor& g) -> Grads {
      const Tensor x = sx.get();
      return {g * (exp(-(x * x)) * k2InvSqrtPi)};
    });
  }
  return y;
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  detail::check_defined(x, "gelu");
  if (approximate != "none" && approximate != "tanh") {
    throw std::invalid_argument("[gelu] approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  }
  const bool tanh_approx = approximate == "tanh";
  // exact:  y = x Phi(x),  Phi(x) = (1 + erf(x / sqrt 2)) / 2
  // tanh:   y = x (1 + tanh(u)) / 2,  u = k (x + c x^3), k = sqrt(2 / pi), c = 0.044715
  Tensor y = kernels::gelu(x, tanh_approx);
  // exact:  dx = g (Phi(x) + x phi(x)),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
  // tanh:   dx = g ((1 + t) / 2 + x (1 - t^2) k (1 + 3 c x^2) / 2),  t = tanh(u)
  if (needs_grad(x)) {
    record_unary(
        y, "GeluBackward0", x, SavedTensor(x),
        [tanh_approx](const Tensor& g, const Tensor& x) {
          if (tanh_approx) {
            const Tensor t = tanh((x + x * x * x * kC) * kK);
            return g * ((t + 1.0) * 0.5 + x * (1.0 - t * t) * (x * x * (3 * kC) + 1.0) * (0.5 * kK));
          }
          const Tensor cdf = (erf(x * kSqrt1_2) + 1.0) * 0.5;
          const Tensor pdf = exp(x * x * -0.5) * kInvSqrt2Pi;
          return g * (cdf + x * pdf);
        },
        [tanh_approx](const Tensor& g, const Tensor& x) { return kernels::gelu_backward(g, x, tanh_approx); });
  }
  return y;
}

Tensor pow(const Tensor& x, double e) {
  detail::check_defined(x, "pow");
  Tensor y = kernels::pow(x, e);
  // y = x^e  =>  dx = g e x^(e-1)  (0 for e = 0)
  if (needs_grad(x)) {
    record_unary(
        y, "PowBackward0", x, SavedTensor(x),
        [e](const Tensor& g, const Tensor& x) { return e == 0.0 ? zeros_like(g) : g * (pow(x, e - 1) * e); },
        [e](const Tensor& g, const Tensor& x) { return kernels::pow_backward(g, x, e); });
  }
  return y;
}

}  // namespace ag
