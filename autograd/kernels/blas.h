// Internal: the one place that calls BLAS. Row-major GEMM, C = A @ B + beta C, where A and B are
// given by pointer, transpose flag and leading dimension, so transposed views need no copy.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>

#include "autograd/tensor.h"

namespace ag::detail {

struct MatLayout {
  bool trans;  // the matrix is stored column-major (a transposed view)
  int ld;      // leading dimension in elements
};

// The part of a GEMM its caller needs, for the triangles of causal attention (kernels/attention.cpp):
// - LowerC: only c[i][j] with j <= i + offset is needed; the entries above may be left as they
//   were or hold anything;
// - KTo: a[i][p] is 0 for p > i + offset (and b finite), so row i's sum may stop at p = i + offset;
// - KFrom: a[i][p] is 0 for p < i + offset (and b finite), so row i's sum may start there.
// A product that is 0 leaves a sum's bits as they are (a sum that starts at +0 is never -0), so
// skipping those terms gives the same bits. ag's own kernels skip at the granularity of their
// tiles; OpenBLAS computes everything.
struct Band {
  enum Kind : unsigned char { None, LowerC, KTo, KFrom };
  Kind kind = None;
  int offset = 0;
};

// c (m,n) = a (m,k) @ b (k,n) + beta * c; c is row-major with leading dimension ldc. beta is 0
// (c is overwritten: zeroed with memset, then added to) or 1 (added to what c holds). With beta 0
// and a bias (n contiguous values), c = bias (in every row) + a @ b: the same bits as c holding
// the bias rows and beta 1, without the pass that writes them (linear's addmm).
void gemm(MatLayout la, MatLayout lb, int m, int n, int k, const float* a, const float* b, float* c, int ldc,
          float beta = 0.0f, Band band = {}, const float* bias = nullptr);
void gemm(MatLayout la, MatLayout lb, int m, int n, int k, const double* a, const double* b, double* c, int ldc,
          double beta = 0.0, Band band = {}, const double* bias = nullptr);

// How BLAS can read a (rows, cols) matrix with strides (rs, cs), if it can. (Inline, as is
// layout_of: called out of line, the optional went back through the stack and stalled the load
// that read it, a few percent of a toy model's step.)
inline std::optional<MatLayout> mat_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  // an empty matrix is never read (and counts as contiguous whatever its strides)
  if (rows == 0 || cols == 0) return MatLayout{false, static_cast<int>(std::max<int64_t>(cols, 1))};
  if (rows <= 1) rs = std::max<int64_t>(cols, 1);  // a single row: its row stride never matters
  if (cols <= 1) cs = 1;
  if (rs > INT_MAX || cs > INT_MAX) return std::nullopt;
  if (cs == 1 && rs >= std::max<int64_t>(cols, 1)) return MatLayout{false, static_cast<int>(rs)};
  if (rs == 1 && cs >= std::max<int64_t>(rows, 1)) return MatLayout{true, static_cast<int>(cs)};
  return std::nullopt;
}

// How BLAS reads the last two dims of t, if it can: row-major or, for a transposed view,
// column-major, with a leading dimension.
inline std::optional<MatLayout> layout_of(const Tensor& t) {
  const std::size_t n = static_cast<std::size_t>(t.dim());
  const Strides& st = t.strides();
  return mat_layout(t.size(-2), t.size(-1), st[n - 2], st[n - 1]);
}
// (defined in kernels/matmul.cpp, as is the one below)
// t itself if BLAS can read its last two dims (transposed views included), else a contiguous copy.
Tensor blas_operand(const Tensor& t);
// Throws a shape error naming `op` if a GEMM dimension exceeds BLAS's int range.
void check_blas_dims(const char* op, int64_t m, int64_t n, int64_t k);

}  // namespace ag::detail
