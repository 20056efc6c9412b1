// Gathers and their scatter: index_select, embedding and index_add. The backward of a gather is
// an index_add (a scatter with +=, so an index that appears several times accumulates all its
// gradients), and index_add's backward is a gather. The rules are written in ag ops; the copy
// loops are in kernels/index.cpp.
#include <stdexcept>
#include <string>

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

}  // namespace

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
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
    });
  }
  return out;
}

Tensor index_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
  if (index.dim() > 1) detail::shape_error("index_add", "index must be 0-D or 1-D, got shape " + index.shape().str());
  if (t.dim() == 0) detail::shape_error("index_add", "cannot index a 0-dim tensor");
  dim = wrap_dim(dim, t.dim(), "index_add", t.shape());
  Size expect = t.shape();
  expect[dim] = index.numel();
  if (source.shape() != expect || source.dtype() != t.dtype() || !t.is_floating_point()) {
    detail::shape_error("index_add", "source of shape " + source.shape().str() + " (" + dtype_name(source.dtype()) +
                                         ") does not fit input " + t.shape().str() + " (" + dtype_name(t.dtype()) +
                                         ") with " + std::to_string(index.numel()) + " indices along dim " +
                                         std::to_string(dim) + "; expected a floating source of shape " + expect.str());
  }
  auto idx = std::make_shared<std::vector<int64_t>>(checked_indices(index, t.shape()[dim], "index_add", t.shape(), dim));
  Tensor out = kernels::index_add(t, dim, *idx, source, alpha);
  if (needs_grad(t, source)) {
    // out = t with out[.., idx[j], ..] += alpha source[.., j, ..]  =>  dt = g,
    // dsource = alpha g.index_select(dim, idx)
    const bool gs = source.requires_grad();
    record(out, "IndexAddBackward0", {t, source}, [idx, dim, alpha, gs](const Tensor& g) -> Grads {
      Tensor ds = gs ? index_select(g, dim, index_tensor(*idx)) : Tensor();
      if (ds.defined() && alpha != 1.0) ds = ds * alpha;
      return {g, ds};
    });
  }
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
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
    });
  }
  return out;
}

}  // namespace ag
