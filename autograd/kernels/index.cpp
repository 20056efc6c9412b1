// Kernels of the gathers and their scatter; their rules and formulas are in index.cpp.
#include "autograd/kernels/index.h"

#include <algorithm>
#include <type_traits>

#include "autograd/kernels/common.h"

namespace ag::kernels {

namespace {

// out[.., idx[j], ..] += alpha * src[.., j, ..] over a contiguous out (the scatter of index_add,
// and the backward of gather).
void scatter_add_into(Tensor& out, const Tensor& src0, int64_t dim, const std::vector<int64_t>& idx, double alpha = 1.0) {
  if (src0.numel() == 0) return;  // nothing to add (and the loop counts below may be huge)
  const Tensor src = detail::contiguous_values(src0);
  const Size& shape = out.shape();
  const int64_t n = shape[dim], k = static_cast<int64_t>(idx.size());
  uint64_t uin = 1, uouter = 1;  // modulo 2^64: exact, as src (outer, k, in) is not empty
  for (int64_t d = dim + 1; d < shape.size(); ++d) uin *= static_cast<uint64_t>(shape[d]);
  for (int64_t d = 0; d < dim; ++d) uouter *= static_cast<uint64_t>(shape[d]);
  const auto in = static_cast<int64_t>(uin), outer = static_cast<int64_t>(uouter);
  auto add = [&]<typename T>() {
    const T* pg = src.data_ptr<T>();
    T* po = out.data_ptr<T>();
    const T a = detail::checked_scalar<T>(alpha, "index_add");
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < k; ++j) {
        T* dst = po + (o * n + idx[static_cast<std::size_t>(j)]) * in;
        const T* s = pg + (o * k + j) * in;
        if (a == T(1))
          for (int64_t e = 0; e < in; ++e) dst[e] = detail::wrap_add(dst[e], s[e]);  // integers wrap
        else
          for (int64_t e = 0; e < in; ++e) dst[e] = detail::wrap_add(dst[e], detail::wrap_mul(a, s[e]));
      }
  };
  if (out.dtype() == kInt64) add.template operator()<int64_t>();  // index_add of integers
  else dispatch_float(out.dtype(), "index_add", add);
}

}  // namespace

Tensor gather(const Tensor& src, int64_t dim, const std::vector<int64_t>& idx) {
  const Tensor s = detail::contiguous_values(src);
  Size os = s.shape();
  os[dim] = static_cast<int64_t>(idx.size());
  Tensor out = detail::make_tensor(os, s.dtype());
  if (out.numel() == 0) return out;  // an empty (2^31, 0) result must not loop 2^31 times
  const int64_t n = s.shape()[dim];
  uint64_t uin = 1, uouter = 1;  // modulo 2^64: exact, as out (outer, k, in) is not empty
  for (int64_t d = dim + 1; d < s.dim(); ++d) uin *= static_cast<uint64_t>(s.shape()[d]);
  for (int64_t d = 0; d < dim; ++d) uouter *= static_cast<uint64_t>(s.shape()[d]);
  const auto in = static_cast<int64_t>(uin), outer = static_cast<int64_t>(uouter);
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
  Tensor out = detail::zeros_tensor(shape, g.dtype());
  scatter_add_into(out, g, dim, idx);
  return out;
}

Tensor gather_along(const Tensor& t, int64_t dim, const std::vector<int64_t>& idx, const Size& ishape) {
  Tensor out = detail::make_tensor(ishape, t.dtype());
  Strides ts = t.strides();  // t's strides over ishape, the indexed dim's position added from idx
  const int64_t step = ts[static_cast<std::size_t>(dim)];
  ts[static_cast<std::size_t>(dim)] = 0;
  dispatch_all(t.dtype(), [&]<typename T>() {
    const T* pt = static_cast<const T*>(t.impl()->storage->data);
    T* po = out.data_ptr<T>();
    std::size_t i = 0;
    detail::walk<1>(ishape, {&ts}, {t.storage_offset()}, [&](const std::array<int64_t, 1>& o) {
      po[i] = pt[o[0] + idx[i] * step];
      ++i;
    });
  });
  return out;
}

Tensor scatter_add_along(const Tensor& t, int64_t dim, const std::vector<int64_t>& idx, const Size& ishape, const Tensor& src) {
  Tensor out = detail::make_tensor(t.shape(), t.dtype());
  detail::copy_into(out, t);
  Strides os = out.strides();
  const int64_t step = os[static_cast<std::size_t>(dim)];
  os[static_cast<std::size_t>(dim)] = 0;
  dispatch_all(t.dtype(), [&]<typename T>() {
    const T* ps = static_cast<const T*>(src.impl()->storage->data);
    T* po = out.data_ptr<T>();
    std::size_t i = 0;
    detail::walk<2>(ishape, {&os, &src.strides()}, {0, src.storage_offset()}, [&](const std::array<int64_t, 2>& o) {
      if constexpr (std::is_same_v<T, uint8_t>) po[o[0] + idx[i] * step] |= ps[o[1]];  // bool: or
      else po[o[0] + idx[i] * step] = detail::wrap_add(po[o[0] + idx[i] * step], ps[o[1]]);
      ++i;
    });
  });
  return out;
}

}  // namespace ag::kernels
