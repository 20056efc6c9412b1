// layer_norm over the trailing `normalized_shape` dims, with optional elementwise affine.
// One fused forward/backward; the composition from mean/sub/mul/sqrt is its tested reference. The
// rule is written in ag ops, and so is its fast path (below); the row loop of the forward is in
// kernels/layer_norm.cpp.
#include "autograd/kernels/common.h"
#include "autograd/kernels/layer_norm.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

// The rule's fast path, used when no graph of the backward is recorded: the rule over (M, N) rows
// with the forward's xhat and rstd, as few passes as ag ops allow without a graph. It must equal
// the rule to rounding (FastKernels.EqualTheRulesTheyStandInFor in tests/test_higher_order.cpp).
static Grads layer_norm_backward(const Tensor& g0, const Tensor& h, const Tensor& r, const Tensor& w, int64_t M, int64_t N,
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
             if (!needs_grad({&g, &xv, &w})) return layer_norm_backward(g, sh.get(), sr.get(), w, M, N, ns, gx, gw, gb);
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
           },
           // jvp: dy = dxhat * w + xhat * dw + db, dxhat = rstd * (dx - mean(dx) - xhat * mean(dx * xhat)),
           // with xhat and rstd recomputed from x in ag ops (so the tangent has x's history)
           [&](const Tangents& d) {
             DimVector dims;
             for (int64_t i = -ns.size(); i < 0; ++i) dims.push_back(i);
             const Tensor xc = x - mean(x, dims, true);
             const Tensor rstd = pow(mean(xc * xc, dims, true) + eps, -0.5);
             const Tensor h = xc * rstd;
             Tensor dy;
             auto plus = [&dy](const Tensor& term) { dy = dy.defined() ? dy + term : term; };
             if (d[0].defined()) {
               const Tensor dh = rstd * (d[0] - mean(d[0], dims, true) - h * mean(d[0] * h, dims, true));
               plus(weight.defined() ? dh * weight : dh);
             }
             if (d[1].defined()) plus(h * d[1]);
             if (d[2].defined()) plus(expand(d[2], x.shape().vec()));
             return dy;
           });
  }
  return y;
}

}  // namespace ag
