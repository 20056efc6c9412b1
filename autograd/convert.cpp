// Copies: to(dtype), clone(), contiguous().
//
// Layout as PyTorch's: to() and clone() default to memory_format=preserve_format, so a
// non-overlapping and dense input keeps its strides (x.t().to(kFloat64) is transposed too) and
// any other input gets TensorIterator's layout (dense strides ordered as the input's, see
// detail::elementwise_strides). contiguous() and clone(t, MemoryFormat::Contiguous) always give
// row-major strides.
#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

// A new tensor of `dtype` holding t's values, laid out as `format` says.
static Tensor copy_as(const Tensor& t, DType dtype, MemoryFormat format) {
  return format == MemoryFormat::Contiguous ? detail::contiguous_copy(t, dtype) : detail::preserved_copy(t, dtype);
}

Tensor to(const Tensor& t, DType dtype) {
  detail::check_defined(t, "to");
  if (dtype == t.dtype()) return t;
  Tensor out = copy_as(t, dtype, MemoryFormat::Preserve);
  if (needs_grad(t) && is_floating(dtype)) {
    // out = t.to(dtype)  =>  dt = dout.to(t.dtype)
    record(out, "ToCopyBackward0", {t}, [from = t.dtype()](const Tensor& g) -> Grads { return {g.to(from)}; },
           [&](const Tangents& d) { return d[0].to(dtype); });  // jvp: dout = dt.to(dtype)
  }
  return out;
}

Tensor clone(const Tensor& t, MemoryFormat memory_format) {
  detail::check_defined(t, "clone");
  Tensor out = copy_as(t, t.dtype(), memory_format);
  // out = clone(t)  =>  dt = dout
  // jvp: dout = clone(dt), in out's layout
  if (needs_grad(t)) {
    record(out, "CloneBackward0", {t}, [](const Tensor& g) -> Grads { return {g}; },
           [&](const Tangents& d) { return clone(d[0], memory_format); });
  }
  return out;
}

Tensor contiguous(const Tensor& t) {
  detail::check_defined(t, "contiguous");
  return t.is_contiguous() ? t : clone(t, MemoryFormat::Contiguous);
}

}  // namespace ag
