// Kernels of the reductions (reduce.cpp): sum, prod, var, logsumexp and norm over any dims, max
// and min, cumsum, no history. The forward kernels compute the ops; value_selecting_backward and
// prod_backward are the fast paths of max(dim)'s / min(dim)'s and prod's rules written in
// reduce.cpp, used when no graph of the backward is recorded, and must equal those rules to
// rounding (FastKernels.EqualTheRulesTheyStandInFor in tests/test_higher_order.cpp holds them to it).
#pragma once

#include <cstdint>
#include <utility>

#include "autograd/tensor.h"

namespace ag::kernels {

// Sum over the dims where mask is 1, into a tensor of keep_shape (t's shape with those dims 1);
// float32 accumulates in double, integers and bool in int64 (and give int64).
Tensor sum(const Tensor& t, const DimVector& mask, const Size& keep_shape);

// The product over the dims where mask is 1, into keep_shape; integers and bool give int64.
// Floating types accumulate in double (an empty product is 1).
Tensor prod(const Tensor& t, const DimVector& mask, const Size& keep_shape);
// The variance over the dims where mask is 1, sum((x - mean)^2) / max(0, n - correction), two
// passes in double (floating t only; n - correction <= 0 gives inf, or NaN for 0 / 0).
Tensor var(const Tensor& t, const DimVector& mask, const Size& keep_shape, int64_t correction);
// log(sum(exp(x))) over the dims where mask is 1, shifted by the row's max (0 if it is infinite),
// in double (floating t only; an empty row gives -inf).
Tensor logsumexp(const Tensor& t, const DimVector& mask, const Size& keep_shape);
// The p-norm over the dims where mask is 1, in double (floating t only): (sum |x|^p)^(1/p);
// p = 0 counts nonzeros, p = +-inf is max / min |x|; an empty row gives 0, as in PyTorch.
Tensor norm(const Tensor& t, const DimVector& mask, const Size& keep_shape, double p);
// Cumulative sum along dim (wrapped), contiguous, accumulated in double for floating types (as
// PyTorch's CPU kernel does); integers and bool give int64.
Tensor cumsum(const Tensor& t, int64_t dim);

// The max (min) of all elements of a non-empty t (NaN if any is NaN), a 0-dim tensor of t's dtype.
Tensor max(const Tensor& t);
Tensor min(const Tensor& t);
// Values and int64 indices of the max (min) along dim (wrapped, of nonzero size), the first one
// if several are equal, the first NaN if any; the reduced dim kept as 1 or removed.
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim);
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim);
// max(dim)'s and min(dim)'s rule as one loop: zeros of `shape` with gi (keepdim layout) placed at
// the positions idx picks along dim.
Tensor value_selecting_backward(const Tensor& gi, const Tensor& idx, const Size& shape, int64_t dim);
// prod's rule as one loop: gi (keepdim layout, broadcast over the reduced dims) times the product
// of the other elements of x's row, from prefix and suffix products (exact with zeros in x).
Tensor prod_backward(const Tensor& gi, const Tensor& x, const DimVector& mask);

}  // namespace ag::kernels
