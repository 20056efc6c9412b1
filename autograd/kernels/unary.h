// Kernels of the unary elementwise ops (unary.cpp): one loop over any strides, no history. The
// forward maps compute the op; the *_backward kernels are the fast paths of the rules written in
// unary.cpp, used when no graph of the backward is recorded, and must equal those rules to
// rounding (FastKernels.EqualTheRulesTheyStandInFor in tests/test_higher_order.cpp holds them to
// it).
#pragma once

#include <optional>

#include "autograd/tensor.h"

namespace ag::kernels {

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor gelu(const Tensor& x, bool tanh_approx);
Tensor pow(const Tensor& x, double e);
// integers compute in float32, as in PyTorch
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
// integers stay integers (bool: square gives int64, sign bool, abs refuses)
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor square_int(const Tensor& x);  // int64 or bool x -> int64 x * x (float squares are pow(x, 2))
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi);  // x's dtype
// rounding: floating x in its own dtype, int64 x copied (already whole), bool refused with
// PyTorch's words ("round_vml_cpu" not implemented for 'Bool'). round is half to even
// (std::nearbyint in the default rounding mode); frac (x - trunc(x)) and round_decimals are
// floating point only.
Tensor round(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor frac(const Tensor& x);
// PyTorch's round(x, decimals) in x's dtype: nearbyint(x * 10^d) / 10^d, or for d < 0
// nearbyint(x / 10^-d) * 10^-d, with the power of ten rounded to x's dtype first
Tensor round_decimals(const Tensor& x, int64_t decimals);
// floating point only
Tensor softplus(const Tensor& x, double beta, double threshold);
Tensor silu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope);
Tensor elu(const Tensor& x, double alpha);

// dx from the output gradient g and the saved value (y = the op's output, or x its input)
Tensor exp_backward(const Tensor& g, const Tensor& y);      // g y
Tensor log_backward(const Tensor& g, const Tensor& x);      // g / x
Tensor sqrt_backward(const Tensor& g, const Tensor& y);     // g / (2 y)
Tensor tanh_backward(const Tensor& g, const Tensor& y);     // g (1 - y^2)
Tensor sigmoid_backward(const Tensor& g, const Tensor& y);  // g y (1 - y)
Tensor relu_backward(const Tensor& g, const Tensor& y);     // 0 where y <= 0, else g
Tensor gelu_backward(const Tensor& g, const Tensor& x, bool tanh_approx);
Tensor pow_backward(const Tensor& g, const Tensor& x, double e);  // g e x^(e-1)

}  // namespace ag::kernels
