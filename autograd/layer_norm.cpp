// layer_norm over the trailing `normalized_shape` dims, with optional elementwise affine.
// One fused forward/backward; the composition from mean/sub/mul/sqrt is its tested reference. The
// rule is written in ag ops; the row loop of the forward and the rule's fast path are in
// kernels/layer_norm.cpp.
#include "autograd/kernels/common.h"
#include "autograd/kernels/layer_norm.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

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
  // row r: y = xhat * w + b, xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + eps) (biased var)
  auto [y, xhat, rstd_t] = kernels::layer_norm(x, weight, bias, eps, M, N);
  if (needs_grad({&x, &weight, &bias})) {
    const bool gx = x.requires_grad(), gw = weight.defined() && weight.requires_grad(), gb = bias.defined() && bias.requires_grad();
    // y = xhat * w + b, xhat = (x - mean) * rstd  =>
    //   db = sum_rows g,  dw = sum_rows g * xhat,
    //   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),  dxhat = g * w
    record(y, "NativeLayerNormBackward0", {x, weight, bias},
           [gx, gw, gb, M, N, eps, sx = SavedTensor(x), sh = SavedTensor(xhat), sr = SavedTensor(rstd_t),
            sw = SavedTensor(weight.defined() ? weight : Tensor()), ns](const Tensor& g) -> Grads {
             const Tensor xv = sx.get(), w = sw.get();
             if (!needs_grad({&g, &xv, &w})) return kernels::layer_norm_backward(g, sh.get(), sr.get(), w, M, N, ns, gx, gw, gb);
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
