// Kernels of layer_norm; its rule and formulas are in layer_norm.cpp.
#include "autograd/kernels/layer_norm.h"

#include <cmath>
#include <vector>

#include "autograd/kernels/common.h"
#include "autograd/ops.h"

namespace ag::kernels {

LayerNormOutput layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, int64_t M, int64_t N) {
  const Tensor xc = x.contiguous().detach();
  Tensor y = detail::make_tensor(x.shape(), x.dtype());
  Tensor xhat = detail::make_tensor(x.shape(), x.dtype());
  Tensor rstd_t = detail::make_tensor(Size{M}, x.dtype());
  dispatch_float(x.dtype(), "layer_norm", [&]<typename T>() {
    const T* px = xc.data_ptr<T>();
    T* py = y.data_ptr<T>();
    T* ph = xhat.data_ptr<T>();
    T* pr = rstd_t.data_ptr<T>();
    const Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
    const Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
    const T* pw = w.defined() ? w.data_ptr<T>() : nullptr;
    const T* pb = b.defined() ? b.data_ptr<T>() : nullptr;
    // row r (N): mean, rstd = 1/sqrt(var + eps) (biased var), xhat = (x - mean) rstd, y = xhat w + b
    for (int64_t r = 0; r < M; ++r) {
      const T* xr = px + r * N;
      double s = 0, ss = 0;
      for (int64_t j = 0; j < N; ++j) s += xr[j];
      const double mu = s / static_cast<double>(N);
      for (int64_t j = 0; j < N; ++j) ss += (xr[j] - mu) * (xr[j] - mu);
      const T rstd = static_cast<T>(1.0 / std::sqrt(ss / static_cast<double>(N) + eps));
      pr[r] = rstd;
      for (int64_t j = 0; j < N; ++j) {
        const T h = (xr[j] - static_cast<T>(mu)) * rstd;
        ph[r * N + j] = h;
        T v = h;
        if (pw) v = v * pw[j];
        if (pb) v = v + pb[j];
        py[r * N + j] = v;
      }
    }
  });
  return {y, xhat, rstd_t};
}

// The rule over (M, N) rows with the forward's xhat and rstd, as few passes as ag ops allow
// without a graph.
Grads layer_norm_backward(const Tensor& g0, const Tensor& h, const Tensor& r, const Tensor& w, int64_t M, int64_t N,
                          const Size& ns, bool gx, bool gw, bool gb) {
  const Tensor g = g0.contiguous();
  Tensor dx, dw, db;
  const std::vector<int64_t> rows{M, N};
  if (gb) db = reshape(sum(reshape(g, rows), {0}), ns.vec());
  if (gw) dw = reshape(sum(mul(reshape(g, rows), reshape(h, rows)), {0}), ns.vec());
  if (gx) {
    Tensor dh = w.defined() ? mul(reshape(g, rows), reshape(w, {N})) : reshape(g, rows);
    Tensor hr = reshape(h, rows);
    Tensor inner = sub(sub(dh, mean(dh, {1}, true)), mul(hr, mean(mul(dh, hr), {1}, true)));
    dx = reshape(mul(inner, reshape(r, {M, 1})), g.shape().vec());
  }
  return {dx, dw, db};
}

}  // namespace ag::kernels
