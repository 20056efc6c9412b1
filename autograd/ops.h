// Every tensor op, as free functions with PyTorch's names and argument orders. Each
// differentiable op's backward is written next to its forward, in the file named after it.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "generator.h"
#include "nested_list.h"
#include "random.h"
#include "tensor.h"

namespace ag {

// ---- creation (creation.cpp) ----
Tensor empty(const DimVector& shape, Options o = {});
Tensor zeros(const DimVector& shape, Options o = {});
Tensor ones(const DimVector& shape, Options o = {});
// torch.full / libtorch's full: the dtype, unless given, is inferred from the value as PyTorch
// does: float32 from a floating value, int64 from an integer (written exactly, all 64 bits),
// bool from a bool.
Tensor full(const DimVector& shape, double value, Options o = {});
Tensor full(const DimVector& shape, bool value, Options o = {});
Tensor full_int(const DimVector& shape, int64_t value, Options o);  // full with an integer value
template <class I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
Tensor full(const DimVector& shape, I value, Options o = {}) {
  return full_int(shape, static_cast<int64_t>(value), o);
}
// torch.arange: without a dtype, int64 if start, end and step are all integral, else float32 (C++
// cannot tell 5.0 from 5 once converted, so arange(0.0, 5.0) is int64; give kFloat32 for floats).
Tensor arange(double end, Options o = {});
Tensor arange(double start, double end, double step = 1.0, Options o = {});
Tensor arange(double start, double end, Options o);  // libtorch's arange(start, end, options)
// torch.linspace / torch.logspace: `steps` points from start to end (float32 unless a dtype is
// given), the same values as PyTorch's bit for bit (float32, float64 and int64; see
// kernels/creation.h). logspace gives base^v for those points.
Tensor linspace(double start, double end, int64_t steps, Options o = {});
Tensor logspace(double start, double end, int64_t steps, double base = 10.0, Options o = {});
// torch.eye: (n, n) or (n, m) with ones on the diagonal
Tensor eye(int64_t n, Options o = {});
Tensor eye(int64_t n, int64_t m, Options o = {});
// rand_like, randn_like, randint_like: random.h
// t's shape, and t's dtype unless o gives one (libtorch's zeros_like(t, options))
Tensor empty_like(const Tensor& t, Options o = {});
Tensor zeros_like(const Tensor& t, Options o = {});
Tensor ones_like(const Tensor& t, Options o = {});
Tensor full_like(const Tensor& t, double value, Options o = {});
// A scalar or a nested braced list of scalars, as torch.tensor takes them: NestedList (nested_list.h).

// torch.tensor: tensor({{1.5, 2}, {3, 4}}) is float32, tensor({0, 4, 5}) is int64,
// tensor({true, false}) is bool, tensor(3.5) is 0-dim; pass a dtype to choose.
Tensor tensor(const NestedList& data, Options o = {});
Tensor from_vector(const std::vector<double>& data, const DimVector& shape, Options o = {});
Tensor from_vector(const std::vector<float>& data, const DimVector& shape, Options o = {});
Tensor from_vector(const std::vector<int64_t>& data, const DimVector& shape, Options o = kInt64);
// A 1-D tensor from a std::vector, dtype inferred as tensor({...}) infers it: float32 from float
// or double, int64 from integers, bool from bool (a braced list goes to tensor(NestedList)).
template <class T>
  requires std::is_arithmetic_v<T>
Tensor tensor(const std::vector<T>& data, Options o = {}) {
  const auto n = static_cast<int64_t>(data.size());
  if constexpr (std::is_same_v<T, bool>) {
    return from_vector(std::vector<double>(data.begin(), data.end()), {n}, o.dtype_set ? o : o.dtype(kBool));
  } else if constexpr (std::is_integral_v<T>) {
    return from_vector(std::vector<int64_t>(data.begin(), data.end()), {n}, o.dtype_set ? o : o.dtype(kInt64));
  } else {
    return from_vector(std::vector<double>(data.begin(), data.end()), {n}, o);
  }
}
Tensor triu(const Tensor& t, int64_t diagonal = 0);
Tensor tril(const Tensor& t, int64_t diagonal = 0);

// ---- dtype and layout (convert.cpp) ----
enum class MemoryFormat { Preserve, Contiguous };  // PyTorch's preserve_format, contiguous_format
Tensor to(const Tensor& t, DType dtype);  // ToCopyBackward0; laid out as clone's Preserve
Tensor contiguous(const Tensor& t);       // copies only when needed (CloneBackward0)
Tensor clone(const Tensor& t, MemoryFormat memory_format = MemoryFormat::Preserve);  // Preserve: a dense t keeps its strides

// ---- views (views.cpp): share storage with their input ----
Tensor view(const Tensor& t, const DimVector& shape);  // one -1 allowed
Tensor reshape(const Tensor& t, const DimVector& shape);
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1);
Tensor t(const Tensor& x);  // torch.t: transposes a 2-D tensor; 0-D and 1-D as they are (TBackward0)
Tensor permute(const Tensor& t, const DimVector& dims);
Tensor unsqueeze(const Tensor& t, int64_t dim);
Tensor squeeze(const Tensor& t);
Tensor squeeze(const Tensor& t, int64_t dim);
Tensor expand(const Tensor& t, const DimVector& shape);  // -1 keeps a dim
Tensor slice(const Tensor& t, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step = 1);
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& t, int64_t dim, int64_t index);

// ---- elementwise with broadcasting (binary.cpp, unary.cpp) ----
// torch.result_type: the dtype a binary op computes in. Dimensioned tensors decide; a 0-dim tensor
// only when its category (bool < integer < floating) is higher (float32 x * tensor(2.0, kFloat64)
// is float32; int64 x + tensor(1.5) float32).
DType result_type(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor rsub(const Tensor& a, double b);  // b - a
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor rdiv(const Tensor& a, double b);  // b / a
Tensor pow(const Tensor& a, double exponent);
Tensor pow(const Tensor& a, const Tensor& exponent);
Tensor neg(const Tensor& t);
Tensor exp(const Tensor& t);
Tensor log(const Tensor& t);
Tensor sqrt(const Tensor& t);
Tensor tanh(const Tensor& t);
Tensor sigmoid(const Tensor& t);
Tensor relu(const Tensor& t);
Tensor erf(const Tensor& t);
// approximate: "none" (erf, the default) or "tanh"
Tensor gelu(const Tensor& t, const std::string& approximate = "none");
// Integer inputs give float32 (as in PyTorch): sin, cos, log1p, expm1, rsqrt, reciprocal (and exp,
// log, sqrt, tanh, sigmoid, erf above).
Tensor sin(const Tensor& t);
Tensor cos(const Tensor& t);
Tensor log1p(const Tensor& t);
Tensor expm1(const Tensor& t);
Tensor rsqrt(const Tensor& t);
Tensor reciprocal(const Tensor& t);
// Integers stay integers: abs (bool refused), sign (bool stays bool), square (bool gives int64;
// a float square is pow(t, 2), grad_fn PowBackward0).
Tensor abs(const Tensor& t);
Tensor sign(const Tensor& t);  // gradient 0 everywhere (SignBackward0)
Tensor square(const Tensor& t);
// Rounding, as PyTorch's: round is half to even (round(2.5) == 2, round(-0.5) == -0); with
// `decimals`, nearbyint(x * 10^decimals) / 10^decimals in x's dtype (decimals < 0 rounds to tens,
// hundreds, ...). int64 input is returned as it is (bool refused); frac = x - trunc(x) and
// round(x, decimals) take floating point only. Gradients: zero (RoundBackward0 / RoundBackward1,
// FloorBackward0, CeilBackward0, TruncBackward0), g for frac (FracBackward0).
Tensor round(const Tensor& t);
Tensor round(const Tensor& t, int64_t decimals);
Tensor floor(const Tensor& t);
Tensor ceil(const Tensor& t);
Tensor trunc(const Tensor& t);
Tensor frac(const Tensor& t);
// clamp: at least one bound. An integer tensor stays int64 unless a bound has a fraction (then
// float32). Gradient g where min <= t <= max, bounds included. A NaN bound: clamp with both
// bounds gives NaN everywhere, with one it is ignored; clamp_min / clamp_max give NaN (PyTorch).
Tensor clamp(const Tensor& t, std::optional<double> min, std::optional<double> max = std::nullopt);
Tensor clamp_min(const Tensor& t, double min);
Tensor clamp_max(const Tensor& t, double max);
// Activations (floating point only, as in PyTorch; torch.nn.functional's defaults)
Tensor softplus(const Tensor& t, double beta = 1.0, double threshold = 20.0);  // x where beta x > threshold
Tensor silu(const Tensor& t);
Tensor leaky_relu(const Tensor& t, double negative_slope = 0.01);
Tensor elu(const Tensor& t, double alpha = 1.0);
// Elementwise min / max of two tensors broadcast together, in their common dtype; a NaN in either
// gives NaN; at ties each input gets half the gradient.
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
// cond ? a : b, with cond a bool tensor and all three broadcast together, in a and b's common
// dtype. A number is a 0-dim tensor of the other operand's dtype if that is floating, else int64
// for a whole number and float32 otherwise.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, double b);
Tensor where(const Tensor& cond, double a, const Tensor& b);

// comparisons give bool tensors (no gradient)
Tensor gt(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& t);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);

// ---- reductions (reduce.cpp) ----
Tensor sum(const Tensor& t);
Tensor sum(const Tensor& t, const DimVector& dims, bool keepdim = false);
Tensor mean(const Tensor& t);
Tensor mean(const Tensor& t, const DimVector& dims, bool keepdim = false);
Tensor max(const Tensor& t);  // gradient shared evenly among tied maxima, as in PyTorch
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false);  // values, indices
Tensor argmax(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& t);  // ties share the gradient evenly, as max's
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false);  // values, indices (the first min)
Tensor argmin(const Tensor& t, int64_t dim, bool keepdim = false);
// torch.prod (int64 for integer and bool input). The gradient prod_{j != i} x_j is exact with zeros
// in t, to any order (PyTorch 1.13's second derivative is 0 with two or more zeros in a row).
Tensor prod(const Tensor& t);
Tensor prod(const Tensor& t, int64_t dim, bool keepdim = false);
// var and std as libtorch's at::var / at::std (floating point only): over all elements, over dims
// (empty: all), or with a correction (the divisor is n - correction; default 1, unbiased). As in
// libtorch, a plain integer after the dims would convert to `bool unbiased`, so the correction
// form takes std::optional<int64_t>: var(t, DimVector{1}, std::optional<int64_t>(2)); the deleted
// template turns var(t, {1}, 2) into a compile error. var(t, 1) is over dim 1 (libtorch's `int dim`).
Tensor var(const Tensor& t, bool unbiased = true);
Tensor var(const Tensor& t, int dim);
Tensor var(const Tensor& t, const DimVector& dims, bool unbiased = true, bool keepdim = false);
Tensor var(const Tensor& t, std::optional<DimVector> dims, std::optional<int64_t> correction, bool keepdim = false);
template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
Tensor var(const Tensor& t, const DimVector& dims, I correction, bool keepdim = false) = delete;
Tensor std(const Tensor& t, bool unbiased = true);
Tensor std(const Tensor& t, int dim);
Tensor std(const Tensor& t, const DimVector& dims, bool unbiased = true, bool keepdim = false);
Tensor std(const Tensor& t, std::optional<DimVector> dims, std::optional<int64_t> correction, bool keepdim = false);
template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
Tensor std(const Tensor& t, const DimVector& dims, I correction, bool keepdim = false) = delete;
// log(sum(exp(t))) over dims (at least one), stable; integer and bool input give float32.
Tensor logsumexp(const Tensor& t, const DimVector& dims, bool keepdim = false);
Tensor cumsum(const Tensor& t, int64_t dim);  // int64 for integer and bool input
// The p-norm (sum |t|^p)^(1/p) over all elements or over dims (empty: all), floating point only;
// p = 0 counts nonzeros, p = +-inf is max / min |t|. The gradient at 0 is 0, as in PyTorch.
// grad_fn NormBackward1 (what Python's t.norm(...) records).
Tensor norm(const Tensor& t, double p = 2);
Tensor norm(const Tensor& t, double p, const DimVector& dims, bool keepdim = false);
// Sums a gradient down to `shape` (the inverse of broadcasting `shape` up to grad's shape).
Tensor sum_to(const Tensor& grad, const Size& shape);

// ---- matmul (matmul.cpp; BLAS call in blas.cpp) ----
Tensor matmul(const Tensor& a, const Tensor& b);
// PyTorch's F.linear: x (*, in) @ weight (out, in)^T + bias (out) -> (*, out). For 2-D input with a
// bias it is one op like PyTorch's addmm (grad_fn AddmmBackward0): the output starts as the bias
// rows and the GEMM adds to it, with no zeroing and no separate add pass. Without a bias it is
// matmul(x, weight.t()). Other ranks compute and name their nodes as PyTorch 1.13 does.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
// The naive triple loop matmul is tested against (2-D only, any strides, no autograd).
Tensor matmul_reference(const Tensor& a, const Tensor& b);

// ---- softmax family (softmax.cpp) ----
Tensor softmax(const Tensor& t, int64_t dim);
Tensor log_softmax(const Tensor& t, int64_t dim);
// The causal attention weights in one op: softmax over the last dim of scores / divisor with the
// entries above the diagonal (key j > query i) masked out, i.e. exactly (bit for bit)
//   softmax(masked_fill(scores, triu(ones({Tq, Tk}), 1).bool_(), -inf) / divisor, -1)
// for scores (..., Tq, Tk), at about half the cost: masked entries are neither divided nor
// exponentiated, and there is no mask tensor, masked copy or divided copy. grad_fn
// CausalSoftmaxBackward0 (PyTorch 1.13 has no such op; its graph shows the three ops).
Tensor causal_softmax(const Tensor& scores, double divisor = 1.0);
// Its rule in ag ops, from the output gradient g and the output y (also causal_qk_softmax's):
//   masked_fill(y * (g - sum(g * y, -1, keepdim)) / divisor, above the diagonal, 0)
Tensor causal_softmax_backward(const Tensor& g, const Tensor& y, double divisor);

// ---- causal attention GEMMs (attention.cpp) ----
// The two GEMMs of causal attention computed on the blocks on or below the diagonal only (query i
// sees keys j <= i), about half the flops; each equals its composed reference bit for bit:
//   causal_qk_softmax(q, k, divisor) == causal_softmax(matmul(q, k.transpose(-2, -1)), divisor)
//   causal_matmul(w, v)              == matmul(tril(w), v)
// for q (..., Tq, E), k (..., Tk, E), w (..., Tq, Tk), v (..., Tk, E) with the same batch dims
// (no broadcasting). grad_fn of causal_qk_softmax: CausalQKSoftmaxBackward0 (PyTorch has no such
// op; its graph shows matmul, masked_fill, div and softmax); of causal_matmul: matmul's
// (MmBackward0 for 2-D, UnsafeViewBackward0 batched), as it stands in for weights @ values.
// causal_matmul's output, and the gradients of q, k and v, take that input's memory layout when it
// tiles memory densely (e.g. the (B, heads, T, E) views of (B, T, heads, E) projections), so the
// transposes and views around attention need no copies; otherwise they are contiguous.
Tensor causal_qk_softmax(const Tensor& q, const Tensor& k, double divisor = 1.0);
Tensor causal_matmul(const Tensor& w, const Tensor& v);
// Both in one op, the causal attention core (softmax(masked q k^T / divisor) @ v) for k (..., Tk, E)
// and v (..., Tk, Ev): out = causal_matmul(weights, v) with weights = causal_qk_softmax(q, k,
// divisor), the same bits as the two ops. out's grad_fn has causal_matmul's name (PyTorch's for
// weights @ values: MmBackward0 for 2-D, UnsafeViewBackward0 batched) but its edges lead to q, k
// and v: its rule is the two rules composed, so its backward needs no (..., Tq, Tk) gradient of
// the weights. The weights keep CausalQKSoftmaxBackward0, for a loss that uses them too.
struct CausalAttentionOutput {
  Tensor out, weights;
};
CausalAttentionOutput causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, double divisor = 1.0);
// causal_attention's out alone, its weights never held: each matrix's are computed in cache, in the
// forward and again from q and k in the backward (the kernels of causal_attention), so no
// (..., Tq, Tk) tensor exists in either direction. One node, named as PyTorch's CPU flash
// attention (ScaledDotProductFlashAttentionForCpuBackward0); causal_attention's rules with the
// weights recomputed. nn::scaled_dot_product_attention(q, k, v, {}, true) runs it.
Tensor causal_attention_output(const Tensor& q, const Tensor& k, const Tensor& v, double divisor = 1.0);
// Causal multi-head self-attention with its three input projections, in one node:
//   q = linear(x, wq), k = linear(x, wk), v = linear(x, wv)        (batch, T, d) each
//   split each into `heads` heads: .view(batch, T, heads, d / heads).transpose(1, 2)
//   out = causal_attention_output(q, k, v, divisor), its heads merged back: (batch, T, d)
// x is (batch, T, d_in), the weights (d, d_in) without bias, d divisible by heads. Equal to those
// ops to rounding; its rule is theirs (causal_attention_output's with the projections' products),
// its one node (CausalSelfAttentionBackward0, edges to x, wq, wk, wv) saves x, the weights, the
// projections and the softmax rows' stats. nn::MultiHeadAttention (AttentionImpl::Fused, no qkv
// bias, no dropout, no weights asked for) runs it.
Tensor causal_self_attention(const Tensor& x, const Tensor& wq, const Tensor& wk, const Tensor& wv, int64_t heads,
                             double divisor = 1.0);

// ---- masking and dropout (masked_fill.cpp, dropout.cpp) ----
Tensor masked_fill(const Tensor& t, const Tensor& mask, double value);  // mask broadcasts to t
// Inverted dropout: zeroes with probability p, scales the rest by 1/(1-p); identity when not
// training or p == 0. The mask comes from `gen` (the default generator if null).
Tensor dropout(const Tensor& t, double p, bool training = true, Generator* gen = nullptr);
// The same with a given keep-mask (1 keep, 0 drop): what dropout applies; used by gradcheck.
Tensor dropout_with_mask(const Tensor& t, const Tensor& mask, double p);

// ---- joining (cat.cpp) ----
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

// ---- gathering (index.cpp): repeated indices accumulate in backward ----
Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index);
Tensor embedding(const Tensor& weight, const Tensor& indices);  // indices (*) -> (*, dim)
// torch.index_add: a copy of t with out[.., index[j], ..] += alpha * source[.., j, ..] along dim.
Tensor index_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source, double alpha = 1.0);
// torch.gather: out[i][j][k] = t[index[i][j][k]][j][k] for dim 0 (likewise for other dims); index
// int64 with t's number of dims, index.size(d) <= t.size(d) for d != dim; out has index's shape.
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);
// torch.scatter_add (a new tensor): a copy of t with out[index[i][j][k]][j][k] += src[i][j][k] for
// dim 0, over the positions of index (index.size(d) <= src.size(d), and <= t.size(d) for d != dim).
Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
// torch.masked_select: the elements of t where the bool mask is true, as a 1-D tensor, in row-major
// order of the shape t and mask broadcast to.
Tensor masked_select(const Tensor& t, const Tensor& mask);

// ---- rearranging (rearrange.cpp) ----
Tensor flip(const Tensor& t, const DimVector& dims);
// torch.roll: shifts elements along dims (one shift per dim) with wrap-around; with no dims, over
// the flattened tensor (then viewed back). roll(t, 1) and roll(t, 1, 0) are the one-shift forms.
Tensor roll(const Tensor& t, const DimVector& shifts, const DimVector& dims = {});
Tensor roll(const Tensor& t, int64_t shift);
Tensor roll(const Tensor& t, int64_t shift, int64_t dim);
// torch.Tensor.repeat: tiles t sizes[i] times along dim i (sizes may have more dims than t).
Tensor repeat(const Tensor& t, const DimVector& sizes);
// torch.chunk / torch.split: views of consecutive parts along dim, sharing t's storage. chunk
// makes parts of ceil(size / chunks) (the last smaller; possibly fewer than `chunks` parts), split
// parts of split_size (the last smaller) or of the given sizes (which must sum to the dim's size).
// Note: split(t, {2}) is the split_size form (a one-element list converts to int64_t first).
std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& t, const std::vector<int64_t>& split_sizes, int64_t dim = 0);
// torch.flatten: dims start_dim..end_dim merged into one (reshape: a view when possible; a 0-dim
// tensor becomes 1-D; t itself if start_dim == end_dim). torch.unflatten: dim split into sizes (one
// may be -1), always a view.
Tensor flatten(const Tensor& t, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unflatten(const Tensor& t, int64_t dim, const DimVector& sizes);

// ---- losses and normalization (loss.cpp, layer_norm.cpp) ----
// reduction: "mean" (the default), "sum" or "none" (one loss per element or row), as PyTorch. The
// elementwise losses refuse input and target shapes that differ, where PyTorch warns and broadcasts.
//
// cross_entropy: logits (N, C), (C) or (N, C, d1, ..., dk); target int64 class indices (N), () or
// (N, d1, ..., dk), or class probabilities of the logits' shape. "mean" averages over the targets
// != ignore_index (over the rows, for probabilities). label_smoothing e mixes the target with the
// uniform distribution: (1 - e) target + e / C. For (N, C) logits and index targets with the
// default reduction it is nll_loss(log_softmax(logits, 1)) bit for bit, as one op (grad_fn
// NllLossBackward0, PyTorch's name for the loss; PyTorch's graph has a LogSoftmaxBackward0 node
// under it); for more than 2 dims, NllLoss2DBackward0 as PyTorch.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100,
                     const std::string& reduction = "mean", double label_smoothing = 0.0);
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index = -100,
                const std::string& reduction = "mean");
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean", double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean", double delta = 1.0);
// input probabilities in [0, 1] (checked); optional weight broadcast over the elements
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            const std::string& reduction = "mean");
// input logits; pos_weight (C) weighs the positive targets of each class
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        const std::string& reduction = "mean", const Tensor& pos_weight = {});
// input log-probabilities; reduction also "batchmean" (the sum over the batch size, the true KL
// divergence; "mean" averages over every element, as PyTorch)
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean", bool log_target = false);
Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

// ---- operators ----
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(double a, const Tensor& b) { return rsub(b, a); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
inline Tensor operator/(double a, const Tensor& b) { return rdiv(b, a); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator>(const Tensor& a, double b) { return gt(a, b); }
inline Tensor operator<(const Tensor& a, double b) { return lt(a, b); }
inline Tensor operator>=(const Tensor& a, double b) { return ge(a, b); }
inline Tensor operator<=(const Tensor& a, double b) { return le(a, b); }
inline Tensor operator==(const Tensor& a, double b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, double b) { return ne(a, b); }
inline Tensor operator~(const Tensor& a) { return logical_not(a); }
// In place, as Python's a += b (differentiable: see Tensor::add_)
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
inline Tensor& operator+=(Tensor& a, double b) { return a.add_(b); }
inline Tensor& operator-=(Tensor& a, double b) { return a.sub_(b); }
inline Tensor& operator*=(Tensor& a, double b) { return a.mul_(b); }
inline Tensor& operator/=(Tensor& a, double b) { return a.div_(b); }
// On a temporary view they write into the tensor it views, as libtorch's members and Python's
// x[0] += t do: x[0] += t is x.select(0, 0).add_(t). On the copy advanced indexing makes,
// x[mask] += 1 writes the sum back into x, as Python's x[mask] = x[mask] + 1 (indexing.h).
namespace detail {
void write_back_indexed(const Tensor& t);
}  // namespace detail
inline Tensor& operator+=(Tensor&& a, const Tensor& b) { detail::write_back_indexed(a.add_(b)); return a; }
inline Tensor& operator-=(Tensor&& a, const Tensor& b) { detail::write_back_indexed(a.sub_(b)); return a; }
inline Tensor& operator*=(Tensor&& a, const Tensor& b) { detail::write_back_indexed(a.mul_(b)); return a; }
inline Tensor& operator/=(Tensor&& a, const Tensor& b) { detail::write_back_indexed(a.div_(b)); return a; }
inline Tensor& operator+=(Tensor&& a, double b) { detail::write_back_indexed(a.add_(b)); return a; }
inline Tensor& operator-=(Tensor&& a, double b) { detail::write_back_indexed(a.sub_(b)); return a; }
inline Tensor& operator*=(Tensor&& a, double b) { detail::write_back_indexed(a.mul_(b)); return a; }
inline Tensor& operator/=(Tensor&& a, double b) { detail::write_back_indexed(a.div_(b)); return a; }

}  // namespace ag
