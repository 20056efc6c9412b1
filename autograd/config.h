// What this build of ag runs on this machine, as text: PyTorch's torch.__config__.show()
// (at::show_config() in libtorch). One line each: the CPU and the instruction sets ag's kernels can
// use, ag's threads, and who computes the GEMMs: OpenBLAS, with the core it picked, or ag's own
// kernels (autograd/kernels/gemm.h). Where OpenBLAS runs a core older than the CPU allows
// (OpenBLAS 0.3.21 picks its kernels from a table of CPU models, and gives a CPU it does not know
// its oldest, Prescott), the text says so and names the OPENBLAS_CORETYPE value that would give
// OpenBLAS its fast kernels (what ag's own GEMM kernels do not need; it helps AG_GEMM=openblas).
#pragma once

#include <string>

namespace ag {

std::string config();
// libtorch's name for the same text
inline std::string show_config() { return config(); }
// The line about OpenBLAS's core when it is older than the CPU allows, else "".
std::string blas_core_warning();

}  // namespace ag
