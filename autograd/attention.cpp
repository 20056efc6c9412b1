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
#include <array>
#include <string>

#include "autograd/kernels/attention.h"
#include "autograd/kernels/common.h"
#include "autograd/kernels/matmul.h"
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

// ---- causal_self_attention: the projections and the heads around causal_attention_output ----

using Tensors3 = std::array<Tensor, 3>;  // {q, k, v}, or their weights
using Need = std::array<bool, 4>;        // which of {x, wq, wk, wv} need a gradient

// Columns [col, col + d) of (batch * T, width) rows seen as their (batch, heads, T, d / heads)
// heads: a view, no copy, no history.
Tensor heads_of(const Tensor& rows, int64_t b, int64_t t, int64_t heads, int64_t d, int64_t col) {
  const int64_t width = rows.size(-1), e = d / heads;
  return detail::alias(rows, Size{b, heads, t, e}, Strides{t * width, e, width, 1}, rows.storage_offset() + col);
}

// (batch, heads, T, e) heads side by side again, as (batch, T, heads * e): heads.transpose(1, 2)
// copied contiguous, no history.
Tensor merged_heads(const Tensor& heads) {
  const int64_t b = heads.size(0), h = heads.size(1), t = heads.size(2), e = heads.size(3);
  const Tensor side = detail::contiguous_values(detail::transpose_view(heads, 1, 2));
  return detail::alias(side, Size{b, t, h * e}, Strides{t * h * e, h * e, 1}, 0);
}

// x (batch, T, d_in) as the (batch * T, d_in) matrix of its rows (a view where x is contiguous;
// (batch * T, 0) for d_in = 0, as the GEMMs need the rows even then).
Tensor rows_of(const Tensor& x) {
  const Tensor c = x.is_contiguous() ? x : detail::contiguous_values(x);
  const int64_t rows = x.size(0) * x.size(1), cols = x.size(2);
  return detail::alias(c, Size{rows, cols}, Strides{cols, 1}, c.storage_offset());
}

// The three (d, d_in) weights stacked as one (3d, d_in) matrix (a copy): x @ stacked^T gives q, k
// and v side by side in one GEMM, and their gradients' rows side by side @ stacked gives dx.
Tensor stacked(const Tensors3& w) {
  const int64_t d = w[0].size(0), din = w[0].size(1);
  Tensor out = detail::make_tensor(Size{3 * d, din}, w[0].dtype());
  for (int i = 0; i < 3; ++i) detail::copy_into(detail::alias(out, Size{d, din}, Strides{din, 1}, i * d * din), w[i]);
  return out;
}

// (batch, T, heads * e) as its (batch, heads, T, e) heads, in ag ops (recorded where a graph is):
// r.reshape(batch, T, heads, e).transpose(1, 2)
Tensor split_heads(const Tensor& r, int64_t heads) {
  return r.reshape({r.size(0), r.size(1), heads, r.size(2) / heads}).transpose(1, 2);
}

// causal_self_attention's rule in ag ops, q, k and v recomputed as ops (so a graph of this backward
// reaches x and the weights through them):
//   dq, dk, dv = causal_attention_output's rule for the gradient g split into heads,
//   each merged back to rows r_q, r_k, r_v: dx = r_q @ wq + r_k @ wk + r_v @ wv, dw_i = r_i^T @ x
// `need` is {x, wq, wk, wv}.
Grads self_attention_rule(const Tensor& g, const Tensor& x, const Tensors3& w, int64_t heads, const Need& need,
                          double divisor) {
  const int64_t b = x.size(0), t = x.size(1), d = w[0].size(0);
  const Tensor q = split_heads(linear(x, w[0]), heads), k = split_heads(linear(x, w[1]), heads),
               v = split_heads(linear(x, w[2]), heads);
  const Grads dh = causal_attention_rule(split_heads(g, heads), causal_qk_softmax(q, k, divisor), q, k, v, need[0] || need[1],
                                         need[0] || need[2], need[0] || need[3], divisor);
  const Tensor x2 = x.reshape({b * t, x.size(2)});
  Grads out{Tensor(), Tensor(), Tensor()};
  out.push_back(Tensor());
  for (int i = 0; i < 3; ++i) {
    if (!dh[i].defined()) continue;
    const Tensor r = dh[i].transpose(1, 2).reshape({b * t, d});
    if (need[0]) out[0] = out[0].defined() ? out[0] + matmul(r, w[i]) : matmul(r, w[i]);
    if (need[i + 1]) out[i + 1] = matmul(r.t(), x2);
  }
  if (out[0].defined()) out[0] = out[0].reshape({b, t, x.size(2)});
  return out;
}

// The rule's fast path, nothing recorded: causal_attention_output's backward kernel on the saved
// projections q, k, v (heads) and softmax stats, the gradients' heads written side by side into
// (batch * T, 3d) rows r; then dx = r @ ws (the forward's stacked weights) and [dwq; dwk; dwv] =
// r^T @ x, one GEMM each over all rows (per weight where not all three need one).
Grads self_attention_backward(const Tensor& g, const Tensor& x, const Tensor& ws, const Tensors3& qkv, const Tensor& stats,
                              const Need& need, double divisor) {
  const int64_t b = x.size(0), t = x.size(1), d = ws.size(0) / 3, din = x.size(2), heads = qkv[0].size(1);
  const Tensor gc = g.is_contiguous() ? g : detail::contiguous_values(g);
  const Tensor gh = heads_of(rows_of(gc), b, t, heads, d, 0);
  const Tensor r = detail::make_tensor(Size{b * t, 3 * d}, x.dtype());
  const Grads blocks{heads_of(r, b, t, heads, d, 0), heads_of(r, b, t, heads, d, d), heads_of(r, b, t, heads, d, 2 * d)};
  const Grads dh = kernels::causal_attention_backward(gh, Tensor(), qkv[0], qkv[1], qkv[2], need[0] || need[1], need[0] || need[2],
                                                      need[0] || need[3], Size{b, heads}, divisor, stats, blocks);
  for (int i = 0; i < 3; ++i)  // written in place (a degenerate shape's kernel returns its own tensor)
    if (dh[i].defined() && dh[i].impl() != blocks[i].impl()) detail::copy_into(blocks[i], dh[i]);
  const Tensor x2 = rows_of(x);
  Grads out{Tensor(), Tensor(), Tensor()};
  out.push_back(Tensor());
  if (need[0]) out[0] = detail::alias(kernels::bmm(r, ws), x.shape(), contiguous_strides(x.shape()), 0);
  if (need[1] && need[2] && need[3]) {
    const Tensor dw = kernels::bmm(detail::transpose_view(r, 0, 1), x2);  // (3d, d_in)
    for (int i = 0; i < 3; ++i) out[i + 1] = detail::alias(dw, Size{d, din}, Strides{din, 1}, i * d * din);
    return out;
  }
  for (int i = 0; i < 3; ++i)
    if (need[i + 1])
      out[i + 1] = kernels::bmm(detail::transpose_view(detail::alias(r, Size{b * t, d}, Strides{3 * d, 1}, i * d), 0, 1), x2);
  return out;
}

// causal_self_attention's jvp: dq = linear(dx, wq) + linear(x, dwq) (likewise k and v), then
// causal_attention_output's jvp, merged back; d holds the tangents of {x, wq, wk, wv}. `qkv`: the
// forward's projections (heads, no history), for the kernel when the tangent records nothing.
Tensor self_attention_jvp(const Tangents& d, const Tensor& x, const Tensors3& w, const Tensors3& qkv, int64_t heads,
                          double divisor) {
  const int64_t b = x.size(0), t = x.size(1), dm = w[0].size(0);
  const Size batch{b, heads};
  if (detail::tangent_kernel_applies({&d[0], &d[1], &d[2], &d[3]}, {&x, &w[0], &w[1], &w[2]})) {
    const Tensor x2 = rows_of(x), dx2 = d[0].defined() ? rows_of(d[0]) : Tensor();
    Tensor dp[3];
    for (int i = 0; i < 3; ++i) {
      if (!dx2.defined() && !d[i + 1].defined()) continue;
      const Tensor dwt = d[i + 1].defined() ? detail::transpose_view(d[i + 1], 0, 1) : Tensor();
      const Tensor rows = kernels::product_sum(Size{b * t, dm}, Tensor(), {{dx2, detail::transpose_view(w[i], 0, 1)}, {x2, dwt}});
      dp[i] = heads_of(rows, b, t, heads, dm, 0);
    }
    if (const Tensor dout = kernels::causal_attention_jvp(qkv[0], qkv[1], qkv[2], dp[0], dp[1], dp[2], batch, divisor).second;
        dout.defined())
      return merged_heads(dout);
  }
  Tensor p[3], dp[3];
  for (int i = 0; i < 3; ++i) {
    p[i] = split_heads(linear(x, w[i]), heads);
    if (d[0].defined()) dp[i] = linear(d[0], w[i]);
    if (d[i + 1].defined()) dp[i] = dp[i].defined() ? dp[i] + linear(x, d[i + 1]) : linear(x, d[i + 1]);
    if (dp[i].defined()) dp[i] = split_heads(dp[i], heads);
  }
  const Tensor y = causal_qk_softmax(p[0], p[1], divisor);
  const Tensor dout = causal_attention_jvp(causal_qk_softmax_jvp(dp[0], dp[1], p[0], p[1], y, batch, divisor), dp[2], y, p[2], batch);
  return dout.defined() ? dout.transpose(1, 2).reshape({b, t, dm}) : dout;
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

Tensor causal_self_attention(const Tensor& x, const Tensor& wq, const Tensor& wk, const Tensor& wv, int64_t heads, double divisor) {
  for (const Tensor* t : {&x, &wq, &wk, &wv}) detail::check_defined(*t, "causal_self_attention");
  const bool ok = x.dim() == 3 && x.is_floating_point() && wq.dim() == 2 && wq.size(1) == x.size(2) && wk.shape() == wq.shape() &&
                  wv.shape() == wq.shape() && wq.dtype() == x.dtype() && wk.dtype() == x.dtype() && wv.dtype() == x.dtype();
  if (!ok) {
    detail::shape_error("causal_self_attention", "expects x (batch, T, d_in) and weights wq, wk, wv (d, d_in) of one floating point "
                                                 "dtype, got " + dtype_name(x.dtype()) + " " + x.shape().str() + ", " +
                                                 dtype_name(wq.dtype()) + " " + wq.shape().str() + ", " + dtype_name(wk.dtype()) +
                                                 " " + wk.shape().str() + " and " + dtype_name(wv.dtype()) + " " + wv.shape().str());
  }
  if (heads < 1) detail::shape_error("causal_self_attention", "heads must be at least 1, got " + std::to_string(heads));
  if (wq.size(0) % heads != 0) {
    detail::shape_error("causal_self_attention", "d = " + std::to_string(wq.size(0)) + " must be divisible by heads = " +
                                                     std::to_string(heads));
  }
  const int64_t b = x.size(0), t = x.size(1), d = wq.size(0);
  // q, k, v = x @ w^T over all batch * T rows, one GEMM with the weights stacked, seen per head;
  // out = their causal attention, heads merged back; with a graph to record, the softmax rows' stats too (as causal_attention_output)
  const Tensors3 w{wq, wk, wv};
  const Tensor ws = stacked(w);
  const Tensor p = kernels::bmm(rows_of(x), detail::transpose_view(ws, 0, 1));  // (batch * T, 3d): q, k, v side by side
  const Tensors3 qkv{heads_of(p, b, t, heads, d, 0), heads_of(p, b, t, heads, d, d), heads_of(p, b, t, heads, d, 2 * d)};
  const bool grad = needs_grad({&x, &wq, &wk, &wv});
  Tensor stats;
  Tensor out = detail::make_tensor(Size{b, t, d}, x.dtype());  // the heads written side by side into it
  const Tensor out_heads = heads_of(rows_of(out), b, t, heads, d, 0);
  const Tensor o = kernels::causal_attention(qkv[0], qkv[1], qkv[2], Size{b, heads}, divisor, /*keep_weights=*/false,
                                             grad ? &stats : nullptr, out_heads).first;
  if (o.impl() != out_heads.impl()) detail::copy_into(out_heads, o);  // a degenerate shape's own tensor
  if (!grad) return out;
  const Need need{x.requires_grad(), wq.requires_grad(), wk.requires_grad(), wv.requires_grad()};
  auto saved = [](const Tensors3& t) { return std::array<SavedTensor, 3>{SavedTensor(t[0]), SavedTensor(t[1]), SavedTensor(t[2])}; };
  auto get = [](const std::array<SavedTensor, 3>& s) { return Tensors3{s[0].get(), s[1].get(), s[2].get()}; };
  // out = merge(causal_attention_output(split(x wq^T), split(x wk^T), split(x wv^T)))  =>
  // dq, dk, dv = its rule for split(g), merged to rows r_i: dx = sum_i r_i @ w_i, dw_i = r_i^T @ x
  record(out, "CausalSelfAttentionBackward0", {x, wq, wk, wv},
         [sx = SavedTensor(x), sw = saved(w), sws = SavedTensor(ws), sp = saved(qkv), sstats = SavedTensor(stats), get, need,
          heads, divisor](const Tensor& g) -> Grads {
           const Tensor x = sx.get();
           const Tensors3 w = get(sw);  // (each checked against in-place writes since the forward)
           if (!needs_grad({&g, &x, &w[0], &w[1], &w[2]})) return self_attention_backward(g, x, sws.get(), get(sp), sstats.get(), need, divisor);
           return self_attention_rule(g, x, w, heads, need, divisor);
         },
         [&](const Tangents& d) { return self_attention_jvp(d, x, w, qkv, heads, divisor); });
  return out;
}

}  // namespace ag
