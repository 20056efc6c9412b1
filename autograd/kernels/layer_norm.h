// Kernels of layer_norm (layer_norm.cpp): one pass per row, no history. The forward kernel
// computes the op and keeps xhat and rstd for the backward; layer_norm_backward is the fast path of
// the rule written in layer_norm.cpp, used when no graph of the backward is recorded, and must
// equal that rule to rounding (FastKernels.EqualTheRulesTheyStandInFor in
// tests/test_higher_order.cpp holds it to it).
#pragma once

#include <cstdint>

#include "autograd/node.h"
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
// {dx, dw, db} (each only if asked for) from the gradient g, the forward's xhat h and rstd r, and
// the weight w (may be undefined); dw and db have the shape ns.
Grads layer_norm_backward(const Tensor& g, const Tensor& h, const Tensor& r, const Tensor& w, int64_t M, int64_t N,
                          const Size& ns, bool gx, bool gw, bool gb);

}  // namespace ag::kernels
