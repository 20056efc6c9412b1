// Kernels of softmax, log_softmax and causal_softmax (softmax.cpp): row loops with a vectorizing
// polynomial exp, no history. The forward kernels compute the ops; the *_backward kernels are the
// fast paths of the rules written in softmax.cpp, used when no graph of the backward is recorded,
// and must equal those rules to rounding (FastKernels.EqualTheRulesTheyStandInFor in
// tests/test_higher_order.cpp holds them to it). The row kernels at the end are shared with the
// fused ops that contain a softmax: causal_qk_softmax (kernels/attention.cpp) and cross_entropy
// (kernels/loss.cpp).
#pragma once

#include <cstdint>

#include "autograd/tensor.h"

namespace ag::kernels {

// softmax (log = false) or log_softmax (log = true) of x along dim (already wrapped), stable: the
// row max is subtracted before exp. Integer inputs compute in float32.
Tensor softmax(const Tensor& x, int64_t dim, bool log);
// Their rules over rows of the last dim of y, in one pass per row:
//   softmax:     dx = y * (g - sum(g * y))
//   log_softmax: dx = g - exp(y) * sum(g)
Tensor softmax_backward_lastdim(const Tensor& g, const Tensor& y, bool log);

// causal_softmax of scores (..., tq, n), a floating point tensor of at least 2 dims, and its rule
// dx = y * (g - sum(g * y)) / divisor, 0 above the diagonal, in one pass per row.
Tensor causal_softmax(const Tensor& scores, double divisor);
Tensor causal_softmax_backward(const Tensor& g, const Tensor& y, int64_t tq, int64_t n, double divisor);

// The row kernels of causal_softmax, for the fused attention ops: `rows` rows of length n, row r
// being query r % tq; y = softmax(masked(x) / divisor) (y may be x), and its backward dx from the
// output gradient g and y (dx may be g). With `stats` (else null), row r's shift and 1 / sum go to stats[2r]
// and stats[2r + 1] (NaN for a row with a NaN); causal_softmax_rows_again gives the same y from
// x and those in one pass.
void causal_softmax_rows(const float* x, float* y, int64_t rows, int64_t tq, int64_t n, float divisor, float* stats);
void causal_softmax_rows(const double* x, double* y, int64_t rows, int64_t tq, int64_t n, double divisor, double* stats);
void causal_softmax_rows_again(const float* x, float* y, int64_t rows, int64_t tq, int64_t n, float divisor, const float* stats);
void causal_softmax_rows_again(const double* x, double* y, int64_t rows, int64_t tq, int64_t n, double divisor,
                               const double* stats);
// g_zero_above: g is +0 above the diagonal (as tril(g v^T) is), so its sum with y skips that part;
// the same bits.
void causal_softmax_backward_rows(const float* g, const float* y, float* dx, int64_t rows, int64_t tq, int64_t n,
                                  float divisor, bool g_zero_above = false);
void causal_softmax_backward_rows(const double* g, const double* y, double* dx, int64_t rows, int64_t tq, int64_t n,
                                  double divisor, bool g_zero_above = false);

// Whether the float row kernels (the causal softmax rows, cross_entropy's) run their AVX-512F
// build: wherever the CPU has AVX-512F, unless set_rows_avx512(false). Both give the same bits
// (the tests compare them); set_rows_avx512(true) on a CPU without AVX-512F throws
// std::invalid_argument.
bool rows_avx512();
void set_rows_avx512(bool on);
// y[j] = exp(x[j]) for j < n as the float row kernels compute it (a polynomial of about 1 ulp,
// exactly 0 below the float range): in 16-float vectors where rows_avx512(), else one by one (the
// reference the vectors must equal bit for bit).
void exp_rows(const float* x, float* y, int64_t n);

// cross_entropy's row kernels, with log_softmax's arithmetic: per row of x (rows, n),
// log_softmax(x)[r, j] == x[r, j] - shift[r] - ls[r] bit for bit (ls NaN for a row with a NaN);
// and dx = log_softmax's backward of a gradient that is v[r] at target[r] (none if target[r] is
// -1) and 0 elsewhere.
void log_softmax_stats(const float* x, int64_t rows, int64_t n, float* shift, float* ls);
void log_softmax_stats(const double* x, int64_t rows, int64_t n, double* shift, double* ls);
void cross_entropy_backward(const float* x, const float* shift, const float* ls, const int64_t* target, const float* v,
                            int64_t rows, int64_t n, float* dx);
void cross_entropy_backward(const double* x, const double* shift, const double* ls, const int64_t* target, const double* v,
                            int64_t rows, int64_t n, double* dx);
// and term[r] = dx[r, target[r]] - sum_j softmax(x)[r, j] dx[r, j], the tangent of log_softmax(x)
// at the target for a tangent dx of x (0 if target[r] is -1).
void cross_entropy_jvp(const float* x, const float* shift, const float* ls, const int64_t* target, const float* dx,
                       int64_t rows, int64_t n, float* term);
void cross_entropy_jvp(const double* x, const double* shift, const double* ls, const int64_t* target, const double* dx,
                       int64_t rows, int64_t n, double* term);

}  // namespace ag::kernels
