// masked_fill / masked_fill_: write `value` where a boolean mask is true.
//   y = masked_fill(x, mask, v)   (x and mask broadcast together: y has their broadcast shape)
//   dx = sum_to(masked_fill(g, mask, 0), x.shape)   (zero at the filled positions, summed over the
//                                                   dims x was broadcast along, as PyTorch's engine)
// The in-place masked_fill_ never changes self's shape: the mask must broadcast to it. The loops
// are in kernels/masked_fill.cpp.
#include <stdexcept>

#include "autograd/inplace.h"
#include "autograd/kernels/common.h"
#include "autograd/kernels/masked_fill.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

void check_bool(const Tensor& mask, const char* op) {
  if (mask.dtype() != kBool) {
    throw std::invalid_argument(std::string("[") + op + "] expected a bool mask, got " + dtype_name(mask.dtype()) +
                                " (use mask.bool_())");
  }
}

// y = masked_fill(x, mask, v)  =>  dx = sum_to(masked_fill(g, mask, 0), x.shape)
Grads masked_fill_backward(const SavedTensor& mask, const Size& x_shape, const Tensor& g) {
  const Tensor dx = masked_fill(g, mask.get(), 0.0);
  return {dx.shape() == x_shape ? dx : sum_to(dx, x_shape)};
}

}  // namespace

Tensor masked_fill(const Tensor& t, const Tensor& mask, double value) {
  detail::check_defined(t, "masked_fill");
  detail::check_defined(mask, "masked_fill");
  check_bool(mask, "masked_fill");
  // out = mask ? value : t, both broadcast to their common shape (torch.masked_fill of a (3, 1)
  // input and a (3, 4) mask is (3, 4))
  const Size shape = broadcast_shapes(t.shape(), mask.shape(), "masked_fill");
  Tensor out = kernels::masked_fill(t, mask, value, shape);
  if (needs_grad(t)) {
    record(out, "MaskedFillBackward0", {t}, [m = SavedTensor(mask), xs = t.shape()](const Tensor& g) -> Grads {
      return masked_fill_backward(m, xs, g);
    },
    [&](const Tangents& d) { return masked_fill(expand(d[0], shape.vec()), mask, 0.0); });  // jvp: dout = masked_fill(dt, mask, 0)
  }
  return out;
}

Tensor& Tensor::masked_fill_(const Tensor& mask, double value) {
  detail::check_defined(mask, "masked_fill_");
  check_bool(mask, "masked_fill_");
  const Size b = broadcast_shapes(shape(), mask.shape(), "masked_fill_");
  if (b != shape()) {  // PyTorch: "output with shape [3, 1] doesn't match the broadcast shape [3, 4]"
    detail::shape_error("masked_fill_", "output with shape " + shape().str() + " doesn't match the broadcast shape " + b.str() +
                                            " (a mask of shape " + mask.shape().str() +
                                            " would change self's shape; the out-of-place masked_fill broadcasts)");
  }
  if (detail::inplace_has_tangent(*this)) {
    // forward mode: dself = masked_fill(dself, mask, 0)
    const Tensor t = ag::masked_fill(detail::tangent_of(*this), mask, 0.0);
    {
      detail::JvpPause pause;
      masked_fill_(mask, value);
    }
    detail::set_inplace_tangent(*this, t);
    return *this;
  }
  // through a view of a tensor in a graph: CopySlices on the base
  if (detail::inplace_through_view(*this, false, "masked_fill_",
                                   [&](const Tensor& self) { return ag::masked_fill(self, mask, value); })) {
    return *this;
  }
  // The history so far, kept as a separate handle: the new node's input.
  Tensor before = detail::alias(*this, shape(), strides(), storage_offset());
  before.impl()->grad_fn = grad_fn();
  before.impl()->output_nr = impl()->output_nr;
  before.impl()->requires_grad = requires_grad();
  const bool track = detail::begin_inplace(*this, "masked_fill_", true);
  kernels::masked_fill_inplace(*this, mask, value);
  if (track) {
    record(*this, "MaskedFillBackward0", {before}, [m = SavedTensor(mask), xs = shape()](const Tensor& g) -> Grads {
      return masked_fill_backward(m, xs, g);
    });
    detail::rebase_retained(*this, before.grad_fn(), before.impl()->output_nr);
  }
  return *this;
}

}  // namespace ag
