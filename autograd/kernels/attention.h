// Kernels of causal_qk_softmax and causal_matmul (attention.cpp): the GEMMs of causal attention on
// the blocks on or below the diagonal only, no history. The forward kernels compute the ops; the
// *_backward kernels are the fast paths of the rules written in attention.cpp, used when no graph
// of the backward is recorded, and must equal those rules to rounding
// (FastKernels.EqualTheRulesTheyStandInFor in tests/test_higher_order.cpp holds them to it).
//
// Every operand is checked by the op first (one floating point dtype, the same batch dims `batch`,
// matching inner dims); transposed views go to BLAS as they are, other layouts are copied.
#pragma once

#include "autograd/node.h"
#include "autograd/tensor.h"

namespace ag::kernels {

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

}  // namespace ag::kernels
