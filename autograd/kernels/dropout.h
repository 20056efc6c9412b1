// Kernels of dropout (dropout.cpp): the mask drawn from a generator and the noise it scales by,
// no history. dropout's rule is mul's (dropout.cpp multiplies by the noise), so it has no fast
// path of its own. Compiled with -ffp-contract=off like dropout.cpp (CMakeLists.txt): PyTorch's
// random numbers bit for bit.
#pragma once

#include "autograd/generator.h"
#include "autograd/tensor.h"

namespace ag::kernels {

// A bool tensor of `shape`: one 53-bit uniform u per element from g, in PyTorch's order, true if
// u < q.
Tensor bernoulli_mask(const Size& shape, double q, Generator& g);
// noise = mask / q in dtype (a floating dtype): 1 / q where mask is nonzero, 0 elsewhere.
Tensor dropout_noise(const Tensor& mask, DType dtype, double q);

}  // namespace ag::kernels
