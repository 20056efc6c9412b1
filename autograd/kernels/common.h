// Internal helpers shared by the kernels and the op files: allocating results, walking strided
// operands, and the copies and views the kernels need (zeros_tensor, contiguous_values, ...).
// Nothing here records autograd history.
#pragma once

#include <cstdint>
#include <string>
#include <stdexcept>
#include <limits>
#include <algorithm>
#include <array>
#include <initializer_list>
#include <cstring>
#include <memory>
#include <type_traits>

#include "autograd/kernels/parallel.h"
#include "autograd/tensor.h"

namespace ag::detail {

// A new contiguous, uninitialized tensor.
Tensor make_tensor(const Size& shape, DType dtype, const char* op = "empty");
// A new uninitialized tensor with the given dense strides (e.g. from elementwise_strides).
Tensor make_tensor(const Size& shape, const Strides& strides, DType dtype, const char* op = "empty");

// The layout PyTorch's TensorIterator gives the result of an elementwise op over `inputs`
// broadcast to `shape`: contiguous when every input is contiguous of that shape; the inputs' own
// strides when they all share them and are dense (a transposed input gives a transposed result);
// otherwise dense strides ordering the dims as the inputs' strides do, the first input deciding
// first. So .view() of a result succeeds or fails as in PyTorch.
Strides elementwise_strides(const Size& shape, std::initializer_list<const Tensor*> inputs);

// A tensor sharing t's storage with a new layout (no history).
Tensor alias(const Tensor& t, Size shape, Strides strides, int64_t offset);
// PyTorch's _unsafe_view: a view of contiguous t as shape s, recorded as UnsafeViewBackward0
// (views.cpp). matmul ends with it as PyTorch's does.
Tensor unsafe_view(const Tensor& t, const Size& s);

// Strides of `t` as seen through broadcasting to `shape` (0 where t is broadcast).
Strides broadcast_strides(const Tensor& t, const Size& shape);
// The same for the first m dims of a tensor (sizes `from`, strides `strides`), e.g. its batch dims.
Strides broadcast_strides(const int64_t* from, const int64_t* strides, int64_t m, const Size& shape);

// Visits every position of `shape` in row-major order, calling f(offsets) where offsets[k] is
// the element offset of operand k (start offset plus index . strides). Adjacent dims that every
// operand walks contiguously are merged first, so the common cases (contiguous, broadcast rows)
// become one or two long inner loops the compiler can vectorize.
template <std::size_t N, class F>
void walk(const Size& shape, const std::array<const Strides*, N>& st, std::array<int64_t, N> off, F&& f) {
  const int64_t nd0 = shape.size();
  if (shape.numel() == 0) return;
  if (nd0 == 0) {
    f(off);
    return;
  }
  // collapsed dims, innermost last; size-1 dims are dropped
  int64_t dims[64];
  int64_t strides[N][64];
  int64_t nd = 0;
  for (int64_t d = 0; d < nd0; ++d) {
    const int64_t n = shape[d];
    if (n == 1) continue;
    bool merge = nd > 0;
    for (std::size_t k = 0; merge && k < N; ++k) merge = strides[k][nd - 1] == (*st[k])[static_cast<std::size_t>(d)] * n;
    if (merge) {
      dims[nd - 1] *= n;
      for (std::size_t k = 0; k < N; ++k) strides[k][nd - 1] = (*st[k])[static_cast<std::size_t>(d)];
    } else {
      dims[nd] = n;
      for (std::size_t k = 0; k < N; ++k) strides[k][nd] = (*st[k])[static_cast<std::size_t>(d)];
      ++nd;
    }
  }
  if (nd == 0) {
    f(off);
    return;
  }
  const int64_t inner = dims[nd - 1];
  std::array<int64_t, N> is{};
  for (std::size_t k = 0; k < N; ++k) is[k] = strides[k][nd - 1];
  int64_t idx[64] = {0};
  while (true) {
    std::array<int64_t, N> o = off;
    for (int64_t i = 0; i < inner; ++i) {
      f(o);
      for (std::size_t k = 0; k < N; ++k) o[k] += is[k];
    }
    int64_t d = nd - 2;
    for (; d >= 0; --d) {
      for (std::size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (++idx[d] < dims[d]) break;
      for (std::size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * dims[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// walk over the dims of `out` in its memory order (outermost first), so a result laid out like
// its inputs (e.g. both transposed) is one contiguous loop; st[0] must be out's strides.
template <std::size_t N, class F>
void walk_in_memory_order(const Size& shape, const std::array<const Strides*, N>& st, const std::array<int64_t, N>& off, F&& f) {
  const std::size_t n = static_cast<std::size_t>(shape.size());
  const Strides& so = *st[0];
  if (std::is_sorted(so.begin(), so.end(), [](int64_t x, int64_t y) { return x > y; })) {
    walk<N>(shape, st, off, f);  // already outermost first (e.g. contiguous): nothing to reorder
    return;
  }
  std::array<std::size_t, 64> order{};
  for (std::size_t d = 0; d < n; ++d) order[d] = d;
  std::stable_sort(order.begin(), order.begin() + n, [&](std::size_t x, std::size_t y) { return so[x] > so[y]; });
  Size ps;
  std::array<Strides, N> pst;
  for (std::size_t d = 0; d < n; ++d) {
    ps.vec().push_back(shape[static_cast<int64_t>(order[d])]);
    for (std::size_t k = 0; k < N; ++k) pst[k].push_back((*st[k])[order[d]]);
  }
  std::array<const Strides*, N> pp{};
  for (std::size_t k = 0; k < N; ++k) pp[k] = &pst[k];
  walk<N>(ps, pp, off, f);
}

// loop(begin, end) over [0, n) elements of an elementwise op: split over ag's threads from
// kMinParallelElements on (waking a thread pays for itself on a memory-bound pass that long),
// each element computed alike on any thread.
inline constexpr int64_t kMinParallelElements = int64_t{1} << 18;
template <class Loop>
void parallel_elements(int64_t n, Loop&& loop) {
  if (n < kMinParallelElements) {
    loop(int64_t{0}, n);
    return;
  }
  parallel_for(n, kMinParallelFlops / static_cast<double>(kMinParallelElements), loop);
}
// loop(begin, end) over [0, n) lines of `line_elements` elements each (rows of a copy, columns of
// a sum), split at parallel_elements' rate: from kMinParallelElements elements in all on.
template <class Loop>
void parallel_lines(int64_t n, int64_t line_elements, Loop&& loop) {
  parallel_for(n, static_cast<double>(line_elements) * kMinParallelFlops / static_cast<double>(kMinParallelElements), loop);
}

// out[i] = f(a[i]) over any strides; out is a new tensor of dtype `out_dtype` laid out as
// elementwise_strides says (contiguous unless a is dense and not contiguous).
template <class TOut, class TIn, class F>
Tensor map_unary(const Tensor& a, DType out_dtype, F&& f) {
  const TIn* pa = static_cast<const TIn*>(a.impl()->storage->data);
  if (a.is_contiguous()) {
    Tensor out = make_tensor(a.shape(), out_dtype);
    TOut* po = out.data_ptr<TOut>();
    pa += a.storage_offset();
    parallel_elements(a.numel(), [po, pa, &f](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) po[i] = f(pa[i]);
    });
    return out;
  }
  Tensor out = make_tensor(a.shape(), elementwise_strides(a.shape(), {&a}), out_dtype);
  TOut* po = out.data_ptr<TOut>();
  walk_in_memory_order<2>(a.shape(), {&out.strides(), &a.strides()}, {0, a.storage_offset()},
                          [&](const std::array<int64_t, 2>& o) { po[o[0]] = f(pa[o[1]]); });
  return out;
}

// out = f(a, b) with a and b broadcast to `shape`, laid out as elementwise_strides says (or
// contiguous, for the ops PyTorch computes on a contiguous clone, e.g. masked_fill).
template <class TOut, class TA, class TB, class F>
Tensor map_binary(const Tensor& a, const Tensor& b, const Size& shape, DType out_dtype, F&& f, bool contiguous_result = false) {
  const TA* pa = static_cast<const TA*>(a.impl()->storage->data);
  const TB* pb = static_cast<const TB*>(b.impl()->storage->data);
  if (a.is_contiguous() && b.is_contiguous() && a.shape() == shape && b.shape() == shape) {
    Tensor out = make_tensor(shape, out_dtype);
    TOut* po = out.data_ptr<TOut>();
    pa += a.storage_offset();
    pb += b.storage_offset();
    parallel_elements(out.numel(), [po, pa, pb, &f](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) po[i] = f(pa[i], pb[i]);
    });
    return out;
  }
  Tensor out = contiguous_result ? make_tensor(shape, out_dtype) : make_tensor(shape, elementwise_strides(shape, {&a, &b}), out_dtype);
  TOut* po = out.data_ptr<TOut>();
  Strides sa = broadcast_strides(a, shape), sb = broadcast_strides(b, shape);
  walk_in_memory_order<3>(shape, {&out.strides(), &sa, &sb}, {0, a.storage_offset(), b.storage_offset()},
                          [&](const std::array<int64_t, 3>& o) { po[o[0]] = f(pa[o[1]], pb[o[2]]); });
  return out;
}

// Applies f(ref) to every element of t in place (any strides).
template <class T, class F>
void for_each_inplace(const Tensor& t, F&& f) {
  T* p = static_cast<T*>(t.impl()->storage->data);
  if (t.is_contiguous()) {  // the common case (optimizer state, gradients): one flat loop
    p += t.storage_offset();
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) f(p[i]);
    return;
  }
  walk<1>(t.shape(), {&t.strides()}, {t.storage_offset()}, [&](const std::array<int64_t, 1>& o) { f(p[o[0]]); });
}

// Integer arithmetic that wraps on overflow (two's complement), as PyTorch's int64 ops do:
// INT64_MAX + 1 == INT64_MIN, -INT64_MIN == INT64_MIN. Signed overflow is undefined behaviour in
// C++, so integers compute in their unsigned type (which wraps) and convert back (modular since
// C++20). Floating point types take the plain operator, so their loops are unchanged.
template <class T>
inline constexpr bool kWrapsAsUnsigned = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
inline T wrap_add(T x, T y) {
  if constexpr (kWrapsAsUnsigned<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(x) + static_cast<U>(y)));
  } else {
    return x + y;
  }
}
template <class T>
inline T wrap_sub(T x, T y) {
  if constexpr (kWrapsAsUnsigned<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(x) - static_cast<U>(y)));
  } else {
    return x - y;
  }
}
template <class T>
inline T wrap_mul(T x, T y) {
  if constexpr (kWrapsAsUnsigned<T>) {
    // U * U for a U narrower than int promotes to (signed) int and could overflow there
    using U = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
    return static_cast<T>(static_cast<U>(static_cast<U>(x) * static_cast<U>(y)));
  } else {
    return x * y;
  }
}
template <class T>
inline T wrap_neg(T x) {
  if constexpr (kWrapsAsUnsigned<T>) return wrap_sub(T(0), x);
  else return -x;
}

// A number the user gave, as an element of type T (float, double, int64_t, or uint8_t for bool),
// as PyTorch's c10::checked_convert: bool is value != 0 (NaN is true); an integer takes the value
// truncated toward zero, and one it cannot hold (beyond int64, inf, NaN) is an error, "[op] value
// cannot be converted to type int64_t without overflow", never undefined behaviour.
template <class T>
T checked_scalar(double v, const char* op) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return v != 0.0 ? 1 : 0;
  } else if constexpr (std::is_integral_v<T>) {
    // [-2^63, 2^63): the doubles whose truncation fits (NaN fails both comparisons)
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
      throw std::out_of_range(std::string("[") + op + "] value cannot be converted to type int64_t without overflow: " +
                              std::to_string(v));
    }
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// A tensor element converted to another element type as PyTorch's CPU kernels convert: to bool,
// x != 0; a floating value outside int64's range (or NaN) to int64 gives INT64_MIN, which is what
// x86's conversion instruction gives PyTorch (C++ leaves it undefined); the rest as static_cast.
template <class To, class From>
To convert_element(From x) {
  if constexpr (std::is_same_v<To, uint8_t>) {
    return x != From(0) ? 1 : 0;
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (!(x >= From(-9223372036854775808.0) && x < From(9223372036854775808.0))) return std::numeric_limits<To>::min();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

// Copies src (broadcast to dst's shape, any dtype) into dst (any strides).
void copy_into(const Tensor& dst, const Tensor& src);

// The kernels' own versions of a few ops, without history (no node, no view tracking), so that a
// kernel never calls back up into ops.h:
// a new contiguous tensor of zeros, the values zeros() gives;
Tensor zeros_tensor(const Size& shape, DType dtype);
// a new 0-dim tensor holding value as full({}, value, dtype) stores it (checked_scalar, as fill_);
Tensor scalar_tensor(double value, DType dtype);
// a new contiguous tensor holding t's values converted to dtype (as copy_into converts them);
Tensor contiguous_copy(const Tensor& t, DType dtype);
// a new tensor holding t's values converted to dtype, laid out as to() and clone() lay out their
// copy (preserve_format): contiguous if t is, else as elementwise_strides says;
Tensor preserved_copy(const Tensor& t, DType dtype);
// t's values in row-major order, as contiguous() gives them: t itself if it is contiguous, else a
// contiguous copy;
Tensor contiguous_values(const Tensor& t);
// views of t's storage (t's dtype and offset) with dims d0 and d1 swapped (negative dims count
// from the end) and with its dims in the order `dims`, as transpose() and permute() lay them out.
Tensor transpose_view(const Tensor& t, int64_t d0, int64_t d1);
Tensor permute_view(const Tensor& t, const DimVector& dims);

// The error every op uses for a shape mismatch.
[[noreturn]] void shape_error(const char* op, const std::string& what);

}  // namespace ag::detail
