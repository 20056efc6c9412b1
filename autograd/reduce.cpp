// Reductions: sum, mean, max and min (with indices), argmax, argmin, prod, var, std, logsumexp,
// norm, cumsum, and sum_to (the gradient of broadcasting). The rules are written in ag ops; the
// loops (forwards, and the rules of max(dim), min(dim) and prod as loops for when nothing is
// recorded) are in kernels/reduce.cpp.
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "autograd/kernels/common.h"
#include "autograd/kernels/reduce.h"
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

int64_t reduced_count(const Size& s, const DimVector& m) {
  uint64_t n = 1;  // modulo 2^64, as Size::numel: exact for any tensor, even an empty one with huge dims
  for (int64_t i = 0; i < s.size(); ++i)
    if (m[static_cast<std::size_t>(i)]) n *= static_cast<uint64_t>(s[i]);
  return static_cast<int64_t>(n);
}

// The dims where m is 1, as a list (for mean(x, dims, keepdim) in the rules).
DimVector dims_of(const DimVector& m) {
  DimVector d;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i]) d.push_back(static_cast<int64_t>(i));
  return d;
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

Tensor reduce_sum(const Tensor& t, const DimVector& dims, bool keepdim, bool is_mean, const char* name) {
  detail::check_defined(t, is_mean ? "mean" : "sum");
  const char* op = is_mean ? "mean" : "sum";
  if (is_mean && !is_floating(t.dtype())) {
    throw std::invalid_argument("[mean] could not infer output dtype: input dtype must be floating point, got " + dtype_name(t.dtype()));
  }
  const DimVector m = reduced_mask(t, dims, op);
  const int64_t count = reduced_count(t.shape(), m);
  const Size ks = keep_shape(t.shape(), m);
  Tensor out = kernels::sum(t, m, ks);
  if (is_mean) {
    NoGradGuard g;
    out = div(out, static_cast<double>(count));
  }
  if (!keepdim) out = detail::alias(out, drop_shape(t.shape(), m), contiguous_strides(drop_shape(t.shape(), m)), 0);
  if (needs_grad(t)) {
    // out = sum(t over dims) [/ count]  =>  dt = g (reshaped to keepdim) expanded to t's shape [/ count]
    record(out, name, {t}, [ks, from = t.shape(), is_mean, count](const Tensor& g) -> Grads {
      Tensor e = expand(reshape(g, ks.vec()), from.vec());
      return {is_mean ? div(e, static_cast<double>(count)) : e};
    },
    // jvp: the same reduction of the tangent, dout = sum(dt over dims) [/ count]
    [&](const Tangents& d) { return is_mean ? mean(d[0], dims, keepdim) : sum(d[0], dims, keepdim); });
  }
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

namespace {

// out = max(t) or min(t)  =>  dt = g / k at each of the k positions equal to out (the NaNs, if out
// is NaN), 0 elsewhere: tied extremes share the gradient evenly (PyTorch's evenly_distribute_backward)
Tensor extreme_all(const Tensor& t, bool is_min) {
  const char* op = is_min ? "min" : "max";
  detail::check_defined(t, op);
  if (t.numel() == 0) {
    throw std::invalid_argument(std::string("[") + op + "] expected a non-empty tensor: " + op +
                                "() of an empty tensor (shape " + t.shape().str() + ") has no identity; use " + op +
                                "(dim) on a non-empty dim");
  }
  Tensor out = is_min ? kernels::min(t) : kernels::max(t);
  if (needs_grad(t)) {
    record(out, is_min ? "MinBackward1" : "MaxBackward1", {t},
           [st = SavedTensor(t), so = SavedTensor(out, /*is_output=*/true)](const Tensor& g) -> Grads {
             const Tensor x = st.get(), y = so.get();
             Tensor hit = (std::isnan(y.item()) ? logical_not(eq(x, x)) : eq(x, y)).to(g.dtype());
             return {mul(hit, div(g, sum(hit)))};
           },
           // jvp: dout = the mean of dt over the k extreme positions
           [&](const Tangents& d) {
             const Tensor hit = (std::isnan(out.item()) ? logical_not(eq(t, t)) : eq(t, out)).to(d[0].dtype());
             return div(sum(mul(hit, d[0])), sum(hit));
           });
  }
  return out;
}

// values = t.max(dim) or t.min(dim)  =>  dt = g at each row's index along dim, 0 elsewhere (the
// first extreme of a row takes it all; PyTorch's value_selecting_reduction_backward)
std::pair<Tensor, Tensor> extreme_dim(const Tensor& t, int64_t dim, bool keepdim, bool is_min) {
  const char* op = is_min ? "min" : "max";
  const char* name = is_min ? "MinBackward0" : "MaxBackward0";
  detail::check_defined(t, op);
  dim = wrap_dim(dim, t.dim(), op, t.shape());  // a 0-dim tensor takes dims -1 and 0
  if (t.dim() == 0) {  // its own extreme, at index 0
    Tensor values = detail::make_tensor(t.shape(), t.dtype());  // a copy, as PyTorch's
    detail::copy_into(values, t);
    if (needs_grad(t)) {
      record(values, name, {t}, [](const Tensor& g) -> Grads { return {g}; }, [](const Tangents& d) { return d[0]; });
    }
    return {values, zeros({}, kInt64)};
  }
  const int64_t n = t.shape()[dim];
  if (n == 0) detail::shape_error(op, "cannot reduce over zero-size dim " + std::to_string(dim) + " of shape " + t.shape().str());
  // (not a structured binding: clang 14 cannot capture one in a lambda)
  std::pair<Tensor, Tensor> vi = is_min ? kernels::min(t, dim, keepdim) : kernels::max(t, dim, keepdim);
  Tensor &values = vi.first, &indices = vi.second;
  if (needs_grad(t)) {
    record(values, name, {t}, [si = SavedTensor(indices), from = t.shape(), dim, keepdim](const Tensor& g) -> Grads {
      const Tensor gi = keepdim ? g : unsqueeze(g, dim), idx = keepdim ? si.get() : unsqueeze(si.get(), dim);
      if (!needs_grad(g)) return {kernels::value_selecting_backward(gi, idx, from, dim)};
      DimVector along(static_cast<std::size_t>(from.size()), 1);  // positions 0..n-1 along dim
      along[static_cast<std::size_t>(dim)] = from[dim];
      const Tensor hit = eq(arange(static_cast<double>(from[dim])).view(along), idx);
      return {masked_fill(expand(gi, from.vec()), logical_not(hit), 0.0)};
    },
    // jvp: dvalues = dt at each row's index along dim
    [&](const Tangents& d) {
      const Tensor picked = gather(d[0], dim, keepdim ? indices : unsqueeze(indices, dim));
      return keepdim ? picked : squeeze(picked, dim);
    });
  }
  return {values, indices};
}

}  // namespace

Tensor max(const Tensor& t) { return extreme_all(t, false); }
Tensor min(const Tensor& t) { return extreme_all(t, true); }
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) { return extreme_dim(t, dim, keepdim, false); }
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) { return extreme_dim(t, dim, keepdim, true); }

Tensor argmax(const Tensor& t, int64_t dim, bool keepdim) {
  NoGradGuard g;
  return max(t, dim, keepdim).second;
}

Tensor argmin(const Tensor& t, int64_t dim, bool keepdim) {
  NoGradGuard g;
  return min(t, dim, keepdim).second;
}

// ---- prod ----

namespace {

// prod_{j != i} x_j for every i along the reduced dims (all of x's dims, or `dim`), in ag ops so it
// can be differentiated again, and exact with any number of zeros in x: each row x (n) becomes the
// (n, n) matrix X[i, j] = x_j with its diagonal set to 1, whose row products are wanted. It costs
// n^2 per row; prod's rule takes it only when recording a graph through a product with zeros.
Tensor prod_of_others(const Tensor& x, std::optional<int64_t> dim) {
  const Tensor rows = dim ? transpose(x, *dim, -1) : reshape(x, {1, x.numel()});  // (..., n)
  const int64_t n = rows.size(-1);
  DimVector square = rows.shape().vec();
  square.insert(square.end() - 1, n);  // (..., n, n)
  const Tensor positions = arange(static_cast<double>(n));
  const Tensor diagonal = eq(positions.view({n, 1}), positions.view({1, n}));
  const Tensor others = prod(masked_fill(expand(unsqueeze(rows, -2), square), diagonal, 1.0), -1);
  return dim ? transpose(others, *dim, -1) : reshape(others, x.shape().vec());
}

Tensor prod_impl(const Tensor& t, std::optional<int64_t> dim, bool keepdim, const char* name) {
  detail::check_defined(t, "prod");
  const DimVector m = reduced_mask(t, dim ? DimVector{*dim} : DimVector{}, "prod");
  const Size ks = keep_shape(t.shape(), m);
  Tensor out = kernels::prod(t, m, ks);
  if (!keepdim) out = detail::alias(out, drop_shape(t.shape(), m), contiguous_strides(drop_shape(t.shape(), m)), 0);
  if (needs_grad(t)) {
    if (dim) dim = wrap_dim(*dim, t.dim(), "prod", t.shape());
    if (t.dim() == 0) dim.reset();
    // out = prod(x)  =>  dx_i = g * prod_{j != i} x_j, which is g * out / x_i when x has no zero
    record(out, name, {t}, [st = SavedTensor(t), so = SavedTensor(out, /*is_output=*/true), m, ks, dim](const Tensor& g) -> Grads {
      const Tensor x = st.get(), gk = reshape(g, ks.vec());
      if (!needs_grad(g, x)) return {kernels::prod_backward(gk, x, m)};
      bool has_zero = false;
      {
        NoGradGuard ng;
        has_zero = sum(eq(x, 0.0)).item() > 0;
      }
      if (!has_zero) return {mul(gk, div(reshape(so.get(), ks.vec()), x))};
      return {mul(gk, prod_of_others(x, dim))};
    },
    // jvp: dout = sum_i dx_i prod_{j != i} x_j over the reduced dims
    [&](const Tangents& d) {
      bool has_zero = false;
      {
        NoGradGuard ng;
        has_zero = sum(eq(t, 0.0)).item() > 0;
      }
      const Tensor others = has_zero ? prod_of_others(t, dim) : div(reshape(out, ks.vec()), t);
      return sum(mul(others, d[0]), dims_of(m), keepdim);
    });
  }
  return out;
}

}  // namespace

Tensor prod(const Tensor& t) { return prod_impl(t, std::nullopt, false, "ProdBackward0"); }
Tensor prod(const Tensor& t, int64_t dim, bool keepdim) { return prod_impl(t, dim, keepdim, "ProdBackward1"); }

// ---- var, std ----

namespace {

void check_floating(const Tensor& t, const char* op, const char* what) {
  if (!is_floating(t.dtype())) {
    throw std::invalid_argument(std::string("[") + op + "] " + what + ", got " + dtype_name(t.dtype()) + " of shape " +
                                t.shape().str());
  }
}

// var(x) = sum((x - mean)^2) / (n - c)  =>  dx = 2 / (n - c) * g * (x - mean(x))
// (with n - c <= 0 the factor is inf or negative, as in PyTorch's var_backward)
Tensor var_rule(const Tensor& gk, const Tensor& x, const DimVector& m, int64_t n, int64_t correction) {
  return mul(mul(gk, 2.0 / (static_cast<double>(n) - static_cast<double>(correction))), sub(x, mean(x, dims_of(m), true)));
}

Tensor var_std(const Tensor& t, const std::optional<DimVector>& dims, std::optional<int64_t> correction_opt, bool keepdim,
               bool is_std) {
  const char* op = is_std ? "std" : "var";
  detail::check_defined(t, op);
  check_floating(t, op, "std and var only support floating point dtypes");
  const DimVector m = reduced_mask(t, dims.value_or(DimVector{}), op);
  const int64_t correction = correction_opt.value_or(1), n = reduced_count(t.shape(), m);
  const Size ks = keep_shape(t.shape(), m);
  Tensor out = kernels::var(t, m, ks, correction);
  if (is_std) {
    NoGradGuard g;
    out = sqrt(out);
  }
  if (!keepdim) out = detail::alias(out, drop_shape(t.shape(), m), contiguous_strides(drop_shape(t.shape(), m)), 0);
  if (needs_grad(t)) {
    if (!is_std) {
      record(out, "VarBackward0", {t}, [st = SavedTensor(t), m, ks, n, correction](const Tensor& g) -> Grads {
        return {var_rule(reshape(g, ks.vec()), st.get(), m, n, correction)};
      },
      // jvp: dout = sum(2 / (n - c) (x - mean(x)) dx) over the reduced dims
      [&](const Tangents& d) { return sum(mul(var_rule(ones(ks.vec(), t.dtype()), t, m, n, correction), d[0]), dims_of(m), keepdim); });
    } else {
      // std = sqrt(var)  =>  dx = var's rule with g / (2 std), and 0 where std is 0 (PyTorch's std_backward)
      record(out, "StdBackward0", {t},
             [st = SavedTensor(t), so = SavedTensor(out, /*is_output=*/true), m, ks, n, correction](const Tensor& g) -> Grads {
               const Tensor yk = reshape(so.get(), ks.vec());
               const Tensor gv = masked_fill(div(reshape(g, ks.vec()), mul(yk, 2.0)), eq(yk, 0.0), 0.0);
               return {var_rule(gv, st.get(), m, n, correction)};
             },
             // jvp: dout = sum(var's weight / (2 std) dx), 0 where std is 0
             [&](const Tangents& d) {
               const Tensor yk = reshape(out, ks.vec());
               const Tensor w = var_rule(masked_fill(rdiv(mul(yk, 2.0), 1.0), eq(yk, 0.0), 0.0), t, m, n, correction);
               return sum(mul(w, d[0]), dims_of(m), keepdim);
             });
    }
  }
  return out;
}

}  // namespace

Tensor var(const Tensor& t, bool unbiased) { return var_std(t, std::nullopt, unbiased ? 1 : 0, false, false); }
Tensor var(const Tensor& t, int dim) { return var_std(t, DimVector{dim}, 1, false, false); }
Tensor var(const Tensor& t, const DimVector& dims, bool unbiased, bool keepdim) {
  return var_std(t, dims, unbiased ? 1 : 0, keepdim, false);
}
Tensor var(const Tensor& t, std::optional<DimVector> dims, std::optional<int64_t> correction, bool keepdim) {
  return var_std(t, dims, correction, keepdim, false);
}
Tensor std(const Tensor& t, bool unbiased) { return var_std(t, std::nullopt, unbiased ? 1 : 0, false, true); }
Tensor std(const Tensor& t, int dim) { return var_std(t, DimVector{dim}, 1, false, true); }
Tensor std(const Tensor& t, const DimVector& dims, bool unbiased, bool keepdim) {
  return var_std(t, dims, unbiased ? 1 : 0, keepdim, true);
}
Tensor std(const Tensor& t, std::optional<DimVector> dims, std::optional<int64_t> correction, bool keepdim) {
  return var_std(t, dims, correction, keepdim, true);
}

// ---- logsumexp ----

Tensor logsumexp(const Tensor& t0, const DimVector& dims, bool keepdim) {
  detail::check_defined(t0, "logsumexp");
  if (dims.empty()) {
    throw std::invalid_argument("[logsumexp] expected at least one dim to reduce, got an empty list (shape " +
                                t0.shape().str() + ")");
  }
  // integers and bool are computed in the default dtype, float32, as in PyTorch
  const Tensor t = is_floating(t0.dtype()) ? t0 : t0.to(kFloat32);
  const DimVector m = reduced_mask(t, dims, "logsumexp");
  const Size ks = keep_shape(t.shape(), m);
  Tensor out = kernels::logsumexp(t, m, ks);
  if (!keepdim) out = detail::alias(out, drop_shape(t.shape(), m), contiguous_strides(drop_shape(t.shape(), m)), 0);
  if (needs_grad(t)) {
    // y = log(sum(exp(x)))  =>  dx = g * exp(x - y)
    record(out, "LogsumexpBackward0", {t}, [st = SavedTensor(t), so = SavedTensor(out, /*is_output=*/true), ks](const Tensor& g) -> Grads {
      return {mul(reshape(g, ks.vec()), exp(sub(st.get(), reshape(so.get(), ks.vec()))))};
    },
    // jvp: dy = sum(exp(x - y) dx) over the reduced dims (softmax-weighted tangent)
    [&](const Tangents& d) { return sum(mul(exp(sub(t, reshape(out, ks.vec()))), d[0]), dims_of(m), keepdim); });
  }
  return out;
}

// ---- cumsum ----

Tensor cumsum(const Tensor& t, int64_t dim) {
  detail::check_defined(t, "cumsum");
  dim = wrap_dim(dim, t.dim(), "cumsum", t.shape());
  Tensor out = kernels::cumsum(t, dim);
  if (needs_grad(t)) {
    // y_i = sum_{j <= i} x_j  =>  dx_j = sum_{i >= j} g_i, the cumsum of g from the end
    record(out, "CumsumBackward0", {t}, [dim, scalar = t.dim() == 0](const Tensor& g) -> Grads {
      if (scalar) return {g};
      return {flip(cumsum(flip(g, {dim}), dim), {dim})};
    },
    [&](const Tangents& d) { return t.dim() == 0 ? d[0] : cumsum(d[0], dim); });  // jvp: dy = cumsum(dx)
  }
  return out;
}

// ---- norm ----

namespace {

// sgn(x): -1, 0 or 1, a constant (no history): |x| = x * sgn(x) has PyTorch's gradient g * sgn(x).
Tensor sgn(const Tensor& x) { return sub(gt(x, 0.0).to(x.dtype()), lt(x, 0.0).to(x.dtype())); }

// y = (sum |x|^p)^(1/p) over the reduced dims (y, g in keepdim layout)  =>  PyTorch's norm_backward:
//   p = 0:      no gradient (undefined, as PyTorch's: a count has none)
//   p = 1:      dx = g * sgn(x)
//   p = 2:      dx = g * x / y, 0 where y = 0
//   p = +-inf:  dx = g * sgn(x) / k at the k positions where |x| = y (or is NaN), 0 elsewhere
//   p < 1:      dx = g * sgn(x) |x|^(p-1) * y^(1-p), 0 where x = 0
//   p < 2:      dx = sgn(x) |x|^(p-1) * g / y^(p-1), 0 where y = 0
//   otherwise:  dx = x |x|^(p-2) * g / y^(p-1), 0 where y = 0
Tensor norm_rule(const Tensor& g, const Tensor& x, const Tensor& y, double p, const DimVector& m) {
  if (p == 0) return Tensor();
  const Tensor s = sgn(x);
  if (p == 1) return mul(g, s);
  if (p == 2) return mul(g, masked_fill(div(x, y), eq(y, 0.0), 0.0));
  const Tensor ax = mul(x, s);
  if (std::isinf(p)) {
    const Tensor hit = logical_or(eq(ax, y), logical_not(eq(ax, ax))).to(x.dtype());
    return mul(s, mul(div(g, sum(hit, dims_of(m), true)), hit));
  }
  if (p < 1) return mul(mul(mul(s, masked_fill(pow(ax, p - 1), eq(x, 0.0), 0.0)), g), pow(y, 1 - p));
  const Tensor scale = masked_fill(div(g, pow(y, p - 1)), eq(y, 0.0), 0.0);
  return mul(p < 2 ? mul(s, pow(ax, p - 1)) : mul(x, pow(ax, p - 2)), scale);
}

Tensor norm_impl(const Tensor& t, double p, const DimVector& dims, bool keepdim) {
  detail::check_defined(t, "norm");
  check_floating(t, "norm", "input dtype should be either floating point or complex");
  const DimVector m = reduced_mask(t, dims, "norm");
  const Size ks = keep_shape(t.shape(), m);
  Tensor out = kernels::norm(t, m, ks, p);
  if (!keepdim) out = detail::alias(out, drop_shape(t.shape(), m), contiguous_strides(drop_shape(t.shape(), m)), 0);
  if (needs_grad(t)) {
    record(out, "NormBackward1", {t}, [st = SavedTensor(t), so = SavedTensor(out, /*is_output=*/true), p, m, ks](const Tensor& g) -> Grads {
      return {norm_rule(reshape(g, ks.vec()), st.get(), reshape(so.get(), ks.vec()), p, m)};
    },
    // jvp: dy = sum(w dx) over the reduced dims, w the rule's weight (g = 1); none for p = 0
    [&](const Tangents& d) {
      const Tensor yk = reshape(out, ks.vec());
      const Tensor w = norm_rule(ones_like(yk), t, yk, p, m);
      return w.defined() ? sum(mul(w, d[0]), dims_of(m), keepdim) : Tensor();
    });
  }
  return out;
}

}  // namespace

Tensor norm(const Tensor& t, double p) { return norm_impl(t, p, {}, false); }
Tensor norm(const Tensor& t, double p, const DimVector& dims, bool keepdim) { return norm_impl(t, p, dims, keepdim); }

}  // namespace ag
