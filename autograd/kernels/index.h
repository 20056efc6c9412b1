// Kernels of the gathers and their scatter (index.cpp): index_select, embedding and index_add,
// over contiguous copies, and gather / scatter_add along a dim (any strides), no history. gather,
// index_add, gather_along and scatter_add_along compute the ops; scatter_add is the
// fast path of index_select's and embedding's rules written in index.cpp, used when no graph of
// the backward is recorded, and must equal those rules to rounding
// (FastKernels.EqualTheRulesTheyStandInFor in tests/test_higher_order.cpp holds it to it).
// Indices are already checked and wrapped to [0, size).
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/tensor.h"

namespace ag::kernels {

// src viewed as (outer, n, inner) -> out (outer, idx.size(), inner): out[.., j, ..] = src[.., idx[j], ..]
Tensor gather(const Tensor& src, int64_t dim, const std::vector<int64_t>& idx);
// t with out[.., idx[j], ..] += alpha * source[.., j, ..] (floating point)
Tensor index_add(const Tensor& t, int64_t dim, const std::vector<int64_t>& idx, const Tensor& source, double alpha);
// gather's rule as one loop: zeros of `shape`, then out[.., idx[j], ..] += g[.., j, ..]
Tensor scatter_add(const Tensor& g, const Size& shape, int64_t dim, const std::vector<int64_t>& idx);

// torch.gather over an index of shape `ishape` (t's number of dims, >= 1; idx its values in
// row-major order): out (ishape)[p] = t[p with coordinate dim replaced by idx[p]]
Tensor gather_along(const Tensor& t, int64_t dim, const std::vector<int64_t>& idx, const Size& ishape);
// torch.scatter_add: a copy of t with out[p with coordinate dim replaced by idx[p]] += src[p] for
// every position p of ishape (src may be larger than ishape; its extra elements are not used)
Tensor scatter_add_along(const Tensor& t, int64_t dim, const std::vector<int64_t>& idx, const Size& ishape, const Tensor& src);

}  // namespace ag::kernels
