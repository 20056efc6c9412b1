// torch.nn.utils.clip_grad_norm_: scales all gradients so their joint norm is at most max_norm.
#pragma once

#include <vector>

#include "../autograd/autograd.h"

namespace ag::nn {

// Returns the total norm of the gradients (before clipping) as a 0-dim float tensor; gradients
// are multiplied by min(1, max_norm / (total_norm + 1e-6)). norm_type may be INFINITY.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

}  // namespace ag::nn
