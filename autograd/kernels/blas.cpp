// The BLAS calls: cblas_sgemm / cblas_dgemm (OpenBLAS), or ag's own GEMM where gemm_kernel()
// (gemm.h) chooses it, each on the thread that makes it. A large
// GEMM is split into slabs of C's rows (or columns) over ag's threads (parallel_for), one BLAS
// call per slab.
#include "autograd/kernels/blas.h"

#include <cblas.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"
#include "autograd/threads.h"

namespace ag::detail {

namespace {

CBLAS_TRANSPOSE flag(const MatLayout& l) { return l.trans ? CblasTrans : CblasNoTrans; }

// For beta = 0, c's rows are zeroed here and the GEMM adds to them (beta = 1): OpenBLAS would do
// the same (zero c, then add), but its zeroing pass is slower than memset; the GEMMs of a
// training step ran 7-20% faster this way (64 x 64 x 32 up to 1024 x 128 x 128), same bits.
template <class T>
T zero_for_beta(T beta, T* c, int m, int n, int ldc) {
  if (beta != T(0)) return beta;
  if (ldc == n) {
    std::memset(c, 0, sizeof(T) * static_cast<std::size_t>(m) * static_cast<std::size_t>(n));
  } else {
    for (int i = 0; i < m; ++i) std::memset(c + static_cast<std::size_t>(i) * static_cast<std::size_t>(ldc), 0, sizeof(T) * static_cast<std::size_t>(n));
  }
  return T(1);
}

// For OpenBLAS a bias is copied into c's rows first, then added to (beta = 1); ag's kernels add it
// to their tiles as they write them, which is the same sum.
template <class T>
T bias_for_beta(T beta, T* c, int m, int n, int ldc, const T* bias) {
  if (!bias) return zero_for_beta(beta, c, m, n, ldc);
  for (int i = 0; i < m; ++i) std::copy(bias, bias + n, c + static_cast<std::ptrdiff_t>(i) * ldc);
  return T(1);
}

void blas(MatLayout la, MatLayout lb, int m, int n, int k, const float* a, const float* b, float* c, int ldc, float beta, Band band,
          const float* bias) {
  if (const GemmKernel own = gemm_kernel(); own != GemmKernel::OpenBLAS)
    return own_gemm(own, la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
  beta = bias_for_beta(beta, c, m, n, ldc, bias);
  cblas_sgemm(CblasRowMajor, flag(la), flag(lb), m, n, k, 1.0f, a, la.ld, b, lb.ld, beta, c, ldc);
}

void blas(MatLayout la, MatLayout lb, int m, int n, int k, const double* a, const double* b, double* c, int ldc, double beta,
          Band band, const double* bias) {
  if (const GemmKernel own = gemm_kernel(); own != GemmKernel::OpenBLAS)
    return own_gemm(own, la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
  beta = bias_for_beta(beta, c, m, n, ldc, bias);
  cblas_dgemm(CblasRowMajor, flag(la), flag(lb), m, n, k, 1.0, a, la.ld, b, lb.ld, beta, c, ldc);
}

// Where row (or column) i of an operand with layout l starts.
template <class T>
const T* row_at(const T* p, MatLayout l, int i) {
  return p + (l.trans ? static_cast<std::ptrdiff_t>(i) : static_cast<std::ptrdiff_t>(i) * l.ld);
}
template <class T>
const T* col_at(const T* p, MatLayout l, int j) {
  return p + (l.trans ? static_cast<std::ptrdiff_t>(j) * l.ld : static_cast<std::ptrdiff_t>(j));
}

// C's columns split over ag's threads where ag's kernels run and there are at least 64 per thread
// (they read A where it lies and pack B: a slab of columns packs its part of B, a slab of rows all
// of it, each thread the same; the medium step on 2 threads ran about 3% faster), else (OpenBLAS)
// C's rows when m >= n and its columns otherwise; in slabs of at least
// kMinParallelFlops of work (smaller GEMMs, and GEMMs called inside another parallel loop, stay on
// the calling thread), slab edges on multiples of 16 rows or columns (OpenBLAS's kernels work in
// such tiles). OpenBLAS may pick other kernels for a slab than for the whole (its small-matrix
// ones, its K blocking), so the last bits can depend on the thread count, as with OpenBLAS's own
// threads.
// (A band's offset is relative to the slab: a slab from row i0 sees row i as i - i0, one from
// column j0 sees column j as j - j0.)
template <class T>
void split_gemm(MatLayout la, MatLayout lb, int m, int n, int k, const T* a, const T* b, T* c, int ldc, T beta, Band band,
                const T* bias) {
  const double flops = 2.0 * m * n * k;
  const bool by_rows = gemm_kernel() == GemmKernel::OpenBLAS ? m >= n : n < 64 * get_num_threads();
  const int64_t len = by_rows ? m : n, tiles = (len + 15) / 16;
  const int64_t parts = std::min<int64_t>({get_num_threads(), tiles, std::max<int64_t>(1, static_cast<int64_t>(flops / kMinParallelFlops))});
  if (parts <= 1 || in_parallel_region()) return blas(la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
  parallel_for(parts, kMinParallelFlops, [&](int64_t p0, int64_t p1) {
    const int i0 = static_cast<int>(std::min(len, tiles * p0 / parts * 16)), i1 = static_cast<int>(std::min(len, tiles * p1 / parts * 16));
    if (i0 == i1) return;
    Band slab = band;
    if (by_rows) {
      slab.offset += i0;
      blas(la, lb, i1 - i0, n, k, row_at(a, la, i0), b, c + static_cast<std::ptrdiff_t>(i0) * ldc, ldc, beta, slab, bias);
    } else {
      if (band.kind == Band::LowerC) slab.offset -= i0;
      blas(la, lb, m, i1 - i0, k, a, col_at(b, lb, i0), c + i0, ldc, beta, slab, bias ? bias + i0 : nullptr);
    }
  });
}

}  // namespace

void gemm(MatLayout la, MatLayout lb, int m, int n, int k, const float* a, const float* b, float* c, int ldc, float beta,
          Band band, const float* bias) {
  if (m == 0 || n == 0) return;
  if (bias && beta != 0.0f) throw std::logic_error("[gemm] a bias is added with beta = 0 only");
  split_gemm(la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
}

void gemm(MatLayout la, MatLayout lb, int m, int n, int k, const double* a, const double* b, double* c, int ldc,
          double beta, Band band, const double* bias) {
  if (m == 0 || n == 0) return;
  if (bias && beta != 0.0) throw std::logic_error("[gemm] a bias is added with beta = 0 only");
  split_gemm(la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
}

}  // namespace ag::detail
