// Kernels of matmul and linear; their rules, formulas and matmul's rule's fast path are in
// matmul.cpp.
#include "autograd/kernels/matmul.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include <climits>
#include <optional>

#include "autograd/kernels/blas.h"
#include "autograd/kernels/common.h"

namespace ag {

namespace detail {

Tensor blas_operand(const Tensor& t) { return layout_of(t) ? t : contiguous_values(t); }

void check_blas_dims(const char* op, int64_t m, int64_t n, int64_t k) {
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) shape_error(op, "matrix dims exceed BLAS's int range");
}

}  // namespace detail

namespace kernels {

using detail::blas_operand;
using detail::check_blas_dims;
using detail::layout_of;

Tensor fold_rows(const Tensor& t) {
  const int64_t k = t.size(-1);
  return detail::alias(t, Size{k ? t.numel() / k : 0, k}, Strides{k, 1}, t.storage_offset());
}

bool rows_foldable(const Tensor& a) { return a.dim() > 2 && a.is_contiguous() && a.numel() > 0; }

// int64 has no BLAS GEMM: c (m,n) = a (m,k) @ b (k,n) as a loop (wrapping on overflow, as PyTorch's).
static void int_gemm(detail::MatLayout la, detail::MatLayout lb, int64_t m, int64_t n, int64_t k, const int64_t* a,
                     const int64_t* b, int64_t* c) {
  auto at = [](const int64_t* p, detail::MatLayout l, int64_t r, int64_t col) {
    return static_cast<uint64_t>(l.trans ? p[col * l.ld + r] : p[r * l.ld + col]);
  };
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      uint64_t acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += at(a, la, i, p) * at(b, lb, p, j);
      c[i * n + j] = static_cast<int64_t>(acc);
    }
}

Tensor bmm(const Tensor& a0, const Tensor& b0) {
  if (b0.dim() == 2 && rows_foldable(a0)) {  // (batch * m, k) @ (k, n), viewed back as (batch..., m, n)
    Tensor out2 = bmm(fold_rows(a0), b0);
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
  if (k == 0) return detail::zeros_tensor(out_shape, a.dtype());

  // batch strides of each operand as broadcast to `batch`
  auto batch_strides = [&](const Tensor& t) {
    return detail::broadcast_strides(t.shape().vec().data(), t.strides().data(), t.dim() - 2, batch);
  };
  const Strides sa = batch_strides(a), sb = batch_strides(b), so = batch_strides(out);
  const auto la = *layout_of(a), lb = *layout_of(b);
  auto run = [&]<typename T>() {
    const T* pa = static_cast<const T*>(a.impl()->storage->data);
    const T* pb = static_cast<const T*>(b.impl()->storage->data);
    T* po = static_cast<T*>(out.impl()->storage->data);
    // a (m,k) @ b (k,n) -> out (m,n), once per batch index
    detail::walk<3>(batch, {&sa, &sb, &so}, {a.storage_offset(), b.storage_offset(), 0},
                    [&](const std::array<int64_t, 3>& o) {
                      if constexpr (std::is_same_v<T, int64_t>) {
                        int_gemm(la, lb, m, n, k, pa + o[0], pb + o[1], po + o[2]);
                      } else {
                        detail::gemm(la, lb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), pa + o[0],
                                     pb + o[1], po + o[2], static_cast<int>(n));
                      }
                    });
  };
  if (a.dtype() == kInt64) run.template operator()<int64_t>();
  else dispatch_float(a.dtype(), "matmul", run);
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const int64_t m = x.size(0), k = x.size(1), n = weight.size(0);
  check_blas_dims("linear", m, n, k);
  // out (N, out) = bias rows + x (N, in) @ weight^T (in, out): a bias of out values goes into the
  // GEMM's tiles as they are written (beta = 0); another (one value) is copied into the rows first
  // and the GEMM adds to them (beta = 1). The same sum either way.
  Tensor out = detail::make_tensor(Size{m, n}, x.dtype());
  const bool row_bias = bias.dim() == 1 && bias.numel() == n && bias.stride(0) == 1 && m > 0 && n > 0 && k > 0;
  if (!row_bias) detail::copy_into(out, bias);
  const Tensor a = blas_operand(x);
  const Tensor wt = blas_operand(detail::transpose_view(weight, 0, 1));  // usually a transposed view BLAS reads with a flag
  if (m > 0 && n > 0 && k > 0) {
    const auto la = *layout_of(a), lb = *layout_of(wt);
    dispatch_float(x.dtype(), "linear", [&]<typename T>() {
      detail::gemm(la, lb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), a.data_ptr<T>(), wt.data_ptr<T>(),
                   out.data_ptr<T>(), static_cast<int>(n), row_bias ? T(0) : T(1), detail::Band{},
                   row_bias ? bias.data_ptr<T>() : nullptr);
    });
  }
  return out;
}

Tensor product_sum(const Size& shape, const Tensor& bias, const Tensor& a1, const Tensor& b1, const Tensor& a2,
                   const Tensor& b2) {
  return product_sum(shape, bias, {Product{a1, b1}, Product{a2, b2}});
}

Tensor product_sum(const Size& shape, const Tensor& bias, std::initializer_list<Product> products) {
  const int64_t m = shape[0], n = shape[1];
  int64_t k_max = 0;
  const Tensor* first = bias.defined() ? &bias : nullptr;
  for (const auto& [a, b] : products) {
    if (!a.defined() || !b.defined()) continue;
    k_max = std::max(k_max, a.size(1));
    if (!first) first = &a;
  }
  check_blas_dims("product_sum", m, n, k_max);
  Tensor out = detail::make_tensor(shape, first ? first->dtype() : kFloat32);
  // out = bias (broadcast over rows), then each product added by its GEMM (beta = 1); with no bias
  // the first GEMM overwrites (beta = 0), and with neither bias nor a GEMM the result is 0
  bool written = bias.defined();
  if (written) detail::copy_into(out, bias);
  if (m > 0 && n > 0) {
    dispatch_float(out.dtype(), "product_sum", [&]<typename T>() {
      for (const auto& [a0, b0] : products) {
        if (!a0.defined() || !b0.defined() || a0.size(1) == 0) continue;
        const Tensor a = blas_operand(a0), b = blas_operand(b0);
        detail::gemm(*layout_of(a), *layout_of(b), static_cast<int>(m), static_cast<int>(n), static_cast<int>(a.size(1)),
                     a.data_ptr<T>(), b.data_ptr<T>(), out.data_ptr<T>(), static_cast<int>(n), written ? T(1) : T(0));
        written = true;
      }
    });
  }
  if (!written) return detail::zeros_tensor(shape, out.dtype());
  return out;
}

Tensor matmul_reference(const Tensor& a, const Tensor& b) {
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

}  // namespace kernels

}  // namespace ag
