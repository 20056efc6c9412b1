// Kernels of the gathers and their scatter; their rules and formulas are in index.cpp.
#include "autograd/kernels/index.h"

#include <algorithm>

#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag::kernels {

namespace {

// out[.., idx[j], ..] += alpha * src[.., j, ..] over a contiguous out (the scatter of index_add,
// and the backward of gather).
void scatter_add_into(Tensor& out, const Tensor& src0, int64_t dim, const std::vector<int64_t>& idx, double alpha = 1.0) {
  const Tensor src = src0.contiguous();
  const Size& shape = out.shape();
  const int64_t n = shape[dim], k = static_cast<int64_t>(idx.size());
  int64_t in = 1, outer = 1;
  for (int64_t d = dim + 1; d < shape.size(); ++d) in *= shape[d];
  for (int64_t d = 0; d < dim; ++d) outer *= shape[d];
  dispatch_float(out.dtype(), "index_add", [&]<typename T>() {
    const T* pg = src.data_ptr<T>();
    T* po = out.data_ptr<T>();
    const T a = static_cast<T>(alpha);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < k; ++j) {
        T* dst = po + (o * n + idx[static_cast<std::size_t>(j)]) * in;
        const T* s = pg + (o * k + j) * in;
        if (a == T(1))
          for (int64_t e = 0; e < in; ++e) dst[e] += s[e];
        else
          for (int64_t e = 0; e < in; ++e) dst[e] += a * s[e];
      }
  });
}

}  // namespace

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

Tensor index_add(const Tensor& t, int64_t dim, const std::vector<int64_t>& idx, const Tensor& source, double alpha) {
  Tensor out = detail::make_tensor(t.shape(), t.dtype());
  detail::copy_into(out, t);
  scatter_add_into(out, source, dim, idx, alpha);
  return out;
}

Tensor scatter_add(const Tensor& g, const Size& shape, int64_t dim, const std::vector<int64_t>& idx) {
  Tensor out = zeros(shape.vec(), g.dtype());
  scatter_add_into(out, g, dim, idx);
  return out;
}

}  // namespace ag::kernels
