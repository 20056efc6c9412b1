// ag's own GEMM (gemm.h). The textbook definition it computes is matmul_reference's loop
// (kernels/matmul.cpp): c[i][j] = sum_p a[i][p] b[p][j]. Here the same sums are blocked for the
// caches and the registers, BLIS's way:
//
//   for each block of NC columns of B and C
//     for each block of KC rows of B (the sum's p)    pack B[p0:p0+KC, j0:j0+NC] into panels of NR columns
//       for each block of MC rows of A and C          (portable kernel: pack A[i0:i0+MC, p0:p0+KC] into panels of MR rows)
//         for each NR panel, each MR panel            microkernel: the MR x NR tile of C += A rows @ panel
//
// A packed panel holds, for each p, its MR (or NR) values side by side, zero-padded past the
// matrix's edge, so the microkernel reads both operands in order. The AVX2 and AVX-512 kernels read
// A where it lies (a row-major A row by row, a column-major one as a panel with stride lda), and a
// row-major B too while its rows are short (its NR values per p are contiguous: row p at
// b + p * ldb, masked at the edge); a column-major B, or one with long rows, is packed. The microkernel keeps its MR x NR
// tile of C in vector registers for the whole KC-long sum and writes it once: directly for beta = 0
// on the first K block (c is never read, so it may hold anything), adding to C after. Edge tiles
// run a kernel compiled for their number of rows, with masked loads and stores for the columns (one
// vector of them where they fit in one). A band (blas.h) skips the tiles above a causal diagonal and
// the terms of the sums its caller says are 0 (the attention products, kernels/attention.cpp).
//
// The sums run in another order than OpenBLAS's (and PyTorch's), so results agree with them to
// rounding, not bit for bit. Each tile's sum over p is in order within a K block, and the blocks are
// added in order, so a result does not depend on the thread count (threads split C, blas.cpp).
#include "autograd/kernels/gemm.h"

#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

extern "C" char* openblas_get_corename(void);

namespace ag::detail {

namespace {

// ---- packing ----

// Element (i, j) of a matrix read with layout l.
template <class T>
T elem(const T* p, MatLayout l, int i, int j) {
  return l.trans ? p[static_cast<std::ptrdiff_t>(j) * l.ld + i] : p[static_cast<std::ptrdiff_t>(i) * l.ld + j];
}

// dst[p * stride + r] = src[r * ld + p] for r < lines, p < len: `lines` lines of `len` values
// transposed into a panel. 4 x 4 blocks (2 x 2 for double) go through SSE registers, the rest one
// by one: packing a row-major A (or a transposed B) is this transpose, and one value at a time it
// cost a quarter of the GEMM on the training step's shapes.
template <class T>
void transpose_lines(const T* src, std::ptrdiff_t ld, int lines, int len, T* dst, int stride) {
  int r = 0;
  if constexpr (sizeof(T) == 4) {
    for (; r + 4 <= lines; r += 4) {
      const float* s0 = src + r * ld;
      if (r + 8 <= lines)  // the next 4 lines asked for (as pack_b's rows)
        for (int q = 4; q < 8; ++q) {
          __builtin_prefetch(s0 + q * ld);
          __builtin_prefetch(s0 + q * ld + len - 1);
        }
      int p = 0;
      for (; p + 4 <= len; p += 4) {
        __m128 a = _mm_loadu_ps(s0 + p), b = _mm_loadu_ps(s0 + ld + p), c = _mm_loadu_ps(s0 + 2 * ld + p),
               d = _mm_loadu_ps(s0 + 3 * ld + p);
        _MM_TRANSPOSE4_PS(a, b, c, d);
        _mm_storeu_ps(dst + p * stride + r, a);
        _mm_storeu_ps(dst + (p + 1) * stride + r, b);
        _mm_storeu_ps(dst + (p + 2) * stride + r, c);
        _mm_storeu_ps(dst + (p + 3) * stride + r, d);
      }
      for (; p < len; ++p)
        for (int q = 0; q < 4; ++q) dst[p * stride + r + q] = s0[q * ld + p];
    }
  } else {
    for (; r + 2 <= lines; r += 2) {
      const double* s0 = src + r * ld;
      int p = 0;
      for (; p + 2 <= len; p += 2) {
        const __m128d a = _mm_loadu_pd(s0 + p), b = _mm_loadu_pd(s0 + ld + p);
        _mm_storeu_pd(dst + p * stride + r, _mm_unpacklo_pd(a, b));
        _mm_storeu_pd(dst + (p + 1) * stride + r, _mm_unpackhi_pd(a, b));
      }
      for (; p < len; ++p)
        for (int q = 0; q < 2; ++q) dst[p * stride + r + q] = s0[q * ld + p];
    }
  }
  for (; r < lines; ++r)
    for (int p = 0; p < len; ++p) dst[p * stride + r] = src[r * ld + p];
}

// Rows [i0, i0 + mc) and sums [p0, p0 + kc) of A into panels of MR rows: panel r holds, for each p,
// A[i0 + r*MR + 0..MR-1][p0 + p] (0 past row m).
template <class T, int MR>
void pack_a(const T* a, MatLayout la, int m, int i0, int mc, int p0, int kc, T* out) {
  for (int r0 = 0; r0 < mc; r0 += MR) {
    const int rows = std::min(MR, m - (i0 + r0));
    T* panel = out + static_cast<std::ptrdiff_t>(r0) * kc;
    if (!la.trans) {  // row-major A: each row is contiguous in p, so the panel is its transpose
      transpose_lines(a + static_cast<std::ptrdiff_t>(i0 + r0) * la.ld + p0, la.ld, rows, kc, panel, MR);
    } else {  // column-major A: the MR values of one p are contiguous
      for (int p = 0; p < kc; ++p) {
        const T* src = a + static_cast<std::ptrdiff_t>(p0 + p) * la.ld + i0 + r0;
        for (int r = 0; r < rows; ++r) panel[p * MR + r] = src[r];
      }
    }
    for (int r = rows; r < MR; ++r)
      for (int p = 0; p < kc; ++p) panel[p * MR + r] = T(0);
  }
}

// Sums [p0, p0 + kc) and columns [j0, j0 + nc) of B into panels of NR columns.
template <class T, int NR>
void pack_b(const T* b, MatLayout lb, int n, int j0, int nc, int p0, int kc, T* out) {
  for (int c0 = 0; c0 < nc; c0 += NR) {
    const int cols = std::min(NR, n - (j0 + c0));
    T* panel = out + static_cast<std::ptrdiff_t>(c0) * kc;
    if (!lb.trans && cols == NR) {  // row-major B: the NR values of one p are contiguous
      for (int p = 0; p < kc; ++p) {
        const T* src = b + static_cast<std::ptrdiff_t>(p0 + p) * lb.ld + j0 + c0;
        if (p + 16 < kc) {  // the row 16 ahead asked for (a row a page apart each is not foreseen by the
                            // hardware; waiting for each row was a third of the packing's time)
          __builtin_prefetch(src + 16 * static_cast<std::ptrdiff_t>(lb.ld));
          __builtin_prefetch(src + 16 * static_cast<std::ptrdiff_t>(lb.ld) + NR - 1);
        }
        std::memcpy(panel + p * NR, src, NR * sizeof(T));
      }
    } else if (!lb.trans) {  // the edge panel: zeros past the last column
      for (int p = 0; p < kc; ++p) {
        const T* src = b + static_cast<std::ptrdiff_t>(p0 + p) * lb.ld + j0 + c0;
        T* dst = panel + p * NR;
        for (int c = 0; c < cols; ++c) dst[c] = src[c];
        for (int c = cols; c < NR; ++c) dst[c] = T(0);
      }
    } else {  // column-major B: each column is contiguous in p, so the panel is their transpose
      transpose_lines(b + static_cast<std::ptrdiff_t>(j0 + c0) * lb.ld + p0, lb.ld, cols, kc, panel, NR);
      for (int c = cols; c < NR; ++c)
        for (int p = 0; p < kc; ++p) panel[p * NR + c] = T(0);
    }
  }
}

// ---- microkernels: c (MR x NR, row stride ldc) = (acc ? c : bias ? bias row : 0) + sum_p A[:, p] B[p, :] ----
// (bias, where given and acc is not: NR values added to every row, as c's would be)

// Portable: plain loops the compiler vectorizes for whatever the build targets.
template <class T, int MR, int NR>
void ukr_portable(int kc, const T* a, int /*lda: packed*/, const T* b, int /*ldb: packed*/,
                  T* c, int ldc, bool acc, const T* bias) {
  T t[MR][NR] = {};
  for (int p = 0; p < kc; ++p)
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) t[r][j] += a[p * MR + r] * b[p * NR + j];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) c[r * ldc + j] = acc ? c[r * ldc + j] + t[r][j] : bias ? bias[j] + t[r][j] : t[r][j];
}

// The x86 kernels: MR rows x 2 vectors of C in registers, B's two vectors loaded and A's value
// broadcast once per p. One template per instruction set, over float and double through the
// overloads below (each compiled for its instruction set, as the template that inlines them).
#define AG_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline
AG_AVX2 __m256 v256_set1(float x) { return _mm256_set1_ps(x); }
AG_AVX2 __m256d v256_set1(double x) { return _mm256_set1_pd(x); }
AG_AVX2 __m256 v256_load(const float* p) { return _mm256_loadu_ps(p); }
AG_AVX2 __m256d v256_load(const double* p) { return _mm256_loadu_pd(p); }
AG_AVX2 __m256 v256_fma(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
AG_AVX2 __m256d v256_fma(__m256d a, __m256d b, __m256d c) { return _mm256_fmadd_pd(a, b, c); }
AG_AVX2 __m256 v256_add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
AG_AVX2 __m256d v256_add(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
AG_AVX2 void v256_store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
AG_AVX2 void v256_store(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
// the lanes below `cols` (of 8 floats or 4 doubles) set, for the masked loads and stores of edge tiles
AG_AVX2 __m256i v256_lanes_below(int cols, float) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
AG_AVX2 __m256i v256_lanes_below(int cols, double) { return _mm256_cmpgt_epi64(_mm256_set1_epi64x(cols), _mm256_setr_epi64x(0, 1, 2, 3)); }
AG_AVX2 __m256 v256_maskload(const float* p, __m256i m) { return _mm256_maskload_ps(p, m); }
AG_AVX2 __m256d v256_maskload(const double* p, __m256i m) { return _mm256_maskload_pd(p, m); }
AG_AVX2 void v256_maskstore(float* p, __m256i m, __m256 v) { _mm256_maskstore_ps(p, m, v); }
AG_AVX2 void v256_maskstore(double* p, __m256i m, __m256d v) { _mm256_maskstore_pd(p, m, v); }
#undef AG_AVX2
#define AG_AVX512 __attribute__((target("avx512f"), always_inline)) inline
AG_AVX512 __m512 v512_set1(float x) { return _mm512_set1_ps(x); }
AG_AVX512 __m512d v512_set1(double x) { return _mm512_set1_pd(x); }
AG_AVX512 __m512 v512_fma(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
AG_AVX512 __m512d v512_fma(__m512d a, __m512d b, __m512d c) { return _mm512_fmadd_pd(a, b, c); }
AG_AVX512 __m512 v512_add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
AG_AVX512 __m512d v512_add(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
AG_AVX512 __m512 v512_load(const float* p) { return _mm512_loadu_ps(p); }
AG_AVX512 __m512d v512_load(const double* p) { return _mm512_loadu_pd(p); }
AG_AVX512 void v512_store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
AG_AVX512 void v512_store(double* p, __m512d v) { _mm512_storeu_pd(p, v); }
// the lanes below `cols` (of 16 floats or 8 doubles) as a mask register, for edge tiles
AG_AVX512 unsigned v512_lanes_below(int cols, int width) { return cols <= 0 ? 0u : cols >= width ? (1u << width) - 1 : (1u << cols) - 1; }
AG_AVX512 __m512 v512_maskz_load(unsigned m, const float* p) { return _mm512_maskz_loadu_ps(static_cast<__mmask16>(m), p); }
AG_AVX512 __m512d v512_maskz_load(unsigned m, const double* p) { return _mm512_maskz_loadu_pd(static_cast<__mmask8>(m), p); }
AG_AVX512 void v512_mask_store(float* p, unsigned m, __m512 v) { _mm512_mask_storeu_ps(p, static_cast<__mmask16>(m), v); }
AG_AVX512 void v512_mask_store(double* p, unsigned m, __m512d v) { _mm512_mask_storeu_pd(p, static_cast<__mmask8>(m), v); }
#undef AG_AVX512

// AVX2 + FMA: 6 rows x 2 vectors (16 floats or 8 doubles), 12 accumulators of the 16 registers.
template <class T, bool RowA>
__attribute__((target("avx2,fma"))) void ukr_avx2(int kc, const T* a, int lda, const T* b, int ldb,
                                                  T* c, int ldc, bool acc, const T* bias) {
  constexpr int MR = 6, W = 32 / sizeof(T);
  decltype(v256_set1(T())) t[MR][2];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) t[r][0] = t[r][1] = v256_set1(T(0));
  for (int p = 0; p < kc; ++p) {
    const T* bp = b + static_cast<std::ptrdiff_t>(p) * ldb;
    const auto b0 = v256_load(bp), b1 = v256_load(bp + W);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const auto x = v256_set1(RowA ? a[static_cast<std::ptrdiff_t>(r) * lda + p] : a[static_cast<std::ptrdiff_t>(p) * lda + r]);
      t[r][0] = v256_fma(x, b0, t[r][0]);
      t[r][1] = v256_fma(x, b1, t[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    T* row = c + static_cast<std::ptrdiff_t>(r) * ldc;
    if (acc) {
      t[r][0] = v256_add(v256_load(row), t[r][0]);
      t[r][1] = v256_add(v256_load(row + W), t[r][1]);
    } else if (bias) {
      t[r][0] = v256_add(v256_load(bias), t[r][0]);
      t[r][1] = v256_add(v256_load(bias + W), t[r][1]);
    }
    v256_store(row, t[r][0]);
    v256_store(row + W, t[r][1]);
  }
}

// Edge tiles: R of the MR rows and the first `cols` of the NR columns, computed and written in
// place (masked loads and stores), so no row past the edge is summed and nothing is copied; a tile
// of at most one vector's columns (NV = 1) computes one vector per row, half the work. The sums
// are the full kernel's, in its order, so an edge element has the bits a full tile would give.
template <class T, int R, bool RowA, int NV = 2>
__attribute__((target("avx2,fma"))) void ukr_avx2_edge(int kc, const T* a, int lda, const T* b, int ldb,
                                                       T* c, int ldc, bool acc, const T* bias,
                                                      int cols) {
  constexpr int W = 32 / sizeof(T);
  const __m256i m[2] = {v256_lanes_below(cols, T()), v256_lanes_below(cols - W, T())};
  decltype(v256_set1(T())) t[R][NV];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) t[r][v] = v256_set1(T(0));
  for (int p = 0; p < kc; ++p) {
    const T* bp = b + static_cast<std::ptrdiff_t>(p) * ldb;  // B where it lies: nothing past its columns is read
    decltype(v256_set1(T())) bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = v256_maskload(bp + v * W, m[v]);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const auto x = v256_set1(RowA ? a[static_cast<std::ptrdiff_t>(r) * lda + p] : a[static_cast<std::ptrdiff_t>(p) * lda + r]);
      for (int v = 0; v < NV; ++v) t[r][v] = v256_fma(x, bv[v], t[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    T* row = c + static_cast<std::ptrdiff_t>(r) * ldc;
    for (int v = 0; v < NV; ++v) {
      if (acc) t[r][v] = v256_add(v256_maskload(row + v * W, m[v]), t[r][v]);
      else if (bias) t[r][v] = v256_add(v256_maskload(bias + v * W, m[v]), t[r][v]);
      v256_maskstore(row + v * W, m[v], t[r][v]);
    }
  }
}

// A is read where it lies: RowA, element (r, p) of the tile at a[r * lda + p] (a row-major A);
// else at a[p * lda + r] (a column-major A, or a packed panel with lda = MR).
template <class T, int R, bool RowA, int NV = 2>
__attribute__((target("avx512f"))) void ukr_avx512_edge(int kc, const T* a, int lda, const T* b, int ldb,
                                                        T* c, int ldc, bool acc, const T* bias,
                                                        int cols) {
  constexpr int W = 64 / sizeof(T);
  const unsigned m[2] = {v512_lanes_below(cols, W), v512_lanes_below(cols - W, W)};
  decltype(v512_set1(T())) t[R][NV];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) t[r][v] = v512_set1(T(0));
  // A's rows as in ukr_avx512 below: through two pointers and the offsets 1-5 rows on
  const std::ptrdiff_t ld = lda, off[6] = {0, ld, 2 * ld, 3 * ld, 4 * ld, 5 * ld};
  const T* a0 = a;
  const T* a6 = RowA && R > 6 ? a + 6 * ld : a;
  for (int p = 0; p < kc; ++p) {
    const T* bp = b + static_cast<std::ptrdiff_t>(p) * ldb;  // B where it lies: nothing past its columns is read
    decltype(v512_set1(T())) bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = v512_maskz_load(m[v], bp + v * W);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const auto x = v512_set1(RowA ? (r < 6 ? a0[off[r]] : a6[off[r - 6]]) : a0[r]);
      for (int v = 0; v < NV; ++v) t[r][v] = v512_fma(x, bv[v], t[r][v]);
    }
    if constexpr (RowA) ++a0, ++a6;
    else a0 += ld;
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    T* row = c + static_cast<std::ptrdiff_t>(r) * ldc;
    for (int v = 0; v < NV; ++v) {
      if (acc) t[r][v] = v512_add(v512_maskz_load(m[v], row + v * W), t[r][v]);
      else if (bias) t[r][v] = v512_add(v512_maskz_load(m[v], bias + v * W), t[r][v]);
      v512_mask_store(row + v * W, m[v], t[r][v]);
    }
  }
}

// AVX-512F: 12 rows x 2 vectors (32 floats or 16 doubles), 24 of the 32 registers accumulating:
// the edge kernel's sums in its order, with plain loads of B. A row-major A's 12 rows are read
// through two pointers, rows 0-5 and 6-11, and the offsets 1-5 rows on (otherwise the compiler
// keeps an offset per row and runs out of registers, reloading some from the stack every step).
template <class T, bool RowA>
__attribute__((target("avx512f"))) void ukr_avx512(int kc, const T* a, int lda, const T* b, int ldb,
                                                   T* c, int ldc, bool acc, const T* bias) {
  constexpr int W = 64 / sizeof(T);
  decltype(v512_set1(T())) t[12][2];
#pragma GCC unroll 12
  for (int r = 0; r < 12; ++r) t[r][0] = t[r][1] = v512_set1(T(0));
  const std::ptrdiff_t ld = lda, off[6] = {0, ld, 2 * ld, 3 * ld, 4 * ld, 5 * ld};  // row r at a0 + off[r] or a6 + off[r - 6]
  const T* a0 = a;
  const T* a6 = RowA ? a + 6 * ld : a;
  for (int p = 0; p < kc; ++p) {
    const T* bp = b + static_cast<std::ptrdiff_t>(p) * ldb;
    const auto b0 = v512_load(bp), b1 = v512_load(bp + W);
#pragma GCC unroll 12
    for (int r = 0; r < 12; ++r) {
      const auto xv = v512_set1(RowA ? (r < 6 ? a0[off[r]] : a6[off[r - 6]]) : a0[r]);
      t[r][0] = v512_fma(xv, b0, t[r][0]);
      t[r][1] = v512_fma(xv, b1, t[r][1]);
    }
    if constexpr (RowA) ++a0, ++a6;
    else a0 += ld;
  }
#pragma GCC unroll 12
  for (int r = 0; r < 12; ++r) {
    T* row = c + static_cast<std::ptrdiff_t>(r) * ldc;
    if (acc) {
      t[r][0] = v512_add(v512_load(row), t[r][0]);
      t[r][1] = v512_add(v512_load(row + W), t[r][1]);
    } else if (bias) {
      t[r][0] = v512_add(v512_load(bias), t[r][0]);
      t[r][1] = v512_add(v512_load(bias + W), t[r][1]);
    }
    v512_store(row, t[r][0]);
    v512_store(row + W, t[r][1]);
  }
}

// Portable: the whole tile into a scratch tile, then its valid part.
template <class T, int MR, int NR>
void edge_portable(int rows, int cols, int kc, const T* a, int lda, const T* b, int ldb,
                   T* c, int ldc, bool acc, const T* bias) {
  T edge[MR * NR];
  ukr_portable<T, MR, NR>(kc, a, lda, b, ldb, edge, NR, false, nullptr);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) {
      T& out = c[static_cast<std::ptrdiff_t>(r) * ldc + j];
      out = acc ? out + edge[r * NR + j] : bias ? bias[j] + edge[r * NR + j] : edge[r * NR + j];
    }
}

// An edge tile of `rows` rows: the kernel compiled for that many, and for one vector of columns
// where its columns fit in one.
template <class T>
using EdgeKernel = void (*)(int kc, const T* a, int lda, const T* b, int ldb,
                         T* c, int ldc, bool acc, const T* bias, int cols);
template <class T, bool RowA, std::size_t... R>
void edge_avx2_rows(int rows, int cols, int kc, const T* a, int lda, const T* b, int ldb,
                    T* c, int ldc, bool acc, const T* bias,
                    std::index_sequence<R...>) {
  static constexpr EdgeKernel<T> fns[2][sizeof...(R)] = {{ukr_avx2_edge<T, static_cast<int>(R) + 1, RowA, 1>...},
                                                          {ukr_avx2_edge<T, static_cast<int>(R) + 1, RowA, 2>...}};
  fns[cols > static_cast<int>(32 / sizeof(T))][rows - 1](kc, a, lda, b, ldb, c, ldc, acc, bias, cols);
}
template <class T, bool RowA>
void edge_avx2(int rows, int cols, int kc, const T* a, int lda, const T* b, int ldb,
               T* c, int ldc, bool acc, const T* bias) {
  edge_avx2_rows<T, RowA>(rows, cols, kc, a, lda, b, ldb, c, ldc, acc, bias, std::make_index_sequence<6>{});
}
template <class T, bool RowA, std::size_t... R>
void edge_avx512_rows(int rows, int cols, int kc, const T* a, int lda, const T* b, int ldb,
                      T* c, int ldc, bool acc, const T* bias,
                      std::index_sequence<R...>) {
  static constexpr EdgeKernel<T> fns[2][sizeof...(R)] = {{ukr_avx512_edge<T, static_cast<int>(R) + 1, RowA, 1>...},
                                                          {ukr_avx512_edge<T, static_cast<int>(R) + 1, RowA, 2>...}};
  fns[cols > static_cast<int>(64 / sizeof(T))][rows - 1](kc, a, lda, b, ldb, c, ldc, acc, bias, cols);
}
template <class T, bool RowA>
void edge_avx512(int rows, int cols, int kc, const T* a, int lda, const T* b, int ldb,
                 T* c, int ldc, bool acc, const T* bias) {
  edge_avx512_rows<T, RowA>(rows, cols, kc, a, lda, b, ldb, c, ldc, acc, bias, std::make_index_sequence<12>{});
}

// ---- the blocked driver ----

// Per-thread packing buffers, grown as needed (each thread of a split GEMM packs its own).
template <class T>
std::vector<T>& pack_buffer(int which) {
  thread_local std::vector<T> buffers[2];
  return buffers[which];
}

template <class T>
using TileKernel = void (*)(int kc, const T* a, int lda, const T* b, int ldb, T* c, int ldc, bool acc, const T* bias);
template <class T>
using EdgeTiles = void (*)(int rows, int cols, int kc, const T* a, int lda, const T* b, int ldb,
                        T* c, int ldc, bool acc, const T* bias);

// Ukr and Edge read A from packed panels (element (r, p) at a[p * MR + r]). Where an instruction
// set has them, UkrRowA and EdgeRowA read a row-major A where it lies, and Ukr and Edge a
// column-major one (at a[p * lda + r]), so A is never packed: its packing, a transpose for a
// row-major A, cost a tenth of the training step. They read a row-major B with short rows where it
// lies too (row p of the panel at b + p * ldb); another B is packed, into panels with ldb = NR.
// The sums are the same, in the same order.
template <class T, int MR, int NR, TileKernel<T> Ukr, EdgeTiles<T> Edge, TileKernel<T> UkrRowA = nullptr,
          EdgeTiles<T> EdgeRowA = nullptr>
void blocked(MatLayout la, MatLayout lb, int m, int n, int k, const T* a, const T* b, T* c, int ldc, T beta, Band band,
             const T* bias) {
  // An MC x KC block of A fits L2; a KC x NC block of B is meant for L3 (the shapes of a training
  // step rarely need more than one). The sum over k runs in K blocks of equal length KC, at most
  // kc_max: each block after the first reads C back and writes it again, and where C is large (the
  // medium step's (4096, 256) input gradients) that pass costs more than a B panel falling out of
  // L1. Measured on the medium step's GEMMs (ops_bench, BM_Gemm<float>/11..19): a row-major A,
  // read where it lies, runs best with one block up to k = 768 (g @ W for k = 512 and 768: 84% of
  // the peak in blocks of 384, 94% in one); a column-major A (the weight gradients g^T @ x, k =
  // 4096) keeps blocks of about 384 (on 4 KiB pages 192, 512 and 768 gave 72-80% against 83-86%;
  // on the huge pages of storage.cpp all within noise of each other).
  constexpr int MC = MR * (sizeof(T) == 4 ? 16 : 12), NC = NR * 128;
  const int kc_max = sizeof(T) == 4 ? (la.trans ? 384 : 768) : 256;
  const int k_blocks = std::max((k + kc_max - 1) / kc_max, 1), KC = (k + k_blocks - 1) / k_blocks;
  if (beta != T(0) && beta != T(1)) {  // beta c first, then add to it
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) c[static_cast<std::ptrdiff_t>(i) * ldc + j] *= beta;
    beta = T(1);
  }
  if (k == 0) {  // a sum of nothing
    if (beta == T(0))
      for (int i = 0; i < m; ++i) {
        T* row = c + static_cast<std::ptrdiff_t>(i) * ldc;
        if (bias) std::copy(bias, bias + n, row);
        else std::fill(row, row + n, T(0));
      }
    return;
  }
  std::vector<T>& bp = pack_buffer<T>(0);
  std::vector<T>& ap = pack_buffer<T>(1);
  for (int j0 = 0; j0 < n; j0 += NC) {
    const int nc = std::min(NC, n - j0), nc_pad = (nc + NR - 1) / NR * NR;
    for (int p0 = 0; p0 < k; p0 += KC) {
      const int kc = std::min(KC, k - p0);
      const bool acc = beta != T(0) || p0 > 0;
      const T* bias_block = acc || !bias ? nullptr : bias + j0;  // the bias goes in with the first K block
      constexpr bool direct = UkrRowA != nullptr;
      // B where it lies while the rows a K block spans stay within 256 KiB (measured: from the small
      // step's 128-float rows, 196 KiB, it beats packing; from the medium step's 256-float rows,
      // 393 KiB, packing wins by a tenth, each panel then touching an eighth of every page)
      const bool direct_b = direct && !lb.trans && static_cast<std::size_t>(kc) * lb.ld * sizeof(T) <= 256 * 1024;
      if (!direct_b) {
        if (bp.size() < static_cast<std::size_t>(nc_pad) * kc) bp.resize(static_cast<std::size_t>(nc_pad) * kc);
        pack_b<T, NR>(b, lb, n, j0, nc, p0, kc, bp.data());
      }
      const int ldb = direct_b ? lb.ld : NR;
      for (int i0 = 0; i0 < m; i0 += MC) {
        const int mc = std::min(MC, m - i0), mc_pad = (mc + MR - 1) / MR * MR;
        if (!direct) {
          if (ap.size() < static_cast<std::size_t>(mc_pad) * kc) ap.resize(static_cast<std::size_t>(mc_pad) * kc);
          pack_a<T, MR>(a, la, m, i0, mc, p0, kc, ap.data());
        }
        for (int jr = 0; jr < nc; jr += NR) {
          const int cols = std::min(NR, nc - jr);
          const T* tbias = bias_block ? bias_block + jr : nullptr;
          const T* bpanel = direct_b ? b + static_cast<std::ptrdiff_t>(p0) * lb.ld + j0 + jr : bp.data() + static_cast<std::ptrdiff_t>(jr) * kc;
          for (int ir = 0; ir < mc; ir += MR) {
            const int rows = std::min(MR, mc - ir);
            // the band (blas.h): the tile's columns and the part [pb, pe) of this K block its rows need
            int tcols = cols, pb = 0, pe = kc;
            const int first_row = i0 + ir, last_row = first_row + rows - 1;
            if (band.kind == Band::LowerC) {
              tcols = std::min(cols, last_row + band.offset - (j0 + jr) + 1);
              if (tcols <= 0) continue;  // the whole tile lies above the band
            } else if (band.kind == Band::KTo) {
              pe = std::clamp(last_row + band.offset + 1 - p0, 0, kc);
            } else if (band.kind == Band::KFrom) {
              pb = std::clamp(first_row + band.offset - p0, 0, kc);
            }
            const int tk = std::max(pe - pb, 0);  // (none: the tile is written as 0, or left, with acc)
            const bool full = rows == MR && tcols == NR;
            T* tile = c + static_cast<std::ptrdiff_t>(first_row) * ldc + j0 + jr;
            const T* bp_t = bpanel + static_cast<std::ptrdiff_t>(pb) * ldb;
            if constexpr (direct) {
              if (!la.trans) {
                const T* arows = a + static_cast<std::ptrdiff_t>(first_row) * la.ld + p0 + pb;
                if (full) UkrRowA(tk, arows, la.ld, bp_t, ldb, tile, ldc, acc, tbias);
                else EdgeRowA(rows, tcols, tk, arows, la.ld, bp_t, ldb, tile, ldc, acc, tbias);
              } else {
                const T* acols = a + static_cast<std::ptrdiff_t>(p0 + pb) * la.ld + first_row;
                if (full) Ukr(tk, acols, la.ld, bp_t, ldb, tile, ldc, acc, tbias);
                else Edge(rows, tcols, tk, acols, la.ld, bp_t, ldb, tile, ldc, acc, tbias);
              }
              continue;
            }
            const T* apanel = ap.data() + static_cast<std::ptrdiff_t>(ir) * kc + static_cast<std::ptrdiff_t>(pb) * MR;
            if (full) Ukr(tk, apanel, MR, bp_t, ldb, tile, ldc, acc, tbias);
            else Edge(rows, tcols, tk, apanel, MR, bp_t, ldb, tile, ldc, acc, tbias);
          }
        }
      }
    }
  }
}

// The blocked driver compiled for each instruction set with its kernels inlined into the tile loop
// (flatten): no call per tile. The medium step ran 0.3-0.5 ms faster (docs/performance.md).
template <class T>
__attribute__((target("avx512f"), flatten)) void blocked_avx512(MatLayout la, MatLayout lb, int m, int n, int k, const T* a, const T* b, T* c,
                                                       int ldc, T beta, Band band, const T* bias) {
  blocked<T, 12, 128 / sizeof(T), ukr_avx512<T, false>, edge_avx512<T, false>, ukr_avx512<T, true>, edge_avx512<T, true>>(
      la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
}
template <class T>
__attribute__((target("avx2,fma"), flatten)) void blocked_avx2(MatLayout la, MatLayout lb, int m, int n, int k, const T* a, const T* b, T* c,
                                                      int ldc, T beta, Band band, const T* bias) {
  blocked<T, 6, 64 / sizeof(T), ukr_avx2<T, false>, edge_avx2<T, false>, ukr_avx2<T, true>, edge_avx2<T, true>>(
      la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
}

template <class T>
void run_own(GemmKernel kernel, MatLayout la, MatLayout lb, int m, int n, int k, const T* a, const T* b, T* c, int ldc, T beta,
             Band band, const T* bias) {
  if (m == 0 || n == 0) return;
  switch (kernel) {
    case GemmKernel::Avx512:  // 12 rows x 2 vectors of 64 bytes
      return blocked_avx512<T>(la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
    case GemmKernel::Avx2:  // 6 rows x 2 vectors of 32 bytes
      return blocked_avx2<T>(la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
    case GemmKernel::Portable:
      return blocked<T, 4, 8, ukr_portable<T, 4, 8>, edge_portable<T, 4, 8>>(la, lb, m, n, k, a, b, c, ldc, beta, band, bias);
    case GemmKernel::OpenBLAS:
      break;
  }
  throw std::logic_error("[gemm] own_gemm called with the OpenBLAS kernel");
}

// ---- the choice ----

int cpu_level() {
  static const int level = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
  return level;
}

// The instruction-set level of OpenBLAS 0.3.21's x86-64 cores: 2 uses AVX-512, 1 AVX2 and FMA, 0
// neither (Prescott, Core2, Nehalem, Sandybridge, Barcelona, Bulldozer, ...).
int core_level(const std::string& core) {
  for (const char* c : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (core == c) return 2;
  for (const char* c : {"Haswell", "Zen", "Excavator"})
    if (core == c) return 1;
  return 0;
}

GemmKernel from_env() {
  const char* e = std::getenv("AG_GEMM");
  if (!e || !*e) return GemmKernel::OpenBLAS;
  const std::string s(e);
  for (GemmKernel k : {GemmKernel::OpenBLAS, GemmKernel::Portable, GemmKernel::Avx2, GemmKernel::Avx512})
    if (s == gemm_kernel_name(k) && gemm_kernel_supported(k)) return k;
  throw std::invalid_argument("[gemm] AG_GEMM=" + s + " is not a GEMM kernel this CPU runs (openblas, portable" +
                              std::string(gemm_kernel_supported(GemmKernel::Avx2) ? ", avx2" : "") +
                              (gemm_kernel_supported(GemmKernel::Avx512) ? ", avx512" : "") + ")");
}

// ag's own kernel wherever the CPU has AVX2 and FMA: on every GEMM shape of the training step it
// was measured faster than OpenBLAS's own AVX2 (Haswell) and AVX-512 (Cooperlake) kernels
// (docs/performance.md), let alone the older cores OpenBLAS falls back to on a CPU it does not
// know. Without AVX2, OpenBLAS.
GemmKernel auto_kernel() {
  if (const char* e = std::getenv("AG_GEMM"); e && *e) return from_env();
  const GemmKernel best = best_own_gemm_kernel();
  return best != GemmKernel::Portable ? best : GemmKernel::OpenBLAS;
}

std::atomic<int> g_kernel{-1};  // -1: not chosen yet

}  // namespace

const char* gemm_kernel_name(GemmKernel k) {
  switch (k) {
    case GemmKernel::OpenBLAS: return "openblas";
    case GemmKernel::Portable: return "portable";
    case GemmKernel::Avx2: return "avx2";
    case GemmKernel::Avx512: return "avx512";
  }
  return "?";
}

bool gemm_kernel_supported(GemmKernel k) {
  if (k == GemmKernel::Avx512) return cpu_level() >= 2;
  if (k == GemmKernel::Avx2) return cpu_level() >= 1;
  return true;
}

GemmKernel best_own_gemm_kernel() {
  return cpu_level() == 2 ? GemmKernel::Avx512 : cpu_level() == 1 ? GemmKernel::Avx2 : GemmKernel::Portable;
}

std::string openblas_core() {
  const char* c = openblas_get_corename();
  return c ? c : "";
}

bool openblas_core_is_older_than_cpu() { return core_level(openblas_core()) < cpu_level(); }

GemmKernel gemm_kernel() {
  int k = g_kernel.load(std::memory_order_relaxed);
  if (k < 0) {
    k = static_cast<int>(auto_kernel());
    g_kernel.store(k, std::memory_order_relaxed);
  }
  return static_cast<GemmKernel>(k);
}

void set_gemm_kernel(GemmKernel k) {
  if (!gemm_kernel_supported(k)) {
    throw std::invalid_argument(std::string("[gemm] this CPU cannot run the ") + gemm_kernel_name(k) + " GEMM kernel");
  }
  g_kernel.store(static_cast<int>(k), std::memory_order_relaxed);
}

void reset_gemm_kernel() { g_kernel.store(-1, std::memory_order_relaxed); }

void own_gemm(GemmKernel k, MatLayout la, MatLayout lb, int m, int n, int kk, const float* a, const float* b, float* c,
              int ldc, float beta, Band band, const float* bias) {
  run_own<float>(k, la, lb, m, n, kk, a, b, c, ldc, beta, band, bias);
}
void own_gemm(GemmKernel k, MatLayout la, MatLayout lb, int m, int n, int kk, const double* a, const double* b, double* c,
              int ldc, double beta, Band band, const double* bias) {
  run_own<double>(k, la, lb, m, n, kk, a, b, c, ldc, beta, band, bias);
}

}  // namespace ag::detail
