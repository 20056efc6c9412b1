// Kernels of the reductions; their rules and formulas are in reduce.cpp.
#include "autograd/kernels/reduce.h"

#include <cmath>
#include <type_traits>
#include <vector>

#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag::kernels {

namespace {

// Moves `dim` last, keeping the other dims in order, and makes the result contiguous: rows of
// length t.size(dim), in the row-major order of the remaining dims.
Tensor rows_along(const Tensor& t, int64_t dim) {
  NoGradGuard g;
  DimVector perm;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != dim) perm.push_back(d);
  perm.push_back(dim);
  return permute(t, perm).contiguous();
}

}  // namespace

Tensor sum(const Tensor& t, const DimVector& m, const Size& ks) {
  const DType out_dt = is_floating(t.dtype()) ? t.dtype() : kInt64;
  Tensor out = detail::make_tensor(ks, out_dt);
  Strides os = contiguous_strides(ks);
  for (std::size_t i = 0; i < os.size(); ++i)
    if (m[i]) os[i] = 0;
  dispatch_all(t.dtype(), [&]<typename T>() {
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    std::vector<Acc> acc(static_cast<std::size_t>(ks.numel()), Acc(0));
    const T* p = static_cast<const T*>(t.impl()->storage->data);
    detail::walk<2>(t.shape(), {&t.strides(), &os}, {t.storage_offset(), 0},
                    [&](const std::array<int64_t, 2>& o) { acc[static_cast<std::size_t>(o[1])] += static_cast<Acc>(p[o[0]]); });
    dispatch_all(out_dt, [&]<typename O>() {
      O* q = out.data_ptr<O>();
      for (std::size_t i = 0; i < acc.size(); ++i) q[i] = static_cast<O>(acc[i]);
    });
  });
  return out;
}

Tensor max(const Tensor& t) {
  return dispatch_all(t.dtype(), [&]<typename T>() {
    std::vector<T> v = t.to_vector<T>();
    T best = v[0];
    for (T x : v) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x)) { best = x; break; }
      }
      if (x > best) best = x;
    }
    return full({}, static_cast<double>(best), t.dtype());
  });
}

std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  const int64_t n = t.shape()[dim];
  Tensor rows = rows_along(t, dim);
  const int64_t outer = rows.numel() / n;
  // The rows come out in the row-major order of the other dims, which is the layout of the
  // result with or without the reduced dim kept.
  Size rs = t.shape();
  if (keepdim) rs[dim] = 1;
  else rs.vec().erase(rs.vec().begin() + dim);
  Tensor values = detail::make_tensor(rs, t.dtype());
  Tensor indices = detail::make_tensor(rs, kInt64);
  dispatch_all(t.dtype(), [&]<typename T>() {
    const T* p = rows.data_ptr<T>();
    T* pv = values.data_ptr<T>();
    int64_t* pi = indices.data_ptr<int64_t>();
    for (int64_t r = 0; r < outer; ++r) {
      const T* row = p + r * n;
      int64_t bi = 0;
      for (int64_t j = 1; j < n; ++j) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(row[bi])) break;
          if (std::isnan(row[j])) { bi = j; break; }
        }
        if (row[j] > row[bi]) bi = j;
      }
      pv[r] = row[bi];
      pi[r] = bi;
    }
  });
  return {values, indices};
}

Tensor max_backward(const Tensor& gi, const Tensor& idx, const Size& shape, int64_t dim) {
  Tensor out = zeros(shape.vec(), gi.dtype());
  const Tensor gc = gi.contiguous(), ic = idx.contiguous();
  const Size ks = gc.shape();
  const Strides gs = gc.strides(), os = out.strides();
  dispatch_float(gi.dtype(), "max_backward", [&]<typename T>() {
    const T* pg = gc.data_ptr<T>();
    const int64_t* pix = ic.data_ptr<int64_t>();
    T* po = out.data_ptr<T>();
    detail::walk<2>(ks, {&os, &gs}, {0, 0}, [&](const std::array<int64_t, 2>& o) {
      po[o[0] + pix[o[1]] * os[static_cast<std::size_t>(dim)]] += pg[o[1]];
    });
  });
  return out;
}

}  // namespace ag::kernels
