// Reductions: sum, mean, max (with indices), argmax, and sum_to (the gradient of broadcasting).
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

// Which dims a reduction removes (empty `dims` means all), wrapped and de-duplicated.
DimVector reduced_mask(const Tensor& t, const DimVector& dims, const char* op) {
  DimVector m(static_cast<std::size_t>(t.dim()), dims.empty() ? 1 : 0);  // 1 where reduced
  for (int64_t d : dims) {
    auto w = static_cast<std::size_t>(wrap_dim(d, t.dim(), op, t.shape()));
    if (t.dim() == 0) continue;
    if (m[w]) throw std::invalid_argument(std::string("[") + op + "] dim " + std::to_string(d) + " appears multiple times in the list of dims");
    m[w] = 1;
  }
  return m;
}

Size keep_shape(const Size& s, const DimVector& m) {
  Size k = s;
  for (int64_t i = 0; i < s.size(); ++i)
    if (m[static_cast<std::size_t>(i)]) k[i] = 1;
  return k;
}

Size drop_shape(const Size& s, const DimVector& m) {
  Size k;
  for (int64_t i = 0; i < s.size(); ++i)
    if (!m[static_cast<std::size_t>(i)]) k.vec().push_back(s[i]);
  return k;
}

// Sum over the masked dims into a tensor of keep_shape; float32 accumulates in double.
Tensor sum_kernel(const Tensor& t, const DimVector& m) {
  const Size ks = keep_shape(t.shape(), m);
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

Tensor reduce_sum(const Tensor& t, const DimVector& dims, bool keepdim, bool is_mean, const char* name) {
  const char* op = is_mean ? "mean" : "sum";
  if (is_mean && !is_floating(t.dtype())) {
    throw std::invalid_argument("[mean] could not infer output dtype: input dtype must be floating point, got " + dtype_name(t.dtype()));
  }
  const DimVector m = reduced_mask(t, dims, op);
  int64_t count = 1;
  for (int64_t i = 0; i < t.dim(); ++i)
    if (m[static_cast<std::size_t>(i)]) count *= t.shape()[i];
  Tensor out = sum_kernel(t, m);
  if (is_mean) {
    NoGradGuard g;
    out = div(out, static_cast<double>(count));
  }
  const Size ks = keep_shape(t.shape(), m);
  if (!keepdim) out = detail::alias(out, drop_shape(t.shape(), m), contiguous_strides(drop_shape(t.shape(), m)), 0);
  if (needs_grad(t)) {
    // out = sum(t over dims) [/ count]  =>  dt = g (reshaped to keepdim) expanded to t's shape [/ count]
    record(out, name, {t}, [ks, from = t.shape(), is_mean, count](const Tensor& g) -> Grads {
      Tensor e = expand(reshape(g, ks.vec()), from.vec());
      return {is_mean ? div(e, static_cast<double>(count)) : e};
    });
  }
  return out;
}

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

// max(dim)'s backward as one loop: zeros of `shape` with gi (keepdim layout) placed at the
// positions idx picks along dim.
Tensor max_backward_kernel(const Tensor& gi, const Tensor& idx, const Size& shape, int64_t dim) {
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

}  // namespace

Tensor sum(const Tensor& t) { return reduce_sum(t, {}, false, false, "SumBackward0"); }
Tensor sum(const Tensor& t, const DimVector& dims, bool keepdim) {
  return reduce_sum(t, dims, keepdim, false, "SumBackward1");
}
Tensor mean(const Tensor& t) { return reduce_sum(t, {}, false, true, "MeanBackward0"); }
Tensor mean(const Tensor& t, const DimVector& dims, bool keepdim) {
  return reduce_sum(t, dims, keepdim, true, "MeanBackward1");
}

Tensor sum_to(const Tensor& grad, const Size& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t lead = grad.dim() - shape.size();
  if (lead < 0) detail::shape_error("sum_to", "cannot reduce shape " + grad.shape().str() + " to " + shape.str());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < grad.dim(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && grad.shape()[i] != 1)) dims.push_back(i);
  }
  Tensor s = dims.empty() ? grad : sum(grad, dims, true);
  return reshape(s, shape.vec());
}

Tensor max(const Tensor& t) {
  if (t.numel() == 0) {
    throw std::invalid_argument("[max] expected a non-empty tensor: max() of an empty tensor (shape " + t.shape().str() +
                                ") has no identity; use max(dim) on a non-empty dim");
  }
  Tensor out = dispatch_all(t.dtype(), [&]<typename T>() {
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
  if (needs_grad(t)) {
    // out = max(t)  =>  dt = g / k at each of the k positions equal to the max, 0 elsewhere
    record(out, "MaxBackward1", {t}, [st = SavedTensor(t), so = SavedTensor(out, /*is_output=*/true)](const Tensor& g) -> Grads {
      Tensor hit = eq(st.get(), so.get()).to(g.dtype());
      return {mul(hit, div(g, sum(hit)))};
    });
  }
  return out;
}

std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  if (t.dim() == 0) {
    Tensor idx = zeros({}, kInt64);
    return {t, idx};
  }
  dim = wrap_dim(dim, t.dim(), "max", t.shape());
  const int64_t n = t.shape()[dim];
  if (n == 0) detail::shape_error("max", "cannot reduce over zero-size dim " + std::to_string(dim) + " of shape " + t.shape().str());
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
  if (needs_grad(t)) {
    // values = t.max(dim)  =>  dt = g at each row's argmax along dim, 0 elsewhere
    record(values, "MaxBackward0", {t}, [si = SavedTensor(indices), from = t.shape(), dim, keepdim](const Tensor& g) -> Grads {
      const Tensor gi = keepdim ? g : unsqueeze(g, dim), idx = keepdim ? si.get() : unsqueeze(si.get(), dim);
      if (!needs_grad(g)) return {max_backward_kernel(gi, idx, from, dim)};
      DimVector along(static_cast<std::size_t>(from.size()), 1);  // positions 0..n-1 along dim
      along[static_cast<std::size_t>(dim)] = from[dim];
      const Tensor hit = eq(arange(static_cast<double>(from[dim])).view(along), idx);
      return {masked_fill(expand(gi, from.vec()), logical_not(hit), 0.0)};
    });
  }
  return {values, indices};
}

Tensor argmax(const Tensor& t, int64_t dim, bool keepdim) {
  NoGradGuard g;
  return max(t, dim, keepdim).second;
}

}  // namespace ag
