// Kernels of matmul, linear and matmul_reference (matmul.cpp): BLAS GEMMs on whatever layout BLAS
// can read (transposed views are passed as transpose flags; only layouts BLAS cannot describe are
// copied), no history. bmm is the forward of matmul; the bmm calls in matmul's and linear's rules
// (matmul.cpp) are the fast paths of those rules, used when no graph of the backward is recorded,
// and must equal them to rounding (FastKernels.EqualTheRulesTheyStandInFor in
// tests/test_higher_order.cpp holds them to it).
// This file also defines detail::layout_of, blas_operand and check_blas_dims (kernels/blas.h).
#pragma once

#include <initializer_list>
#include <utility>

#include "autograd/tensor.h"

namespace ag::kernels {

// a (..., m, k) @ b (..., k, n) -> (batch..., m, n), batch dims broadcast (both at least 2-D, one
// floating point dtype, k matching).
Tensor bmm(const Tensor& a, const Tensor& b);
// Whether a (..., m, k) can be read as one (batch * m, k) matrix: then a (..., m, k) @ b (k, n)
// runs as one GEMM over all batch * m rows, as PyTorch's matmul does, not one GEMM per batch index.
bool rows_foldable(const Tensor& a);
// A contiguous (..., m, k) tensor as the (batch * m, k) matrix it is in memory (a view, no history).
Tensor fold_rows(const Tensor& t);

// out (N, out) = bias + x (N, in) @ weight^T (in, out), the bias added by the GEMM itself.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

// out (m, n) = bias + a1 (m, k1) @ b1 (k1, n) + a2 (m, k2) @ b2 (k2, n): every operand 2-D and of
// one floating point dtype, the bias broadcastable to (m, n) and either pair optional (a pair
// with an undefined operand is a zero term); `out` is (m, n). The GEMMs accumulate into one output (beta = 1), so a sum of products costs no extra
// pass: the fast path of the jvp of a product, dout = da @ b + a @ db (+ dbias), in matmul's and
// linear's rules.
Tensor product_sum(const Size& out, const Tensor& bias, const Tensor& a1, const Tensor& b1, const Tensor& a2, const Tensor& b2);
// The same for any number of (a (m, k_i), b (k_i, n)) pairs, summed in their order.
using Product = std::pair<const Tensor&, const Tensor&>;
Tensor product_sum(const Size& out, const Tensor& bias, std::initializer_list<Product> products);

// a (m, k) @ b (k, n) by the textbook triple loop, accumulated in double.
Tensor matmul_reference(const Tensor& a, const Tensor& b);

}  // namespace ag::kernels
