// Internal: the rules every in-place op checks before it writes.
#pragma once

#include <functional>

#include "autograd/node.h"
#include "autograd/tensor.h"

namespace ag::detail {

// Throws if writing into `t` in place would corrupt autograd history: a leaf that requires grad
// (outside NoGradGuard), a view that is part of a graph (the ops that support one, inplace.cpp's,
// take it through CopySlices before they get here), or an op that cannot record its own backward. Returns true if the caller must record a backward node (differentiable op on a
// non-leaf). Bumps the storage version, so tensors saved for backward notice the write.
bool begin_inplace(const Tensor& t, const char* op, bool differentiable);
// The same checks without the version bump.
bool check_inplace(const Tensor& t, const char* op, bool differentiable);
// The version bump alone, after refusing a write into an expanded tensor.
void bump_version(const Tensor& t, const char* op);
// If `self` is a view of a tensor in a graph (or the value written requires grad): computes
// f(self's value with its history) out of place, writes it through the view and records
// CopySlices on the base, and returns true. Otherwise false, and the caller writes as usual.
bool inplace_through_view(const Tensor& self, bool value_requires_grad, const char* op,
                          const std::function<Tensor(const Tensor&)>& f);
// Forward mode: whether an in-place write into `self` of a value computed from `other` (may be
// null) must update a tangent (a dual level is alive and one of them carries one).
bool inplace_has_tangent_at_level(const Tensor& self, const Tensor* other);
inline bool inplace_has_tangent(const Tensor& self, const Tensor* other = nullptr) {
  return forward_ad_on() && inplace_has_tangent_at_level(self, other);  // (no level: one load, inline)
}
// Forward mode: after an in-place write into `self` of a value whose tangent is `t` (undefined:
// zero), self's tangent is t: written into self's tangent where it has one (so views of it see the
// write), else a new one; a view without one gets the same view of its base's tangent, which is
// made (zeros) if the base has none, as PyTorch does.
void set_inplace_tangent(const Tensor& self, const Tensor& t);
// A view whose base was written in place after the view was taken: gives it the history of a
// view of the base's current value (AsStridedBackward0), as PyTorch regenerates a view's grad_fn.
void refresh_view(const Tensor& v);

}  // namespace ag::detail
