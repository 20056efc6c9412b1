// Kernels of the reductions; their rules and formulas are in reduce.cpp.
#include "autograd/kernels/reduce.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "autograd/kernels/common.h"

namespace ag::kernels {

namespace {

// Permutes t so that the dims where mask is 0 come first (in order) and those where it is 1 last,
// and makes the result contiguous: rows of length `row_len` (the number of reduced elements), one
// per element of the result, in the row-major order of the kept dims -- the layout of the result
// with or without the reduced dims kept. `perm` is the permutation applied.
Tensor rows_of(const Tensor& t, const DimVector& mask, int64_t& row_len, DimVector* perm = nullptr) {
  DimVector p;
  row_len = 1;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (!mask[static_cast<std::size_t>(d)]) p.push_back(d);
  for (int64_t d = 0; d < t.dim(); ++d)
    if (mask[static_cast<std::size_t>(d)]) {
      p.push_back(d);
      row_len = static_cast<int64_t>(static_cast<uint64_t>(row_len) * static_cast<uint64_t>(t.shape()[d]));  // mod 2^64
    }
  if (perm) *perm = p;
  return detail::contiguous_values(detail::permute_view(t, p));
}

// The inverse of rows_of for a tensor r of the rows' shape: r in the original dim order, contiguous.
Tensor from_rows(const Tensor& r, const DimVector& perm) {
  DimVector inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inv[static_cast<std::size_t>(perm[i])] = static_cast<int64_t>(i);
  return detail::contiguous_values(detail::permute_view(r, inv));
}

DimVector one_dim_mask(int64_t ndim, int64_t dim) {
  DimVector m(static_cast<std::size_t>(ndim), 0);
  m[static_cast<std::size_t>(dim)] = 1;
  return m;
}

// Calls f(row, n, i) for each row of t (see rows_of) with T its element type; i indexes the result.
template <class T, class F>
void for_each_row(const Tensor& rows, int64_t n, int64_t outer, F&& f) {
  const T* p = rows.data_ptr<T>();
  for (int64_t i = 0; i < outer; ++i) f(p + i * n, n, i);
}

// out (keep_shape, t's floating dtype)[i] = f(row i of t, its length), f computing in double.
template <class F>
Tensor float_rows(const Tensor& t, const DimVector& m, const Size& ks, const char* op, F&& f) {
  Tensor out = detail::make_tensor(ks, t.dtype());
  int64_t n = 0;
  const Tensor rows = rows_of(t, m, n);
  dispatch_float(t.dtype(), op, [&]<typename T>() {
    T* q = out.data_ptr<T>();
    for_each_row<T>(rows, n, ks.numel(), [&](const T* row, int64_t len, int64_t i) { q[i] = static_cast<T>(f(row, len)); });
  });
  return out;
}

int64_t reduced_count(const Tensor& t, const DimVector& m) {
  uint64_t n = 1;  // modulo 2^64, as Size::numel: exact for any tensor, even an empty one with huge dims
  for (int64_t d = 0; d < t.dim(); ++d)
    if (m[static_cast<std::size_t>(d)]) n *= static_cast<uint64_t>(t.shape()[d]);
  return static_cast<int64_t>(n);
}

// max (kMin false) or min (kMin true) of a row: the index of the first extreme value, or of the
// first NaN if there is one.
template <bool kMin, class T>
int64_t extreme_index(const T* row, int64_t n) {
  int64_t bi = 0;
  for (int64_t j = 1; j < n; ++j) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(row[bi])) break;
      if (std::isnan(row[j])) return j;
    }
    if (kMin ? row[j] < row[bi] : row[j] > row[bi]) bi = j;
  }
  return bi;
}

template <bool kMin>
Tensor extreme_all(const Tensor& t) {
  return dispatch_all(t.dtype(), [&]<typename T>() {
    const Tensor c = detail::contiguous_values(t);
    const T v = c.data_ptr<T>()[extreme_index<kMin>(c.data_ptr<T>(), c.numel())];
    return detail::scalar_tensor(static_cast<double>(v), t.dtype());
  });
}

template <bool kMin>
std::pair<Tensor, Tensor> extreme_dim(const Tensor& t, int64_t dim, bool keepdim) {
  int64_t n = 0;
  const Tensor rows = rows_of(t, one_dim_mask(t.dim(), dim), n);
  Size rs = t.shape();
  if (keepdim) rs[dim] = 1;
  else rs.vec().erase(rs.vec().begin() + dim);
  Tensor values = detail::make_tensor(rs, t.dtype());
  Tensor indices = detail::make_tensor(rs, kInt64);
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* pv = values.data_ptr<T>();
    int64_t* pi = indices.data_ptr<int64_t>();
    for_each_row<T>(rows, n, rs.numel(), [&](const T* row, int64_t len, int64_t i) {
      pi[i] = extreme_index<kMin>(row, len);
      pv[i] = row[pi[i]];
    });
  });
  return {values, indices};
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
    // a contiguous tensor summed over its leading dims (a bias's gradient): rows of `inner` values
    // added in order into acc, its columns split over ag's threads (each sum in the same order),
    // each thread adding into its own block of sums and writing them to acc once (sums next to
    // another thread's in one cache line moved between the cores on every row: the 2-thread sum
    // of a (4096, 256) gradient took twice the 1-thread one's time); from 4096 elements (below,
    // the walk does the same additions)
    int64_t lead = 0;
    while (lead < t.dim() && m[static_cast<std::size_t>(lead)]) ++lead;
    bool rest_kept = lead > 0;
    for (int64_t d = lead; d < t.dim(); ++d) rest_kept = rest_kept && !m[static_cast<std::size_t>(d)];
    if (rest_kept && t.is_contiguous() && t.numel() >= 4096) {
      const int64_t inner = ks.numel(), rows = inner ? t.numel() / inner : 0;
      const T* base = p + t.storage_offset();
      detail::parallel_lines(inner, rows, [&](int64_t c0, int64_t c1) {
        constexpr int64_t kBlock = 512;  // columns summed at a time, their sums in L1
        Acc mine[kBlock];
        for (int64_t b0 = c0; b0 < c1; b0 += kBlock) {
          const int64_t w = std::min(kBlock, c1 - b0);
          std::fill(mine, mine + w, Acc(0));
          for (int64_t r = 0; r < rows; ++r) {
            const T* row = base + r * inner + b0;
            for (int64_t c = 0; c < w; ++c) mine[c] = detail::wrap_add(mine[c], static_cast<Acc>(row[c]));
          }
          std::copy(mine, mine + w, acc.begin() + b0);
        }
      });
    } else {
      detail::walk<2>(t.shape(), {&t.strides(), &os}, {t.storage_offset(), 0}, [&](const std::array<int64_t, 2>& o) {
        Acc& a = acc[static_cast<std::size_t>(o[1])];
        a = detail::wrap_add(a, static_cast<Acc>(p[o[0]]));  // integers wrap, as PyTorch's
      });
    }
    dispatch_all(out_dt, [&]<typename O>() {
      O* q = out.data_ptr<O>();
      for (std::size_t i = 0; i < acc.size(); ++i) q[i] = static_cast<O>(acc[i]);
    });
  });
  return out;
}

Tensor prod(const Tensor& t, const DimVector& m, const Size& ks) {
  Tensor out = detail::make_tensor(ks, is_floating(t.dtype()) ? t.dtype() : kInt64);
  int64_t n = 0;
  const Tensor rows = rows_of(t, m, n);
  dispatch_all(t.dtype(), [&]<typename T>() {
    using O = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    O* q = out.data_ptr<O>();
    for_each_row<T>(rows, n, ks.numel(), [&](const T* row, int64_t len, int64_t i) {
      Acc acc = 1;
      for (int64_t j = 0; j < len; ++j) acc = detail::wrap_mul(acc, static_cast<Acc>(row[j]));  // integers wrap
      q[i] = static_cast<O>(acc);
    });
  });
  return out;
}

Tensor var(const Tensor& t, const DimVector& m, const Size& ks, int64_t correction) {
  // in double: a correction near INT64_MIN or INT64_MAX must not overflow (PyTorch: 0 or nan)
  const double dof = std::max<double>(0.0, static_cast<double>(reduced_count(t, m)) - static_cast<double>(correction));
  return float_rows(t, m, ks, "var", [&](const auto* row, int64_t len) {
    double mean = 0, ss = 0;
    for (int64_t j = 0; j < len; ++j) mean += row[j];
    mean /= static_cast<double>(len);
    for (int64_t j = 0; j < len; ++j) ss += (row[j] - mean) * (row[j] - mean);
    return ss / dof;
  });
}

Tensor logsumexp(const Tensor& t, const DimVector& m, const Size& ks) {
  return float_rows(t, m, ks, "logsumexp", [](const auto* row, int64_t len) {
    double mx = -INFINITY;
    for (int64_t j = 0; j < len; ++j) mx = std::max<double>(mx, row[j]);
    if (std::isinf(mx)) mx = 0;  // all -inf (or an inf): shift by 0, as PyTorch does
    double s = 0;
    for (int64_t j = 0; j < len; ++j) s += std::exp(row[j] - mx);
    return std::log(s) + mx;
  });
}

Tensor norm(const Tensor& t, const DimVector& m, const Size& ks, double p) {
  return float_rows(t, m, ks, "norm", [p](const auto* row, int64_t len) {
    double acc = 0;
    if (len == 0) return 0.0;
    if (std::isinf(p)) {
      acc = std::abs(static_cast<double>(row[0]));
      for (int64_t j = 1; j < len && !std::isnan(acc); ++j) {
        const double a = std::abs(static_cast<double>(row[j]));
        acc = std::isnan(a) ? a : p > 0 ? std::max(acc, a) : std::min(acc, a);
      }
    } else if (p == 0) {
      for (int64_t j = 0; j < len; ++j) acc += row[j] != 0;
    } else if (p == 1) {
      for (int64_t j = 0; j < len; ++j) acc += std::abs(static_cast<double>(row[j]));
    } else if (p == 2) {
      for (int64_t j = 0; j < len; ++j) acc += static_cast<double>(row[j]) * row[j];
      acc = std::sqrt(acc);
    } else {
      for (int64_t j = 0; j < len; ++j) acc += std::pow(std::abs(static_cast<double>(row[j])), p);
      acc = std::pow(acc, 1.0 / p);
    }
    return acc;
  });
}

Tensor cumsum(const Tensor& t, int64_t dim) {
  const DType out_dt = is_floating(t.dtype()) ? t.dtype() : kInt64;
  if (t.dim() == 0) return detail::contiguous_copy(t, out_dt);
  int64_t n = 0;
  DimVector perm;
  const Tensor rows = rows_of(t, one_dim_mask(t.dim(), dim), n, &perm);
  Tensor r = detail::make_tensor(rows.shape(), out_dt);
  dispatch_all(t.dtype(), [&]<typename T>() {
    using O = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    O* q = r.data_ptr<O>();
    const int64_t outer = n == 0 ? 0 : rows.numel() / n;
    for_each_row<T>(rows, n, outer, [&](const T* row, int64_t len, int64_t i) {
      Acc acc = 0;
      for (int64_t j = 0; j < len; ++j) {
        acc = detail::wrap_add(acc, static_cast<Acc>(row[j]));  // integers wrap, as PyTorch's
        q[i * len + j] = static_cast<O>(acc);
      }
    });
  });
  return from_rows(r, perm);
}

Tensor max(const Tensor& t) { return extreme_all<false>(t); }
Tensor min(const Tensor& t) { return extreme_all<true>(t); }
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) { return extreme_dim<false>(t, dim, keepdim); }
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) { return extreme_dim<true>(t, dim, keepdim); }

Tensor value_selecting_backward(const Tensor& gi, const Tensor& idx, const Size& shape, int64_t dim) {
  Tensor out = detail::zeros_tensor(shape, gi.dtype());
  const Tensor gc = detail::contiguous_values(gi), ic = detail::contiguous_values(idx);
  const Size ks = gc.shape();
  const Strides gs = gc.strides(), os = out.strides();
  dispatch_float(gi.dtype(), "value_selecting_backward", [&]<typename T>() {
    const T* pg = gc.data_ptr<T>();
    const int64_t* pix = ic.data_ptr<int64_t>();
    T* po = out.data_ptr<T>();
    detail::walk<2>(ks, {&os, &gs}, {0, 0}, [&](const std::array<int64_t, 2>& o) {
      po[o[0] + pix[o[1]] * os[static_cast<std::size_t>(dim)]] += pg[o[1]];
    });
  });
  return out;
}

Tensor prod_backward(const Tensor& gi, const Tensor& x, const DimVector& mask) {
  int64_t n = 0;
  DimVector perm;
  const Tensor rows = rows_of(x, mask, n, &perm);
  const Tensor gc = detail::contiguous_values(gi);  // one value per row
  Tensor r = detail::make_tensor(rows.shape(), x.dtype());
  if (r.numel() == 0) return from_rows(r, perm);  // no scratch row of a huge dim for no rows
  dispatch_float(x.dtype(), "prod_backward", [&]<typename T>() {
    const T* pg = gc.data_ptr<T>();
    T* q = r.data_ptr<T>();
    std::vector<T> suffix(static_cast<std::size_t>(n) + 1);
    for_each_row<T>(rows, n, gc.numel(), [&](const T* row, int64_t len, int64_t i) {
      // dx_j = g * (x_0 ... x_{j-1}) * (x_{j+1} ... x_{n-1})
      suffix[static_cast<std::size_t>(len)] = T(1);
      for (int64_t j = len - 1; j >= 0; --j) suffix[static_cast<std::size_t>(j)] = suffix[static_cast<std::size_t>(j + 1)] * row[j];
      T prefix = 1;
      for (int64_t j = 0; j < len; ++j) {
        q[i * len + j] = pg[i] * (prefix * suffix[static_cast<std::size_t>(j + 1)]);
        prefix *= row[j];
      }
    });
  });
  return from_rows(r, perm);
}

}  // namespace ag::kernels
