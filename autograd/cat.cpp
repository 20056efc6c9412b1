// cat and stack: join tensors along a dim. Backward hands each input its slice of the gradient.
#include <stdexcept>

#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

Tensor cat(const std::vector<Tensor>& ts, int64_t dim) {
  if (ts.empty()) throw std::invalid_argument("[cat] expected a non-empty list of tensors");
  const Tensor& first = ts[0];
  if (first.dim() == 0) detail::shape_error("cat", "zero-dimensional tensor (at position 0) cannot be concatenated");
  dim = wrap_dim(dim, first.dim(), "cat", first.shape());
  Size out_shape = first.shape();
  out_shape[dim] = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    bool ok = t.dim() == first.dim() && t.dtype() == first.dtype();
    for (int64_t d = 0; ok && d < t.dim(); ++d) ok = d == dim || t.shape()[d] == first.shape()[d];
    if (!ok) {
      detail::shape_error("cat", "tensors must have the same dtype and shape except in dim " + std::to_string(dim) +
                                     ": tensor 0 has shape " + first.shape().str() + " (" + dtype_name(first.dtype()) +
                                     "), tensor " + std::to_string(i) + " has shape " + t.shape().str() + " (" +
                                     dtype_name(t.dtype()) + ")");
    }
    out_shape[dim] = detail::checked_add(out_shape[dim], t.shape()[dim], "cat");
  }
  Tensor out = detail::make_tensor(out_shape, first.dtype(), "cat");
  std::vector<int64_t> starts;
  {
    NoGradGuard g;
    int64_t at = 0;
    for (const Tensor& t : ts) {
      starts.push_back(at);
      detail::copy_into(narrow(out, dim, at, t.shape()[dim]), t);
      at += t.shape()[dim];
    }
  }
  if (needs_grad(ts)) {
    std::vector<int64_t> lens;
    for (const Tensor& t : ts) lens.push_back(t.shape()[dim]);
    // out = cat(ts, dim)  =>  dts[i] = g.narrow(dim, start_i, len_i)
    record(out, "CatBackward0", ts, [starts, lens, dim](const Tensor& g) -> Grads {
      Grads r;
      for (std::size_t i = 0; i < starts.size(); ++i) r.push_back(narrow(g, dim, starts[i], lens[i]));
      return r;
    },
    // jvp: dout = cat(dts, dim), a zero block where an input has no tangent
    [&](const Tangents& d) {
      std::vector<Tensor> parts;
      for (std::size_t i = 0; i < ts.size(); ++i) parts.push_back(d[i].defined() ? d[i] : zeros_like(ts[i]));
      return cat(parts, dim);
    });
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& ts, int64_t dim) {
  if (ts.empty()) throw std::invalid_argument("[stack] expected a non-empty list of tensors");
  dim = wrap_dim(dim, ts[0].dim() + 1, "stack", ts[0].shape());
  for (std::size_t i = 1; i < ts.size(); ++i) {
    if (ts[i].shape() != ts[0].shape()) {
      detail::shape_error("stack", "expects each tensor to be equal size, but got " + ts[0].shape().str() +
                                       " at entry 0 and " + ts[i].shape().str() + " at entry " + std::to_string(i));
    }
  }
  std::vector<Tensor> us;
  for (const Tensor& t : ts) us.push_back(unsqueeze(t, dim));
  Tensor out = cat(us, dim);
  detail::name_node(out, "StackBackward0", nullptr);  // cat's node, as PyTorch names stack's
  return out;
}

}  // namespace ag
