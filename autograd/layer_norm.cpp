// layer_norm over the trailing `normalized_shape` dims, with optional elementwise affine.
// One fused forward/backward; the composition from mean/sub/mul/sqrt is its tested reference.
#include <cmath>
#include <stdexcept>

#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

// layer_norm's rule over (M, N) rows with the forward's xhat and rstd, as few passes as ag ops
// allow without a graph (its fast path).
Grads layer_norm_backward_kernel(const Tensor& g0, const Tensor& h, const Tensor& r, const Tensor& w, int64_t M, int64_t N,
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

}  // namespace

Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  const Size ns(normalized_shape);
  const int64_t k = ns.size();
  bool ok = k >= 1 && x.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.shape()[x.dim() - k + i] == ns[i];
  if (!ok) {
    detail::shape_error("layer_norm", "normalized_shape " + ns.str() + " does not match the trailing dims of input shape " +
                                          x.shape().str());
  }
  for (const Tensor* p : {&weight, &bias}) {
    if (p->defined() && p->shape() != ns) {
      detail::shape_error("layer_norm", "weight/bias of shape " + p->shape().str() + " expected to be " + ns.str());
    }
  }
  const int64_t N = ns.numel(), M = N ? x.numel() / N : 0;
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
  if (needs_grad({&x, &weight, &bias})) {
    const bool gx = x.requires_grad(), gw = weight.defined() && weight.requires_grad(), gb = bias.defined() && bias.requires_grad();
    // y = xhat * w + b, xhat = (x - mean) * rstd  =>
    //   db = sum_rows g,  dw = sum_rows g * xhat,
    //   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),  dxhat = g * w
    record(y, "NativeLayerNormBackward0", {x, weight, bias},
           [gx, gw, gb, M, N, eps, sx = SavedTensor(x), sh = SavedTensor(xhat), sr = SavedTensor(rstd_t),
            sw = SavedTensor(weight.defined() ? weight : Tensor()), ns](const Tensor& g) -> Grads {
             const Tensor xv = sx.get(), w = sw.get();
             if (!needs_grad({&g, &xv, &w})) return layer_norm_backward_kernel(g, sh.get(), sr.get(), w, M, N, ns, gx, gw, gb);
             // recording the backward's graph: the rule in ag ops, with xhat and rstd recomputed
             // from x so that they carry its history
             DimVector dims;
             for (int64_t d = -ns.size(); d < 0; ++d) dims.push_back(d);
             const Tensor xc = xv - mean(xv, dims, true);
             const Tensor rstd = pow(mean(xc * xc, dims, true) + eps, -0.5);
             const Tensor h = xc * rstd;
             Tensor dx, dw, db;
             if (gb) db = sum_to(g, ns);
             if (gw) dw = sum_to(g * h, ns);
             if (gx) {
               const Tensor dh = w.defined() ? g * w : g;
               dx = rstd * (dh - mean(dh, dims, true) - h * mean(dh * h, dims, true));
             }
             return {dx, dw, db};
           });
  }
  return y;
}

}  // namespace ag
