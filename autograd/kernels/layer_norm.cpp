// The kernel of layer_norm's forward; its rule, formulas and the rule's fast path are in
// layer_norm.cpp.
#include "autograd/kernels/layer_norm.h"

#include <cmath>
#include <vector>

#include "autograd/kernels/common.h"

namespace ag::kernels {

LayerNormOutput layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, int64_t M, int64_t N) {
  const Tensor xc = detail::contiguous_values(x);
  Tensor y = detail::make_tensor(x.shape(), x.dtype());
  Tensor xhat = detail::make_tensor(x.shape(), x.dtype());
  Tensor rstd_t = detail::make_tensor(Size{M}, x.dtype());
  dispatch_float(x.dtype(), "layer_norm", [&]<typename T>() {
    const T* px = xc.data_ptr<T>();
    T* py = y.data_ptr<T>();
    T* ph = xhat.data_ptr<T>();
    T* pr = rstd_t.data_ptr<T>();
    const Tensor w = weight.defined() ? detail::contiguous_values(weight) : Tensor();
    const Tensor b = bias.defined() ? detail::contiguous_values(bias) : Tensor();
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

}  // namespace ag::kernels
