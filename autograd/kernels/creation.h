// Kernels of the creation functions and of triu/tril (creation.cpp): the loops that write a new
// tensor's elements, no history. triu's and tril's rules (creation.cpp) are triu and tril of the
// gradient, so they have no fast path of their own.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/nested_list.h"
#include "autograd/tensor.h"

namespace ag::kernels {

// (n): start + i * step, computed in double and cast to dtype
Tensor arange(double start, double step, int64_t n, DType dtype);
// torch.linspace's (steps) values bit for bit (steps >= 2): start + step i for i < steps / 2, end -
// step (steps - 1 - i) after, with PyTorch's AVX2 kernel's vector lanes and fused multiply-adds
// (float32, float64, int64).
Tensor linspace(double start, double end, int64_t steps, DType dtype);
// torch.logspace's (steps) values bit for bit (steps >= 2): base^e for e computed as in linspace
// but in double, without vector lanes or fused multiply-adds (float32, float64, int64).
Tensor logspace(double start, double end, int64_t steps, double base, DType dtype);
// (n, m) zeros with ones on the main diagonal
Tensor eye(int64_t n, int64_t m, DType dtype);
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
