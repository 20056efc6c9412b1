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

// C split over ag's threads in a grid of blocks, of at least kMinParallelFlops of work each
// (smaller GEMMs, and GEMMs called inside another parallel loop, stay on the calling thread),
// block edges on multiples of 16 rows or columns (OpenBLAS's kernels work in such tiles):
// - ag's kernels read A where it lies and pack B, so columns go first: as many slabs of at least
//   64 columns as divide the thread count (each thread packs only its part of B; on 2 threads the
//   medium step ran about 3% faster than with row slabs), the threads left over splitting the rows
//   (at 16 threads the medium step's weight gradients, 768 x 256, become 4 x 4 blocks of 192 x
//   64, each packing a quarter of B where row slabs packed all of it 16 times);
// - OpenBLAS gets slabs of C's rows when m >= n, else of its columns. It may pick other kernels
//   for a slab than for the whole (its small-matrix ones, its K blocking), so its last bits can
//   depend on the thread count, as with OpenBLAS's own threads; ag's kernels give the same bits for
//   any grid.
// (A band's offset is relative to the block: a block from row i0 and column j0 sees row i as
// i - i0 and column j as j - j0.)
template <class T>
void split_gemm(MatLayout la, MatLayout lb, int m, int n, int k, const T* a, const T* b, T* c, int ldc, T beta, Band band,
                const T* bias) {
  if (bias && beta != T(0)) throw std::logic_error("[gemm] a bias is added with beta = 0 only");
  const double flops = 2.0 * m * n * k;
  const int64_t most = std::min<int64_t>(get_num_threads(), std::max<int64_t>(1, static_cast<int64_t>(flops / kMinParallelFlops)));
  if (most <= 1 || in_parallel_region()) return blas(la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
  const int64_t row_tiles = (m + 15) / 16, col_tiles = (n + 15) / 16;
  int64_t col_parts = 1, row_parts = 1;
  if (gemm_kernel() != GemmKernel::OpenBLAS) {
    for (int64_t d = std::min<int64_t>(most, n / 64); d > 1 && col_parts == 1; --d)
      if (most % d == 0) col_parts = d;
    row_parts = std::min(most / col_parts, row_tiles);
  } else if (n > m) {
    col_parts = std::min(most, col_tiles);
  } else {
    row_parts = std::min(most, row_tiles);
  }
  const int64_t blocks = row_parts * col_parts;
  if (blocks <= 1) return blas(la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
  parallel_for(blocks, kMinParallelFlops, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t bi = q / col_parts, bj = q % col_parts;
      const int i0 = static_cast<int>(std::min<int64_t>(m, row_tiles * bi / row_parts * 16));
      const int i1 = static_cast<int>(std::min<int64_t>(m, row_tiles * (bi + 1) / row_parts * 16));
      const int j0 = static_cast<int>(std::min<int64_t>(n, col_tiles * bj / col_parts * 16));
      const int j1 = static_cast<int>(std::min<int64_t>(n, col_tiles * (bj + 1) / col_parts * 16));
      if (i0 == i1 || j0 == j1) continue;
      Band block = band;
      block.offset += i0 - (band.kind == Band::LowerC ? j0 : 0);
      blas(la, lb, i1 - i0, j1 - j0, k, row_at(a, la, i0), col_at(b, lb, j0), c + static_cast<std::ptrdiff_t>(i0) * ldc + j0, ldc,
           beta, block, bias ? bias + j0 : nullptr);
    }
  });
}

}  // namespace

void gemm(MatLayout la, MatLayout lb, int m, int n, int k, const float* a, const float* b, float* c, int ldc, float beta,
          Band band, const float* bias) {
  if (m == 0 || n == 0) return;
  split_gemm(la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
}

void gemm(MatLayout la, MatLayout lb, int m, int n, int k, const double* a, const double* b, double* c, int ldc,
          double beta, Band band, const double* bias) {
  if (m == 0 || n == 0) return;
  split_gemm(la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
}

}  // namespace ag::detail
