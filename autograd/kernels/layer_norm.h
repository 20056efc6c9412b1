// The kernel of layer_norm's forward (layer_norm.cpp): one pass per row, no history. It computes
// the op and keeps xhat and rstd for the backward; the rule, and its fast path used when no graph
// of the backward is recorded, are written in ag ops in layer_norm.cpp.
#pragma once

#include <cstdint>

#include "autograd/tensor.h"

namespace ag::kernels {

struct LayerNormOutput {
  Tensor y;     // xhat * weight + bias, x's shape
  Tensor xhat;  // (x - mean) * rstd, x's shape
  Tensor rstd;  // (M): 1 / sqrt(var + eps) of each row
};

// layer_norm of x over rows of its last N elements (M rows); weight and bias (N elements) may be
// undefined.
LayerNormOutput layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, int64_t M, int64_t N);

}  // namespace ag::kernels
