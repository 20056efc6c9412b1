// Kernels of causal_qk_softmax, causal_matmul and causal_attention (attention.cpp): the GEMMs of causal attention on
// the blocks on or below the diagonal only, no history. The forward kernels compute the ops; the
// *_backward kernels are the fast paths of the rules written in attention.cpp, used when no graph
// of the backward is recorded, and must equal those rules to rounding
// (FastKernels.EqualTheRulesTheyStandInFor in tests/test_higher_order.cpp holds them to it).
//
// Every operand is checked by the op first (one floating point dtype, the same batch dims `batch`,
// matching inner dims); transposed views go to BLAS as they are, other layouts are copied.
#pragma once

#include "autograd/small_vec.h"
#include "autograd/tensor.h"

#include <utility>

namespace ag::kernels {

// The gradients of a backward kernel, one per input (ag::Grads of backward_fn.h, the same type).
using Grads = SmallVec<Tensor, 3>;

// y = causal_softmax(q @ k^T, divisor) for queries q (batch..., tq, e) and keys k (batch..., tk, e)
Tensor causal_qk_softmax(const Tensor& q, const Tensor& k, const Size& batch, double divisor);
// {dq, dk} (each only if asked for) from the gradient g of the weights y:
// ds = causal_softmax_backward(g, y, divisor), dq = ds @ k, dk = ds^T @ q
Grads causal_qk_softmax_backward(const Tensor& g, const Tensor& y, const Tensor& q, const Tensor& k, bool gq, bool gk,
                                 const Size& batch, double divisor);

// out = tril(w) @ v for weights w (batch..., tq, tk) and values v (batch..., tk, e)
Tensor causal_matmul(const Tensor& w, const Tensor& v, const Size& batch);
// {dw, dv} (each only if asked for): dw = tril(g @ v^T), dv = tril(w)^T @ g
Grads causal_matmul_backward(const Tensor& g, const Tensor& w, const Tensor& v, bool gw, bool gv, const Size& batch);

// Both in one pass per matrix, the same GEMM calls as the two above (so the same bits):
// {out, y} with y = causal_qk_softmax(q, k, divisor) and out = causal_matmul(y, v), the second
// product run while the matrix's y is still in cache.
// keep_weights false: y stays one matrix at a time in a per-thread scratch and the second tensor
// returned is undefined (no (batch..., tq, tk) tensor: scaled_dot_product_attention's forward).
// With `stats`, it is set to the softmax rows' (batch..., tq, 2) shifts and reciprocal sums, from
// which causal_attention_backward gives y again in one pass (left as is for the degenerate shapes,
// an empty matrix dim, which run the two ops). With `into` ((batch..., tq, ev), rows BLAS can
// write: a view into a wider matrix), out is written there and returned as it (for those
// degenerate shapes, a new tensor).
std::pair<Tensor, Tensor> causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Size& batch, double divisor,
                                           bool keep_weights = true, Tensor* stats = nullptr, const Tensor& into = Tensor());
// {dq, dk, dv} (each only if asked for) from the gradient g of out: dw = tril(g @ v^T),
// ds = causal_softmax_backward(dw, y, divisor), dq = ds @ k, dk = ds^T @ q, dv = tril(y)^T @ g,
// with dw and ds kept in per-thread scratch matrices instead of (batch..., tq, tk) tensors. With y
// undefined, each matrix's y is recomputed from q and k into a scratch matrix (the forward's bits),
// its softmax in one pass where the forward's `stats` are given.
// `into`: where given, the tensors {dq, dk, dv} are written to, as causal_attention's `into`.
Grads causal_attention_backward(const Tensor& g, const Tensor& y, const Tensor& q, const Tensor& k, const Tensor& v, bool gq,
                                bool gk, bool gv, const Size& batch, double divisor, const Tensor& stats = Tensor(),
                                const Grads& into = {});

// The jvp kernels: the fast paths of the jvp rules in attention.cpp, used when the tangent's
// computation records no graph; a tangent is undefined where it is zero.
// dy = causal_softmax_backward(dq @ k^T + q @ dk^T, y, divisor) (the softmax's Jacobian is
// symmetric), the scores' tangent kept in a per-thread scratch matrix.
Tensor causal_qk_softmax_jvp(const Tensor& dq, const Tensor& dk, const Tensor& q, const Tensor& k, const Tensor& y,
                             const Size& batch, double divisor);
// dout = tril(dw) @ v + tril(w) @ dv, the second GEMM of each matrix adding into the first's output.
Tensor causal_matmul_jvp(const Tensor& dw, const Tensor& w, const Tensor& v, const Tensor& dv, const Size& batch);
// causal_attention's out (the same bits as causal_attention) and its tangent
// dout = tril(dy) @ v + tril(y) @ dv, dy = causal_qk_softmax_jvp's, in one pass with y and dy one
// matrix at a time in per-thread scratch; dq, dk, dv undefined where zero, not all three. Both
// undefined for the degenerate shapes (an empty matrix dim): the rules compute those.
std::pair<Tensor, Tensor> causal_attention_jvp(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dq,
                                               const Tensor& dk, const Tensor& dv, const Size& batch, double divisor);

// Forward-over-reverse through causal_attention_backward: its gradients {dq, dk, dv} (each only
// if asked for) and their tangents for tangents dg, dq, dk, dv of g, q, k, v (undefined: zero),
// the fast path of the composed rule's tangents when they record no graph. y may be undefined
// (recomputed). Both lists are empty for the degenerate shapes (an empty matrix dim or g): the
// composed rule computes those.
struct GradsWithTangents {
  Grads grads, tangents;
};
GradsWithTangents causal_attention_backward_jvp(const Tensor& g, const Tensor& dg, const Tensor& y, const Tensor& q,
                                                const Tensor& dq, const Tensor& k, const Tensor& dk, const Tensor& v,
                                                const Tensor& dv, bool gq, bool gk, bool gv, const Size& batch, double divisor);

}  // namespace ag::kernels
