// Kernels of dropout; the op is in dropout.cpp.
#include "autograd/kernels/dropout.h"

#include <cstdint>
#include <mutex>

#include "autograd/kernels/common.h"

namespace ag::kernels {

Tensor bernoulli_mask(const Size& shape, double q, Generator& g) {
  Tensor mask = detail::make_tensor(shape, kBool);
  uint8_t* pm = mask.data_ptr<uint8_t>();
  std::lock_guard<std::mutex> lock(g.mutex());  // the whole mask is one draw call (generator.h)
  for (int64_t i = 0; i < mask.numel(); ++i) pm[i] = g.unit_double() < q;
  return mask;
}

Tensor dropout_noise(const Tensor& mask, DType dtype, double q) {
  return dispatch_float(dtype, "dropout", [&]<typename T>() {
    const T scale = T(1) / static_cast<T>(q);
    return dispatch_all(mask.dtype(), [&]<typename M>() {
      return detail::map_unary<T, M>(mask, dtype, [scale](M m) { return m != M(0) ? scale : T(0); });
    });
  });
}

}  // namespace ag::kernels
