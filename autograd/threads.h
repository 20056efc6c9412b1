// How many threads ag's kernels use, in PyTorch's terms (torch.set_num_threads and
// torch.get_num_threads; at::set_num_threads in libtorch). One number for both kinds of work:
// OpenBLAS's threads inside a GEMM, and ag's own, which split the causal attention kernels over
// the batch and the heads (each matrix computed by one thread, so the results do not depend on
// the count). By default it is OpenBLAS's: OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS) if set, else
// the number of cores; a program that calls openblas_set_num_threads changes it too.
#pragma once

namespace ag {

// Sets the number of threads (n >= 1; else std::invalid_argument naming the function).
void set_num_threads(int n);
int get_num_threads();

}  // namespace ag
