// Internal: the rules every in-place op checks before it writes.
#pragma once

#include "autograd/tensor.h"

namespace ag::detail {

// Throws if writing into `t` in place would corrupt autograd history: a leaf that requires grad
// (outside NoGradGuard), a view that is part of a graph, or an op that cannot record its own
// backward. Returns true if the caller must record a backward node (differentiable op on a
// non-leaf). Bumps the storage version, so tensors saved for backward notice the write.
bool begin_inplace(const Tensor& t, const char* op, bool differentiable);
// The same checks without the version bump.
bool check_inplace(const Tensor& t, const char* op, bool differentiable);

}  // namespace ag::detail
