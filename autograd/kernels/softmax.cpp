// Kernels of the softmax family; their rules and formulas are in softmax.cpp.
#include "autograd/kernels/softmax.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "autograd/kernels/common.h"

namespace ag::kernels {

namespace {

// exp for the softmax family: Cephes' single-precision polynomial (about 1 ulp), branch-free so
// the row loops vectorize, its Horner steps and the second step of the range reduction as fused
// multiply-adds (one rounding each: std::fma for a float, the FMA instructions for vectors; 19
// vector instructions instead of 26, the softmax rows about a fifth faster). exp of -inf (a
// masked score) and of anything below the float range is exactly 0. One body for a float and for
// a vector of floats (F8 and F16 below, lane by lane: the same operations in the same order, so
// the same bits). Doubles use the C library.
inline float fma_lanes(float a, float b, float c) { return std::fma(a, b, c); }
#ifdef __AVX2__
typedef float F8 __attribute__((vector_size(32)));  // 8 floats as one vector (below)
typedef int32_t I8 __attribute__((vector_size(32)));
inline F8 splat(float c, F8) { return F8{c, c, c, c, c, c, c, c}; }
inline F8 fma_lanes(F8 a, F8 b, F8 c) {
#ifdef __FMA__
  return (F8)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
  F8 out;
  for (int k = 0; k < 8; ++k) out[k] = std::fma(a[k], b[k], c[k]);
  return out;
#endif
}
#endif
typedef float F16 __attribute__((vector_size(64)));  // 16 floats, for the AVX-512F rows (below)
typedef int32_t I16 __attribute__((vector_size(64)));
// (x in place: a 64-byte vector passed by value would change the ABI of a function not compiled for AVX-512)
template <class F, class I>
__attribute__((always_inline)) inline void fast_exp_lanes(F& x) {
  const F zero{};  // (zero + c: the constant c in every lane, for a float too)
  const F lo = (zero + -87.3365448f), hi = (zero + 88.7228394f), magic = (zero + 12582912.0f);
  F xc = x > lo ? x : lo;  // also maps NaN to the bound (NaN rows are handled before exp is called)
  xc = xc < hi ? xc : hi;
  // n = round(x / ln 2) with the 1.5 * 2^23 trick: exact for |n| < 2^22, no branch
  const F t = xc * (zero + 1.44269504088896341f) + magic;
  const F nf = t - magic;
  I tb, mb;
  std::memcpy(&tb, &t, sizeof tb);
  std::memcpy(&mb, &magic, sizeof mb);
  const I n = tb - mb;
  F r = xc - nf * (zero + 0.693359375f);  // (exact product: n below 2^8, the constant of 9 bits)
  r = fma_lanes(-nf, zero + -2.12194440e-4f, r);
  const F z = r * r;
  F p = (zero + 1.9875691500e-4f);
  p = fma_lanes(p, r, zero + 1.3981999507e-3f);
  p = fma_lanes(p, r, zero + 8.3334519073e-3f);
  p = fma_lanes(p, r, zero + 4.1665795894e-2f);
  p = fma_lanes(p, r, zero + 1.6666665459e-1f);
  p = fma_lanes(p, r, zero + 5.0000001201e-1f);
  const F y = fma_lanes(p, z, r) + (zero + 1.0f);
  const I sb = (n + 127) << 23;  // 2^n
  F scale;
  std::memcpy(&scale, &sb, sizeof scale);
  const F keep = x >= lo ? (zero + 1.0f) : (zero + 0.0f);  // exp(-inf) and underflow give exactly 0
  x = y * scale * keep;
}
inline float fast_exp(float x) {
  fast_exp_lanes<float, int32_t>(x);
  return x;
}
inline double fast_exp(double x) { return std::exp(x); }

#ifdef __AVX2__
// 8 floats as one vector (GCC's vector extension, which clang reads too), for the row loops the
// compiler does not vectorize well on its own: short rows, where its loops' set-up and scalar
// tails cost more than the arithmetic.
inline F8 f8_load(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void f8_store(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }
inline F8 f8_set(float x) { return splat(x, F8()); }
// Lanes below k set (-1), for the masked loads and stores of a row's last few values: a masked
// load reads nothing past the row, and goes through no scalar copy (a vector load of values just
// stored one by one waits for them).
inline I8 lanes_below(int64_t k) {
  const I8 idx = {0, 1, 2, 3, 4, 5, 6, 7};
  return idx < static_cast<int32_t>(k);
}
inline F8 f8_load_lanes(const float* p, I8 lanes) { return (F8)_mm256_maskload_ps(p, (__m256i)lanes); }
inline void f8_store_lanes(float* p, I8 lanes, F8 v) { _mm256_maskstore_ps(p, (__m256i)lanes, (__m256)v); }
inline F8 fast_exp8(F8 x) {
  fast_exp_lanes<F8, I8>(x);
  return x;
}
#endif

// Sum of a row with 8 running partial sums (vectorizes; the order PyTorch's vectorized sums use
// is similar: lanes first, then across lanes).
template <class T>
T row_sum(const T* v, int64_t n) {
  T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) acc[k] += v[j + k];
  T s = 0;
  for (int k = 0; k < 8; ++k) s += acc[k];
  for (; j < n; ++j) s += v[j];
  return s;
}

// row_sum of a row of length n whose entries from m on are 0, reading only the first m: the same
// lanes, each adding the same values in the same order (a lane adding 0 keeps its value), so the
// same bits.
template <class T>
T row_sum_kept(const T* v, int64_t m, int64_t n) {
  const int64_t nb = n / 8 * 8, lanes = std::min(m, nb);
  T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= lanes; j += 8)
    for (int k = 0; k < 8; ++k) acc[k] += v[j + k];
  for (; j < lanes; ++j) acc[j - j / 8 * 8] += v[j];
  T s = 0;
  for (int k = 0; k < 8; ++k) s += acc[k];
  for (j = nb; j < m; ++j) s += v[j];
  return s;
}

// Row helpers written so the compiler vectorizes them: separate loops, no aliasing, partial
// maxima instead of one running max.
template <class T>
T row_max(const T* __restrict v, int64_t n) {
  // the 8 partial maxima as one vector (GCC's vector extension): as an array of 8 the compiler
  // left them scalar
  typedef T V __attribute__((vector_size(8 * sizeof(T))));
  V m;
  for (int k = 0; k < 8; ++k) m[k] = -std::numeric_limits<T>::infinity();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    V x;
    std::memcpy(&x, v + j, sizeof x);
    m = x > m ? x : m;
  }
  T mx = -std::numeric_limits<T>::infinity();
  for (int k = 0; k < 8; ++k) mx = m[k] > mx ? m[k] : mx;
  for (; j < n; ++j) mx = v[j] > mx ? v[j] : mx;
  return mx;
}

template <class T>
bool row_has_nan(const T* __restrict v, int64_t n) {
  int bad = 0;
  for (int64_t j = 0; j < n; ++j) bad += v[j] != v[j];
  return bad != 0;
}

template <class T>
void exp_shifted(const T* __restrict x, T* __restrict e, int64_t n, T shift) {
  for (int64_t j = 0; j < n; ++j) e[j] = fast_exp(x[j] - shift);
}

// What softmax and log_softmax (and cross_entropy) compute alike for one row: false for a row with
// a NaN; else the shift, e = exp(x - shift) and its sum.
template <class T>
bool shifted_exp_sum(const T* xr, T* e, int64_t n, T& shift, T& sum) {
  if (row_has_nan(xr, n)) return false;
  const T mx = row_max(xr, n);
  // A row of all -inf has no finite max; subtracting -inf would give NaN from inf - inf, so
  // shift by 0 instead and let the -infs produce their natural result (NaN, as in PyTorch).
  shift = std::isinf(mx) ? T(0) : mx;
  exp_shifted(xr, e, n, shift);
  sum = row_sum(e, n);
  return true;
}

// rows (outer, n) contiguous -> out (outer, n): softmax or log_softmax of each row.
template <class T>
void softmax_rows(const T* x, T* y, int64_t outer, int64_t n, bool log) {
  std::vector<T> tmp(log ? static_cast<std::size_t>(n) : 0);
  for (int64_t r = 0; r < outer; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    T shift, s;
    if (!shifted_exp_sum(xr, log ? tmp.data() : yr, n, shift, s)) {  // NaN in, NaN out
      std::fill(yr, yr + n, std::numeric_limits<T>::quiet_NaN());
      continue;
    }
    if (log) {
      const T ls = std::log(s);
      for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] - shift - ls;
    } else {
      const T inv = T(1) / s;  // PyTorch multiplies by the reciprocal of the sum
      for (int64_t j = 0; j < n; ++j) yr[j] *= inv;
    }
  }
}

// softmax's backward over one row of length n: dr = y * (g - sum(g * y)) (dr may not alias g, y).
template <class T>
void softmax_backward_row(const T* gr, const T* yr, T* dr, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dr[j] = gr[j] * yr[j];
  const T s = row_sum(dr, n);
  for (int64_t j = 0; j < n; ++j) dr[j] = (gr[j] - s) * yr[j];
}

// scores (..., Tq, Tk) -> y (..., Tq, Tk): softmax over the last dim of scores / divisor, with
// the entries above the diagonal (j > i) masked. Only the j <= i part is divided and
// exponentiated; the sum and the scaling give what softmax_rows gives on the masked scores (their
// exp is exactly 0), so the result is bit-identical to the composed ops. The masked part of a row
// is never read: its zeros add nothing to row_sum's lane sums, so the sum runs over the kept
// entries in row_sum's lanes (row_sum_kept), and the masked entries are set to 0 * (1 / sum), as
// the composed scaling makes them.
// With `stats`, each row's shift and 1 / sum go to stats[2r] and stats[2r + 1] (NaN, NaN for a
// row with a NaN), from which causal_rows_again gives the row again with one pass.
template <class T>
void causal_rows(const T* x, T* y, int64_t rows, int64_t tq, int64_t n, T divisor, T* stats) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    const int64_t m = std::min(r % tq + 1, n);  // entries j < m are kept
    for (int64_t j = 0; j < m; ++j) yr[j] = xr[j] / divisor;
    if (row_has_nan(yr, m)) {  // NaN in, NaN out (the whole row, as softmax does)
      std::fill(yr, yr + n, std::numeric_limits<T>::quiet_NaN());
      if (stats) stats[2 * r] = stats[2 * r + 1] = std::numeric_limits<T>::quiet_NaN();
      continue;
    }
    const T mx = row_max(yr, m);
    const T shift = std::isinf(mx) ? T(0) : mx;
    for (int64_t j = 0; j < m; ++j) yr[j] = fast_exp(yr[j] - shift);
    const T inv = T(1) / row_sum_kept(yr, m, n);
    for (int64_t j = 0; j < m; ++j) yr[j] *= inv;
    std::fill(yr + m, yr + n, T(0) * inv);
    if (stats) {
      stats[2 * r] = shift;
      stats[2 * r + 1] = inv;
    }
  }
}

// causal_rows' rows again from its stats, in one pass: the same operations on each value
// (x / divisor, exp of that minus the shift, times 1 / sum), so the same bits.
template <class T>
void causal_rows_again(const T* x, T* y, int64_t rows, int64_t tq, int64_t n, T divisor, const T* stats) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    const int64_t m = std::min(r % tq + 1, n);
    const T shift = stats[2 * r], inv = stats[2 * r + 1];
    if (std::isnan(shift)) {
      std::fill(yr, yr + n, std::numeric_limits<T>::quiet_NaN());
      continue;
    }
    for (int64_t j = 0; j < m; ++j) yr[j] = fast_exp(xr[j] / divisor - shift) * inv;
    std::fill(yr + m, yr + n, T(0) * inv);
  }
}

#ifdef __AVX2__
// The same for float, 8 values a vector with the row's last few in masked loads and stores, in three
// passes (the division with the NaN test and the max; exp with row_sum's 8 lane sums, lane k
// adding the values j = k mod 8 in order as row_sum does; the scaling), so the same bits.
template <>
void causal_rows<float>(const float* x, float* y, int64_t rows, int64_t tq, int64_t n, float divisor, float* stats) {
  const int64_t nb = n / 8 * 8;  // row_sum's lanes cover [0, nb), the rest is added after, in order
  const F8 d = f8_set(divisor), inf = f8_set(std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const int64_t m = std::min(r % tq + 1, n), full = m / 8 * 8, rest = m - full;
    F8 mx8 = -inf;
    I8 bad{};
    for (int64_t j = 0; j < full; j += 8) {
      const F8 v = f8_load(xr + j) / d;
      f8_store(yr + j, v);
      bad |= v != v;
      mx8 = v > mx8 ? v : mx8;
    }
    const I8 last = lanes_below(rest);
    if (rest) {  // lanes past the row's end are -inf: no NaN, no effect on the max
      const F8 v = f8_load_lanes(xr + full, last) / d;
      f8_store_lanes(yr + full, last, v);
      const F8 w = last != 0 ? v : -inf;
      bad |= w != w;
      mx8 = w > mx8 ? w : mx8;
    }
    bool any_bad = false;
    float mx = -std::numeric_limits<float>::infinity();
    for (int k = 0; k < 8; ++k) {
      any_bad = any_bad || bad[k] != 0;
      mx = mx8[k] > mx ? mx8[k] : mx;
    }
    if (any_bad) {  // NaN in, NaN out (the whole row, as softmax does)
      std::fill(yr, yr + n, std::numeric_limits<float>::quiet_NaN());
      if (stats) stats[2 * r] = stats[2 * r + 1] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    const float shift1 = std::isinf(mx) ? 0.0f : mx;
    const F8 shift = f8_set(shift1);
    F8 acc{};
    for (int64_t j = 0; j < full; j += 8) {
      const F8 e = fast_exp8(f8_load(yr + j) - shift);
      f8_store(yr + j, e);
      acc += e;
    }
    if (rest) {
      const F8 e = fast_exp8(f8_load_lanes(yr + full, last) - shift);
      f8_store_lanes(yr + full, last, e);
      if (full < nb) acc += last != 0 ? e : f8_set(0.0f);  // a lane past the row adds nothing
    }
    float sum = 0;
    for (int k = 0; k < 8; ++k) sum += acc[k];
    if (rest && full >= nb)  // the row's last few, past row_sum's lanes: added after, in order
      for (int64_t j = full; j < m; ++j) sum += yr[j];
    const float inv = 1.0f / sum;
    const F8 inv8 = f8_set(inv);
    for (int64_t j = 0; j < full; j += 8) f8_store(yr + j, f8_load(yr + j) * inv8);
    if (rest) f8_store_lanes(yr + full, last, f8_load_lanes(yr + full, last) * inv8);
    std::fill(yr + m, yr + n, 0.0f * inv);
    if (stats) {
      stats[2 * r] = shift1;
      stats[2 * r + 1] = inv;
    }
  }
}
#endif  // __AVX2__ (built without it, floats take the loops above)

// The same for float in 16-float vectors (AVX-512F, chosen at run time where the CPU has it), with
// the row's last few in masked loads and stores: the same operations in the same order on each
// value, and the sum in row_sum's 8 lanes (each 16-float vector added as its low then its high
// half), so the same bits as the loops above. The helpers below serve cross_entropy's rows too.
#define AG_ROWS512 __attribute__((target("avx512f"), always_inline)) inline
// the lanes below `left` (of 16) as a mask, for a row's last few values
AG_ROWS512 __mmask16 lanes16(int64_t left) { return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1); }
// the halves of 16 floats (through memory as far as the language goes; the compiler extracts)
// (GCC 12's _mm512_castps512_ps256 and _mm512_extractf64x4_pd warn of an uninitialized value of
// their own)
AG_ROWS512 __m256 half8(__m512 v, int which) {
  __m256 h[2];
  std::memcpy(h, &v, sizeof h);
  return h[which];
}
AG_ROWS512 __m256 low8(__m512 v) { return half8(v, 0); }
AG_ROWS512 __m256 high8(__m512 v) { return half8(v, 1); }
// the largest of 16 lanes by a tree of maxima (a maximum is exact, so any order gives row_max's;
// no lane is NaN here)
AG_ROWS512 float max16(__m512 v) {
  const __m256 m8 = _mm256_max_ps(low8(v), high8(v));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  return _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
}
// 16 values starting at j (0 past the row) added into row_sum's 8 lanes, which cover [0, nb):
// the low half, then the high half
AG_ROWS512 __m256 add_to_lanes(__m256 acc, __m512 kept, int64_t j, int64_t nb) {
  if (j < nb) acc = _mm256_add_ps(acc, low8(kept));
  if (j + 8 < nb) acc = _mm256_add_ps(acc, high8(kept));
  return acc;
}
// row_sum's lanes added in order
AG_ROWS512 float sum_lanes(__m256 acc) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float sum = 0;
  for (int k = 0; k < 8; ++k) sum += lanes[k];
  return sum;
}
// fast_exp_lanes on 16 floats, the same bits for every input (checked once for all 2^32 of them;
// ExpRows.SameBitsAsTheScalarExp checks a sample) in 19 instructions:
// - the two clamps are a max and a min (x > lo ? x : lo is MAXPS's definition, NaN giving lo);
// - xc - n * 0.693359375 is one fused multiply-add: n is an integer below 2^8 in magnitude and
//   the constant has 9 significant bits, so the product is exact and the single rounding is the
//   subtraction's, as in the two operations of the lane-wise body;
// - the final * keep (1 or 0) is a zeroing mask on the product y * 2^n (positive and finite where
//   it is dropped, so times 0 it was +0 as the mask makes it).
// (GCC 12's max, min and shift intrinsics warn of an uninitialized value of their own)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
AG_ROWS512 __m512 exp16(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.3365448f), magic = _mm512_set1_ps(12582912.0f);
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), _mm512_set1_ps(88.7228394f));
  const __m512 t = _mm512_add_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)), magic);
  const __m512 nf = _mm512_sub_ps(t, magic);
  // 2^n: (bits(t) - bits(magic) + 127) << 23
  const __m512i scale = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(0x4B400000 - 127)), 23);
  __m512 r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(-2.12194440e-4f), r);
  const __m512 z = _mm512_mul_ps(r, r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  for (const float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, z, r), _mm512_set1_ps(1.0f));
  return _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ), y, _mm512_castsi512_ps(scale));
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
__attribute__((target("avx512f"))) void exp_avx512(const float* x, float* y, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = lanes16(n - j);
    _mm512_mask_storeu_ps(y + j, k, exp16(_mm512_maskz_loadu_ps(k, x + j)));
  }
}

// One row of causal_rows_avx512 through its three passes, as stages, so that rows can run side by
// side: a short row is a chain of dependent steps (division, maximum, exp, the sum, its
// reciprocal), and independent chains side by side keep the core busy where one leaves it waiting.
struct CausalRow {
  const float* x;
  float* y;
  int64_t m;  // entries j < m are kept
  __m512 mx16;
  __mmask16 bad;
  float shift, inv;
};
// x / divisor into y with the NaN test and the maximum
AG_ROWS512 void causal_row_divide(CausalRow& w, __m512 d) {
  w.mx16 = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  w.bad = 0;
  for (int64_t j = 0; j < w.m; j += 16) {  // lanes past the row's end: not read, not written, -inf for the max
    const __mmask16 k = lanes16(w.m - j);
    const __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(k, w.x + j), d);
    _mm512_mask_storeu_ps(w.y + j, k, v);
    w.bad |= _mm512_mask_cmp_ps_mask(k, v, v, _CMP_UNORD_Q);
    w.mx16 = _mm512_mask_max_ps(w.mx16, k, v, w.mx16);
  }
}
// exp(y - shift) in place, the sum in row_sum's lanes, and its reciprocal
AG_ROWS512 void causal_row_exp(CausalRow& w, int64_t nb) {
  const float mx = max16(w.mx16);
  w.shift = std::isinf(mx) ? 0.0f : mx;
  const __m512 shift = _mm512_set1_ps(w.shift);
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= w.m; j += 32) {  // two vectors at a time: two independent exp chains for the scheduler
    const __m512 e0 = exp16(_mm512_sub_ps(_mm512_loadu_ps(w.y + j), shift));
    const __m512 e1 = exp16(_mm512_sub_ps(_mm512_loadu_ps(w.y + j + 16), shift));
    _mm512_storeu_ps(w.y + j, e0);
    _mm512_storeu_ps(w.y + j + 16, e1);
    acc = add_to_lanes(add_to_lanes(acc, e0, j, nb), e1, j + 16, nb);
  }
  for (; j < w.m; j += 16) {
    const __mmask16 k = lanes16(w.m - j);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, w.y + j), shift));
    _mm512_mask_storeu_ps(w.y + j, k, e);
    acc = add_to_lanes(acc, _mm512_maskz_mov_ps(k, e), j, nb);  // a lane past the row adds nothing
  }
  float sum = sum_lanes(acc);
  for (int64_t j = nb; j < w.m; ++j) sum += w.y[j];  // the row's last few, past row_sum's lanes
  w.inv = 1.0f / sum;
}
// y * (1 / sum), and the masked entries 0 * (1 / sum); a row with a NaN all NaN
AG_ROWS512 void causal_row_scale(CausalRow& w, int64_t n) {
  if (w.bad) {  // NaN in, NaN out (the whole row, as softmax does)
    std::fill(w.y, w.y + n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  const __m512 inv16 = _mm512_set1_ps(w.inv);
  for (int64_t j = 0; j < w.m; j += 16) {
    const __mmask16 k = lanes16(w.m - j);
    _mm512_mask_storeu_ps(w.y + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, w.y + j), inv16));
  }
  std::fill(w.y + w.m, w.y + n, 0.0f * w.inv);
}

__attribute__((target("avx512f"))) void causal_rows_avx512(const float* x, float* y, int64_t rows, int64_t tq, int64_t n,
                                                           float divisor, float* stats) {
  const int64_t nb = n / 8 * 8;  // row_sum's lanes cover [0, nb), the rest is added after, in order
  const __m512 d = _mm512_set1_ps(divisor);
  int64_t i = 0;  // the query of row r: r % tq
  auto next = [&](int64_t r) {
    CausalRow w{x + r * n, y + r * n, std::min(i + 1, n), {}, 0, 0.0f, 0.0f};
    i = i + 1 == tq ? 0 : i + 1;
    return w;
  };
  auto keep = [&](int64_t r, const CausalRow& w) {  // the row's stats
    if (!stats) return;
    stats[2 * r] = w.bad ? std::numeric_limits<float>::quiet_NaN() : w.shift;
    stats[2 * r + 1] = w.bad ? std::numeric_limits<float>::quiet_NaN() : w.inv;
  };
  int64_t r = 0;
  for (; r + 2 <= rows; r += 2) {  // two rows side by side, stage by stage (four measured slower)
    CausalRow a = next(r), b = next(r + 1);
    causal_row_divide(a, d);
    causal_row_divide(b, d);
    if (!a.bad) causal_row_exp(a, nb);
    if (!b.bad) causal_row_exp(b, nb);
    causal_row_scale(a, n);
    causal_row_scale(b, n);
    keep(r, a);
    keep(r + 1, b);
  }
  if (r < rows) {
    CausalRow a = next(r);
    causal_row_divide(a, d);
    if (!a.bad) causal_row_exp(a, nb);
    causal_row_scale(a, n);
    keep(r, a);
  }
}

// causal_rows_again in 16-float vectors, two rows side by side
AG_ROWS512 void causal_row_again(const float* xr, float* yr, int64_t m, int64_t n, __m512 d, float shift, float inv) {
  if (std::isnan(shift)) {
    std::fill(yr, yr + n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  const __m512 sh = _mm512_set1_ps(shift), inv16 = _mm512_set1_ps(inv);
  int64_t j = 0;
  for (; j + 32 <= m; j += 32) {  // two vectors at a time: two independent exp chains for the scheduler
    const __m512 e0 = exp16(_mm512_sub_ps(_mm512_div_ps(_mm512_loadu_ps(xr + j), d), sh));
    const __m512 e1 = exp16(_mm512_sub_ps(_mm512_div_ps(_mm512_loadu_ps(xr + j + 16), d), sh));
    _mm512_storeu_ps(yr + j, _mm512_mul_ps(e0, inv16));
    _mm512_storeu_ps(yr + j + 16, _mm512_mul_ps(e1, inv16));
  }
  for (; j < m; j += 16) {
    const __mmask16 k = lanes16(m - j);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_div_ps(_mm512_maskz_loadu_ps(k, xr + j), d), sh));
    _mm512_mask_storeu_ps(yr + j, k, _mm512_mul_ps(e, inv16));
  }
  std::fill(yr + m, yr + n, 0.0f * inv);
}
__attribute__((target("avx512f"))) void causal_rows_again_avx512(const float* x, float* y, int64_t rows, int64_t tq, int64_t n,
                                                                 float divisor, const float* stats) {
  const __m512 d = _mm512_set1_ps(divisor);
  for (int64_t r = 0, i = 0; r < rows; ++r, i = i + 1 == tq ? 0 : i + 1)
    causal_row_again(x + r * n, y + r * n, std::min(i + 1, n), n, d, stats[2 * r], stats[2 * r + 1]);
}

// cross_entropy's row passes (log_softmax_stats_rows and cross_entropy_backward_rows below) in
// 16-float vectors: the same operations on each value, the sum in row_sum's lanes.
__attribute__((target("avx512f"))) void log_softmax_stats_avx512(const float* x, int64_t rows, int64_t n, float* shift, float* ls) {
  const int64_t nb = n / 8 * 8;
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    __m512 mx16 = ninf;
    __mmask16 bad = 0;
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 k = lanes16(n - j);
      const __m512 v = _mm512_maskz_loadu_ps(k, xr + j);
      bad |= _mm512_mask_cmp_ps_mask(k, v, v, _CMP_UNORD_Q);
      mx16 = _mm512_mask_max_ps(mx16, k, v, mx16);
    }
    if (bad) {  // log_softmax's NaN row: every log-prob NaN
      shift[r] = 0;
      ls[r] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    const float mx = max16(mx16), sh = std::isinf(mx) ? 0.0f : mx;
    const __m512 sh16 = _mm512_set1_ps(sh);
    __m256 acc = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {  // two vectors' exps at a time (two independent chains), added in order
      const __m512 e0 = exp16(_mm512_sub_ps(_mm512_loadu_ps(xr + j), sh16));
      const __m512 e1 = exp16(_mm512_sub_ps(_mm512_loadu_ps(xr + j + 16), sh16));
      acc = add_to_lanes(add_to_lanes(acc, e0, j, nb), e1, j + 16, nb);
    }
    for (; j < n; j += 16) {
      const __mmask16 k = lanes16(n - j);
      acc = add_to_lanes(acc, _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, xr + j), sh16))), j, nb);
    }
    float sum = sum_lanes(acc);
    for (j = nb; j < n; ++j) sum += fast_exp(xr[j] - sh);  // past row_sum's lanes, in order
    shift[r] = sh;
    ls[r] = std::log(sum);
  }
}

__attribute__((target("avx512f"))) void cross_entropy_backward_avx512(const float* x, const float* shift, const float* ls,
                                                                      const int64_t* target, const float* v, int64_t rows,
                                                                      int64_t n, float* dx) {
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* dr = dx + r * n;
    const float sr = shift[r], lr = ls[r], sum = v[r] + 0.0f;
    const __m512 sr16 = _mm512_set1_ps(sr), lr16 = _mm512_set1_ps(lr), sum16 = _mm512_set1_ps(sum);
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {  // two vectors at a time: two independent chains for the scheduler
      const __m512 e0 = exp16(_mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + j), sr16), lr16));
      const __m512 e1 = exp16(_mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + j + 16), sr16), lr16));
      _mm512_storeu_ps(dr + j, _mm512_sub_ps(zero, _mm512_mul_ps(e0, sum16)));
      _mm512_storeu_ps(dr + j + 16, _mm512_sub_ps(zero, _mm512_mul_ps(e1, sum16)));
    }
    for (; j < n; j += 16) {
      const __mmask16 k = lanes16(n - j);
      const __m512 e = exp16(_mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, xr + j), sr16), lr16));
      _mm512_mask_storeu_ps(dr + j, k, _mm512_sub_ps(zero, _mm512_mul_ps(e, sum16)));
    }
    if (target[r] >= 0) dr[target[r]] = v[r] - fast_exp(xr[target[r]] - sr - lr) * sum;
  }
}
// Where the backward's sum of g * y over a row of n (m kept) stops: row_sum's lanes cover
// [0, lanes_end) and the values from nb (n rounded down to the lanes) to tail_end are added after,
// in order. The whole row, unless g is +0 above the diagonal: then the products there are +0 (y is
// +0 there, or the row is NaN in its kept part too) and adding them changes no bit (a lane or a
// sum that starts at +0 is never -0), so the lanes stop at the first multiple of 8 at or past m,
// and the tail at m.
inline std::pair<int64_t, int64_t> backward_sum_ends(int64_t m, int64_t n, int64_t nb, bool g_zero_above) {
  if (!g_zero_above) return {nb, n};
  return {std::min(nb, (m + 7) / 8 * 8), std::max(nb, m)};
}

// causal_backward_rows (below) in 16-float vectors: g * y summed over the row (its kept part where
// g is +0 above the diagonal) in row_sum's lanes, then (g - s) * y / divisor where kept, the same
// operations on each value
__attribute__((target("avx512f"))) void causal_backward_rows_avx512(const float* g, const float* y, float* dx, int64_t rows,
                                                                    int64_t tq, int64_t n, float divisor, bool g_zero_above) {
  const int64_t nb = n / 8 * 8;
  const __m512 d = _mm512_set1_ps(divisor);
  for (int64_t r = 0, i = 0; r < rows; ++r, i = i + 1 == tq ? 0 : i + 1) {
    const float* gr = g + r * n;
    const float* yr = y + r * n;
    float* dr = dx + r * n;
    const int64_t m = std::min(i + 1, n);
    const auto [lanes_end, tail_end] = backward_sum_ends(m, n, nb, g_zero_above);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t j = 0; j < lanes_end; j += 16) {  // lanes past the end load 0: 0 * 0 adds nothing
      const __mmask16 k = lanes16(lanes_end - j);
      acc = add_to_lanes(acc, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, gr + j), _mm512_maskz_loadu_ps(k, yr + j)), j, nb);
    }
    float sum = sum_lanes(acc);
    for (int64_t j = nb; j < tail_end; ++j) sum += gr[j] * yr[j];
    const __m512 s = _mm512_set1_ps(sum);
    for (int64_t j = 0; j < m; j += 16) {
      const __mmask16 k = lanes16(m - j);
      const __m512 v = _mm512_div_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, gr + j), s), _mm512_maskz_loadu_ps(k, yr + j)), d);
      _mm512_mask_storeu_ps(dr + j, k, v);  // the division's backward
    }
    std::fill(dr + m, dr + n, 0.0f);  // masked_fill's backward
  }
}
#undef AG_ROWS512

// The backward of causal_rows, bit-identical to softmax_backward_lastdim followed by the
// division's and masked_fill's backward: dx = (y * (g - sum(g * y))) / divisor for j <= i, 0 above.
// Two passes: g * y with row_sum's lane sums (over the whole row: a masked y is 0, but an infinite
// g there makes the sum NaN, as in the composed ops), then the rest where kept. Where g is +0
// above the diagonal (g_zero_above: the fused attention's dw = tril(g v^T)), the sum skips that
// part (see backward_sum_ends).
template <class T>
void causal_backward_rows(const T* g, const T* y, T* dx, int64_t rows, int64_t tq, int64_t n, T divisor, bool g_zero_above) {
  const int64_t nb = n / 8 * 8;
  for (int64_t r = 0; r < rows; ++r) {
    const T* gr = g + r * n;
    const T* yr = y + r * n;
    T* dr = dx + r * n;
    const int64_t m = std::min(r % tq + 1, n);
    const auto [lanes_end, tail_end] = backward_sum_ends(m, n, nb, g_zero_above);
    T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j < lanes_end; j += 8)
      for (int k = 0; k < 8; ++k) acc[k] += gr[j + k] * yr[j + k];
    T s = 0;
    for (int k = 0; k < 8; ++k) s += acc[k];
    for (j = nb; j < tail_end; ++j) s += gr[j] * yr[j];
    for (j = 0; j < m; ++j) dr[j] = (gr[j] - s) * yr[j] / divisor;  // the division's backward
    std::fill(dr + m, dr + n, T(0));                                  // masked_fill's backward
  }
}

// cross_entropy's two passes over logits x (rows, n), the same arithmetic as log_softmax's
// softmax_rows and its backward, so the results are the same bits as nll_loss(log_softmax(x)).
template <class T>
void log_softmax_stats_rows(const T* x, int64_t rows, int64_t n, T* shift, T* ls) {
  std::vector<T> e(static_cast<std::size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    T sum;
    if (shifted_exp_sum(x + r * n, e.data(), n, shift[r], sum)) {
      ls[r] = std::log(sum);
    } else {  // log_softmax's NaN row: every log-prob NaN
      shift[r] = 0;
      ls[r] = std::numeric_limits<T>::quiet_NaN();
    }
  }
}

template <class T>
void cross_entropy_backward_rows(const T* x, const T* shift, const T* ls, const int64_t* target, const T* v, int64_t rows,
                                 int64_t n, T* dx) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T* dr = dx + r * n;
    // log_softmax's backward dx = g - exp(y) * sum(g), for g = v[r] at the target (none for an
    // ignored row, target -1) and 0 elsewhere: sum(g) is 0 + v[r]
    const T sr = shift[r], lr = ls[r], sum = v[r] + T(0);
    for (int64_t j = 0; j < n; ++j) dr[j] = T(0) - fast_exp(xr[j] - sr - lr) * sum;
    if (target[r] >= 0) dr[target[r]] = v[r] - fast_exp(xr[target[r]] - sr - lr) * sum;
  }
}

// cross_entropy's jvp per row: term[r] = dx[r, target[r]] - sum_j softmax(x)[r, j] dx[r, j] (the
// tangent of log_softmax at the target), 0 for an ignored row (target -1).
template <class T>
void cross_entropy_jvp_rows(const T* x, const T* shift, const T* ls, const int64_t* target, const T* dx, int64_t rows,
                            int64_t n, T* term) {
  for (int64_t r = 0; r < rows; ++r) {
    if (target[r] < 0) {
      term[r] = T(0);
      continue;
    }
    const T* xr = x + r * n;
    const T* dr = dx + r * n;
    const T sr = shift[r], lr = ls[r];
    T dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += fast_exp(xr[j] - sr - lr) * dr[j];
    term[r] = dr[target[r]] - dot;
  }
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  // rows of x along dim, contiguous, in x's floating dtype (integers in float32)
  const bool last = x.dim() == 0 || dim == x.dim() - 1;
  const Tensor along = last ? x : detail::transpose_view(x, dim, -1);
  const Tensor rows = is_floating(x.dtype()) ? detail::contiguous_values(along) : detail::contiguous_copy(along, kFloat32);
  const int64_t n = x.dim() == 0 ? 1 : rows.size(-1);
  Tensor y = detail::make_tensor(rows.shape(), rows.dtype());
  dispatch_float(rows.dtype(), op, [&]<typename T>() {
    if (rows.numel()) softmax_rows<T>(rows.data_ptr<T>(), y.data_ptr<T>(), rows.numel() / n, n, log);
  });
  return last ? y : detail::contiguous_values(detail::transpose_view(y, dim, -1));
}

Tensor softmax_backward_lastdim(const Tensor& g0, const Tensor& y, bool log) {
  const Tensor g = detail::contiguous_values(g0);
  Tensor dx = detail::make_tensor(y.shape(), y.dtype());
  const int64_t n = y.dim() == 0 ? 1 : y.size(-1);
  dispatch_float(y.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&]<typename T>() {
    const T* pg = g.data_ptr<T>();
    const T* py = y.data_ptr<T>();
    T* pd = dx.data_ptr<T>();
    const int64_t rows = n ? y.numel() / n : 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T* gr = pg + r * n;
      const T* yr = py + r * n;
      T* dr = pd + r * n;
      if (log) {
        const T s = row_sum(gr, n);
        for (int64_t j = 0; j < n; ++j) dr[j] = gr[j] - fast_exp(yr[j]) * s;
      } else {
        softmax_backward_row(gr, yr, dr, n);
      }
    }
  });
  return dx;
}

Tensor causal_softmax(const Tensor& scores, double divisor) {
  const int64_t tq = scores.size(-2), n = scores.size(-1);
  const Tensor x = detail::contiguous_values(scores);
  Tensor y = detail::make_tensor(x.shape(), x.dtype());
  dispatch_float(x.dtype(), "causal_softmax", [&]<typename T>() {
    if (x.numel()) causal_softmax_rows(x.data_ptr<T>(), y.data_ptr<T>(), x.numel() / n, tq, n, static_cast<T>(divisor), nullptr);
  });
  return y;
}

Tensor causal_softmax_backward(const Tensor& g0, const Tensor& y, int64_t tq, int64_t n, double divisor) {
  const Tensor g = detail::contiguous_values(g0);
  Tensor dx = detail::make_tensor(y.shape(), y.dtype());
  dispatch_float(y.dtype(), "causal_softmax_backward", [&]<typename T>() {
    if (y.numel())
      causal_softmax_backward_rows(g.data_ptr<T>(), y.data_ptr<T>(), dx.data_ptr<T>(), y.numel() / n, tq, n, static_cast<T>(divisor));
  });
  return dx;
}

void causal_softmax_rows(const float* x, float* y, int64_t rows, int64_t tq, int64_t n, float divisor, float* stats) {
  if (rows_avx512()) causal_rows_avx512(x, y, rows, tq, n, divisor, stats);
  else causal_rows<float>(x, y, rows, tq, n, divisor, stats);
}
void causal_softmax_rows(const double* x, double* y, int64_t rows, int64_t tq, int64_t n, double divisor, double* stats) {
  causal_rows<double>(x, y, rows, tq, n, divisor, stats);
}
void causal_softmax_rows_again(const float* x, float* y, int64_t rows, int64_t tq, int64_t n, float divisor, const float* stats) {
  if (rows_avx512()) causal_rows_again_avx512(x, y, rows, tq, n, divisor, stats);
  else causal_rows_again<float>(x, y, rows, tq, n, divisor, stats);
}
void causal_softmax_rows_again(const double* x, double* y, int64_t rows, int64_t tq, int64_t n, double divisor,
                               const double* stats) {
  causal_rows_again<double>(x, y, rows, tq, n, divisor, stats);
}
void causal_softmax_backward_rows(const float* g, const float* y, float* dx, int64_t rows, int64_t tq, int64_t n,
                                  float divisor, bool g_zero_above) {
  if (rows_avx512()) causal_backward_rows_avx512(g, y, dx, rows, tq, n, divisor, g_zero_above);
  else causal_backward_rows<float>(g, y, dx, rows, tq, n, divisor, g_zero_above);
}
void causal_softmax_backward_rows(const double* g, const double* y, double* dx, int64_t rows, int64_t tq, int64_t n,
                                  double divisor, bool g_zero_above) {
  causal_backward_rows<double>(g, y, dx, rows, tq, n, divisor, g_zero_above);
}
void exp_rows(const float* x, float* y, int64_t n) {
  if (rows_avx512()) exp_avx512(x, y, n);
  else
    for (int64_t j = 0; j < n; ++j) y[j] = fast_exp(x[j]);
}

namespace {
std::atomic<int> g_rows_avx512{-1};  // -1: not chosen yet (the CPU's)
}  // namespace

bool rows_avx512() {
  int on = g_rows_avx512.load(std::memory_order_relaxed);
  if (on < 0) {
    on = __builtin_cpu_supports("avx512f") ? 1 : 0;
    g_rows_avx512.store(on, std::memory_order_relaxed);
  }
  return on == 1;
}

void set_rows_avx512(bool on) {
  if (on && !__builtin_cpu_supports("avx512f"))
    throw std::invalid_argument("[softmax] this CPU cannot run the AVX-512F row kernels");
  g_rows_avx512.store(on ? 1 : 0, std::memory_order_relaxed);
}

void log_softmax_stats(const float* x, int64_t rows, int64_t n, float* shift, float* ls) {
  if (rows_avx512()) log_softmax_stats_avx512(x, rows, n, shift, ls);
  else log_softmax_stats_rows<float>(x, rows, n, shift, ls);
}
void log_softmax_stats(const double* x, int64_t rows, int64_t n, double* shift, double* ls) {
  log_softmax_stats_rows<double>(x, rows, n, shift, ls);
}
void cross_entropy_backward(const float* x, const float* shift, const float* ls, const int64_t* target, const float* v,
                            int64_t rows, int64_t n, float* dx) {
  if (rows_avx512()) cross_entropy_backward_avx512(x, shift, ls, target, v, rows, n, dx);
  else cross_entropy_backward_rows<float>(x, shift, ls, target, v, rows, n, dx);
}
void cross_entropy_backward(const double* x, const double* shift, const double* ls, const int64_t* target, const double* v,
                            int64_t rows, int64_t n, double* dx) {
  cross_entropy_backward_rows<double>(x, shift, ls, target, v, rows, n, dx);
}

void cross_entropy_jvp(const float* x, const float* shift, const float* ls, const int64_t* target, const float* dx,
                       int64_t rows, int64_t n, float* term) {
  cross_entropy_jvp_rows<float>(x, shift, ls, target, dx, rows, n, term);
}
void cross_entropy_jvp(const double* x, const double* shift, const double* ls, const int64_t* target, const double* dx,
                       int64_t rows, int64_t n, double* term) {
  cross_entropy_jvp_rows<double>(x, shift, ls, target, dx, rows, n, term);
}

}  // namespace ag::kernels
