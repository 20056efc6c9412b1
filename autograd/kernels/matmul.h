// Kernels of matmul, linear and matmul_reference (matmul.cpp): BLAS GEMMs on whatever layout BLAS
// can read (transposed views are passed as transpose flags; only layouts BLAS cannot describe are
// copied), no history. bmm is the forward of matmul; matmul_backward and the bmm calls in
// linear's rule are the fast paths of the rules written in matmul.cpp, used when no graph of the
// backward is recorded, and must equal those rules to rounding
// (FastKernels.EqualTheRulesTheyStandInFor in tests/test_higher_order.cpp holds them to it).
// This file also defines detail::layout_of, blas_operand and check_blas_dims (kernels/blas.h).
#pragma once

#include "autograd/node.h"
#include "autograd/tensor.h"

namespace ag::kernels {

// a (..., m, k) @ b (..., k, n) -> (batch..., m, n), batch dims broadcast (both at least 2-D, one
// floating point dtype, k matching).
Tensor bmm(const Tensor& a, const Tensor& b);
// {da, db} (each only if asked for) of out = a @ b, each summed back to its input's shape
// (a_shape, b_shape): da = g @ b^T, db = a^T @ g.
Grads matmul_backward(const Tensor& g, const Tensor& a, const Tensor& b, bool ga, bool gb, const Size& a_shape,
                      const Size& b_shape);

// out (N, out) = bias + x (N, in) @ weight^T (in, out), the bias added by the GEMM itself.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

// a (m, k) @ b (k, n) by the textbook triple loop, accumulated in double.
Tensor matmul_reference(const Tensor& a, const Tensor& b);

}  // namespace ag::kernels
