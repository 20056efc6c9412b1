// Gathers: index_select and embedding. Backward scatters the gradient back with +=, so an index
// that appears several times accumulates all its gradients.
#include <stdexcept>

#include "autograd/kernels.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

// Index values as int64, bounds-checked against `size`.
std::vector<int64_t> checked_indices(const Tensor& index, int64_t size, const char* op, const Size& shape, int64_t dim) {
  if (index.dtype() != kInt64) {
    throw std::invalid_argument(std::string("[") + op + "] expected an int64 index tensor, got " + dtype_name(index.dtype()));
  }
  std::vector<int64_t> idx = index.to_vector<int64_t>();
  for (int64_t& i : idx) {
    if (i < -size || i >= size) {
      throw std::out_of_range(std::string("[") + op + "] index " + std::to_string(i) + " is out of range for dim " +
                              std::to_string(dim) + " of size " + std::to_string(size) + " (shape " + shape.str() + ")");
    }
    if (i < 0) i += size;
  }
  return idx;
}

// src viewed as (outer, n, inner) contiguous -> out (outer, idx.size(), inner).
Tensor gather(const Tensor& src, int64_t dim, const std::vector<int64_t>& idx) {
  NoGradGuard g;
  const Tensor s = src.contiguous();
  Size os = s.shape();
  os[dim] = static_cast<int64_t>(idx.size());
  Tensor out = detail::make_tensor(os, s.dtype());
  const int64_t n = s.shape()[dim];
  int64_t in = 1, outer = 1;
  for (int64_t d = dim + 1; d < s.dim(); ++d) in *= s.shape()[d];
  for (int64_t d = 0; d < dim; ++d) outer *= s.shape()[d];
  const auto k = static_cast<int64_t>(idx.size());
  dispatch_all(s.dtype(), [&]<typename T>() {
    const T* ps = s.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < k; ++j)
        std::copy(ps + (o * n + idx[static_cast<std::size_t>(j)]) * in, ps + (o * n + idx[static_cast<std::size_t>(j)] + 1) * in,
                  po + (o * k + j) * in);
  });
  return out;
}

// The backward of gather: zeros of `shape`, then out[.., idx[j], ..] += g[.., j, ..].
Tensor scatter_add(const Tensor& g0, const Size& shape, int64_t dim, const std::vector<int64_t>& idx) {
  const Tensor g = g0.contiguous();
  Tensor out = zeros(shape.vec(), g.dtype());
  const int64_t n = shape[dim], k = static_cast<int64_t>(idx.size());
  int64_t in = 1, outer = 1;
  for (int64_t d = dim + 1; d < shape.size(); ++d) in *= shape[d];
  for (int64_t d = 0; d < dim; ++d) outer *= shape[d];
  dispatch_float(g.dtype(), "index_backward", [&]<typename T>() {
    const T* pg = g.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < k; ++j) {
        T* dst = po + (o * n + idx[static_cast<std::size_t>(j)]) * in;
        const T* src = pg + (o * k + j) * in;
        for (int64_t e = 0; e < in; ++e) dst[e] += src[e];
      }
  });
  return out;
}

}  // namespace

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
  if (index.dim() > 1) detail::shape_error("index_select", "index must be 0-D or 1-D, got shape " + index.shape().str());
  if (t.dim() == 0) detail::shape_error("index_select", "cannot index a 0-dim tensor");
  dim = wrap_dim(dim, t.dim(), "index_select", t.shape());
  auto idx = std::make_shared<std::vector<int64_t>>(checked_indices(index, t.shape()[dim], "index_select", t.shape(), dim));
  Tensor out = gather(t, dim, *idx);
  if (needs_grad(t)) {
    // out = t.index_select(dim, idx)  =>  dt[.., idx[j], ..] += g[.., j, ..]
    record(out, "IndexSelectBackward0", {t}, [idx, dim, from = t.shape()](const Tensor& g) -> Grads {
      return {scatter_add(g, from, dim, *idx)};
    });
  }
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  if (weight.dim() != 2) detail::shape_error("embedding", "weight must be 2-D (num_embeddings, embedding_dim), got " + weight.shape().str());
  auto idx = std::make_shared<std::vector<int64_t>>(checked_indices(indices, weight.size(0), "embedding", weight.shape(), 0));
  Tensor rows = gather(weight, 0, *idx);
  Size os = indices.shape();
  os.vec().push_back(weight.size(1));
  Tensor out = detail::alias(rows, os, contiguous_strides(os), 0);
  if (needs_grad(weight)) {
    // out[i..] = weight[indices[i..]]  =>  dweight[indices[i..]] += g[i..]
    record(out, "EmbeddingBackward0", {weight}, [idx, from = weight.shape()](const Tensor& g) -> Grads {
      return {scatter_add(reshape(g, {static_cast<int64_t>(idx->size()), from[1]}), from, 0, *idx)};
    });
  }
  return out;
}

}  // namespace ag
