// Unary elementwise ops: neg, exp, log, sqrt, tanh, sigmoid, relu, erf, gelu, pow with a scalar
// exponent, sin, cos, log1p, expm1, rsqrt, reciprocal, sign, abs, square, round, floor, ceil,
// trunc, frac, clamp (and clamp_min, clamp_max), softplus, silu, leaky_relu, elu. Each rule is
// written in ag ops, so a backward pass that records its graph (create_graph) can be
// differentiated again; the loops (forward, and for some rules the same rule as one fused pass
// for when nothing is recorded) are in kernels/unary.cpp.
#include <cmath>
#include <functional>
#include <optional>
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

enum class Saved { Input, Output };

// Records the node of y = f(x) whose rule is dx = rule(g, s) for a saved s (y or x). `fast` is
// the same formula as one kernel loop: it runs when no graph of the backward is being recorded
// (and no tangent is pushed: needs_grad is true then). The rule is elementwise and linear in g,
// g f'(x), so applied to x's tangent it is the jvp: dy = rule(dx, s) = f'(x) dx.
template <class Rule, class Fast>
void record_unary(Tensor& y, const char* name, const Tensor& x, Saved saved, Rule rule, Fast fast) {
  const Tensor& v = saved == Saved::Input ? x : y;
  record(
      y, name, {x},
      [s = SavedTensor(v, saved == Saved::Output), rule, fast](const Tensor& g) -> Grads {
        const Tensor v = s.get();
        if (!needs_grad(g, v)) return {fast(g, v)};
        return {rule(g, v)};
      },
      [&](const Tangents& t) { return rule(t[0], v); });
}

}  // namespace

Tensor neg(const Tensor& x) {
  detail::check_defined(x, "neg");
  if (x.dtype() == kBool) {
    throw std::invalid_argument("[neg] Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                                "invert a mask, use the `~` or `logical_not()` operator instead.");
  }
  if (!is_floating(x.dtype())) return mul(x, -1.0);
  Tensor y = kernels::neg(x);
  // y = -x  =>  dx = -g;  jvp: dy = -dx
  if (needs_grad(x)) {
    record(y, "NegBackward0", {x}, [](const Tensor& g) -> Grads { return {neg(g)}; },
           [](const Tangents& t) { return neg(t[0]); });
  }
  return y;
}

Tensor exp(const Tensor& x) {
  detail::check_defined(x, "exp");
  Tensor y = kernels::exp(x);
  // y = exp(x)  =>  dx = g y
  if (needs_grad(x)) {
    record_unary(y, "ExpBackward0", x, Saved::Output, [](const Tensor& g, const Tensor& y) { return g * y; },
                 kernels::exp_backward);
  }
  return y;
}

Tensor log(const Tensor& x) {
  detail::check_defined(x, "log");
  Tensor y = kernels::log(x);
  // y = log(x)  =>  dx = g / x
  if (needs_grad(x)) {
    record_unary(y, "LogBackward0", x, Saved::Input, [](const Tensor& g, const Tensor& x) { return g / x; },
                 kernels::log_backward);
  }
  return y;
}

Tensor sqrt(const Tensor& x) {
  detail::check_defined(x, "sqrt");
  Tensor y = kernels::sqrt(x);
  // y = sqrt(x)  =>  dx = g / (2 y)
  if (needs_grad(x)) {
    record_unary(y, "SqrtBackward0", x, Saved::Output, [](const Tensor& g, const Tensor& y) { return g / (y * 2.0); },
                 kernels::sqrt_backward);
  }
  return y;
}

Tensor tanh(const Tensor& x) {
  detail::check_defined(x, "tanh");
  Tensor y = kernels::tanh(x);
  // y = tanh(x)  =>  dx = g (1 - y^2)
  if (needs_grad(x)) {
    record_unary(y, "TanhBackward0", x, Saved::Output, [](const Tensor& g, const Tensor& y) { return g * (1.0 - y * y); },
                 kernels::tanh_backward);
  }
  return y;
}

Tensor sigmoid(const Tensor& x) {
  detail::check_defined(x, "sigmoid");
  Tensor y = kernels::sigmoid(x);
  // y = 1 / (1 + exp(-x))  =>  dx = g y (1 - y)
  if (needs_grad(x)) {
    record_unary(y, "SigmoidBackward0", x, Saved::Output,
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
    record_unary(y, "ReluBackward0", x, Saved::Output,
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
    record(
        y, "ErfBackward0", {x},
        [sx = SavedTensor(x)](const Tensor& g) -> Grads {
          const Tensor x = sx.get();
          return {g * (exp(-(x * x)) * k2InvSqrtPi)};
        },
        // jvp: dy = dx (2 / sqrt(pi)) exp(-x^2)
        [&](const Tangents& t) { return t[0] * (exp(-(x * x)) * k2InvSqrtPi); });
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
        y, "GeluBackward0", x, Saved::Input,
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
  // an integer tensor to a whole power stays integer (ag's reading of a whole double as Python's int)
  if (!is_floating(x.dtype()) && is_whole_number(e)) return pow(x, full({}, e, kInt64));
  Tensor y = kernels::pow(x, e);
  // y = x^e  =>  dx = g e x^(e-1)  (0 for e = 0)
  if (needs_grad(x)) {
    record_unary(
        y, "PowBackward0", x, Saved::Input,
        [e](const Tensor& g, const Tensor& x) { return e == 0.0 ? zeros_like(g) : g * (pow(x, e - 1) * e); },
        [e](const Tensor& g, const Tensor& x) { return kernels::pow_backward(g, x, e); });
  }
  return y;
}

// ---- trigonometric, log/exp variants, reciprocals ----

namespace {

// y = forward(x) for the op `op`, recording the node `name` whose rule is dx = rule(g, s), with s
// the input x or the output y. The rule is elementwise and linear in g: its jvp is dy = rule(dx, s).
template <class Forward, class Rule>
Tensor unary_op(const Tensor& x, const char* op, const char* name, Forward forward, Saved saved, Rule rule) {
  detail::check_defined(x, op);
  Tensor y = forward(x);
  if (needs_grad(x)) {
    const Tensor& v = saved == Saved::Input ? x : y;
    record(
        y, name, {x}, [s = SavedTensor(v, saved == Saved::Output), rule](const Tensor& g) -> Grads { return {rule(g, s.get())}; },
        [&](const Tangents& t) { return rule(t[0], v); });
  }
  return y;
}

}  // namespace

// y = sin(x)  =>  dx = g cos(x)
Tensor sin(const Tensor& x) {
  return unary_op(x, "sin", "SinBackward0", kernels::sin, Saved::Input, [](const Tensor& g, const Tensor& x) { return g * cos(x); });
}

// y = cos(x)  =>  dx = g (-sin(x))
Tensor cos(const Tensor& x) {
  return unary_op(x, "cos", "CosBackward0", kernels::cos, Saved::Input, [](const Tensor& g, const Tensor& x) { return g * -sin(x); });
}

// y = log(1 + x)  =>  dx = g / (x + 1)
Tensor log1p(const Tensor& x) {
  return unary_op(x, "log1p", "Log1PBackward0", kernels::log1p, Saved::Input,
                  [](const Tensor& g, const Tensor& x) { return g / (x + 1.0); });
}

// y = exp(x) - 1  =>  dx = g (y + 1)
Tensor expm1(const Tensor& x) {
  return unary_op(x, "expm1", "Expm1Backward0", kernels::expm1, Saved::Output,
                  [](const Tensor& g, const Tensor& y) { return g * (y + 1.0); });
}

// y = x^(-1/2)  =>  dx = -0.5 g y^3
Tensor rsqrt(const Tensor& x) {
  return unary_op(x, "rsqrt", "RsqrtBackward0", kernels::rsqrt, Saved::Output,
                  [](const Tensor& g, const Tensor& y) { return g * pow(y, 3.0) * -0.5; });
}

// y = 1 / x  =>  dx = -g y^2
Tensor reciprocal(const Tensor& x) {
  return unary_op(x, "reciprocal", "ReciprocalBackward0", kernels::reciprocal, Saved::Output,
                  [](const Tensor& g, const Tensor& y) { return -g * (y * y); });
}

// ---- sign, abs, square: integers stay integers ----

Tensor sign(const Tensor& x) {
  detail::check_defined(x, "sign");
  Tensor y = kernels::sign(x);
  // y = sign(x) is piecewise constant  =>  dx = 0 (PyTorch's SignBackward0 gives zeros, also at 0)
  if (needs_grad(x)) {
    record(y, "SignBackward0", {x}, [](const Tensor& g) -> Grads { return {zeros_like(g)}; },
           [](const Tangents& t) { return zeros_like(t[0]); });  // jvp: dy = 0
  }
  return y;
}

// y = |x|  =>  dx = g sign(x)  (0 at x = 0 and at NaN, as in PyTorch)
Tensor abs(const Tensor& x) {
  return unary_op(x, "abs", "AbsBackward0", kernels::abs, Saved::Input, [](const Tensor& g, const Tensor& x) { return g * sign(x); });
}

// PyTorch's square is pow(x, 2): same values and grad_fn (PowBackward0); integers (and bools)
// give int64.
Tensor square(const Tensor& x) {
  detail::check_defined(x, "square");
  return is_floating(x.dtype()) ? pow(x, 2.0) : kernels::square_int(x);
}

// ---- rounding: round (half to even), floor, ceil, trunc, frac ----

namespace {

// y = f(x) for a piecewise constant f  =>  dx = 0 (PyTorch's RoundBackward0, FloorBackward0, ...
// give zeros, also at the jumps). int64 x is returned whole (a copy); it cannot require grad.
Tensor piecewise_constant(const Tensor& x, const char* op, const char* name, const std::function<Tensor(const Tensor&)>& kernel) {
  detail::check_defined(x, op);
  Tensor y = kernel(x);
  if (needs_grad(x)) {
    record(y, name, {x}, [](const Tensor& g) -> Grads { return {zeros_like(g)}; },
           [](const Tangents& t) { return zeros_like(t[0]); });  // jvp: dy = 0
  }
  return y;
}

}  // namespace

Tensor round(const Tensor& x) { return piecewise_constant(x, "round", "RoundBackward0", kernels::round); }
Tensor round(const Tensor& x, int64_t decimals) {
  return piecewise_constant(x, "round", "RoundBackward1", [decimals](const Tensor& x) { return kernels::round_decimals(x, decimals); });
}
Tensor floor(const Tensor& x) { return piecewise_constant(x, "floor", "FloorBackward0", kernels::floor); }
Tensor ceil(const Tensor& x) { return piecewise_constant(x, "ceil", "CeilBackward0", kernels::ceil); }
Tensor trunc(const Tensor& x) { return piecewise_constant(x, "trunc", "TruncBackward0", kernels::trunc); }

// y = x - trunc(x)  =>  dx = g
Tensor frac(const Tensor& x) {
  detail::check_defined(x, "frac");
  Tensor y = kernels::frac(x);
  if (needs_grad(x)) {
    record(y, "FracBackward0", {x}, [](const Tensor& g) -> Grads { return {g}; },
           [](const Tangents& t) { return t[0]; });  // jvp: dy = dx
  }
  return y;
}

// ---- clamp ----

namespace {

// The dtype clamp computes in: x's if floating; for integers int64, or float32 if a bound has a
// fraction or is NaN (C++ cannot tell 1.0 from 1: whole bounds keep integers integers).
Tensor clamp_input(const Tensor& x, std::optional<double> lo, std::optional<double> hi, const char* op) {
  detail::check_defined(x, op);
  if (is_floating(x.dtype())) return x;
  auto whole = [](std::optional<double> v) { return !v || is_whole_number(*v); };
  return x.to(whole(lo) && whole(hi) ? kInt64 : kFloat32);
}

// The clamped values; NaN everywhere if `nan_fill` (a NaN bound that PyTorch does not ignore).
Tensor clamp_values(const Tensor& x, std::optional<double> lo, std::optional<double> hi, bool nan_fill) {
  if (nan_fill) return full(x.shape().vec(), std::nan(""), x.dtype());
  return kernels::clamp(x, lo, hi);
}

// y = clamp(x, lo, hi)  =>  dx = g where lo <= x <= hi (bounds included), else 0; a missing
// bound is no condition. x's mask is constant, so the second derivative is 0.
Tensor clamp_grad(const Tensor& g, const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  Tensor inside;
  if (lo) inside = ge(x, *lo);
  if (hi) inside = inside.defined() ? logical_and(inside, le(x, *hi)) : le(x, *hi);
  return where(inside, g, 0.0);
}

Tensor clamp_impl(const Tensor& x, std::optional<double> lo, std::optional<double> hi, const char* op,
                  const char* grad_name, bool nan_fill) {
  return unary_op(
      clamp_input(x, lo, hi, op), op, grad_name, [&](const Tensor& x) { return clamp_values(x, lo, hi, nan_fill); },
      Saved::Input, [lo, hi](const Tensor& g, const Tensor& x) { return clamp_grad(g, x, lo, hi); });
}

bool is_nan(std::optional<double> v) { return v && std::isnan(*v); }

}  // namespace

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  if (!min && !max) throw std::invalid_argument("[clamp] At least one of 'min' or 'max' must not be None");
  // both bounds given and one is NaN: NaN everywhere; a single NaN bound is ignored (as PyTorch)
  return clamp_impl(x, min, max, "clamp", "ClampBackward1", min && max && (is_nan(min) || is_nan(max)));
}

Tensor clamp_min(const Tensor& x, double min) {
  return clamp_impl(x, min, std::nullopt, "clamp_min", "ClampMinBackward0", std::isnan(min));
}

Tensor clamp_max(const Tensor& x, double max) {
  return clamp_impl(x, std::nullopt, max, "clamp_max", "ClampMaxBackward0", std::isnan(max));
}

// ---- activations (floating point only, as in PyTorch) ----

// y = log(1 + exp(beta x)) / beta, or x where beta x > threshold
//   =>  dx = g where beta x > threshold, else g sigmoid(beta x)  (= g z / (z + 1), z = exp(beta x))
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return unary_op(
      x, "softplus", "SoftplusBackward0", [&](const Tensor& x) { return kernels::softplus(x, beta, threshold); }, Saved::Input,
      [beta, threshold](const Tensor& g, const Tensor& x) {
        const Tensor bx = x * beta;
        return where(gt(bx, threshold), g, g * sigmoid(bx));
      });
}

// y = x s, s = sigmoid(x)  =>  dx = g s (1 + x (1 - s))
Tensor silu(const Tensor& x) {
  return unary_op(x, "silu", "SiluBackward0", kernels::silu, Saved::Input, [](const Tensor& g, const Tensor& x) {
    const Tensor s = sigmoid(x);
    return g * s * (1.0 + x * (1.0 - s));
  });
}

// y = x where x > 0, else slope x  =>  dx = g where x > 0, else slope g (slope g at 0)
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary_op(
      x, "leaky_relu", "LeakyReluBackward0", [&](const Tensor& x) { return kernels::leaky_relu(x, negative_slope); },
      Saved::Input, [negative_slope](const Tensor& g, const Tensor& x) { return where(gt(x, 0.0), g, g * negative_slope); });
}

// y = x where x > 0, else alpha (exp(x) - 1)  =>  dx = g where x > 0, else g alpha exp(x)
// (exp of min(x, 0): the branch not taken never overflows, so no inf * 0 in the second order)
Tensor elu(const Tensor& x, double alpha) {
  return unary_op(x, "elu", "EluBackward0", [&](const Tensor& x) { return kernels::elu(x, alpha); }, Saved::Input,
                  [alpha](const Tensor& g, const Tensor& x) { return where(gt(x, 0.0), g, g * alpha * exp(clamp_max(x, 0.0))); });
}

}  // namespace ag
