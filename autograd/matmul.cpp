// matmul: 1-D, 2-D and batched inputs with broadcast batch dims; linear; matmul_reference. The
// rules are written in ag ops; the GEMMs (through BLAS, on transposed views as they are) are in
// kernels/matmul.cpp.
#include <string>

#include "autograd/kernels/common.h"
#include "autograd/kernels/matmul.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

// Both inputs at least 2-D.
Tensor matmul_nd(const Tensor& a, const Tensor& b, const char* name) {
  Tensor out = kernels::bmm(a, b);
  if (needs_grad(a, b)) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    SavedTensor sa(gb ? a : Tensor()), sb(ga ? b : Tensor());
    // out = a @ b  =>  da = g @ b^T, db = a^T @ g, each summed over broadcast batch dims
    record(out, name, {a, b}, [ga, gb, sa, sb, as = a.shape(), bs = b.shape()](const Tensor& g) -> Grads {
      const Tensor av = sa.get(), bv = sb.get();
      if (!needs_grad({&g, &av, &bv})) return kernels::matmul_backward(g, av, bv, ga, gb, as, bs);
      Tensor da, db;
      if (ga) da = sum_to(matmul(g, transpose(bv, -1, -2)), as);
      if (gb) db = sum_to(matmul(transpose(av, -1, -2), g), bs);
      return {da, db};
    });
  }
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  detail::check_defined(a, "matmul");
  detail::check_defined(b, "matmul");
  if (a.dim() == 0 || b.dim() == 0) {
    detail::shape_error("matmul", "both arguments need at least 1 dimension, got shapes " + a.shape().str() + " and " +
                                      b.shape().str());
  }
  if (a.dtype() == kBool || a.dtype() != b.dtype()) {
    detail::shape_error("matmul", "expected two tensors of one dtype, floating point or int64, got " + dtype_name(a.dtype()) +
                                      " and " + dtype_name(b.dtype()) + " (shapes " + a.shape().str() + " and " +
                                      b.shape().str() + ")");
  }
  const int64_t ka = a.size(-1), kb = b.dim() == 1 ? b.size(0) : b.size(-2);
  if (ka != kb) {
    detail::shape_error("matmul", "shapes " + a.shape().str() + " and " + b.shape().str() +
                                      " cannot be multiplied (" + std::to_string(ka) + " != " + std::to_string(kb) + ")");
  }
  // 1-D operands become a row (left) or a column (right) matrix, and that dim is removed again.
  // The last node gets PyTorch's name for each case.
  if (a.dim() == 1 && b.dim() == 1) {
    Tensor out = reshape(matmul_nd(unsqueeze(a, 0), unsqueeze(b, 1), "MmBackward0"), {});
    if (out.grad_fn()) out.grad_fn()->name_ = "DotBackward0";
    return out;
  }
  if (a.dim() == 1) {
    Tensor out = squeeze(matmul_nd(unsqueeze(a, 0), b, b.dim() == 2 ? "MmBackward0" : "UnsafeViewBackward0"), -2);
    // SqueezeBackward4, as the seed notebooks print it (PyTorch 2's name; 1.13 says SqueezeBackward3)
    if (out.grad_fn()) out.grad_fn()->name_ = b.dim() == 2 ? "SqueezeBackward4" : "UnsafeViewBackward0";
    return out;
  }
  if (b.dim() == 1) {
    Tensor out = squeeze(matmul_nd(a, unsqueeze(b, 1), a.dim() == 2 ? "MmBackward0" : "UnsafeViewBackward0"), -1);
    if (out.grad_fn()) out.grad_fn()->name_ = a.dim() == 2 ? "MvBackward0" : "UnsafeViewBackward0";
    return out;
  }
  if (a.dim() == 2 && b.dim() == 2) return matmul_nd(a, b, "MmBackward0");
  // PyTorch 1.13 computes (2-D) @ (batched) as (b^T @ a^T)^T made contiguous: CloneBackward0
  if (a.dim() == 2) return matmul_nd(a, b, "CloneBackward0");
  // The rest as PyTorch 1.13 decomposes it, so the graph has its nodes (next_functions):
  // (batched) @ (2-D) folds a's batch dims into its rows: reshape, mm, _unsafe_view.
  Size out_shape = a.shape();
  if (b.dim() == 2) {
    out_shape[out_shape.size() - 1] = b.size(1);
    return detail::unsafe_view(matmul_nd(reshape(a, {-1, ka}), b, "MmBackward0"), out_shape);
  }
  // (batched) @ (batched): both expanded to the broadcast batch dims and reshaped to 3-D, bmm,
  // _unsafe_view back.
  const Size batch = broadcast_shapes(Size(std::vector<int64_t>(a.shape().begin(), a.shape().end() - 2)),
                                      Size(std::vector<int64_t>(b.shape().begin(), b.shape().end() - 2)), "matmul");
  std::vector<int64_t> ea(batch.begin(), batch.end()), eb = ea, out = ea;
  const int64_t n = a.size(-2), p = b.size(-1), bp = batch.numel();
  ea.insert(ea.end(), {n, ka});
  eb.insert(eb.end(), {kb, p});
  out.insert(out.end(), {n, p});
  const Tensor a3 = reshape(expand(a, ea), {bp, n, ka}), b3 = reshape(expand(b, eb), {bp, kb, p});
  return detail::unsafe_view(matmul_nd(a3, b3, "BmmBackward0"), Size(out));
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  detail::check_defined(x, "linear");
  detail::check_defined(weight, "linear");
  // a bias of shape (1) or () broadcasts over the out features, as in PyTorch
  if (x.dim() == 0 || weight.dim() != 2 || x.size(-1) != weight.size(1) ||
      (bias.defined() && (bias.dim() > 1 || (bias.numel() != 1 && bias.numel() != weight.size(0))))) {
    detail::shape_error("linear", "expects input (*, in), weight (out, in) and bias (out), got " + x.shape().str() + ", " +
                                      weight.shape().str() + " and " + (bias.defined() ? bias.shape().str() : "none"));
  }
  if (x.dtype() == kBool || weight.dtype() != x.dtype() || (bias.defined() && bias.dtype() != x.dtype())) {
    detail::shape_error("linear", "expects floating point (or int64) tensors of one dtype, got " + dtype_name(x.dtype()) + " and " +
                                      dtype_name(weight.dtype()) + " (shapes " + x.shape().str() + " and " +
                                      weight.shape().str() + ")");
  }
  // Other shapes of input as PyTorch 1.13 computes them (and names their nodes): a contiguous 3-D
  // input with a bias folds to 2-D rows, one addmm, and a view back (ViewBackward0); otherwise
  // matmul, then the bias added (AddBackward0).
  if (x.dim() != 2 || x.dtype() == kInt64) {  // int64: no addmm kernel, matmul's loop
    if (x.dim() == 3 && bias.defined() && x.is_contiguous() && x.dtype() != kInt64) {
      return view(linear(view(x, {x.size(0) * x.size(1), x.size(2)}), weight, bias), {x.size(0), x.size(1), weight.size(0)});
    }
    const Tensor y = matmul(x, weight.t());
    return bias.defined() ? y + bias : y;
  }
  if (!bias.defined()) return matmul(x, weight.t());
  Tensor out = kernels::linear(x, weight, bias);
  if (needs_grad({&bias, &x, &weight})) {
    // PyTorch's addmm(bias, x, weight.t()): the node's third input is the transposed weight (a
    // TBackward0 view in the graph, as PyTorch's).
    const Tensor wt = t(weight);
    const bool gx = x.requires_grad(), gw = weight.requires_grad(), gb = bias.requires_grad();
    SavedTensor sx(gw ? x : Tensor()), sw(gx ? weight : Tensor());
    // out = bias + x @ wt  =>  dbias = g.sum(0) (summed to a (1) or () bias), dx = g @ wt^T = g @ weight, dwt = x^T @ g
    record(out, "AddmmBackward0", {bias, x, wt}, [gx, gw, gb, sx, sw, bs = bias.shape()](const Tensor& g) -> Grads {
      Tensor db, dx, dwt;
      if (gb) db = bs.size() == 1 && bs[0] == g.size(1) ? sum(g, {0}) : sum_to(g, bs);
      const Tensor xv = sx.get(), wv = sw.get();
      if (!needs_grad({&g, &xv, &wv})) {  // the fast path: the same products without their graph
        if (gx) dx = kernels::bmm(g, wv);
        if (gw) dwt = transpose(kernels::bmm(transpose(g, 0, 1), xv), 0, 1);
        return {db, dx, dwt};
      }
      if (gx) dx = matmul(g, wv);
      if (gw) dwt = matmul(xv.t(), g);
      return {db, dx, dwt};
    });
  }
  return out;
}

Tensor matmul_reference(const Tensor& a, const Tensor& b) {
  if (a.dim() != 2 || b.dim() != 2 || a.size(1) != b.size(0)) {
    detail::shape_error("matmul_reference", "expects (m,k) and (k,n), got " + a.shape().str() + " and " + b.shape().str());
  }
  // out[i][j] = sum_p a[i][p] b[p][j]
  return kernels::matmul_reference(a, b);
}

}  // namespace ag
