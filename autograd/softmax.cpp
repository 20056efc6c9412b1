// softmax and log_softmax over any dim, stable: the row max is subtracted before exp.
#include <cmath>
#include <limits>

#include "autograd/kernels.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

// rows (outer, n) contiguous -> out (outer, n): softmax or log_softmax of each row.
template <class T>
void softmax_rows(const T* x, T* y, int64_t outer, int64_t n, bool log) {
  for (int64_t r = 0; r < outer; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    T mx = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < n; ++j) mx = xr[j] > mx || std::isnan(xr[j]) ? xr[j] : mx;
    // A row of all -inf has no finite max; subtracting -inf would give NaN from inf - inf, so
    // shift by 0 instead and let the -infs produce their natural result (NaN, as in PyTorch).
    const T shift = std::isinf(mx) ? T(0) : mx;
    T s = 0;
    for (int64_t j = 0; j < n; ++j) {
      const T e = std::exp(xr[j] - shift);
      if (!log) yr[j] = e;
      s += e;
    }
    if (log) {
      const T ls = std::log(s);
      for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] - shift - ls;
    } else {
      const T inv = T(1) / s;  // PyTorch multiplies by the reciprocal of the sum
      for (int64_t j = 0; j < n; ++j) yr[j] *= inv;
    }
  }
}

Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  dim = wrap_dim(dim, x.dim(), op, x.shape());
  Tensor out;
  {
    NoGradGuard g;
    const Tensor xf = is_floating(x.dtype()) ? x : x.to(kFloat32);
    const bool last = x.dim() == 0 || dim == x.dim() - 1;
    const Tensor rows = last ? xf.contiguous() : transpose(xf, dim, -1).contiguous();
    const int64_t n = x.dim() == 0 ? 1 : rows.size(-1);
    Tensor y = detail::make_tensor(rows.shape(), rows.dtype());
    dispatch_float(rows.dtype(), op, [&]<typename T>() {
      if (rows.numel()) softmax_rows<T>(rows.data_ptr<T>(), y.data_ptr<T>(), rows.numel() / n, n, log);
    });
    out = last ? y : transpose(y, dim, -1).contiguous();
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  Tensor y = softmax_impl(x, dim, false);
  if (needs_grad(x)) {
    // y = softmax(x)  =>  dx = y * (g - sum(g * y, dim))
    record(y, "SoftmaxBackward0", {x}, [sy = SavedTensor(y), dim](const Tensor& g) -> Grads {
      const Tensor yv = sy.get();
      return {mul(yv, sub(g, sum(mul(g, yv), {dim}, true)))};
    });
  }
  return y;
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  Tensor y = softmax_impl(x, dim, true);
  if (needs_grad(x)) {
    // y = x - logsumexp(x)  =>  dx = g - exp(y) * sum(g, dim)
    record(y, "LogSoftmaxBackward0", {x}, [sy = SavedTensor(y), dim](const Tensor& g) -> Grads {
      return {sub(g, mul(exp(sy.get()), sum(g, {dim}, true)))};
    });
  }
  return y;
}

}  // namespace ag
