// The two GEMMs of causal attention as fused ops: query i sees keys j <= i, so in q k^T the upper
// triangle is masked away and in weights @ v the upper triangle of the weights is 0.
//   causal_qk_softmax(q, k, d) == causal_softmax(matmul(q, k^T), d)
//   causal_matmul(w, v)        == matmul(tril(w), v)
//   causal_attention(q, k, v, d) == {causal_matmul(y, v), y} with y = causal_qk_softmax(q, k, d)
// The last is the two in one node from q, k and v, so its backward never materializes the
// weights' gradient (batch..., Tq, Tk): its kernel keeps it per matrix in cache.
// All sides are equal to rounding (tested in tests/test_causal_attention.cpp). The rules are
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

// jvp of y = causal_qk_softmax(q, k, divisor): ds = dq k^T + q dk^T, then causal_softmax's jvp
// (its Jacobian is symmetric): dy = causal_softmax_backward(ds, y, divisor)
Tensor causal_qk_softmax_jvp(const Tensor& dq, const Tensor& dk, const Tensor& q, const Tensor& k, const Tensor& y,
                             const Size& batch, double divisor) {
  if (!dq.defined() && !dk.defined()) return Tensor();
  if (detail::tangent_kernel_applies({&dq, &dk}, {&q, &k, &y})) return kernels::causal_qk_softmax_jvp(dq, dk, q, k, y, batch, divisor);
  Tensor ds;
  if (dq.defined()) ds = matmul(dq, k.transpose(-2, -1));
  if (dk.defined()) ds = ds.defined() ? ds + matmul(q, dk.transpose(-2, -1)) : matmul(q, dk.transpose(-2, -1));
  return ds.defined() ? causal_softmax_backward(ds, y, divisor) : Tensor();
}

// causal_attention's backward rule in ag ops, from the weights y:
// dw = tril(g @ v^T), ds = causal_softmax_backward(dw, y, divisor), dq = ds @ k, dk = ds^T @ q,
// dv = tril(y)^T @ g
Grads causal_attention_rule(const Tensor& g, const Tensor& y, const Tensor& q, const Tensor& k, const Tensor& v, bool gq, bool gk,
                            bool gv, double divisor) {
  Tensor dq, dk;
  if (gq || gk) {
    const Tensor ds = causal_softmax_backward(tril(matmul(g, v.transpose(-2, -1))), y, divisor);
    if (gq) dq = matmul(ds, k);
    if (gk) dk = matmul(ds.transpose(-2, -1), q);
  }
  return {dq, dk, gv ? matmul(tril(y).transpose(-2, -1), g) : Tensor()};
}

// Forward-over-reverse through causal_attention's backward with nothing to record (no
// create_graph): the gradient g and the inputs carry tangents, and one kernel gives the rule's
// gradients and their tangents (which the composed rule would push through each of its ops).
// Undefined (y): recomputed. Empty where the kernel does not apply.
Grads backward_with_tangents(const Tensor& g, const Tensor& y, const Tensor& q, const Tensor& k, const Tensor& v, bool gq,
                             bool gk, bool gv, const Size& batch, double divisor) {
  const Tensor dg = detail::tangent_of(g), dq = detail::tangent_of(q), dk = detail::tangent_of(k), dv = detail::tangent_of(v);
  if (!detail::tangent_kernel_applies({&dg, &dq, &dk, &dv}, {&q, &g, &k, &v, &y})) return {};
  const kernels::GradsWithTangents r = kernels::causal_attention_backward_jvp(g, dg, y, q, dq, k, dk, v, dv, gq, gk, gv, batch, divisor);
  for (std::size_t i = 0; i < r.grads.size(); ++i)
    if (r.grads[i].defined()) detail::set_tangent(r.grads[i], r.tangents[i]);
  return r.grads;
}

// causal_attention's jvp from the weights y and their tangent dy: dout = tril(dy) @ v + tril(y) @ dv
Tensor causal_attention_jvp(const Tensor& dy, const Tensor& dv, const Tensor& y, const Tensor& v, const Size& batch) {
  if (!dy.defined() && !dv.defined()) return Tensor();
  if (detail::tangent_kernel_applies({&dy, &dv}, {&y, &v})) return kernels::causal_matmul_jvp(dy, y, v, dv, batch);
  Tensor dout;
  if (dy.defined()) dout = causal_matmul(dy, v);
  if (dv.defined()) dout = dout.defined() ? dout + causal_matmul(y, dv) : causal_matmul(y, dv);
  return dout;
}

// Gives the weights y = causal_qk_softmax(q, k, divisor) their node.
void record_qk_softmax(Tensor& y, const Tensor& q, const Tensor& k, const Size& batch, double divisor) {
  const bool gq = q.requires_grad(), gk = k.requires_grad();
  // ds = causal_softmax_backward(g, y, divisor)  =>  dq = ds @ k, dk = ds^T @ q
  record(y, "CausalQKSoftmaxBackward0", {q, k},
         [sy = SavedTensor(y, true), sq = SavedTensor(q), sk = SavedTensor(k), gq, gk, batch, divisor](const Tensor& g) -> Grads {
           const Tensor y = sy.get(), q = sq.get(), k = sk.get();
           if (!needs_grad({&g, &y, &q, &k})) return kernels::causal_qk_softmax_backward(g, y, q, k, gq, gk, batch, divisor);
           const Tensor ds = causal_softmax_backward(g, y, divisor);
           return {gq ? matmul(ds, k) : Tensor(), gk ? matmul(ds.transpose(-2, -1), q) : Tensor()};
         },
         [&](const Tangents& d) { return causal_qk_softmax_jvp(d[0], d[1], q, k, y, batch, divisor); });
}

}  // namespace

Tensor causal_qk_softmax(const Tensor& q, const Tensor& k, double divisor) {
  const Size batch = check_pair("causal_qk_softmax", q, k, -1, -1, "queries (..., Tq, E) and keys (..., Tk, E)");
  // y = causal_softmax(q @ k^T, divisor)
  Tensor y = kernels::causal_qk_softmax(q, k, batch, divisor);
  if (needs_grad(q, k)) record_qk_softmax(y, q, k, batch, divisor);
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
           },
           // jvp: dout = tril(dw) @ v + tril(w) @ dv
           [&](const Tangents& d) {
             if (detail::tangent_kernel_applies({&d[0], &d[1]}, {&w, &v})) return kernels::causal_matmul_jvp(d[0], w, v, d[1], batch);
             Tensor dy;
             if (d[0].defined()) dy = causal_matmul(d[0], v);
             if (d[1].defined()) dy = dy.defined() ? dy + causal_matmul(w, d[1]) : causal_matmul(w, d[1]);
             return dy;
           });
    detail::name_node(out, nullptr, "causal_matmul");  // its rule: causal_matmul's row, not mm's
  }
  return out;
}

CausalAttentionOutput causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, double divisor) {
  const Size batch = check_pair("causal_attention", q, k, -1, -1, "queries (..., Tq, E) and keys (..., Tk, E)");
  check_pair("causal_attention", k, v, -2, -2, "keys (..., Tk, E) and values (..., Tk, Ev)");
  // y = causal_softmax(q @ k^T, divisor), out = tril(y) @ v
  // (not a structured binding: clang 14 cannot capture one in a lambda)
  std::pair<Tensor, Tensor> out_y = kernels::causal_attention(q, k, v, batch, divisor);
  Tensor &out = out_y.first, &y = out_y.second;
  if (needs_grad({&q, &k, &v})) {
    if (needs_grad(q, k)) record_qk_softmax(y, q, k, batch, divisor);
    const bool gq = q.requires_grad(), gk = k.requires_grad(), gv = v.requires_grad();
    // dw = tril(g @ v^T), dv = tril(y)^T @ g  (causal_matmul's rule)
    // ds = causal_softmax_backward(dw, y, divisor), dq = ds @ k, dk = ds^T @ q  (causal_qk_softmax's)
    // y is saved with its own node, so a graph of this backward reaches q and k through it too.
    // (named as PyTorch names weights @ values, as causal_matmul's node is: printed tensors show it)
    // y's tangent (causal_qk_softmax's jvp, pushed as y's node was recorded): out's jvp reuses it
    const Tensor dy = detail::tangent_of(y);
    record(out, q.dim() == 2 ? "MmBackward0" : "UnsafeViewBackward0", {q, k, v},
           [sy = SavedTensor(y), sq = SavedTensor(q), sk = SavedTensor(k), sv = SavedTensor(v), gq, gk, gv, batch,
            divisor](const Tensor& g) -> Grads {
             const Tensor y = sy.get(), q = sq.get(), k = sk.get(), v = sv.get();
             if (!needs_grad({&g, &y, &q, &k, &v})) return kernels::causal_attention_backward(g, y, q, k, v, gq, gk, gv, batch, divisor);
             if (Grads fr = backward_with_tangents(g, y, q, k, v, gq, gk, gv, batch, divisor); !fr.empty()) return fr;
             return causal_attention_rule(g, y, q, k, v, gq, gk, gv, divisor);
           },
           // jvp: dout = tril(dy) @ v + tril(y) @ dv, dy causal_qk_softmax's jvp (y's tangent)
           [&](const Tangents& d) { return causal_attention_jvp(dy, d[2], y, v, batch); });
    detail::name_node(out, nullptr, "causal_attention");  // its rule: the fused one, not mm's
  }
  return {out, y};
}

Tensor causal_attention_output(const Tensor& q, const Tensor& k, const Tensor& v, double divisor) {
  const Size batch = check_pair("causal_attention_output", q, k, -1, -1, "queries (..., Tq, E) and keys (..., Tk, E)");
  check_pair("causal_attention_output", k, v, -2, -2, "keys (..., Tk, E) and values (..., Tk, Ev)");
  // forward mode with nothing to record: out and its tangent in one pass (no weights recomputed)
  if (detail::forward_ad_on()) {
    const Tensor dq = detail::tangent_of(q), dk = detail::tangent_of(k), dv = detail::tangent_of(v);
    if ((dq.defined() || dk.defined() || dv.defined()) && detail::tangent_kernel_applies({&dq, &dk, &dv}, {&q, &k, &v})) {
      if (std::pair<Tensor, Tensor> fused = kernels::causal_attention_jvp(q, k, v, dq, dk, dv, batch, divisor); fused.first.defined()) {
        detail::set_tangent(fused.first, fused.second);
        return fused.first;
      }
    }
  }
  // y = causal_softmax(q @ k^T, divisor) per matrix in cache, out = tril(y) @ v; with a graph to
  // record, the softmax rows' shifts and reciprocal sums too (batch..., T, 2), from which the
  // backward gives y again in one pass (PyTorch's flash attention keeps each row's logsumexp)
  const bool grad = needs_grad({&q, &k, &v});
  Tensor stats;
  Tensor out = kernels::causal_attention(q, k, v, batch, divisor, /*keep_weights=*/false, grad ? &stats : nullptr).first;
  if (!grad) return out;
  const bool gq = q.requires_grad(), gk = k.requires_grad(), gv = v.requires_grad();
  // causal_attention's rule with y recomputed from q and k: dw = tril(g @ v^T),
  // ds = causal_softmax_backward(dw, y, divisor), dq = ds @ k, dk = ds^T @ q, dv = tril(y)^T @ g
  record(out, "ScaledDotProductFlashAttentionForCpuBackward0", {q, k, v},
         [sq = SavedTensor(q), sk = SavedTensor(k), sv = SavedTensor(v), sstats = SavedTensor(stats), gq, gk, gv, batch,
          divisor](const Tensor& g) -> Grads {
           const Tensor q = sq.get(), k = sk.get(), v = sv.get();
           if (!needs_grad({&g, &q, &k, &v}))
             return kernels::causal_attention_backward(g, Tensor(), q, k, v, gq, gk, gv, batch, divisor, sstats.get());
           if (Grads fr = backward_with_tangents(g, Tensor(), q, k, v, gq, gk, gv, batch, divisor); !fr.empty()) return fr;
           // the weights again, as an op: a graph of this backward reaches q and k through them
           return causal_attention_rule(g, causal_qk_softmax(q, k, divisor), q, k, v, gq, gk, gv, divisor);
         },
         // jvp: dout = tril(dy) @ v + tril(y) @ dv, dy = causal_qk_softmax's jvp (y recomputed)
         [&](const Tangents& d) {
           const Tensor y = causal_qk_softmax(q, k, divisor);
           return causal_attention_jvp(causal_qk_softmax_jvp(d[0], d[1], q, k, y, batch, divisor), d[2], y, v, batch);
         });
  detail::name_node(out, nullptr, "causal_attention_output");  // its rule row
  return out;
}

}  // namespace ag
