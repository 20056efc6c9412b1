// Kernels of the creation functions and triu/tril; the ops are in creation.cpp.
#include "autograd/kernels/creation.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "autograd/kernels/common.h"

namespace ag::kernels {

Tensor arange(double start, double step, int64_t n, DType dtype) {
  Tensor t = detail::make_tensor(Size{n}, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
  return t;
}

namespace {

// The values of torch.linspace in dtype T, as PyTorch 1.13's linspace_kernel computes them in its
// AVX2 build (GCC contracts its multiply-adds there, so the scalar formulas are fused; the vector
// lanes are not). S is the step's type: T for floating point, double for integers. The output is
// walked as cpu_serial_kernel_vec walks it: pairs of V-lane vectors while two fit, each vector
// base + k step from its first element's value, then the scalar formula for the tail. (PyTorch
// splits outputs longer than 32768 elements among threads, each starting its own vectors: the
// values here are its single-threaded ones.)
template <class T, class S>
void linspace_fill(T* p, T start, T end, int64_t steps) {
  const S step = (static_cast<S>(end) - static_cast<S>(start)) / static_cast<S>(steps - 1);
  const int64_t halfway = steps / 2;
  auto at = [&](int64_t i) -> T {
    if (i < halfway) return static_cast<T>(std::fma(step, static_cast<S>(i), static_cast<S>(start)));
    return static_cast<T>(std::fma(-step, static_cast<S>(steps - i - 1), static_cast<S>(end)));
  };
  constexpr int64_t V = 32 / static_cast<int64_t>(sizeof(T));  // AVX2 lanes
  auto vec = [&](int64_t i) {
    const T base = at(i);
    p[i] = base;
    for (int64_t k = 1; k < V; ++k) p[i + k] = static_cast<T>(static_cast<S>(base) + static_cast<S>(k) * step);
  };
  int64_t i = 0;
  for (; i + 2 * V <= steps; i += 2 * V) {
    vec(i);
    vec(i + V);
  }
  for (; i < steps; ++i) p[i] = at(i);
}

}  // namespace

Tensor linspace(double start, double end, int64_t steps, DType dtype) {
  if (dtype == kBool) throw std::invalid_argument("[linspace] not implemented for torch.bool");
  Tensor t = detail::make_tensor(Size{steps}, dtype);
  if (dtype == kInt64) {
    linspace_fill<int64_t, double>(t.data_ptr<int64_t>(), detail::checked_scalar<int64_t>(start, "linspace"),
                                   detail::checked_scalar<int64_t>(end, "linspace"), steps);
    return t;
  }
  dispatch_float(dtype, "linspace", [&]<typename T>() {
    linspace_fill<T, T>(t.data_ptr<T>(), static_cast<T>(start), static_cast<T>(end), steps);
  });
  return t;
}

// PyTorch's logspace_out (not a vectorized kernel): the exponent in double, from start and end
// first rounded to the dtype, and std::pow(base, exponent) cast back.
Tensor logspace(double start, double end, int64_t steps, double base, DType dtype) {
  if (dtype == kBool) throw std::invalid_argument("[logspace] not implemented for torch.bool");
  Tensor t = detail::make_tensor(Size{steps}, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data_ptr<T>();
    const T s = detail::checked_scalar<T>(start, "logspace"), e = detail::checked_scalar<T>(end, "logspace");
    const double step = static_cast<double>(e - s) / static_cast<double>(steps - 1);
    for (int64_t i = 0; i < steps; ++i) {
      const double x = i < steps / 2 ? static_cast<double>(s) + step * static_cast<double>(i)
                                     : static_cast<double>(e) - step * static_cast<double>(steps - i - 1);
      p[i] = detail::convert_element<T>(std::pow(base, x));
    }
  });
  return t;
}

Tensor eye(int64_t n, int64_t m, DType dtype) {
  Tensor t = detail::make_tensor(Size{n, m}, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data_ptr<T>();
    std::fill(p, p + n * m, T(0));
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = T(1);
  });
  return t;
}

Tensor from_vector(const std::vector<double>& data, const Size& shape, DType dtype) {
  Tensor t = detail::make_tensor(shape, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data_ptr<T>();
    for (std::size_t i = 0; i < data.size(); ++i) {
      p[i] = detail::checked_scalar<T>(data[i], "tensor");
    }
  });
  return t;
}

Tensor from_vector(const std::vector<int64_t>& data, const Size& shape, DType dtype) {
  Tensor t = detail::make_tensor(shape, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data_ptr<T>();
    for (std::size_t i = 0; i < data.size(); ++i) p[i] = detail::convert_element<T>(data[i]);
  });
  return t;
}

Tensor from_leaves(const std::vector<const NestedList*>& leaves, const Size& shape, DType dtype) {
  Tensor t = detail::make_tensor(shape, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data_ptr<T>();
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      const NestedList& n = *leaves[i];
      if constexpr (std::is_same_v<T, int64_t>) p[i] = n.kind() == kFloat32 ? detail::checked_scalar<T>(n.value(), "tensor") : n.ivalue();
      else if constexpr (std::is_same_v<T, uint8_t>) p[i] = n.value() != 0.0;
      else p[i] = static_cast<T>(n.value());
    }
  });
  return t;
}

Tensor tri(const Tensor& t, int64_t diagonal, bool upper) {
  Tensor out = detail::contiguous_copy(t, t.dtype());
  if (out.numel() == 0) return out;  // (an empty tensor's rows * cols may exceed int64)
  const int64_t rows = t.size(-2), cols = t.size(-1), mats = t.numel() / (rows * cols);
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* p = static_cast<T*>(out.impl()->storage->data);
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
          if (!keep) p[(m * rows + i) * cols + j] = T(0);
        }
  });
  return out;
}

}  // namespace ag::kernels
