// How many threads ag's kernels use, in PyTorch's terms (torch.set_num_threads and
// torch.get_num_threads; at::set_num_threads in libtorch). The threads are ag's own, a pool
// started at first use: they split a large GEMM into slabs of its output (one OpenBLAS call
// each) and the causal attention kernels over the batch and the heads (each matrix computed by
// one thread when there are several, so those results do not depend on the count; a single
// large matrix's GEMMs are split like any other). OpenBLAS itself runs every call on
// the thread that makes it: its own workers spin after each call and took the second core from
// ag's. By default the count is OpenBLAS's at ag's first use: OPENBLAS_NUM_THREADS (or
// OMP_NUM_THREADS) if set, else the number of cores. A split GEMM may differ from the unsplit one
// in the last bits (OpenBLAS may pick other kernels for a slab), as with OpenBLAS's own threads.
#pragma once

namespace ag {

// Sets the number of threads (n >= 1; else std::invalid_argument naming the function).
void set_num_threads(int n);
int get_num_threads();

}  // namespace ag
