// Inverted dropout: out = x * mask / (1 - p), the mask drawn from the library's generator in
// PyTorch's order (one 53-bit uniform per element, kept if u < 1 - p). The loops are in
// kernels/dropout.cpp.
#include <stdexcept>

#include "autograd/format.h"
#include "autograd/kernels/common.h"
#include "autograd/kernels/dropout.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

static void check_p(double p) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw std::invalid_argument("[dropout] dropout probability has to be between 0 and 1, but got " + py_float_repr(p));
  }
}

Tensor dropout_with_mask(const Tensor& t, const Tensor& mask, double p) {
  check_p(p);
  if (mask.shape() != t.shape()) {
    detail::shape_error("dropout", "mask of shape " + mask.shape().str() + " does not match input of shape " + t.shape().str());
  }
  // noise = mask / (1 - p) in t's dtype; out = t * noise, so backward is dt = g * noise.
  const double q = 1.0 - p;
  return mul(t, kernels::dropout_noise(mask, t.dtype(), q));
}

Tensor dropout(const Tensor& t, double p, bool training, Generator* gen) {
  check_p(p);
  if (!training || p == 0.0) return t;
  if (p == 1.0) return mul(t, 0.0);
  Generator& g = gen ? *gen : default_generator();
  const double q = 1.0 - p;
  return dropout_with_mask(t, kernels::bernoulli_mask(t.shape(), q, g), p);
}

}  // namespace ag
