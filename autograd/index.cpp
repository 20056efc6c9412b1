// Gathers and their scatters: index_select, embedding and index_add (whole slices along a dim),
// gather and scatter_add (element by element along a dim), masked_select. The backward of a gather
// is a scatter with += (index_add, scatter_add), so an index that appears several times
// accumulates all its gradients, and a scatter's backward is a gather. The rules are written in ag
// ops; the copy loops are in kernels/index.cpp.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/kernels/common.h"
#include "autograd/kernels/index.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

// Index values as int64, each in [0, size).
std::vector<int64_t> checked_indices(const Tensor& index, int64_t size, const char* op, const Size& shape, int64_t dim) {
  if (index.dtype() != kInt64) {
    throw std::invalid_argument(std::string("[") + op + "] expected an int64 index tensor, got " + dtype_name(index.dtype()));
  }
  // as in PyTorch, a negative index is out of range too (it does not count from the end)
  std::vector<int64_t> idx = index.to_vector<int64_t>();
  for (int64_t i : idx) {
    if (i < 0 || i >= size) {
      throw std::out_of_range(std::string("[") + op + "] index out of range in self: index " + std::to_string(i) +
                              " for dim " + std::to_string(dim) + " of size " + std::to_string(size) + " (shape " +
                              shape.str() + ")");
    }
  }
  return idx;
}

Tensor index_tensor(const std::vector<int64_t>& idx) {
  return from_vector(idx, {static_cast<int64_t>(idx.size())});
}

// A 0-dim tensor as 1-D of size 1 (gather and scatter_add take 0-dim tensors as such, as PyTorch).
Tensor at_least_1d(const Tensor& t) { return t.dim() > 0 ? t : detail::alias(t, Size{1}, Strides{1}, t.storage_offset()); }

// gather's and scatter_add's checks (PyTorch's gather_shape_check / scatter_shape_check): index
// int64 with t's number of dims, no larger than t in the other dims (and than src in all dims).
void check_along(const Tensor& t, int64_t dim, const Tensor& index, const Tensor* src, const char* op) {
  if (index.dtype() != kInt64) {
    throw std::invalid_argument(std::string("[") + op + "] expected an int64 index tensor, got " + dtype_name(index.dtype()));
  }
  const Tensor t1 = at_least_1d(t), i1 = at_least_1d(index);
  if (i1.dim() != t1.dim()) {
    detail::shape_error(op, "index tensor must have the same number of dimensions as the input: index " +
                                index.shape().str() + ", input " + t.shape().str());
  }
  bool fits = true;
  for (int64_t d = 0; d < t1.dim(); ++d) {
    if (d != dim && i1.size(d) > t1.size(d)) fits = false;
    if (src && i1.size(d) > at_least_1d(*src).size(d)) fits = false;
  }
  if (!fits) {
    detail::shape_error(op, "index " + index.shape().str() + " must be no larger than input " + t.shape().str() +
                                " apart from dim " + std::to_string(dim) +
                                (src ? " and no larger than src " + src->shape().str() : std::string()));
  }
}

// src's gradient from scatter_add's: gather(g) has index's shape, zero-padded up to src's.
Tensor pad_to(Tensor r, const Size& shape) {
  for (int64_t d = 0; d < r.dim(); ++d) {
    if (r.size(d) == shape[d]) continue;
    Size z = r.shape();
    z[d] = shape[d] - r.size(d);
    r = cat({r, zeros(z.vec(), r.dtype())}, d);
  }
  return r;
}

}  // namespace

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
  detail::check_defined(t, "index_select");
  detail::check_defined(index, "index_select");
  if (index.dim() > 1) detail::shape_error("index_select", "index must be 0-D or 1-D, got shape " + index.shape().str());
  if (t.dim() == 0) detail::shape_error("index_select", "cannot index a 0-dim tensor");
  dim = wrap_dim(dim, t.dim(), "index_select", t.shape());
  auto idx = std::make_shared<std::vector<int64_t>>(checked_indices(index, t.shape()[dim], "index_select", t.shape(), dim));
  Tensor out = kernels::gather(t, dim, *idx);
  if (needs_grad(t)) {
    // out = t.index_select(dim, idx)  =>  dt = index_add(zeros like t, dim, idx, g)
    record(out, "IndexSelectBackward0", {t}, [idx, dim, from = t.shape()](const Tensor& g) -> Grads {
      if (!needs_grad(g)) return {kernels::scatter_add(g, from, dim, *idx)};
      return {index_add(zeros(from.vec(), g.dtype()), dim, index_tensor(*idx), g)};
    },
    [&](const Tangents& d) { return index_select(d[0], dim, index); });  // jvp: dout = dt.index_select(dim, idx)
  }
  return out;
}

Tensor index_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
  detail::check_defined(t, "index_add");
  detail::check_defined(index, "index_add");
  detail::check_defined(source, "index_add");
  if (index.dim() > 1) detail::shape_error("index_add", "index must be 0-D or 1-D, got shape " + index.shape().str());
  // as in PyTorch, a 0-dim input counts as 1-D of size 1, and so does a 0-dim source of a 1-D input
  const Tensor t1 = at_least_1d(t), s1 = t1.dim() == 1 ? at_least_1d(source) : source;
  dim = wrap_dim(dim, t.dim(), "index_add", t.shape());
  Size expect = t1.shape();
  expect[dim] = index.numel();
  if (s1.shape() != expect || source.dtype() != t.dtype() || t.dtype() == kBool) {
    detail::shape_error("index_add", "source of shape " + source.shape().str() + " (" + dtype_name(source.dtype()) +
                                         ") does not fit input " + t.shape().str() + " (" + dtype_name(t.dtype()) +
                                         ") with " + std::to_string(index.numel()) + " indices along dim " +
                                         std::to_string(dim) + "; expected a source of its dtype and shape " + expect.str());
  }
  auto idx = std::make_shared<std::vector<int64_t>>(checked_indices(index, t1.shape()[dim], "index_add", t.shape(), dim));
  Tensor out = kernels::index_add(t1, dim, *idx, s1, alpha);
  if (t.dim() == 0) out = detail::alias(out, t.shape(), t.strides(), 0);
  if (needs_grad(t, source)) {
    // out = t with out[.., idx[j], ..] += alpha source[.., j, ..]  =>  dt = g,
    // dsource = alpha g.index_select(dim, idx)  (through the 1-D forms of a 0-dim t and source)
    const bool gs = source.requires_grad();
    record(out, "IndexAddBackward0", {t, source}, [idx, dim, alpha, gs, ss = source.shape()](const Tensor& g) -> Grads {
      if (!gs) return {g, Tensor()};
      Tensor ds = index_select(g.dim() == 0 ? reshape(g, {1}) : g, dim, index_tensor(*idx));
      if (ds.shape() != ss) ds = reshape(ds, ss.vec());
      if (alpha != 1.0) ds = ds * alpha;
      return {g, ds};
    },
    // jvp: dout = index_add(dt, dim, idx, dsource, alpha), a zero dt or dsource where there is none
    [&](const Tangents& d) {
      const Tensor ds = d[1].defined() ? d[1] : zeros_like(source);
      return index_add(d[0].defined() ? d[0] : zeros_like(t, d[1].dtype()), dim, index, ds.to(d[0].defined() ? d[0].dtype() : ds.dtype()), alpha);
    });
  }
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  detail::check_defined(weight, "embedding");
  detail::check_defined(indices, "embedding");
  if (weight.dim() != 2) detail::shape_error("embedding", "weight must be 2-D (num_embeddings, embedding_dim), got " + weight.shape().str());
  auto idx = std::make_shared<std::vector<int64_t>>(checked_indices(indices, weight.size(0), "embedding", weight.shape(), 0));
  Tensor rows = kernels::gather(weight, 0, *idx);
  Size os = indices.shape();
  os.vec().push_back(weight.size(1));
  Tensor out = detail::alias(rows, os, contiguous_strides(os), 0);
  if (needs_grad(weight)) {
    // out[i..] = weight[indices[i..]]  =>  dweight = index_add(zeros like weight, 0, indices, g as rows)
    record(out, "EmbeddingBackward0", {weight}, [idx, from = weight.shape()](const Tensor& g) -> Grads {
      const Tensor rows = reshape(g, {static_cast<int64_t>(idx->size()), from[1]});
      if (!needs_grad(g)) return {kernels::scatter_add(rows, from, 0, *idx)};
      return {index_add(zeros(from.vec(), g.dtype()), 0, index_tensor(*idx), rows)};
    },
    [&](const Tangents& d) { return embedding(d[0], indices); });  // jvp: dout = dweight[indices]
  }
  return out;
}

Tensor gather(const Tensor& t, int64_t dim, const Tensor& index) {
  detail::check_defined(t, "gather");
  detail::check_defined(index, "gather");
  dim = wrap_dim(dim, t.dim(), "gather", t.shape());
  check_along(t, dim, index, nullptr, "gather");
  const Tensor t1 = at_least_1d(t);
  const std::vector<int64_t> idx = checked_indices(index, t1.size(dim), "gather", t.shape(), dim);
  Tensor out = kernels::gather_along(t1, dim, idx, at_least_1d(index).shape());
  out = detail::alias(out, index.shape(), contiguous_strides(index.shape()), 0);
  if (needs_grad(t)) {
    // out[p] = t[p with coordinate dim = index[p]]  =>  dt = scatter_add(zeros like t, dim, index, g)
    record(out, "GatherBackward0", {t}, [si = SavedTensor(index), dim, from = t.shape()](const Tensor& g) -> Grads {
      return {scatter_add(zeros(from.vec(), g.dtype()), dim, si.get(), g)};
    },
    [&](const Tangents& d) { return gather(d[0], dim, index); });  // jvp: dout = gather(dt, dim, index)
  }
  return out;
}

Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::check_defined(t, "scatter_add");
  detail::check_defined(index, "scatter_add");
  detail::check_defined(src, "scatter_add");
  dim = wrap_dim(dim, t.dim(), "scatter_add", t.shape());
  if (src.dtype() != t.dtype()) {
    throw std::invalid_argument("[scatter_add] expected self.dtype to be equal to src.dtype, got " + dtype_name(t.dtype()) +
                                " and " + dtype_name(src.dtype()));
  }
  check_along(t, dim, index, &src, "scatter_add");
  const Tensor t1 = at_least_1d(t);
  const std::vector<int64_t> idx = checked_indices(index, t1.size(dim), "scatter_add", t.shape(), dim);
  Tensor out = kernels::scatter_add_along(t1, dim, idx, at_least_1d(index).shape(), at_least_1d(src));
  out = detail::alias(out, t.shape(), contiguous_strides(t.shape()), 0);
  if (needs_grad(t, src)) {
    // out = t with out[p with coordinate dim = index[p]] += src[p]  =>  dt = g,
    // dsrc = gather(g, dim, index) (zero where src is larger than index)
    const bool gs = src.requires_grad();
    record(out, "ScatterAddBackward0", {t, src}, [si = SavedTensor(index), dim, gs, from = src.shape()](const Tensor& g) -> Grads {
      return {g, gs ? pad_to(gather(g, dim, si.get()), from) : Tensor()};
    },
    // jvp: dout = scatter_add(dt, dim, index, dsrc), a zero dt or dsrc where there is none
    [&](const Tangents& d) {
      if (!d[1].defined()) return d[0];
      return scatter_add(d[0].defined() ? d[0] : zeros_like(t, d[1].dtype()), dim, index, d[0].defined() ? d[1].to(d[0].dtype()) : d[1]);
    });
  }
  return out;
}

Tensor masked_select(const Tensor& t, const Tensor& mask) {
  detail::check_defined(t, "masked_select");
  detail::check_defined(mask, "masked_select");
  if (mask.dtype() != kBool) {
    throw std::invalid_argument("[masked_select] expected a bool mask, got " + dtype_name(mask.dtype()) + " (use mask.bool_())");
  }
  const Size b = broadcast_shapes(t.shape(), mask.shape(), "masked_select");
  auto pos = std::make_shared<std::vector<int64_t>>();  // flat positions of the true entries of mask broadcast to b
  Tensor flat;
  {
    NoGradGuard g;
    const std::vector<int64_t> m = expand(mask, b.vec()).to_vector<int64_t>();
    for (std::size_t i = 0; i < m.size(); ++i)
      if (m[i]) pos->push_back(static_cast<int64_t>(i));
    flat = reshape(expand(t, b.vec()), {b.numel()});
  }
  Tensor out = kernels::gather(flat, 0, *pos);
  if (needs_grad(t)) {
    // out = t broadcast to b, flattened, at the positions pos  =>
    //   dt = sum_to(index_add(zeros(b.numel()), 0, pos, g) viewed as b, t.shape)
    record(out, "MaskedSelectBackward0", {t}, [pos, b, from = t.shape()](const Tensor& g) -> Grads {
      const Tensor scattered = needs_grad(g) ? index_add(zeros({b.numel()}, g.dtype()), 0, index_tensor(*pos), g)
                                             : kernels::scatter_add(g, Size{b.numel()}, 0, *pos);
      return {sum_to(reshape(scattered, b.vec()), from)};
    },
    [&](const Tangents& d) { return masked_select(d[0], mask); });  // jvp: dout = dt[mask]
  }
  return out;
}

}  // namespace ag
