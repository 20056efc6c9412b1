#include "autograd/shape.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <stdexcept>

namespace ag {

std::string Size::str() const {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < dims_.size(); ++i) os << (i ? ", " : "") << dims_[i];
  os << ']';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Size& s) { return os << "torch.Size(" << s.str() << ")"; }

Strides contiguous_strides(const Size& shape) {
  Strides st(static_cast<std::size_t>(shape.size()));
  int64_t acc = 1;
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    st[static_cast<std::size_t>(i)] = acc;
    acc = static_cast<int64_t>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(std::max<int64_t>(shape[i], 1)));
  }
  return st;
}

void dim_out_of_range(int64_t dim, int64_t n, const char* op, const Size& shape) {
  throw std::out_of_range(std::string("[") + op + "] dim " + std::to_string(dim) + " out of range for a tensor of shape " +
                          shape.str() + " (expected in [" + std::to_string(-n) + ", " + std::to_string(n - 1) + "])");
}

namespace detail {

int64_t checked_mul(int64_t a, int64_t b, const char* op) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw std::length_error(std::string("[") + op + "] integer multiplication overflow: " + std::to_string(a) + " * " +
                            std::to_string(b) + " does not fit in int64");
  }
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* op) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    throw std::length_error(std::string("[") + op + "] integer addition overflow: " + std::to_string(a) + " + " +
                            std::to_string(b) + " does not fit in int64");
  }
  return r;
}

int64_t check_shape(const Size& shape, const char* op) {
  if (shape.size() > 64) {
    throw std::invalid_argument(std::string("[") + op + "] at most 64 dims are supported, got " + std::to_string(shape.size()));
  }
  for (int64_t d : shape) {
    if (d < 0) {
      throw std::invalid_argument(std::string("[") + op + "] Trying to create tensor with negative dimension " +
                                  std::to_string(d) + ": " + shape.str());
    }
  }
  int64_t n = 1;
  for (int64_t d : shape) {
    // in order, as PyTorch multiplies: {0, 2^62, 4} is fine, {2^62, 4, 0} overflows before the 0
    if (__builtin_mul_overflow(n, d, &n)) {
      throw std::length_error(std::string("[") + op + "] numel: integer multiplication overflow (shape " + shape.str() + ")");
    }
  }
  return n;
}

std::size_t check_alloc(const Size& shape, std::size_t element_size, const char* op) {
  const int64_t n = check_shape(shape, op);
  std::size_t bytes;
  if (__builtin_mul_overflow(static_cast<std::size_t>(n), element_size, &bytes) ||
      bytes > static_cast<std::size_t>(INT64_MAX)) {
    throw std::length_error(std::string("[") + op + "] Storage size calculation overflowed with sizes=" + shape.str());
  }
  return bytes;
}

}  // namespace detail

Size broadcast_shapes(const Size& a, const Size& b, const char* op) {
  if (a == b) return a;
  int64_t n = std::max(a.size(), b.size());
  DimVector out(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw std::invalid_argument(std::string("[") + op + "] shapes " + a.str() + " and " + b.str() +
                                  " cannot be broadcast together (dim " + std::to_string(i) + ": " +
                                  std::to_string(da) + " vs " + std::to_string(db) + ")");
    }
    out[static_cast<std::size_t>(i)] = da == 1 ? db : da;
  }
  return Size(out);
}

}  // namespace ag
