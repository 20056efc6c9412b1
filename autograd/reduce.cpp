// Reductions: sum, mean, max (with indices), argmax, and sum_to (the gradient of broadcasting).
// The rules are written in ag ops; the loops (forward, and max(dim)'s rule as one loop for when
// nothing is recorded) are in kernels/reduce.cpp.
#include <cmath>
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
  int64_t count = 1;
  for (int64_t i = 0; i < t.dim(); ++i)
    if (m[static_cast<std::size_t>(i)]) count *= t.shape()[i];
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
    });
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

Tensor max(const Tensor& t) {
  detail::check_defined(t, "max");
  if (t.numel() == 0) {
    throw std::invalid_argument("[max] expected a non-empty tensor: max() of an empty tensor (shape " + t.shape().str() +
                                ") has no identity; use max(dim) on a non-empty dim");
  }
  Tensor out = kernels::max(t);
  if (needs_grad(t)) {
    // out = max(t)  =>  dt = g / k at each of the k positions equal to the max (the NaNs, if the
    // max is NaN), 0 elsewhere
    record(out, "MaxBackward1", {t}, [st = SavedTensor(t), so = SavedTensor(out, /*is_output=*/true)](const Tensor& g) -> Grads {
      const Tensor x = st.get(), y = so.get();
      Tensor hit = (std::isnan(y.item()) ? logical_not(eq(x, x)) : eq(x, y)).to(g.dtype());
      return {mul(hit, div(g, sum(hit)))};
    });
  }
  return out;
}

std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  detail::check_defined(t, "max");
  wrap_dim(dim, t.dim(), "max", t.shape());  // a 0-dim tensor takes dims -1 and 0
  if (t.dim() == 0) {  // the value itself, through a MaxBackward0 node as in PyTorch
    Tensor values = clone(t);
    if (values.grad_fn()) values.grad_fn()->name = "MaxBackward0";
    return {values, zeros({}, kInt64)};
  }
  dim = wrap_dim(dim, t.dim(), "max", t.shape());
  const int64_t n = t.shape()[dim];
  if (n == 0) detail::shape_error("max", "cannot reduce over zero-size dim " + std::to_string(dim) + " of shape " + t.shape().str());
  auto [values, indices] = kernels::max(t, dim, keepdim);
  if (needs_grad(t)) {
    // values = t.max(dim)  =>  dt = g at each row's argmax along dim, 0 elsewhere
    record(values, "MaxBackward0", {t}, [si = SavedTensor(indices), from = t.shape(), dim, keepdim](const Tensor& g) -> Grads {
      const Tensor gi = keepdim ? g : unsqueeze(g, dim), idx = keepdim ? si.get() : unsqueeze(si.get(), dim);
      if (!needs_grad(g)) return {kernels::max_backward(gi, idx, from, dim)};
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
