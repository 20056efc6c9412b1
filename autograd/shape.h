// Shapes and strides: the arithmetic of row-major layouts, broadcasting and dim wrapping.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "dim_vector.h"

namespace ag {

using Strides = DimVector;

// A tensor's shape. Prints like PyTorch: torch.Size([6, 3]).
class Size {
 public:
  Size() = default;
  Size(std::initializer_list<int64_t> d) : dims_(d) {}
  explicit Size(const std::vector<int64_t>& d) : dims_(d) {}
  explicit Size(DimVector d) : dims_(std::move(d)) {}

  int64_t size() const { return static_cast<int64_t>(dims_.size()); }
  int64_t operator[](int64_t i) const { return dims_[static_cast<std::size_t>(i)]; }
  int64_t& operator[](int64_t i) { return dims_[static_cast<std::size_t>(i)]; }
  const DimVector& vec() const { return dims_; }
  DimVector& vec() { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  bool operator==(const Size& o) const { return dims_ == o.dims_; }
  bool operator!=(const Size& o) const { return dims_ != o.dims_; }

  // The product of the dims. A tensor's shape was checked when it was made (detail::check_shape:
  // its product in order fits int64), and the product is taken modulo 2^64 here, so it is exact
  // in any order of the dims: {0, 2^62, 2} walked as {2^62, 2, 0} is still 0. For a shape a user
  // asked for, use check_shape instead.
  int64_t numel() const {
    uint64_t n = 1;
    for (int64_t d : dims_) n *= static_cast<uint64_t>(d);
    return static_cast<int64_t>(n);
  }
  std::string str() const;  // "[6, 3]", the form used in error messages

 private:
  DimVector dims_;
};

std::ostream& operator<<(std::ostream& os, const Size& s);  // torch.Size([6, 3])

// Row-major strides of a contiguous tensor of this shape. With a zero dim the strides of the
// dims before it may exceed int64 (zeros({0, 1LL << 62, 4})): they wrap, as PyTorch's do.
Strides contiguous_strides(const Size& shape);

namespace detail {
// a * b + c modulo 2^64, for a view's offset and strides: exact for a tensor with elements (its
// span fits int64), and defined for an empty one whose dims multiply past int64 ({0, 2^62, 2}),
// whose offset and strides are never used to address an element (PyTorch's wrap the same way).
inline int64_t wrapping_mad(int64_t a, int64_t b, int64_t c = 0) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b) + static_cast<uint64_t>(c));
}
// The one checked helper for shape arithmetic: every op that computes a shape, a numel, a byte
// size or a view's strides and offset from numbers a user gave goes through these, so a huge or
// negative size is an exception naming the op, never a wrapped number.
// a * b and a + b, or std::length_error "[op] ... integer multiplication overflow" (PyTorch's words).
int64_t checked_mul(int64_t a, int64_t b, const char* op);
int64_t checked_add(int64_t a, int64_t b, const char* op);
// A shape a new tensor or view is to have: at most 64 dims, none negative ("Trying to create
// tensor with negative dimension -2: [-2]"), numel within int64 ("numel: integer multiplication
// overflow"). Returns numel.
int64_t check_shape(const Size& shape, const char* op);
// check_shape, and the bytes of numel elements of `element_size` within what one allocation can
// have ("Storage size calculation overflowed with sizes=[...]"). Returns the byte count.
std::size_t check_alloc(const Size& shape, std::size_t element_size, const char* op);
}  // namespace detail

// Wraps a possibly negative dim into [0, ndim); throws "[op] dim d out of range for a tensor of
// shape [...]" otherwise. ndim 0 tensors accept dims -1 and 0, as in PyTorch.
[[noreturn]] void dim_out_of_range(int64_t dim, int64_t ndim, const char* op, const Size& shape);
inline int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op, const Size& shape) {
  const int64_t n = ndim > 1 ? ndim : 1;
  if (dim < -n || dim >= n) dim_out_of_range(dim, n, op, shape);
  return dim < 0 ? dim + n : dim;
}

// Broadcast result of two shapes (numpy rules); throws naming op and both shapes.
Size broadcast_shapes(const Size& a, const Size& b, const char* op);

}  // namespace ag
