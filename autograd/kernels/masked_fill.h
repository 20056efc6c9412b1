// Kernels of masked_fill and masked_fill_ (masked_fill.cpp): one loop over the input and its bool
// mask broadcast together (in place: the mask broadcast to the input), any strides, no history.
// The rule (masked_fill.cpp) is a masked_fill of the gradient, so it has no fast path of its own.
#pragma once

#include "autograd/tensor.h"

namespace ag::kernels {

// out = mask ? value : t with t and mask broadcast to `shape` (their broadcast shape), a new
// contiguous tensor
Tensor masked_fill(const Tensor& t, const Tensor& mask, double value, const Size& shape);
// t = mask ? value : t, in place
void masked_fill_inplace(const Tensor& t, const Tensor& mask, double value);

}  // namespace ag::kernels
