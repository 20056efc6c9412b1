// masked_fill / masked_fill_: write `value` where a boolean mask (broadcast to the input) is
// true. The gradient is zero at the filled positions. The loops are in kernels/masked_fill.cpp.
#include <stdexcept>

#include "autograd/inplace.h"
#include "autograd/kernels/common.h"
#include "autograd/kernels/masked_fill.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

void check_mask(const Tensor& t, const Tensor& mask, const char* op) {
  if (mask.dtype() != kBool) {
    throw std::invalid_argument(std::string("[") + op + "] expected a bool mask, got " + dtype_name(mask.dtype()) +
                                " (use mask.bool_())");
  }
  Size b = broadcast_shapes(t.shape(), mask.shape(), op);
  if (b != t.shape()) {
    detail::shape_error(op, "mask of shape " + mask.shape().str() + " cannot be broadcast to the input's shape " +
                                t.shape().str());
  }
}

// y = masked_fill(x, mask, v)  =>  dx = g with zeros where mask
Grads masked_fill_backward(const SavedTensor& mask, const Tensor& g) { return {masked_fill(g, mask.get(), 0.0)}; }

}  // namespace

Tensor masked_fill(const Tensor& t, const Tensor& mask, double value) {
  check_mask(t, mask, "masked_fill");
  // out = mask ? value : t
  Tensor out = kernels::masked_fill(t, mask, value);
  if (needs_grad(t)) {
    record(out, "MaskedFillBackward0", {t},
           [m = SavedTensor(mask)](const Tensor& g) -> Grads { return masked_fill_backward(m, g); });
  }
  return out;
}

Tensor& Tensor::masked_fill_(const Tensor& mask, double value) {
  check_mask(*this, mask, "masked_fill_");
  // The history so far, kept as a separate handle: the new node's input.
  Tensor before = detail::alias(*this, shape(), strides(), storage_offset());
  before.impl()->grad_fn = grad_fn();
  before.impl()->output_nr = impl()->output_nr;
  before.impl()->requires_grad = requires_grad();
  const bool track = detail::begin_inplace(*this, "masked_fill_", true);
  kernels::masked_fill_inplace(*this, mask, value);
  if (track) {
    record(*this, "MaskedFillBackward0", {before},
           [m = SavedTensor(mask)](const Tensor& g) -> Grads { return masked_fill_backward(m, g); });
    detail::rebase_retained(*this, before.grad_fn(), before.impl()->output_nr);
  }
  return *this;
}

}  // namespace ag
