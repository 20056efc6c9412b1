// The BLAS calls: cblas_sgemm / cblas_dgemm (OpenBLAS).
#include "autograd/blas.h"

#include <cblas.h>

namespace ag::detail {

static CBLAS_TRANSPOSE flag(const MatLayout& l) { return l.trans ? CblasTrans : CblasNoTrans; }

void gemm(MatLayout la, MatLayout lb, int m, int n, int k, const float* a, const float* b, float* c, int ldc, float beta) {
  cblas_sgemm(CblasRowMajor, flag(la), flag(lb), m, n, k, 1.0f, a, la.ld, b, lb.ld, beta, c, ldc);
}

void gemm(MatLayout la, MatLayout lb, int m, int n, int k, const double* a, const double* b, double* c, int ldc,
          double beta) {
  cblas_dgemm(CblasRowMajor, flag(la), flag(lb), m, n, k, 1.0, a, la.ld, b, lb.ld, beta, c, ldc);
}

}  // namespace ag::detail
