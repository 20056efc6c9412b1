// Kernels of the creation functions and triu/tril; the ops are in creation.cpp.
#include "autograd/kernels/creation.h"

#include <type_traits>

#include "autograd/kernels/common.h"
#include "autograd/node.h"

namespace ag::kernels {

Tensor arange(double start, double step, int64_t n, DType dtype) {
  Tensor t = detail::make_tensor(Size{n}, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
  return t;
}

Tensor from_vector(const std::vector<double>& data, const Size& shape, DType dtype) {
  Tensor t = detail::make_tensor(shape, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data_ptr<T>();
    for (std::size_t i = 0; i < data.size(); ++i) {
      if constexpr (std::is_same_v<T, uint8_t>) p[i] = data[i] != 0.0;
      else p[i] = static_cast<T>(data[i]);
    }
  });
  return t;
}

Tensor from_vector(const std::vector<int64_t>& data, const Size& shape, DType dtype) {
  Tensor t = detail::make_tensor(shape, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data_ptr<T>();
    for (std::size_t i = 0; i < data.size(); ++i) p[i] = static_cast<T>(data[i]);
  });
  return t;
}

Tensor from_leaves(const std::vector<const NestedList*>& leaves, const Size& shape, DType dtype) {
  Tensor t = detail::make_tensor(shape, dtype);
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data_ptr<T>();
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      const NestedList& n = *leaves[i];
      if constexpr (std::is_same_v<T, int64_t>) p[i] = n.kind() == kFloat32 ? static_cast<int64_t>(n.value()) : n.ivalue();
      else if constexpr (std::is_same_v<T, uint8_t>) p[i] = n.value() != 0.0;
      else p[i] = static_cast<T>(n.value());
    }
  });
  return t;
}

Tensor tri(const Tensor& t, int64_t diagonal, bool upper) {
  Tensor out;
  {
    NoGradGuard g;
    out = t.clone();  // always contiguous
  }
  const int64_t rows = t.size(-2), cols = t.size(-1), mats = rows * cols != 0 ? t.numel() / (rows * cols) : 0;
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
