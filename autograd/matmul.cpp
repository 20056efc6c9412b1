// matmul: 1-D, 2-D and batched inputs with broadcast batch dims, through BLAS. Transposed views
// are passed to BLAS as transpose flags; only layouts BLAS cannot describe are copied.
#include <climits>
#include <optional>
#include <stdexcept>

#include "autograd/kernels/blas.h"
#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace detail {

namespace {

// How BLAS can read a (rows, cols) matrix with strides (rs, cs), if it can.
std::optional<MatLayout> mat_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (rows <= 1) rs = std::max<int64_t>(cols, 1);  // a single row: its row stride never matters
  if (cols <= 1) cs = 1;
  if (rs > INT_MAX || cs > INT_MAX) return std::nullopt;
  if (cs == 1 && rs >= std::max<int64_t>(cols, 1)) return MatLayout{false, static_cast<int>(rs)};
  if (rs == 1 && cs >= std::max<int64_t>(rows, 1)) return MatLayout{true, static_cast<int>(cs)};
  return std::nullopt;
}

}  // namespace

std::optional<MatLayout> layout_of(const Tensor& t) {
  const int64_t n = t.dim();
  return mat_layout(t.size(-2), t.size(-1), t.strides()[static_cast<std::size_t>(n - 2)],
                    t.strides()[static_cast<std::size_t>(n - 1)]);
}

Tensor blas_operand(const Tensor& t) { return layout_of(t) ? t : t.contiguous(); }

void check_blas_dims(const char* op, int64_t m, int64_t n, int64_t k) {
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) shape_error(op, "matrix dims exceed BLAS's int range");
}

}  // namespace detail

namespace {

using detail::blas_operand;
using detail::check_blas_dims;
using detail::layout_of;

// A contiguous (..., m, k) tensor as the (batch * m, k) matrix it is in memory.
Tensor fold_rows(const Tensor& t) {
  const int64_t k = t.size(-1);
  return detail::alias(t, Size{k ? t.numel() / k : 0, k}, Strides{k, 1}, t.storage_offset());
}

// Whether a (..., m, k) can be read as one (batch * m, k) matrix: then a (..., m, k) @ b (k, n)
// runs as one GEMM over all batch * m rows, as PyTorch's matmul does, not one GEMM per batch index.
bool rows_foldable(const Tensor& a) { return a.dim() > 2 && a.is_contiguous() && a.numel() > 0; }

// a (..., m, k) @ b (..., k, n) -> (batch..., m, n), batch dims broadcast; no history.
Tensor bmm_kernel(const Tensor& a0, const Tensor& b0) {
  NoGradGuard no_grad;
  if (b0.dim() == 2 && rows_foldable(a0)) {  // (batch * m, k) @ (k, n), viewed back as (batch..., m, n)
    Tensor out2 = bmm_kernel(fold_rows(a0), b0);
    Size shape(DimVector(a0.shape().begin(), a0.shape().end() - 1));
    shape.vec().push_back(b0.size(1));
    Strides st = contiguous_strides(shape);
    return detail::alias(out2, std::move(shape), std::move(st), 0);
  }
  const Tensor a = blas_operand(a0), b = blas_operand(b0);
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  check_blas_dims("matmul", m, n, k);
  Size ba(DimVector(a.shape().begin(), a.shape().end() - 2));
  Size bb(DimVector(b.shape().begin(), b.shape().end() - 2));
  Size batch = broadcast_shapes(ba, bb, "matmul");
  Size out_shape = batch;
  out_shape.vec().push_back(m);
  out_shape.vec().push_back(n);
  Tensor out = detail::make_tensor(out_shape, a.dtype());
  if (out.numel() == 0) return out;
  if (k == 0) return zeros(out_shape.vec(), a.dtype());

  // batch strides of each operand as broadcast to `batch`
  auto batch_strides = [&](const Tensor& t) {
    return detail::broadcast_strides(t.shape().vec().data(), t.strides().data(), t.dim() - 2, batch);
  };
  const Strides sa = batch_strides(a), sb = batch_strides(b), so = batch_strides(out);
  const auto la = *layout_of(a), lb = *layout_of(b);
  dispatch_float(a.dtype(), "matmul", [&]<typename T>() {
    const T* pa = static_cast<const T*>(a.impl()->storage->data);
    const T* pb = static_cast<const T*>(b.impl()->storage->data);
    T* po = static_cast<T*>(out.impl()->storage->data);
    // a (m,k) @ b (k,n) -> out (m,n), once per batch index
    detail::walk<3>(batch, {&sa, &sb, &so}, {a.storage_offset(), b.storage_offset(), 0},
                    [&](const std::array<int64_t, 3>& o) {
                      detail::gemm(la, lb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), pa + o[0],
                                   pb + o[1], po + o[2], static_cast<int>(n));
                    });
  });
  return out;
}

// Both inputs at least 2-D.
Tensor matmul_nd(const Tensor& a, const Tensor& b, const char* name) {
  Tensor out = bmm_kernel(a, b);
  if (needs_grad(a, b)) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    SavedTensor sa(gb ? a : Tensor()), sb(ga ? b : Tensor());
    // out = a @ b  =>  da = g @ b^T, db = a^T @ g, each summed over broadcast batch dims
    record(out, name, {a, b}, [ga, gb, sa, sb, as = a.shape(), bs = b.shape()](const Tensor& g) -> Grads {
      Tensor da, db;
      const Tensor av = sa.get(), bv = sb.get();
      if (needs_grad({&g, &av, &bv})) {  // recording the backward's graph: the rule in ag ops
        if (ga) da = sum_to(matmul(g, transpose(bv, -1, -2)), as);
        if (gb) db = sum_to(matmul(transpose(av, -1, -2), g), bs);
        return {da, db};
      }
      if (ga) da = sum_to(bmm_kernel(g, transpose(bv, -1, -2)), as);
      if (gb) {
        // b (k, n) shared by every batch index: db = sum over batch of a^T g is one GEMM over all
        // rows (K = batch * m), as PyTorch computes it, instead of one GEMM per batch index and a sum
        if (bs.size() == 2 && rows_foldable(av))
          db = bmm_kernel(transpose(fold_rows(av), 0, 1), fold_rows(g.contiguous()));
        else
          db = sum_to(bmm_kernel(transpose(av, -1, -2), g), bs);
      }
      return {da, db};
    });
  }
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (a.dim() == 0 || b.dim() == 0) {
    detail::shape_error("matmul", "both arguments need at least 1 dimension, got shapes " + a.shape().str() + " and " +
                                      b.shape().str());
  }
  if (!a.is_floating_point() || a.dtype() != b.dtype()) {
    detail::shape_error("matmul", "expected two floating point tensors of the same dtype, got " + dtype_name(a.dtype()) +
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
    if (out.grad_fn()) out.grad_fn()->name = "DotBackward0";
    return out;
  }
  if (a.dim() == 1) {
    Tensor out = squeeze(matmul_nd(unsqueeze(a, 0), b, b.dim() == 2 ? "MmBackward0" : "UnsafeViewBackward0"), -2);
    if (out.grad_fn()) out.grad_fn()->name = "SqueezeBackward4";
    return out;
  }
  if (b.dim() == 1) {
    Tensor out = squeeze(matmul_nd(a, unsqueeze(b, 1), a.dim() == 2 ? "MmBackward0" : "UnsafeViewBackward0"), -1);
    if (out.grad_fn() && a.dim() == 2) out.grad_fn()->name = "MvBackward0";
    return out;
  }
  return matmul_nd(a, b, a.dim() == 2 && b.dim() == 2 ? "MmBackward0" : "UnsafeViewBackward0");
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (x.dim() != 2 || weight.dim() != 2 || x.size(1) != weight.size(1) ||
      (bias.defined() && (bias.dim() != 1 || bias.size(0) != weight.size(0)))) {
    detail::shape_error("linear", "expects input (N, in), weight (out, in) and bias (out), got " + x.shape().str() + ", " +
                                      weight.shape().str() + " and " + (bias.defined() ? bias.shape().str() : "none"));
  }
  if (!x.is_floating_point() || weight.dtype() != x.dtype() || (bias.defined() && bias.dtype() != x.dtype())) {
    detail::shape_error("linear", "expects floating point tensors of one dtype, got " + dtype_name(x.dtype()) + " and " +
                                      dtype_name(weight.dtype()) + " (shapes " + x.shape().str() + " and " +
                                      weight.shape().str() + ")");
  }
  if (!bias.defined()) return matmul(x, weight.t());
  const int64_t m = x.size(0), k = x.size(1), n = weight.size(0);
  check_blas_dims("linear", m, n, k);
  // out (N, out) = bias rows, then += x (N, in) @ weight^T (in, out) in the GEMM itself (beta = 1)
  Tensor out = detail::make_tensor(Size{m, n}, x.dtype());
  {
    NoGradGuard no_grad;
    detail::copy_into(out, bias);
    const Tensor a = blas_operand(x);
    const Tensor wt = blas_operand(weight.t());  // usually a transposed view BLAS reads with a flag
    if (m > 0 && n > 0 && k > 0) {
      const auto la = *layout_of(a), lb = *layout_of(wt);
      dispatch_float(x.dtype(), "linear", [&]<typename T>() {
        detail::gemm(la, lb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), a.data_ptr<T>(), wt.data_ptr<T>(),
                     out.data_ptr<T>(), static_cast<int>(n), T(1));
      });
    }
  }
  if (needs_grad({&bias, &x, &weight})) {
    const bool gx = x.requires_grad(), gw = weight.requires_grad(), gb = bias.requires_grad();
    SavedTensor sx(gw ? x : Tensor()), sw(gx ? weight : Tensor());
    // out = bias + x @ weight^T  =>  dbias = g.sum(0), dx = g @ weight, dweight = g^T @ x
    record(out, "AddmmBackward0", {bias, x, weight}, [gx, gw, gb, sx, sw](const Tensor& g) -> Grads {
      Tensor db, dx, dw;
      if (gb) db = sum(g, {0});
      const Tensor xv = sx.get(), wv = sw.get();
      if (needs_grad({&g, &xv, &wv})) {  // recording the backward's graph: the rule in ag ops
        if (gx) dx = matmul(g, wv);
        if (gw) dw = matmul(g.t(), xv);
        return {db, dx, dw};
      }
      if (gx) dx = bmm_kernel(g, sw.get());
      if (gw) dw = bmm_kernel(transpose(g, 0, 1), sx.get());
      return {db, dx, dw};
    });
  }
  return out;
}

Tensor matmul_reference(const Tensor& a, const Tensor& b) {
  if (a.dim() != 2 || b.dim() != 2 || a.size(1) != b.size(0)) {
    detail::shape_error("matmul_reference", "expects (m,k) and (k,n), got " + a.shape().str() + " and " + b.shape().str());
  }
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  Tensor out = detail::make_tensor(Size{m, n}, a.dtype());
  dispatch_float(a.dtype(), "matmul_reference", [&]<typename T>() {
    const T* pa = static_cast<const T*>(a.impl()->storage->data) + a.storage_offset();
    const T* pb = static_cast<const T*>(b.impl()->storage->data) + b.storage_offset();
    T* po = out.data_ptr<T>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;  // out[i][j] = sum_p a[i][p] b[p][j]
        for (int64_t p = 0; p < k; ++p) acc += double(pa[i * a.stride(0) + p * a.stride(1)]) * double(pb[p * b.stride(0) + j * b.stride(1)]);
        po[i * n + j] = static_cast<T>(acc);
      }
  });
  return out;
}

}  // namespace ag
