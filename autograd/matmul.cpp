// matmul: 1-D, 2-D and batched inputs with broadcast batch dims, decomposed as PyTorch 1.13's
// at::matmul decomposes them, so the graph has its nodes (grad_fn and next_functions):
//   1-D @ 1-D      dot                                  DotBackward0
//   2-D @ 1-D      mv                                   MvBackward0
//   1-D @ 2-D      a.unsqueeze(0).mm(b).squeeze(0)      SqueezeBackward4 (see below)
//   2-D @ 2-D      mm                                   MmBackward0
//   >=3-D @ 1-D/2-D, and 1-D/2-D @ >=3-D ("fold"): the batched operand's batch dims folded into
//     the rows of one mm (or mv): a.reshape(-1, k).mm(b), _unsafe_view back (UnsafeViewBackward0);
//     1-D/2-D @ batched as (b^T @ a^T)^T: b.mT().reshape(-1, k).mm(a.t()), _unsafe_view,
//     .mT().contiguous() (CloneBackward0; with a 1-D a, mv and _unsafe_view)
//   otherwise: both expanded to the broadcast batch dims, reshaped to 3-D, bmm, _unsafe_view
// The rules, in ag ops:
//   out = a @ b (mm, bmm)  =>  da = g @ b^T, db = a^T @ g, each summed over broadcast batch dims
//   out = m @ v (mv)       =>  dm = g v^T (outer product), dv = m^T @ g
//   out = a . b (dot)      =>  da = g b, db = g a
// linear; matmul_reference. The GEMMs (through BLAS, on transposed views as they are) are in
// kernels/matmul.cpp; the rules' fast paths call them here.
#include <string>

#include "autograd/kernels/common.h"
#include "autograd/kernels/matmul.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

// matmul_nd's rule without a graph of the backward (its fast path): the GEMMs of kernels::bmm on
// transposed views as they are, and for a b shared by every batch index one GEMM over all rows.
Grads matmul_backward(const Tensor& g, const Tensor& a, const Tensor& b, bool ga, bool gb, const Size& a_shape,
                      const Size& b_shape) {
  Tensor da, db;
  if (ga) da = sum_to(kernels::bmm(g, transpose(b, -1, -2)), a_shape);
  if (gb) {
    // b (k, n) shared by every batch index: db = sum over batch of a^T g is one GEMM over all
    // rows (K = batch * m), as PyTorch computes it, instead of one GEMM per batch index and a sum
    if (b_shape.size() == 2 && kernels::rows_foldable(a))
      db = kernels::bmm(transpose(kernels::fold_rows(a), 0, 1), kernels::fold_rows(g.contiguous()));
    else
      db = sum_to(kernels::bmm(transpose(a, -1, -2), g), b_shape);
  }
  return {da, db};
}


// mm and bmm: both inputs at least 2-D.
Tensor matmul_nd(const Tensor& a, const Tensor& b, const char* name) {
  Tensor out = kernels::bmm(a, b);
  if (needs_grad(a, b)) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    SavedTensor sa(gb ? a : Tensor()), sb(ga ? b : Tensor());
    // out = a @ b  =>  da = g @ b^T, db = a^T @ g, each summed over broadcast batch dims
    record(out, name, {a, b}, [ga, gb, sa, sb, as = a.shape(), bs = b.shape()](const Tensor& g) -> Grads {
      const Tensor av = sa.get(), bv = sb.get();
      if (!needs_grad({&g, &av, &bv})) return matmul_backward(g, av, bv, ga, gb, as, bs);
      Tensor da, db;
      if (ga) da = sum_to(matmul(g, transpose(bv, -1, -2)), as);
      if (gb) db = sum_to(matmul(transpose(av, -1, -2), g), bs);
      return {da, db};
    },
    // jvp: dout = da @ b + a @ db
    [&](const Tangents& d) {
      if (a.dim() == 2 && b.dim() == 2 && detail::tangent_kernel_applies({&d[0], &d[1]}, {&a, &b}))
        return kernels::product_sum(out.shape(), Tensor(), d[0], b, a, d[1]);  // the same sum, the GEMMs into one output
      Tensor dy;
      if (d[0].defined()) dy = matmul(d[0], b);
      if (d[1].defined()) dy = dy.defined() ? dy + matmul(a, d[1]) : matmul(a, d[1]);
      return dy.defined() && dy.shape() != out.shape() ? expand(dy, out.shape().vec()) : dy;
    });
  }
  return out;
}

// The GEMM of a (m, k) @ b (k, n) with 1-D operands as a row (a) or column (b) matrix, no
// history, returned with `shape` as a tensor of its own (not a view).
Tensor product_as(const Tensor& a, const Tensor& b, const Size& shape) {
  NoGradGuard no_grad;
  const Tensor r = kernels::bmm(a.dim() == 1 ? unsqueeze(a, 0) : a, b.dim() == 1 ? unsqueeze(b, 1) : b);
  return detail::alias(r, shape, contiguous_strides(shape), r.storage_offset());
}

// mv: m (n, k) @ v (k) -> (n)
Tensor mv(const Tensor& m, const Tensor& v) {
  Tensor out = product_as(m, v, Size{m.size(0)});
  if (needs_grad(m, v)) {
    const bool gm = m.requires_grad(), gv = v.requires_grad();
    SavedTensor sm(gv ? m : Tensor()), sv(gm ? v : Tensor());
    // out = m @ v  =>  dm = g v^T (the outer product), dv = m^T @ g
    record(out, "MvBackward0", {m, v}, [gm, gv, sm, sv](const Tensor& g) -> Grads {
      Tensor dm, dv;
      if (gm) dm = unsqueeze(g, 1) * unsqueeze(sv.get(), 0);
      if (gv) dv = matmul(t(sm.get()), g);
      return {dm, dv};
    },
    // jvp: dout = dm @ v + m @ dv
    [&](const Tangents& d) {
      Tensor dy;
      if (d[0].defined()) dy = mv(d[0], v);
      if (d[1].defined()) dy = dy.defined() ? dy + mv(m, d[1]) : mv(m, d[1]);
      return dy;
    });
  }
  return out;
}

// dot: a (k) . b (k) -> ()
Tensor dot(const Tensor& a, const Tensor& b) {
  Tensor out = product_as(a, b, Size{});
  if (needs_grad(a, b)) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    SavedTensor sa(gb ? a : Tensor()), sb(ga ? b : Tensor());
    // out = a . b  =>  da = g b, db = g a
    record(out, "DotBackward0", {a, b}, [ga, gb, sa, sb](const Tensor& g) -> Grads {
      Tensor da, db;
      if (ga) da = g * sb.get();
      if (gb) db = g * sa.get();
      return {da, db};
    },
    // jvp: dout = da . b + a . db
    [&](const Tangents& d) {
      Tensor dy;
      if (d[0].defined()) dy = dot(d[0], b);
      if (d[1].defined()) dy = dy.defined() ? dy + dot(a, d[1]) : dot(a, d[1]);
      return dy;
    });
  }
  return out;
}

// PyTorch 1.13's should_fold: t1 (>= 3-D) @ a 1-D or 2-D operand folds t1's batch dims into rows,
// except a 3-D t1 @ 2-D whose last two dims are transposed over a contiguous batch (as from
// permute(0, 2, 1)), which bmm reads as it is.
bool should_fold(const Tensor& t1, int64_t dim2) {
  if (t1.dim() < 3 || (dim2 != 1 && dim2 != 2)) return false;
  return !(t1.dim() == 3 && dim2 == 2 && t1.stride(-1) != 1 && t1.stride(0) == t1.size(1) * t1.size(2));
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
  const int64_t da = a.dim(), db = b.dim();
  if (da == 1 && db == 1) return dot(a, b);
  if (da == 2 && db == 1) return mv(a, b);
  if (da == 1 && db == 2) {
    Tensor out = squeeze(matmul_nd(unsqueeze(a, 0), b, "MmBackward0"), 0);
    // SqueezeBackward4, as the seed notebooks print it (PyTorch 2's name; 1.13 says SqueezeBackward3)
    detail::name_node(out, "SqueezeBackward4", nullptr);
    return out;
  }
  if (da == 2 && db == 2) return matmul_nd(a, b, "MmBackward0");
  if (should_fold(a, db) || should_fold(b, da)) {
    // t1 (>= 3-D) @ t2 (1-D or 2-D); 1-D/2-D @ batched as b^T @ a^T, transposed back below
    const bool trans = db > da;
    const Tensor t1 = trans ? transpose(b, -1, -2) : a;
    const Tensor t2 = !trans ? b : da == 2 ? t(a) : a;
    std::vector<int64_t> out_shape(t1.shape().begin(), t1.shape().end() - 1);
    int64_t rows = 1;
    for (int64_t d : out_shape) rows *= d;
    const Tensor t1_folded = reshape(t1, {rows, t1.size(-1)});  // not view(-1, k): k may be 0
    if (t2.dim() == 1) return detail::unsafe_view(mv(t1_folded, t2), Size(out_shape));
    out_shape.push_back(t2.size(1));
    const Tensor out = detail::unsafe_view(matmul_nd(t1_folded, t2, "MmBackward0"), Size(out_shape));
    return trans ? contiguous(transpose(out, -1, -2)) : out;
  }
  // (batched) @ (batched), or a 2-D operand with a batched one bmm reads as it is: both expanded
  // to the broadcast batch dims and reshaped to 3-D, bmm, _unsafe_view back.
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
    // a 1-D input: matmul's unsqueeze, mm, squeeze; PyTorch 1.13 names the squeeze
    // SqueezeBackward3 (matmul of 1-D @ 2-D keeps the seed notebooks' SqueezeBackward4)
    if (x.dim() == 1) detail::name_node(y, "SqueezeBackward3", nullptr);
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
    },
    // jvp: dout = dbias + dx @ wt + x @ dwt
    [&](const Tangents& d) {
      if (detail::tangent_kernel_applies({&d[0], &d[1], &d[2]}, {&x, &wt}))
        return kernels::product_sum(out.shape(), d[0], d[1], wt, x, d[2]);  // the same sum, the GEMMs into one output
      Tensor dy;
      auto plus = [&dy](const Tensor& term) { dy = dy.defined() ? dy + term : term; };
      if (d[1].defined()) plus(matmul(d[1], wt));
      if (d[2].defined()) plus(matmul(x, d[2]));
      if (d[0].defined()) plus(d[0]);
      return dy.shape() != out.shape() ? expand(dy, out.shape().vec()) : dy;
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
