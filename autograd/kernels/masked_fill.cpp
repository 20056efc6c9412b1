// Kernels of masked_fill; its rule is in masked_fill.cpp.
#include "autograd/kernels/masked_fill.h"

#include <cstdint>

#include "autograd/kernels/common.h"

namespace ag::kernels {

Tensor masked_fill(const Tensor& t, const Tensor& mask, double value, const Size& shape) {
  // one pass: out = mask ? value : t over `shape` (t and mask broadcast to it), contiguous as
  // PyTorch's (a contiguous clone of the expanded input, then filled)
  return dispatch_all(t.dtype(), [&]<typename T>() {
    const T v = detail::checked_scalar<T>(value, "masked_fill");
    return detail::map_binary<T, T, uint8_t>(t, mask, shape, t.dtype(), [v](T x, uint8_t m) { return m ? v : x; }, true);
  });
}

void masked_fill_inplace(const Tensor& t, const Tensor& mask, double value) {
  const Strides ms = detail::broadcast_strides(mask, t.shape());
  const uint8_t* pm = static_cast<const uint8_t*>(mask.impl()->storage->data);
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* p = static_cast<T*>(t.impl()->storage->data);
    const T v = detail::checked_scalar<T>(value, "masked_fill");
    detail::walk<2>(t.shape(), {&t.strides(), &ms}, {t.storage_offset(), mask.storage_offset()},
                    [&](const std::array<int64_t, 2>& o) { p[o[0]] = pm[o[1]] ? v : p[o[0]]; });
  });
}

}  // namespace ag::kernels
