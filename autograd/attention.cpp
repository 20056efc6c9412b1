// The two GEMMs of causal attention as fused ops: query i sees keys j <= i, so in q k^T the upper
// triangle is masked away and in weights @ v the upper triangle of the weights is 0.
//   causal_qk_softmax(q, k, d) == causal_softmax(matmul(q, k^T), d)
//   causal_matmul(w, v)        == matmul(tril(w), v)
// Both sides are equal to rounding (tested in tests/test_causal_attention.cpp). The rules are
// written in ag ops; the kernels (kernels/attention.cpp) run each GEMM on the blocks on or below
// the diagonal only, skipping the half whose result is thrown away or is a sum of zeros.
#include <algorithm>
#include <string>

#include "autograd/kernels/attention.h"
#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

// a (..., m, k) and b (..., n, k) or (..., k, n): floating point, one dtype, the same batch dims.
Size check_pair(const char* op, const Tensor& a, const Tensor& b, int64_t a_dim, int64_t b_dim, const char* expects) {
  const bool ok = a.dim() >= 2 && a.dim() == b.dim() && a.is_floating_point() && a.dtype() == b.dtype() &&
                  a.size(a_dim) == b.size(b_dim) &&
                  std::equal(a.shape().begin(), a.shape().end() - 2, b.shape().begin());
  if (!ok) {
    detail::shape_error(op, std::string("expects ") + expects + " of one floating point dtype with the same batch dims, got " +
                                dtype_name(a.dtype()) + " " + a.shape().str() + " and " + dtype_name(b.dtype()) + " " +
                                b.shape().str());
  }
  return Size(DimVector(a.shape().begin(), a.shape().end() - 2));
}

}  // namespace

Tensor causal_qk_softmax(const Tensor& q, const Tensor& k, double divisor) {
  const Size batch = check_pair("causal_qk_softmax", q, k, -1, -1, "queries (..., Tq, E) and keys (..., Tk, E)");
  // y = causal_softmax(q @ k^T, divisor)
  Tensor y = kernels::causal_qk_softmax(q, k, batch, divisor);
  if (needs_grad(q, k)) {
    const bool gq = q.requires_grad(), gk = k.requires_grad();
    // ds = causal_softmax_backward(g, y, divisor)  =>  dq = ds @ k, dk = ds^T @ q
    record(y, "CausalQKSoftmaxBackward0", {q, k},
           [sy = SavedTensor(y, true), sq = SavedTensor(q), sk = SavedTensor(k), gq, gk, batch, divisor](const Tensor& g) -> Grads {
             const Tensor y = sy.get(), q = sq.get(), k = sk.get();
             if (!needs_grad({&g, &y, &q, &k})) return kernels::causal_qk_softmax_backward(g, y, q, k, gq, gk, batch, divisor);
             const Tensor ds = causal_softmax_backward(g, y, divisor);
             return {gq ? matmul(ds, k) : Tensor(), gk ? matmul(ds.transpose(-2, -1), q) : Tensor()};
           });
  }
  return y;
}

Tensor causal_matmul(const Tensor& w, const Tensor& v) {
  const Size batch = check_pair("causal_matmul", w, v, -1, -2, "weights (..., Tq, Tk) and values (..., Tk, E)");
  // out = tril(w) @ v
  Tensor out = kernels::causal_matmul(w, v, batch);
  if (needs_grad(w, v)) {
    const bool gw = w.requires_grad(), gv = v.requires_grad();
    // out = tril(w) @ v  =>  dw = tril(g @ v^T), dv = tril(w)^T @ g
    // (named as PyTorch names weights @ values, which it replaces: printed modules show it)
    record(out, w.dim() == 2 ? "MmBackward0" : "UnsafeViewBackward0", {w, v},
           [sw = SavedTensor(w), sv = SavedTensor(v), gw, gv, batch](const Tensor& g) -> Grads {
             const Tensor w = sw.get(), v = sv.get();
             if (!needs_grad({&g, &w, &v})) return kernels::causal_matmul_backward(g, w, v, gw, gv, batch);
             return {gw ? tril(matmul(g, v.transpose(-2, -1))) : Tensor(), gv ? matmul(tril(w).transpose(-2, -1), g) : Tensor()};
           });
  }
  return out;
}

}  // namespace ag
