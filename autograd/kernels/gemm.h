// ag's own GEMM (issue 29): C = A @ B (+ C), row-major C, A and B read through a transpose flag and
// a leading dimension (detail::MatLayout), in the BLIS / llm.c manner: A and B packed into panels
// that stay in cache, and a register-blocked microkernel per instruction set (AVX-512F, AVX2 with
// FMA, and a portable one), chosen at run time from what the CPU supports (never its model name).
//
// detail::gemm (kernels/blas.cpp) is the one place GEMMs go through. It runs this GEMM wherever the
// CPU has AVX2 and FMA (measured faster than OpenBLAS's AVX2 and AVX-512 kernels on the training
// step's shapes, and whatever core OpenBLAS 0.3.21 picks from its table of CPU models: a CPU it
// does not know gets its oldest, Prescott), and OpenBLAS otherwise. OpenBLAS stays the tested
// reference (tests/test_gemm.cpp), with the textbook loop of matmul_reference.
#pragma once

#include <string>

#include "autograd/kernels/blas.h"

namespace ag::detail {

// Who computes a GEMM: OpenBLAS, or ag's own kernel for one instruction set.
enum class GemmKernel { OpenBLAS, Portable, Avx2, Avx512 };

const char* gemm_kernel_name(GemmKernel k);
// Whether this CPU can run k (OpenBLAS and Portable: always).
bool gemm_kernel_supported(GemmKernel k);
// ag's best kernel for this CPU: Avx512 (AVX-512F), Avx2 (AVX2 and FMA) or Portable.
GemmKernel best_own_gemm_kernel();
// The core OpenBLAS picked (openblas_get_corename()), and whether its kernels use fewer of the
// CPU's instruction sets than ag's best kernel does.
std::string openblas_core();
bool openblas_core_is_older_than_cpu();
// The kernel detail::gemm uses: the environment variable AG_GEMM (openblas, portable, avx2,
// avx512) if set, else ag's best kernel where that is avx512 or avx2, else OpenBLAS.
GemmKernel gemm_kernel();
// Overrides that choice for this process (tests and benchmarks); throws std::invalid_argument for a
// kernel this CPU cannot run. RAII form below.
void set_gemm_kernel(GemmKernel k);
// Back to the automatic choice above.
void reset_gemm_kernel();
class GemmKernelGuard {
 public:
  explicit GemmKernelGuard(GemmKernel k) : prev_(gemm_kernel()) { set_gemm_kernel(k); }
  ~GemmKernelGuard() { set_gemm_kernel(prev_); }
  GemmKernelGuard(const GemmKernelGuard&) = delete;
  GemmKernelGuard& operator=(const GemmKernelGuard&) = delete;

 private:
  GemmKernel prev_;
};

// c (m,n) = a (m,k) @ b (k,n) + beta c by ag's kernel `k` (not OpenBLAS), on the calling thread.
// beta 0 overwrites c without reading it; beta 1 adds to it. A band (blas.h) skips the tiles and
// the terms of the sums its caller does not need. With beta 0 and a bias (n values), c = bias
// (added to every row) + a @ b, as if c held the bias rows and beta were 1 (the same bits).
void own_gemm(GemmKernel k, MatLayout la, MatLayout lb, int m, int n, int kk, const float* a, const float* b, float* c,
              int ldc, float beta, Band band = {}, const float* bias = nullptr);
void own_gemm(GemmKernel k, MatLayout la, MatLayout lb, int m, int n, int kk, const double* a, const double* b, double* c,
              int ldc, double beta, Band band = {}, const double* bias = nullptr);

}  // namespace ag::detail
