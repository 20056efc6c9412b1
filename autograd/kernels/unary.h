// Kernels of the unary elementwise ops (unary.cpp): one loop over any strides, no history. The
// forward maps compute the op; the *_backward kernels are the fast paths of the rules written in
// unary.cpp, used when no graph of the backward is recorded, and must equal those rules to
// rounding (FastKernels.EqualTheRulesTheyStandInFor in tests/test_higher_order.cpp holds them to
// it).
#pragma once

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
