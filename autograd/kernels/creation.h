// Kernels of the creation functions and of triu/tril (creation.cpp): the loops that write a new
// tensor's elements, no history. triu's and tril's rules (creation.cpp) are triu and tril of the
// gradient, so they have no fast path of their own.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/ops.h"
#include "autograd/tensor.h"

namespace ag::kernels {

// (n): start + i * step, computed in double and cast to dtype
Tensor arange(double start, double step, int64_t n, DType dtype);
// data (shape.numel() values) in row-major order, cast to dtype (to bool: nonzero)
Tensor from_vector(const std::vector<double>& data, const Size& shape, DType dtype);
Tensor from_vector(const std::vector<int64_t>& data, const Size& shape, DType dtype);
// the leaves of a nested list (shape.numel() of them) in row-major order, cast to dtype
Tensor from_leaves(const std::vector<const NestedList*>& leaves, const Size& shape, DType dtype);

// A contiguous copy of t (at least 2-D) with the elements of each matrix (last two dims) on the
// other side of the diagonal zeroed: j - i < diagonal for upper (triu), j - i > diagonal for
// lower (tril).
Tensor tri(const Tensor& t, int64_t diagonal, bool upper);

}  // namespace ag::kernels
