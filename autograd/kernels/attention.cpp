// Kernels of causal_qk_softmax and causal_matmul; their rules and formulas are in attention.cpp.
//
// Query i sees keys j <= i, so in q k^T the upper triangle is masked away and in weights @ v the
// upper triangle of the weights is 0: about half of each GEMM is work whose result is thrown away
// or is a sum of zeros. These kernels skip it. ag's own GEMM is told which part is needed (a Band,
// kernels/blas.h) and skips its tiles above the diagonal and the terms of its sums that are 0, one
// GEMM per matrix; for OpenBLAS, which computes all it is given, each GEMM runs per block of
// kOpenBlasBlock query rows (or, for a key gradient, key rows) over just the keys (queries) that
// block can see. Skipping a term is exact because the term is 0 * x, unless x is inf or NaN, where
// PyTorch's full GEMM gives NaN: so the operand whose entries would be skipped is checked first,
// and if it is not finite the GEMM runs in full. The results equal the composed ops to rounding,
// not always bit for bit: OpenBLAS's result bits depend on the shape.
#include "autograd/kernels/attention.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "autograd/kernels/blas.h"
#include "autograd/kernels/common.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/softmax.h"

namespace ag::kernels {

namespace {

using detail::Band;
using detail::MatLayout;

// ag's own GEMM skips the tiles and the terms of the sums above the diagonal itself, given a Band
// (blas.h), so with it each product is one GEMM per matrix, its B packed once. OpenBLAS computes
// all it is given, so for it the rows go in blocks of kOpenBlasBlock, each over just the keys it
// sees: smaller blocks skip more of the upper triangle but make more, smaller GEMM calls, on which
// OpenBLAS is slow. Measured with bench/train_step (ms per step, interleaved runs): medium
// (T = 256) 32: 191-207, 64: 193-205, 128: 213, 256 (no skipping): 221; small (T = 64) 16, 32 and
// 64 within noise of each other.
constexpr int64_t kOpenBlasBlock = 64;
bool gemm_skips_band() { return detail::gemm_kernel() != detail::GemmKernel::OpenBLAS; }
int64_t block_rows() { return gemm_skips_band() ? int64_t(1) << 40 : kOpenBlasBlock; }

// Element (i, j) of a matrix BLAS reads with layout l.
template <class T>
T* at(T* p, MatLayout l, int64_t i, int64_t j) {
  return p + (l.trans ? j * l.ld + i : i * l.ld + j);
}

MatLayout transposed(MatLayout l) { return {!l.trans, l.ld}; }

// Whether a GEMM of rows of queries skips keys (a band, or a block of query rows that sees fewer
// than all tk keys), and whether one of rows of keys skips queries (a band, or a block of key rows
// that starts past query 0). If not, the GEMMs are the full ones and there is nothing to check.
bool rows_skip_keys(int64_t tq, int64_t tk) { return gemm_skips_band() ? tk > 1 : tk > std::min(tq, kOpenBlasBlock); }
bool key_blocks_skip_queries(int64_t tk) { return gemm_skips_band() ? tk > 1 : tk > kOpenBlasBlock; }

// The bits of a float or double, for checks that vectorize (unlike a chain of float adds).
template <class T>
auto bits(T x) {
  std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// True if no entry of the (rows, cols) matrix is inf or NaN (all exponent bits set).
template <class T>
bool all_finite(const T* p, MatLayout l, int64_t rows, int64_t cols) {
  const auto exponent = bits(std::numeric_limits<T>::infinity());
  const int64_t lines = l.trans ? cols : rows, len = l.trans ? rows : cols;
  decltype(bits(T())) bad = 0;
  for (int64_t a = 0; a < lines; ++a) {
    const T* line = p + a * l.ld;
    if (a + 16 < lines) {  // the line 16 ahead asked for: the check is the first to read q, k, v or g
      __builtin_prefetch(line + 16 * l.ld);
      __builtin_prefetch(line + 16 * l.ld + len - 1);
    }
    for (int64_t b = 0; b < len; ++b) bad |= (bits(line[b]) & exponent) == exponent;
  }
  return bad == 0;
}

// Where the weights come from: causal_softmax_rows in this very kernel (Ours: +0 above the diagonal
// except in a row that is all NaN, nothing to check; for tril(w) @ v, whose row of a NaN row is NaN
// either way, and for tril(w)^T @ g where the forward's stats show no NaN row), or anywhere else
// (Given: they may hold anything there).
enum class Weights { Given, Ours };

// The region rows [r0, r1) x cols [c0, c1) of tril(w) as a GEMM operand: w itself if its entries
// above the diagonal there are all +0 (always so for weights from causal_qk_softmax, and not
// checked for Weights::Ours), else a copy into `scratch` with those entries zeroed.
template <class T>
const T* tril_region(const T* w, MatLayout lw, int64_t r0, int64_t r1, int64_t c0, int64_t c1, std::vector<T>& scratch,
                     MatLayout& layout, Weights from) {
  decltype(bits(T())) nonzero = 0;  // OR of the bits of the entries above the diagonal
  for (int64_t i = r0; i < std::min(r1, c1) && from == Weights::Given; ++i)
    for (int64_t j = std::max(c0, i + 1); j < c1; ++j) nonzero |= bits(*at(w, lw, i, j));
  if (nonzero == 0) {
    layout = lw;
    return at(w, lw, r0, c0);
  }
  const int64_t cols = c1 - c0;
  scratch.resize(static_cast<std::size_t>((r1 - r0) * cols));
  for (int64_t i = r0; i < r1; ++i)
    for (int64_t j = c0; j < c1; ++j) scratch[static_cast<std::size_t>((i - r0) * cols + (j - c0))] = j > i ? T(0) : *at(w, lw, i, j);
  layout = {false, static_cast<int>(cols)};
  return scratch.data();
}

// Where each matrix of the batch starts in each operand, the batch being the leading dims all
// operands share: entry index holds operand i's offset at [i], index counting the matrices in
// row-major order (a contiguous output's matrix starts at index * rows * cols). The kernels split
// this list over threads (detail::parallel_for): each matrix is computed by one thread, so with
// several matrices the result does not depend on the thread count (a lone matrix runs on the
// caller, whose large GEMMs blas.cpp may split).
template <std::size_t N>
std::vector<std::array<int64_t, N>> matrix_offsets(const Size& batch, const std::array<const Tensor*, N>& ts) {
  std::array<Strides, N> st;
  std::array<const Strides*, N> sp{};
  std::array<int64_t, N> off{};
  for (std::size_t i = 0; i < N; ++i) {
    st[i] = Strides(ts[i]->strides().begin(), ts[i]->strides().begin() + batch.size());
    sp[i] = &st[i];
    off[i] = ts[i]->storage_offset();
  }
  std::vector<std::array<int64_t, N>> out;
  out.reserve(static_cast<std::size_t>(batch.numel()));
  detail::walk<N>(batch, sp, off, [&](const std::array<int64_t, N>& o) { out.push_back(o); });
  return out;
}

// f(offsets, index) for every matrix, the matrices split over ag's threads when the work is
// worth it (flops: about what one matrix costs); init() makes each thread's scratch state, passed
// to f as its third argument.
template <std::size_t N, class Init, class F>
void for_each_matrix(const Size& batch, const std::array<const Tensor*, N>& ts, double flops, Init init, F f) {
  const auto offsets = matrix_offsets<N>(batch, ts);
  detail::parallel_for(static_cast<int64_t>(offsets.size()), flops, [&](int64_t begin, int64_t end) {
    auto scratch = init();
    for (int64_t index = begin; index < end; ++index) f(offsets[static_cast<std::size_t>(index)], index, scratch);
  });
}

template <class T>
const T* base(const Tensor& t) {
  return static_cast<const T*>(t.impl()->storage->data);
}
template <class T>
T* base_mut(const Tensor& t) {
  return static_cast<T*>(t.impl()->storage->data);
}

Size with_matrix(Size batch, int64_t rows, int64_t cols) {
  batch.vec().push_back(rows);
  batch.vec().push_back(cols);
  return batch;
}

// Whether t's elements tile a block of memory without gaps or overlaps (some order of its dims is
// row-major) with unit stride in the last dim and a usable row stride: like the (B, heads, T, E)
// transposed views of (B, T, heads, E) projections.
bool dense_rows(const Tensor& t) {
  const int64_t nd = t.dim();
  if (nd < 2 || t.stride(-1) != 1 || t.stride(-2) < std::max<int64_t>(t.size(-1), 1) || t.stride(-2) > INT_MAX) return false;
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims of size > 1
  for (int64_t i = 0; i < nd; ++i)
    if (t.size(i) > 1) dims.emplace_back(t.stride(i), t.size(i));
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

// A new (batch..., rows, cols) tensor for GEMM output, laid out like `like` when that has this
// shape and dense rows (so a gradient flowing back through like's transposes and views needs no
// copy), else contiguous; or `into` where given; rows [written, rows) zeroed, the rest left for
// the GEMMs (all zeros if written is 0).
Tensor gemm_output(const Size& batch, int64_t rows, int64_t cols, int64_t written, DType dtype, const Tensor& like,
                   const Tensor& into = Tensor()) {
  const Size shape = with_matrix(batch, rows, cols);
  Tensor t;
  if (into.defined()) {  // the caller's tensor of this shape, its rows readable by BLAS
    t = into;
    written = std::max<int64_t>(written, 0);
  } else if (written <= 0) {
    return detail::zeros_tensor(shape, dtype);
  } else if (like.defined() && like.shape() == shape && dense_rows(like)) {
    t = detail::alias(detail::make_tensor(Size{shape.numel()}, dtype), shape, like.strides(), 0);
  } else {
    t = detail::make_tensor(shape, dtype);
  }
  if (written < rows && t.numel() > 0) {  // rows [written, rows) of every matrix
    Size tail = shape;
    tail[tail.size() - 2] = rows - written;
    const Tensor z = detail::alias(t, tail, t.strides(), t.storage_offset() + written * t.stride(-2));
    dispatch_float(dtype, "gemm_output", [&]<typename T>() { detail::for_each_inplace<T>(z, [](T& x) { x = T(0); }); });
  }
  return t;
}

// Where row r of a GEMM output's matrix starts (matrix_offset from for_each_matrix), and the
// output's row stride as the GEMM's ldc.
template <class T>
T* out_row(const Tensor& out, int64_t matrix_offset, int64_t r) {
  return static_cast<T*>(out.impl()->storage->data) + matrix_offset + r * out.stride(-2);
}
int ldc_of(const Tensor& out) { return static_cast<int>(out.stride(-2)); }

// The per-matrix bodies of the kernels below. causal_attention and its backward call the same
// bodies as causal_qk_softmax and causal_matmul (same GEMM calls on the same blocks), so the fused
// op gives the same bits as the two ops.

// Scores s = q k^T on the blocks the causal softmax reads, then the softmax in place while the
// matrix is in cache: ps is (tq, tk) with row stride tk. With `keep_stats` (2 per row), the rows'
// shifts and 1 / sums go there; with `from_stats` (such a pair per row from the forward), the
// softmax takes them in one pass instead (causal_softmax_rows_again), the same bits.
template <class T>
void qk_softmax_matrix(const T* pq, MatLayout lq, const T* pk, MatLayout lkt, T* ps, int64_t tq, int64_t tk, int64_t e,
                       T divisor, T* keep_stats = nullptr, const T* from_stats = nullptr) {
  // scores row block [r0, r0 + rows) over keys j < r0 + rows: the entries the softmax reads
  if (e == 0) std::fill(ps, ps + tq * tk, T(0));
  const int64_t bs = block_rows();
  for (int64_t r0 = 0; r0 < tq && e > 0; r0 += bs) {
    const int64_t rows = std::min(bs, tq - r0), cols = std::min(r0 + rows, tk);
    detail::gemm(lq, lkt, static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(e), at(pq, lq, r0, 0), pk,
                 ps + r0 * tk, static_cast<int>(tk), T(0), Band{Band::LowerC, static_cast<int>(r0)});
  }
  if (from_stats) causal_softmax_rows_again(ps, ps, tq, tq, tk, divisor, from_stats);
  else causal_softmax_rows(ps, ps, tq, tq, tk, divisor, keep_stats);
}

// out (tq, e) = tril(w) @ v for w (tq, tk) and v (tk, e), out's row stride ldc.
// With beta = 1 the product is added to what out holds.
template <class T>
void tril_matmul_matrix(const T* pw, MatLayout lw, const T* pv, MatLayout lv, T* pout, int ldc, int64_t tq, int64_t tk,
                        int64_t e, std::vector<T>& scratch, T beta = T(0), Weights from = Weights::Given) {
  // row block [r0, r0 + rows) needs values j < r0 + rows: tril(w) is 0 beyond
  const bool skip = !rows_skip_keys(tq, tk) || all_finite(pv, lv, tk, e);
  const int64_t bs = skip ? block_rows() : tq;
  for (int64_t r0 = 0; r0 < tq; r0 += bs) {
    const int64_t rows = std::min(bs, tq - r0), cols = skip ? std::min(r0 + rows, tk) : tk;
    MatLayout la{};
    const T* a = tril_region(pw, lw, r0, r0 + rows, 0, cols, scratch, la, from);
    detail::gemm(la, lv, static_cast<int>(rows), static_cast<int>(e), static_cast<int>(cols), a, pv, pout + r0 * ldc, ldc,
                 beta, skip ? Band{Band::KTo, static_cast<int>(r0)} : Band{});
  }
}

// dw (tq, tk) = tril(g @ v^T), row stride tk: row block [r0, r0 + rows) over j < r0 + rows, and 0
// above the diagonal (tril's backward). With beta = 1 the product is added to what dw holds.
template <class T>
void tril_matmul_dw_matrix(const T* pg, MatLayout lg, const T* pv, MatLayout lv, T* pdw, int64_t tq, int64_t tk, int64_t e,
                           T beta = T(0)) {
  const int64_t bs = block_rows();
  for (int64_t r0 = 0; r0 < tq; r0 += bs) {
    const int64_t rows = std::min(bs, tq - r0), cols = std::min(r0 + rows, tk);
    detail::gemm(lg, transposed(lv), static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(e), at(pg, lg, r0, 0), pv,
                 pdw + r0 * tk, static_cast<int>(tk), beta, Band{Band::LowerC, static_cast<int>(r0)});
    for (int64_t i = r0; i < r0 + rows; ++i) std::fill(pdw + i * tk + std::min(i + 1, tk), pdw + (i + 1) * tk, T(0));
  }
}

// dv (tk, e) = tril(w)^T @ g, row stride ldc: key block [c0, c0 + n) from queries i >= c0 only
// (the rows of keys no query sees are left as they are). With beta = 1 the product is added.
template <class T>
void tril_matmul_dv_matrix(const T* pg, MatLayout lg, const T* pw, MatLayout lw, T* pdv, int ldc, int64_t tq, int64_t tk,
                           int64_t e, std::vector<T>& scratch, T beta = T(0), Weights from = Weights::Given) {
  const bool skip = !key_blocks_skip_queries(tk) || all_finite(pg, lg, tq, e);
  const int64_t bs = skip ? block_rows() : tk;
  for (int64_t c0 = 0; c0 < tk; c0 += bs) {
    const int64_t n = std::min(bs, tk - c0), first = skip ? std::min(c0, tq) : 0;
    if (first == tq) break;  // values no query sees: their gradient stays 0
    MatLayout la{};
    const T* a = tril_region(pw, lw, first, tq, c0, c0 + n, scratch, la, from);
    detail::gemm(transposed(la), lg, static_cast<int>(n), static_cast<int>(e), static_cast<int>(tq - first), a,
                 at(pg, lg, first, 0), pdv + c0 * ldc, ldc, beta, skip ? Band{Band::KFrom, static_cast<int>(c0 - first)} : Band{});
  }
}

// From the scores' gradient ds (tq, tk), row stride tk: dq (tq, e) = ds @ k and dk (tk, e) =
// ds^T @ q, each if its pointer is set, with row strides ldq and ldk (dk's rows of keys no query
// sees are left as they are). With beta = 1 the products are added to what dq and dk hold.
template <class T>
void qk_grads_matrix(const T* pds, const T* pq, MatLayout lq, const T* pk, MatLayout lk, T* pdq, int ldq, T* pdk, int ldk,
                     int64_t tq, int64_t tk, int64_t e, T beta = T(0)) {
  const MatLayout lds{false, static_cast<int>(tk)};
  if (pdq) {  // row block [r0, r0 + rows) of dq needs keys j < r0 + rows; the rest of ds is 0
    const bool skip = !rows_skip_keys(tq, tk) || all_finite(pk, lk, tk, e);
    const int64_t bs = skip ? block_rows() : tq;
    for (int64_t r0 = 0; r0 < tq; r0 += bs) {
      const int64_t rows = std::min(bs, tq - r0), cols = skip ? std::min(r0 + rows, tk) : tk;
      detail::gemm(lds, lk, static_cast<int>(rows), static_cast<int>(e), static_cast<int>(cols), pds + r0 * tk, pk,
                   pdq + r0 * ldq, ldq, beta, skip ? Band{Band::KTo, static_cast<int>(r0)} : Band{});
    }
  }
  if (pdk) {  // key block [c0, c0 + n) of dk gets gradient from queries i >= c0 only
    const bool skip = !key_blocks_skip_queries(tk) || all_finite(pq, lq, tq, e);
    const int64_t bs = skip ? block_rows() : tk;
    for (int64_t c0 = 0; c0 < tk; c0 += bs) {
      const int64_t n = std::min(bs, tk - c0), first = skip ? std::min(c0, tq) : 0;
      if (first == tq) break;  // keys no query sees: their gradient stays 0
      detail::gemm(transposed(lds), lq, static_cast<int>(n), static_cast<int>(e), static_cast<int>(tq - first),
                   pds + first * tk + c0, at(pq, lq, first, 0), pdk + c0 * ldk, ldk, beta,
                   skip ? Band{Band::KFrom, static_cast<int>(c0 - first)} : Band{});
    }
  }
}

// The scores' tangent ds = dq k^T + q dk^T (tq, tk), row stride tk, on the blocks the causal
// softmax reads (as qk_softmax_matrix computes the scores); pdq or pdk null where that tangent is
// zero (not both). The entries above the diagonal may be left as they are.
template <class T>
void scores_tangent_matrix(const T* pq, MatLayout lq, const T* pkt, MatLayout lkt, const T* pdq, MatLayout ldq, const T* pdkt,
                           MatLayout ldkt, T* pds, int64_t tq, int64_t tk, int64_t e) {
  const int64_t bs = block_rows();
  for (int64_t r0 = 0; r0 < tq; r0 += bs) {  // row block [r0, r0 + rows) over keys j < r0 + rows
    const int64_t rows = std::min(bs, tq - r0), cols = std::min(r0 + rows, tk);
    if (pdq) {
      detail::gemm(ldq, lkt, static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(e), at(pdq, ldq, r0, 0), pkt,
                   pds + r0 * tk, static_cast<int>(tk), T(0), Band{Band::LowerC, static_cast<int>(r0)});
    }
    if (pdkt) {
      detail::gemm(lq, ldkt, static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(e), at(pq, lq, r0, 0), pdkt,
                   pds + r0 * tk, static_cast<int>(tk), pdq ? T(1) : T(0), Band{Band::LowerC, static_cast<int>(r0)});
    }
  }
}

// The tangent of ds = causal_softmax_backward(dw, y, divisor) for tangents ddw of dw and dy of y,
// (tq, n) matrices with row stride n: with r = rowsum(dw y) and dr = rowsum(ddw y + dw dy),
// dds = (dy (dw - r) + y (ddw - dr)) / divisor on j <= i, 0 above.
template <class T>
void causal_softmax_backward_jvp_rows(const T* dw, const T* ddw, const T* y, const T* dy, T* dds, int64_t tq, int64_t n,
                                      T divisor) {
  for (int64_t i = 0; i < tq; ++i) {
    const int64_t m = std::min(i + 1, n), o = i * n;
    T r = 0, dr = 0;
    for (int64_t j = 0; j < m; ++j) {
      r += dw[o + j] * y[o + j];
      dr += ddw[o + j] * y[o + j] + dw[o + j] * dy[o + j];
    }
    for (int64_t j = 0; j < m; ++j) dds[o + j] = (dy[o + j] * (dw[o + j] - r) + y[o + j] * (ddw[o + j] - dr)) / divisor;
    std::fill(dds + o + m, dds + o + n, T(0));
  }
}

// A (tq, tk) scratch matrix per thread, in cache while its matrix is worked on.
template <class T>
std::vector<T> scratch_matrix(int64_t tq, int64_t tk) {
  return std::vector<T>(static_cast<std::size_t>(tq * tk));
}

}  // namespace

Tensor causal_qk_softmax(const Tensor& q0, const Tensor& k0, const Size& batch, double divisor) {
  const Tensor q = detail::blas_operand(q0), k = detail::blas_operand(k0);
  const int64_t tq = q.size(-2), tk = k.size(-2), e = q.size(-1);
  detail::check_blas_dims("causal_qk_softmax", tq, tk, e);
  Tensor y = detail::make_tensor(with_matrix(batch, tq, tk), q.dtype());
  if (y.numel() > 0) {
    dispatch_float(q.dtype(), "causal_qk_softmax", [&]<typename T>() {
      const MatLayout lq = *detail::layout_of(q), lkt = transposed(*detail::layout_of(k));
      for_each_matrix<2>(batch, {&q, &k}, double(tq) * tk * e, [] { return 0; }, [&](const std::array<int64_t, 2>& o, int64_t index, int) {
        qk_softmax_matrix<T>(base<T>(q) + o[0], lq, base<T>(k) + o[1], lkt, y.data_ptr<T>() + index * tq * tk, tq, tk, e,
                             static_cast<T>(divisor));
      });
    });
  }
  return y;
}

// causal_qk_softmax's backward, one matrix at a time: ds = the softmax's backward from the
// weights' gradient g and the weights y (0 above the diagonal), into a scratch matrix that stays in
// cache for dq (..., tq, e) = ds @ k and dk (..., tk, e) = ds^T @ q.
Grads causal_qk_softmax_backward(const Tensor& g0, const Tensor& y, const Tensor& q0, const Tensor& k0, bool gq, bool gk,
                                 const Size& batch, double divisor) {
  const Tensor g = detail::contiguous_values(g0), q = detail::blas_operand(q0), k = detail::blas_operand(k0);
  const int64_t tq = q.size(-2), tk = k.size(-2), e = q.size(-1);
  const bool work = y.numel() > 0 && e > 0;  // else the gradients are all 0
  // every row of dq is written; dk's rows from tq on are keys no query sees
  Tensor dq = gq ? gemm_output(batch, tq, e, work ? tq : 0, q.dtype(), q) : Tensor();
  Tensor dk = gk ? gemm_output(batch, tk, e, work ? std::min(tq, tk) : 0, q.dtype(), k) : Tensor();
  if (!work) return {dq, dk};
  dispatch_float(q.dtype(), "causal_qk_softmax_backward", [&]<typename T>() {
    const MatLayout lq = *detail::layout_of(q), lk = *detail::layout_of(k);
    const Tensor& dq_or_q = gq ? dq : q;  // (an operand is needed either way for the offsets)
    const Tensor& dk_or_k = gk ? dk : k;
    for_each_matrix<4>(batch, {&q, &k, &dq_or_q, &dk_or_k}, 2.0 * tq * tk * e, [&] { return scratch_matrix<T>(tq, tk); },
                       [&](const std::array<int64_t, 4>& o, int64_t index, std::vector<T>& ds) {
      const int64_t m = index * tq * tk;
      causal_softmax_backward_rows(g.data_ptr<T>() + m, y.data_ptr<T>() + m, ds.data(), tq, tq, tk, static_cast<T>(divisor));
      qk_grads_matrix<T>(ds.data(), base<T>(q) + o[0], lq, base<T>(k) + o[1], lk, gq ? out_row<T>(dq, o[2], 0) : nullptr,
                         gq ? ldc_of(dq) : 0, gk ? out_row<T>(dk, o[3], 0) : nullptr, gk ? ldc_of(dk) : 0, tq, tk, e);
    });
  });
  return {dq, dk};
}

Tensor causal_matmul(const Tensor& w0, const Tensor& v0, const Size& batch) {
  const Tensor w = detail::blas_operand(w0), v = detail::blas_operand(v0);
  const int64_t tq = w.size(-2), tk = w.size(-1), e = v.size(-1);
  detail::check_blas_dims("causal_matmul", tq, e, tk);
  Tensor out = gemm_output(batch, tq, e, tk > 0 ? tq : 0, w.dtype(), v);  // v's layout when shapes agree
  if (out.numel() > 0 && tk > 0) {
    dispatch_float(w.dtype(), "causal_matmul", [&]<typename T>() {
      const MatLayout lw = *detail::layout_of(w), lv = *detail::layout_of(v);
      for_each_matrix<3>(batch, {&w, &v, &out}, double(tq) * tk * e, [] { return std::vector<T>(); },
                         [&](const std::array<int64_t, 3>& o, int64_t, std::vector<T>& scratch) {
        tril_matmul_matrix<T>(base<T>(w) + o[0], lw, base<T>(v) + o[1], lv, out_row<T>(out, o[2], 0), ldc_of(out), tq, tk, e,
                              scratch);
      });
    });
  }
  return out;
}

Grads causal_matmul_backward(const Tensor& g0, const Tensor& w0, const Tensor& v0, bool gw, bool gv, const Size& batch) {
  const Tensor g = detail::blas_operand(g0), w = detail::blas_operand(w0), v = detail::blas_operand(v0);
  const int64_t tq = w.size(-2), tk = w.size(-1), e = v.size(-1);
  // every entry of dw is written below (GEMM or zero), unless there is no GEMM (e == 0)
  Tensor dw = gw ? gemm_output(batch, tq, tk, e > 0 ? tq : 0, g.dtype(), Tensor()) : Tensor();
  // dv's rows from tq on are values no query sees
  Tensor dv = gv ? gemm_output(batch, tk, e, std::min(tq, tk), g.dtype(), v) : Tensor();
  if (g.numel() == 0 || tk == 0) return {dw, dv};
  dispatch_float(g.dtype(), "causal_matmul_backward", [&]<typename T>() {
    const MatLayout lg = *detail::layout_of(g), lw = *detail::layout_of(w), lv = *detail::layout_of(v);
    const Tensor& dv_or_v = gv ? dv : v;
    for_each_matrix<4>(batch, {&g, &w, &v, &dv_or_v}, 2.0 * tq * tk * e, [] { return std::vector<T>(); },
                       [&](const std::array<int64_t, 4>& o, int64_t index, std::vector<T>& scratch) {
      const T* pg = base<T>(g) + o[0];
      if (gw) tril_matmul_dw_matrix<T>(pg, lg, base<T>(v) + o[2], lv, base_mut<T>(dw) + index * tq * tk, tq, tk, e);
      if (gv) tril_matmul_dv_matrix<T>(pg, lg, base<T>(w) + o[1], lw, out_row<T>(dv, o[3], 0), ldc_of(dv), tq, tk, e, scratch);
    });
  });
  return {dw, dv};
}

// Whether causal_attention's fused kernels apply: every matrix dim nonzero (the degenerate shapes
// run the two ops' kernels one after the other, which is what the fused ones stand for).
static bool fusable(const Tensor& y_or_q, int64_t tq, int64_t tk, int64_t e, int64_t ev) {
  return y_or_q.numel() > 0 && tq > 0 && tk > 0 && e > 0 && ev > 0;
}

std::pair<Tensor, Tensor> causal_attention(const Tensor& q0, const Tensor& k0, const Tensor& v0, const Size& batch,
                                           double divisor, bool keep_weights, Tensor* stats, const Tensor& into) {
  const Tensor q = detail::blas_operand(q0), k = detail::blas_operand(k0), v = detail::blas_operand(v0);
  const int64_t tq = q.size(-2), tk = k.size(-2), e = q.size(-1), ev = v.size(-1);
  if (!fusable(q, tq, tk, e, ev)) {
    Tensor y = causal_qk_softmax(q, k, batch, divisor);
    return {causal_matmul(y, v, batch), y};
  }
  detail::check_blas_dims("causal_attention", tq, tk, e);
  detail::check_blas_dims("causal_attention", tq, ev, tk);
  // the weights: an output, or (keep_weights false) one matrix at a time in a per-thread scratch
  Tensor y = keep_weights ? detail::make_tensor(with_matrix(batch, tq, tk), q.dtype()) : Tensor();
  Tensor out = gemm_output(batch, tq, ev, tq, q.dtype(), v, into);
  if (stats) *stats = detail::make_tensor(with_matrix(batch, tq, 2), q.dtype());
  dispatch_float(q.dtype(), "causal_attention", [&]<typename T>() {
    const MatLayout lq = *detail::layout_of(q), lkt = transposed(*detail::layout_of(k)), lv = *detail::layout_of(v),
                    ly{false, static_cast<int>(tk)};
    struct Scratch {
      std::vector<T> tril, y;
    };
    for_each_matrix<4>(batch, {&q, &k, &v, &out}, double(tq) * tk * (e + ev),
                       [&] { return Scratch{{}, keep_weights ? std::vector<T>() : scratch_matrix<T>(tq, tk)}; },
                       [&](const std::array<int64_t, 4>& o, int64_t index, Scratch& s) {
      T* py = keep_weights ? y.data_ptr<T>() + index * tq * tk : s.y.data();
      qk_softmax_matrix<T>(base<T>(q) + o[0], lq, base<T>(k) + o[1], lkt, py, tq, tk, e, static_cast<T>(divisor),
                           stats ? stats->data_ptr<T>() + index * tq * 2 : nullptr);
      // this matrix's weights are still in cache for the second product
      tril_matmul_matrix<T>(py, ly, base<T>(v) + o[2], lv, out_row<T>(out, o[3], 0), ldc_of(out), tq, tk, ev, s.tril, T(0), Weights::Ours);
    });
  });
  return {out, y};
}

// One matrix at a time: dw = tril(g @ v^T) and ds = the softmax's backward into two scratch
// matrices that stay in cache (the weights' gradient is never written out), then dq = ds @ k,
// dk = ds^T @ q and dv = tril(y)^T @ g.
Grads causal_attention_backward(const Tensor& g0, const Tensor& y, const Tensor& q0, const Tensor& k0, const Tensor& v0, bool gq,
                                bool gk, bool gv, const Size& batch, double divisor, const Tensor& stats, const Grads& into) {
  const Tensor g = detail::blas_operand(g0), q = detail::blas_operand(q0), k = detail::blas_operand(k0),
               v = detail::blas_operand(v0);
  const int64_t tq = q.size(-2), tk = k.size(-2), e = q.size(-1), ev = v.size(-1);
  if (!fusable(q, tq, tk, e, ev) || g.numel() == 0) {
    const Tensor yy = y.defined() ? y : causal_qk_softmax(q, k, batch, divisor);
    Grads wv = causal_matmul_backward(g, yy, v, gq || gk, gv, batch);
    Grads qk = gq || gk ? causal_qk_softmax_backward(wv[0], yy, q, k, gq, gk, batch, divisor) : Grads{Tensor(), Tensor()};
    return {qk[0], qk[1], wv[1]};
  }
  auto given = [&](std::size_t i) { return i < into.size() ? into[i] : Tensor(); };
  Tensor dq = gq ? gemm_output(batch, tq, e, tq, q.dtype(), q, given(0)) : Tensor();
  Tensor dk = gk ? gemm_output(batch, tk, e, std::min(tq, tk), q.dtype(), k, given(1)) : Tensor();
  Tensor dv = gv ? gemm_output(batch, tk, ev, std::min(tq, tk), q.dtype(), v, given(2)) : Tensor();
  dispatch_float(q.dtype(), "causal_attention_backward", [&]<typename T>() {
    const MatLayout lg = *detail::layout_of(g), lq = *detail::layout_of(q), lk = *detail::layout_of(k),
                    lv = *detail::layout_of(v), ly{false, static_cast<int>(tk)};
    const Tensor& dq_or_q = gq ? dq : q;  // (an operand is needed either way for the offsets)
    const Tensor& dk_or_k = gk ? dk : k;
    const Tensor& dv_or_v = gv ? dv : v;
    struct Scratch {
      std::vector<T> dw, tril, y;  // (ds = the softmax's backward of dw, in place: two matrices in cache, not three)
    };
    const bool recompute = !y.defined();
    for_each_matrix<7>(batch, {&g, &q, &k, &v, &dq_or_q, &dk_or_k, &dv_or_v}, 2.0 * tq * tk * (e + ev),
                       [&] {
                         return Scratch{scratch_matrix<T>(tq, tk), {}, recompute ? scratch_matrix<T>(tq, tk) : std::vector<T>()};
                       },
                       [&](const std::array<int64_t, 7>& o, int64_t index, Scratch& s) {
      const T* pg = base<T>(g) + o[0];
      const T* py = recompute ? s.y.data() : y.data_ptr<T>() + index * tq * tk;
      const T* st = recompute && stats.defined() ? stats.data_ptr<T>() + index * tq * 2 : nullptr;  // this matrix's row stats
      if (recompute)  // the forward's weights again, the same GEMMs and softmax (the same bits; one pass with its stats)
        qk_softmax_matrix<T>(base<T>(q) + o[1], lq, base<T>(k) + o[2], transposed(lk), s.y.data(), tq, tk, e, static_cast<T>(divisor),
                             nullptr, st);
      if (gq || gk) {
        tril_matmul_dw_matrix<T>(pg, lg, base<T>(v) + o[3], lv, s.dw.data(), tq, tk, ev);
        causal_softmax_backward_rows(s.dw.data(), py, s.dw.data(), tq, tq, tk, static_cast<T>(divisor), true);
        qk_grads_matrix<T>(s.dw.data(), base<T>(q) + o[1], lq, base<T>(k) + o[2], lk, gq ? out_row<T>(dq, o[4], 0) : nullptr,
                           gq ? ldc_of(dq) : 0, gk ? out_row<T>(dk, o[5], 0) : nullptr, gk ? ldc_of(dk) : 0, tq, tk, e);
      }
      if (gv) {  // the recomputed weights are +0 above the diagonal unless a row is NaN: its stats say (a
                 // NaN shift, or 1 / sum not finite: 0 * (1 / sum) is NaN where masked)
        bool clean = st != nullptr;
        for (int64_t i = 0; clean && i < tq; ++i) clean = !std::isnan(st[2 * i]) && std::isfinite(st[2 * i + 1]);
        tril_matmul_dv_matrix<T>(pg, lg, py, ly, out_row<T>(dv, o[6], 0), ldc_of(dv), tq, tk, ev, s.tril, T(0),
                                 clean ? Weights::Ours : Weights::Given);
      }
    });
  });
  return {dq, dk, dv};
}

// The jvp kernels (the fast paths of the jvp rules in attention.cpp; tangents undefined where zero).

// One matrix at a time: the scores' tangent ds = dq k^T + q dk^T on the blocks the causal softmax
// reads (as the forward computes the scores), into a scratch matrix that stays in cache, then
// dy = the softmax's backward of ds (its Jacobian is symmetric).
Tensor causal_qk_softmax_jvp(const Tensor& dq0, const Tensor& dk0, const Tensor& q0, const Tensor& k0, const Tensor& y0,
                             const Size& batch, double divisor) {
  const Tensor q = detail::blas_operand(q0), k = detail::blas_operand(k0), y = detail::contiguous_values(y0);
  const Tensor dq = dq0.defined() ? detail::blas_operand(dq0) : Tensor(), dk = dk0.defined() ? detail::blas_operand(dk0) : Tensor();
  const int64_t tq = q.size(-2), tk = k.size(-2), e = q.size(-1);
  if (y.numel() == 0 || e == 0 || (!dq.defined() && !dk.defined())) return detail::zeros_tensor(with_matrix(batch, tq, tk), q.dtype());
  Tensor dy = detail::make_tensor(with_matrix(batch, tq, tk), q.dtype());
  dispatch_float(q.dtype(), "causal_qk_softmax_jvp", [&]<typename T>() {
    const MatLayout lq = *detail::layout_of(q), lkt = transposed(*detail::layout_of(k));
    const MatLayout ldq = dq.defined() ? *detail::layout_of(dq) : lq, ldkt = dk.defined() ? transposed(*detail::layout_of(dk)) : lkt;
    const Tensor& dq_or_q = dq.defined() ? dq : q;  // (an operand is needed either way for the offsets)
    const Tensor& dk_or_k = dk.defined() ? dk : k;
    for_each_matrix<4>(batch, {&q, &k, &dq_or_q, &dk_or_k}, 2.0 * tq * tk * e, [&] { return scratch_matrix<T>(tq, tk); },
                       [&](const std::array<int64_t, 4>& o, int64_t index, std::vector<T>& ds) {
      scores_tangent_matrix<T>(base<T>(q) + o[0], lq, base<T>(k) + o[1], lkt, dq.defined() ? base<T>(dq) + o[2] : nullptr, ldq,
                               dk.defined() ? base<T>(dk) + o[3] : nullptr, ldkt, ds.data(), tq, tk, e);
      const int64_t m = index * tq * tk;
      causal_softmax_backward_rows(ds.data(), y.data_ptr<T>() + m, dy.data_ptr<T>() + m, tq, tq, tk, static_cast<T>(divisor));
    });
  });
  return dy;
}

// One matrix at a time: out = tril(dw) @ v, then += tril(w) @ dv by the second GEMM (beta = 1).
Tensor causal_matmul_jvp(const Tensor& dw0, const Tensor& w0, const Tensor& v0, const Tensor& dv0, const Size& batch) {
  const Tensor w = detail::blas_operand(w0), v = detail::blas_operand(v0);
  const Tensor dw = dw0.defined() ? detail::blas_operand(dw0) : Tensor(), dv = dv0.defined() ? detail::blas_operand(dv0) : Tensor();
  const int64_t tq = w.size(-2), tk = w.size(-1), e = v.size(-1);
  if (tk == 0 || (!dw.defined() && !dv.defined())) return detail::zeros_tensor(with_matrix(batch, tq, e), w.dtype());
  Tensor out = gemm_output(batch, tq, e, tq, w.dtype(), v);
  if (out.numel() == 0) return out;
  dispatch_float(w.dtype(), "causal_matmul_jvp", [&]<typename T>() {
    const MatLayout lw = *detail::layout_of(w), lv = *detail::layout_of(v);
    const MatLayout ldw = dw.defined() ? *detail::layout_of(dw) : lw, ldv = dv.defined() ? *detail::layout_of(dv) : lv;
    const Tensor& dw_or_w = dw.defined() ? dw : w;
    const Tensor& dv_or_v = dv.defined() ? dv : v;
    for_each_matrix<5>(batch, {&w, &v, &out, &dw_or_w, &dv_or_v}, 2.0 * tq * tk * e, [] { return std::vector<T>(); },
                       [&](const std::array<int64_t, 5>& o, int64_t, std::vector<T>& scratch) {
      T beta = 0;
      if (dw.defined()) {
        tril_matmul_matrix<T>(base<T>(dw) + o[3], ldw, base<T>(v) + o[1], lv, out_row<T>(out, o[2], 0), ldc_of(out), tq, tk, e, scratch);
        beta = 1;
      }
      if (dv.defined()) {
        tril_matmul_matrix<T>(base<T>(w) + o[0], lw, base<T>(dv) + o[4], ldv, out_row<T>(out, o[2], 0), ldc_of(out), tq, tk, e, scratch,
                              beta);
      }
    });
  });
  return out;
}

// causal_attention_output and its tangent in one pass, one matrix at a time in per-thread
// scratch: y (the forward's GEMMs and softmax, so out has the forward's bits), the scores' tangent
// and dy = causal_softmax_backward(ds, y, divisor) (causal_qk_softmax_jvp's), then
// out = tril(y) @ v and dout = tril(dy) @ v + tril(y) @ dv while both are in cache.
std::pair<Tensor, Tensor> causal_attention_jvp(const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& dq0,
                                               const Tensor& dk0, const Tensor& dv0, const Size& batch, double divisor) {
  const Tensor q = detail::blas_operand(q0), k = detail::blas_operand(k0), v = detail::blas_operand(v0);
  const int64_t tq = q.size(-2), tk = k.size(-2), e = q.size(-1), ev = v.size(-1);
  if (!fusable(q, tq, tk, e, ev)) return {};
  detail::check_blas_dims("causal_attention", tq, tk, e);
  detail::check_blas_dims("causal_attention", tq, ev, tk);
  auto operand = [](const Tensor& d) { return d.defined() ? detail::blas_operand(d) : Tensor(); };
  const Tensor dq = operand(dq0), dk = operand(dk0), dv = operand(dv0);
  Tensor out = gemm_output(batch, tq, ev, tq, q.dtype(), v), dout = gemm_output(batch, tq, ev, tq, q.dtype(), v);
  dispatch_float(q.dtype(), "causal_attention_jvp", [&]<typename T>() {
    const MatLayout lq = *detail::layout_of(q), lkt = transposed(*detail::layout_of(k)), lv = *detail::layout_of(v),
                    ly{false, static_cast<int>(tk)};
    const MatLayout ldq = dq.defined() ? *detail::layout_of(dq) : lq, ldkt = dk.defined() ? transposed(*detail::layout_of(dk)) : lkt,
                    ldv = dv.defined() ? *detail::layout_of(dv) : lv;
    const Tensor& dq_or_q = dq.defined() ? dq : q;  // (an operand is needed either way for the offsets)
    const Tensor& dk_or_k = dk.defined() ? dk : k;
    const Tensor& dv_or_v = dv.defined() ? dv : v;
    struct Scratch {
      std::vector<T> y, ds, dy, tril;
    };
    for_each_matrix<8>(batch, {&q, &k, &v, &dq_or_q, &dk_or_k, &dv_or_v, &out, &dout}, 3.0 * tq * tk * (e + ev),
                       [&] { return Scratch{scratch_matrix<T>(tq, tk), scratch_matrix<T>(tq, tk), scratch_matrix<T>(tq, tk), {}}; },
                       [&](const std::array<int64_t, 8>& o, int64_t, Scratch& s) {
      const T *pq = base<T>(q) + o[0], *pk = base<T>(k) + o[1], *pv = base<T>(v) + o[2];
      qk_softmax_matrix<T>(pq, lq, pk, lkt, s.y.data(), tq, tk, e, static_cast<T>(divisor));
      T* po = out_row<T>(out, o[6], 0);
      tril_matmul_matrix<T>(s.y.data(), ly, pv, lv, po, ldc_of(out), tq, tk, ev, s.tril, T(0), Weights::Ours);
      T* pdo = out_row<T>(dout, o[7], 0);
      T beta = 0;
      if (dq.defined() || dk.defined()) {
        scores_tangent_matrix<T>(pq, lq, pk, lkt, dq.defined() ? base<T>(dq) + o[3] : nullptr, ldq,
                                 dk.defined() ? base<T>(dk) + o[4] : nullptr, ldkt, s.ds.data(), tq, tk, e);
        causal_softmax_backward_rows(s.ds.data(), s.y.data(), s.dy.data(), tq, tq, tk, static_cast<T>(divisor));
        tril_matmul_matrix<T>(s.dy.data(), ly, pv, lv, pdo, ldc_of(dout), tq, tk, ev, s.tril);
        beta = 1;
      }
      if (dv.defined()) tril_matmul_matrix<T>(s.y.data(), ly, base<T>(dv) + o[5], ldv, pdo, ldc_of(dout), tq, tk, ev, s.tril, beta);
    });
  });
  return {out, dout};
}

// Forward-over-reverse through causal_attention's backward, one matrix at a time in per-thread
// scratch: causal_attention_backward's gradients and their tangents, from the tangents dg, dq, dk,
// dv of g, q, k, v. With the weights y (recomputed if undefined), their tangent
// dy = causal_softmax_backward(dq k^T + q dk^T, y, divisor) (causal_qk_softmax_jvp's),
// dw = tril(g v^T) and ds = causal_softmax_backward(dw, y, divisor):
//   ddw = tril(dg v^T + g dv^T), dds = causal_softmax_backward's tangent (see the rows above),
//   d(dq) = dds k + ds dk, d(dk) = dds^T q + ds^T dq, d(dv) = tril(dy)^T g + tril(y)^T dg.
GradsWithTangents causal_attention_backward_jvp(const Tensor& g0, const Tensor& dg0, const Tensor& y, const Tensor& q0,
                                                const Tensor& dq0, const Tensor& k0, const Tensor& dk0, const Tensor& v0,
                                                const Tensor& dv0, bool gq, bool gk, bool gv, const Size& batch, double divisor) {
  const Tensor g = detail::blas_operand(g0), q = detail::blas_operand(q0), k = detail::blas_operand(k0),
               v = detail::blas_operand(v0);
  const int64_t tq = q.size(-2), tk = k.size(-2), e = q.size(-1), ev = v.size(-1);
  if (!fusable(q, tq, tk, e, ev) || g.numel() == 0) return {};
  // a tangent that is zero (undefined) is computed with as zeros: this path is for the case where
  // all carry one (forward-over-reverse), and stays exact for the others
  auto tangent = [](const Tensor& d, const Tensor& like) {
    return d.defined() ? detail::blas_operand(d) : detail::zeros_tensor(like.shape(), like.dtype());
  };
  const Tensor dg = tangent(dg0, g), dq = tangent(dq0, q), dk = tangent(dk0, k), dv = tangent(dv0, v);
  GradsWithTangents r;
  r.grads = {gq ? gemm_output(batch, tq, e, tq, q.dtype(), q) : Tensor(),
             gk ? gemm_output(batch, tk, e, std::min(tq, tk), q.dtype(), k) : Tensor(),
             gv ? gemm_output(batch, tk, ev, std::min(tq, tk), q.dtype(), v) : Tensor()};
  r.tangents = {gq ? gemm_output(batch, tq, e, tq, q.dtype(), q) : Tensor(),
                gk ? gemm_output(batch, tk, e, std::min(tq, tk), q.dtype(), k) : Tensor(),
                gv ? gemm_output(batch, tk, ev, std::min(tq, tk), q.dtype(), v) : Tensor()};
  dispatch_float(q.dtype(), "causal_attention_backward_jvp", [&]<typename T>() {
    const MatLayout lg = *detail::layout_of(g), lq = *detail::layout_of(q), lk = *detail::layout_of(k),
                    lv = *detail::layout_of(v), ldg = *detail::layout_of(dg), ldq = *detail::layout_of(dq),
                    ldk = *detail::layout_of(dk), ldv = *detail::layout_of(dv), ly{false, static_cast<int>(tk)};
    // an operand either way for the offsets of the outputs not asked for
    const Tensor& o_gq = gq ? r.grads[0] : q;
    const Tensor& o_gk = gk ? r.grads[1] : k;
    const Tensor& o_gv = gv ? r.grads[2] : v;
    const Tensor& o_tq = gq ? r.tangents[0] : q;
    const Tensor& o_tk = gk ? r.tangents[1] : k;
    const Tensor& o_tv = gv ? r.tangents[2] : v;
    struct Scratch {
      std::vector<T> y, dy, dw, ddw, ds, dds, tril;
    };
    const bool recompute = !y.defined();
    for_each_matrix<14>(
        batch, {&g, &q, &k, &v, &dg, &dq, &dk, &dv, &o_gq, &o_gk, &o_gv, &o_tq, &o_tk, &o_tv}, 6.0 * tq * tk * (e + ev),
        [&] {
          return Scratch{recompute ? scratch_matrix<T>(tq, tk) : std::vector<T>(), scratch_matrix<T>(tq, tk),
                         scratch_matrix<T>(tq, tk), scratch_matrix<T>(tq, tk), scratch_matrix<T>(tq, tk),
                         scratch_matrix<T>(tq, tk), {}};
        },
        [&](const std::array<int64_t, 14>& o, int64_t index, Scratch& s) {
          const T *pg = base<T>(g) + o[0], *pq = base<T>(q) + o[1], *pk = base<T>(k) + o[2], *pv = base<T>(v) + o[3];
          const T *pdg = base<T>(dg) + o[4], *pdq = base<T>(dq) + o[5], *pdk = base<T>(dk) + o[6], *pdv = base<T>(dv) + o[7];
          const T div = static_cast<T>(divisor);
          if (recompute) qk_softmax_matrix<T>(pq, lq, pk, transposed(lk), s.y.data(), tq, tk, e, div);
          const T* py = recompute ? s.y.data() : y.data_ptr<T>() + index * tq * tk;
          // dy: the scores' tangent (into dds, free until later), then the softmax's jvp
          scores_tangent_matrix<T>(pq, lq, pk, transposed(lk), pdq, ldq, pdk, transposed(ldk), s.dds.data(), tq, tk, e);
          causal_softmax_backward_rows(s.dds.data(), py, s.dy.data(), tq, tq, tk, div);
          if (gq || gk) {
            tril_matmul_dw_matrix<T>(pg, lg, pv, lv, s.dw.data(), tq, tk, ev);
            tril_matmul_dw_matrix<T>(pdg, ldg, pv, lv, s.ddw.data(), tq, tk, ev);
            tril_matmul_dw_matrix<T>(pg, lg, pdv, ldv, s.ddw.data(), tq, tk, ev, T(1));
            causal_softmax_backward_rows(s.dw.data(), py, s.ds.data(), tq, tq, tk, div, true);
            causal_softmax_backward_jvp_rows<T>(s.dw.data(), s.ddw.data(), py, s.dy.data(), s.dds.data(), tq, tk, div);
            T* out_gq = gq ? out_row<T>(r.grads[0], o[8], 0) : nullptr;
            T* out_gk = gk ? out_row<T>(r.grads[1], o[9], 0) : nullptr;
            T* out_tq = gq ? out_row<T>(r.tangents[0], o[11], 0) : nullptr;
            T* out_tk = gk ? out_row<T>(r.tangents[1], o[12], 0) : nullptr;
            const int ld_gq = gq ? ldc_of(r.grads[0]) : 0, ld_gk = gk ? ldc_of(r.grads[1]) : 0;
            const int ld_tq = gq ? ldc_of(r.tangents[0]) : 0, ld_tk = gk ? ldc_of(r.tangents[1]) : 0;
            qk_grads_matrix<T>(s.ds.data(), pq, lq, pk, lk, out_gq, ld_gq, out_gk, ld_gk, tq, tk, e);
            qk_grads_matrix<T>(s.dds.data(), pq, lq, pk, lk, out_tq, ld_tq, out_tk, ld_tk, tq, tk, e);
            qk_grads_matrix<T>(s.ds.data(), pdq, ldq, pdk, ldk, out_tq, ld_tq, out_tk, ld_tk, tq, tk, e, T(1));
          }
          if (gv) {
            tril_matmul_dv_matrix<T>(pg, lg, py, ly, out_row<T>(r.grads[2], o[10], 0), ldc_of(r.grads[2]), tq, tk, ev, s.tril);
            T* out_tv = out_row<T>(r.tangents[2], o[13], 0);
            const int ld_tv = ldc_of(r.tangents[2]);
            tril_matmul_dv_matrix<T>(pg, lg, s.dy.data(), ly, out_tv, ld_tv, tq, tk, ev, s.tril);
            tril_matmul_dv_matrix<T>(pdg, ldg, py, ly, out_tv, ld_tv, tq, tk, ev, s.tril, T(1));
          }
        });
  });
  return r;
}

}  // namespace ag::kernels
