// Forward mode: dual tensors, as torch.autograd.forward_ad. A dual tensor carries a tangent (the
// direction u of a directional derivative) beside its value; every op then computes its output's
// tangent J u by its jvp rule, written beside its backward rule in the op's file. One pass gives
// f(x) and J u together, where reverse mode gives uᵀJ.
//
//   {
//     ag::forward_ad::DualLevel level;                    // Python's with dual_level():
//     Tensor x = ag::forward_ad::make_dual(p, u);          // p carrying the tangent u
//     Tensor y = f(x);
//     Tensor jvp = ag::forward_ad::unpack_dual(y).tangent; // J u (undefined: zero)
//   }                                                     // leaving the level drops every tangent
//
// As PyTorch 1.13: one level at a time; a tangent has its primal's shape; a view of a dual tensor
// carries the same view of its tangent; an in-place op on a dual tensor updates its tangent;
// NoGradGuard turns reverse mode off, not forward mode; a missing tangent is a zero that is never
// materialised; an op without a jvp rule throws rather than drop a tangent. ag::func (func.h)
// builds jvp, jacfwd and hessian on this.
#pragma once

#include "tensor.h"

namespace ag::forward_ad {

// RAII: a dual level is alive in its scope (Python's `with dual_level():`). Entering a second
// while one is alive throws "Nested forward mode AD is not supported at the moment" (PyTorch
// 1.13). Leaving it drops the tangent of every tensor that got one in it. The level is global, as
// PyTorch's: a jvp rule runs on the thread that runs the op.
class DualLevel {
 public:
  DualLevel();
  ~DualLevel();
  DualLevel(const DualLevel&) = delete;
  DualLevel& operator=(const DualLevel&) = delete;
};

// A view of `primal` carrying `tangent` at the live level (PyTorch's make_dual): both floating
// point, of the same shape; the tangent keeps its own dtype, as in PyTorch 1.13. A tangent laid
// out otherwise than primal is copied into primal's layout (so views of the two stay in step). If
// primal requires grad, the result is a view of it in the graph (ViewBackward0).
Tensor make_dual(const Tensor& primal, const Tensor& tangent);

struct UnpackedDual {
  Tensor primal;   // a view of the dual tensor without its tangent (with its history)
  Tensor tangent;  // undefined when it has none (a zero)
};
UnpackedDual unpack_dual(const Tensor& t);

// Whether a dual level is alive.
bool level_alive();

}  // namespace ag::forward_ad
