// Kernels of the reductions (reduce.cpp): sum over any dims, max, no history. The forward kernels
// compute the ops; max_backward is the fast path of max(dim)'s rule written in reduce.cpp, used
// when no graph of the backward is recorded, and must equal that rule to rounding
// (FastKernels.EqualTheRulesTheyStandInFor in tests/test_higher_order.cpp holds it to it).
#pragma once

#include <cstdint>
#include <utility>

#include "autograd/tensor.h"

namespace ag::kernels {

// Sum over the dims where mask is 1, into a tensor of keep_shape (t's shape with those dims 1);
// float32 accumulates in double, integers and bool in int64 (and give int64).
Tensor sum(const Tensor& t, const DimVector& mask, const Size& keep_shape);

// The max of all elements of a non-empty t (NaN if any is NaN), a 0-dim tensor of t's dtype.
Tensor max(const Tensor& t);
// Values and int64 indices of the max along dim (wrapped, of nonzero size), the first max if
// several are equal, the first NaN if any; the reduced dim kept as 1 or removed.
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim);
// max(dim)'s rule as one loop: zeros of `shape` with gi (keepdim layout) placed at the positions
// idx picks along dim.
Tensor max_backward(const Tensor& gi, const Tensor& idx, const Size& shape, int64_t dim);

}  // namespace ag::kernels
