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

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    return n;
  }
  std::string str() const;  // "[6, 3]", the form used in error messages

 private:
  DimVector dims_;
};

std::ostream& operator<<(std::ostream& os, const Size& s);  // torch.Size([6, 3])

// Row-major strides of a contiguous tensor of this shape.
Strides contiguous_strides(const Size& shape);

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
