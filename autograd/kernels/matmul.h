// Kernels of matmul, linear and matmul_reference (matmul.cpp): BLAS GEMMs on whatever layout BLAS
// can read (transposed views are passed as transpose flags; only layouts BLAS cannot describe are
// copied), no history. bmm is the forward of matmul; the bmm calls in matmul's and linear's rules
// (matmul.cpp) are the fast paths of those rules, used when no graph of the backward is recorded,
// and must equal them to rounding (FastKernels.EqualTheRulesTheyStandInFor in
// tests/test_higher_order.cpp holds them to it).
// This file also defines detail::layout_of, blas_operand and check_blas_dims (kernels/blas.h).
#pragma once

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

// a (m, k) @ b (k, n) by the textbook triple loop, accumulated in double.
Tensor matmul_reference(const Tensor& a, const Tensor& b);

}  // namespace ag::kernels
