// Copies: to(dtype), contiguous(), clone().
#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

static Tensor copy_as(const Tensor& t, DType dtype) {
  Tensor out = detail::make_tensor(t.shape(), dtype);
  detail::copy_into(out, t);
  return out;
}

Tensor to(const Tensor& t, DType dtype) {
  if (dtype == t.dtype()) return t;
  Tensor out = copy_as(t, dtype);
  if (needs_grad(t) && is_floating(dtype)) {
    // out = t.to(dtype)  =>  dt = dout.to(t.dtype)
    record(out, "ToCopyBackward0", {t}, [from = t.dtype()](const Tensor& g) -> Grads { return {g.to(from)}; });
  }
  return out;
}

Tensor clone(const Tensor& t) {
  Tensor out = copy_as(t, t.dtype());
  // out = clone(t)  =>  dt = dout
  if (needs_grad(t)) record(out, "CloneBackward0", {t}, [](const Tensor& g) -> Grads { return {g}; });
  return out;
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

}  // namespace ag
