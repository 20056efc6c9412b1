// Inverted dropout: out = x * mask / (1 - p), the mask drawn from the library's generator in
// PyTorch's order (one 53-bit uniform per element, kept if u < 1 - p).
#include <stdexcept>

#include "autograd/format.h"
#include "autograd/kernels/common.h"
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
  Tensor noise = dispatch_float(t.dtype(), "dropout", [&]<typename T>() {
    const T scale = T(1) / static_cast<T>(q);
    return dispatch_all(mask.dtype(), [&]<typename M>() {
      return detail::map_unary<T, M>(mask, t.dtype(), [scale](M m) { return m != M(0) ? scale : T(0); });
    });
  });
  return mul(t, noise);
}

Tensor dropout(const Tensor& t, double p, bool training, Generator* gen) {
  check_p(p);
  if (!training || p == 0.0) return t;
  if (p == 1.0) return mul(t, 0.0);
  Generator& g = gen ? *gen : default_generator();
  const double q = 1.0 - p;
  Tensor mask = detail::make_tensor(t.shape(), kBool);
  uint8_t* pm = mask.data_ptr<uint8_t>();
  for (int64_t i = 0; i < mask.numel(); ++i) pm[i] = g.unit_double() < q;
  return dropout_with_mask(t, mask, p);
}

}  // namespace ag
