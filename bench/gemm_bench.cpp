// ag's own GEMM kernels (autograd/kernels/gemm.h) beside the OpenBLAS call they replace and the
// textbook loop they compute (matmul_reference's), on every GEMM shape of the small and medium
// training steps (bench/train_step): q, k and v in one GEMM (the weights stacked), out_proj and the head forward (x @ W^T), their input
// gradients (g @ W) and weight gradients (g^T @ x), and attention's per-head products. One thread
// (the kernels; the splitting over threads is blas.cpp's). Counter: GFLOP/s; the label gives this
// core's FMA peak beside it (fma_peak.h, measured once for the report, as BM_FmaPeak in the same
// report; for float64 half the float32 figure).
//   ./build/bench/ops_bench --benchmark_filter=Gemm
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/kernels/gemm.h"
#include "fma_peak.h"

namespace {

using ag::detail::GemmKernel;
using ag::detail::MatLayout;

struct Shape {
  const char* what;
  int m, n, k;
  bool ta, tb;  // a read transposed (g^T), b read transposed (W^T)
};

// V T d h B: small 256 64 128 4 16 (rows B T = 1024, head dim 32), medium 512 256 256 8 16 (4096, 32)
const std::vector<Shape> kShapes = {
    // causal_self_attention: q, k, v in one GEMM with the weights stacked (3d, d), and its backward's
    // dx and stacked dW one GEMM each over the gradients' rows r (B T, 3d)
    {"small q, k, v x @ [Wq; Wk; Wv]^T", 1024, 384, 128, false, true},
    {"small out_proj x @ W^T", 1024, 128, 128, false, true},
    {"small head x @ W^T", 1024, 256, 128, false, true},
    {"small q, k, v dx = r @ [Wq; Wk; Wv]", 1024, 128, 384, false, false},
    {"small out_proj dx = g @ W", 1024, 128, 128, false, false},
    {"small head dx = g @ W", 1024, 128, 256, false, false},
    {"small q, k, v dW = r^T @ x", 384, 128, 1024, true, false},
    {"small out_proj dW = g^T @ x", 128, 128, 1024, true, false},
    {"small head dW = g^T @ x", 256, 128, 1024, true, false},
    {"small attention q @ k^T (one head)", 64, 64, 32, false, true},
    {"small attention w @ v, ds @ k (one head)", 64, 32, 64, false, false},
    {"medium q, k, v x @ [Wq; Wk; Wv]^T", 4096, 768, 256, false, true},
    {"medium out_proj x @ W^T", 4096, 256, 256, false, true},
    {"medium head x @ W^T", 4096, 512, 256, false, true},
    {"medium q, k, v dx = r @ [Wq; Wk; Wv]", 4096, 256, 768, false, false},
    {"medium out_proj dx = g @ W", 4096, 256, 256, false, false},
    {"medium head dx = g @ W", 4096, 256, 512, false, false},
    {"medium q, k, v dW = r^T @ x", 768, 256, 4096, true, false},
    {"medium out_proj dW = g^T @ x", 256, 256, 4096, true, false},
    {"medium head dW = g^T @ x", 512, 256, 4096, true, false},
    {"medium attention q @ k^T (one head)", 256, 256, 32, false, true},
    {"medium attention w @ v, ds @ k (one head)", 256, 32, 256, false, false},
};

double fp32_peak() {
  static const double peak = ag::bench::measure_fma_peak(1, 0.3).gflops;
  return peak;
}

// kernel: 0 OpenBLAS, 1 ag's best for this CPU, 2 the textbook loop (matmul_reference's), 3 ag's
// AVX2 kernel where the best is another (the AVX-512 one), so both can be compared on one machine
template <class T>
void BM_Gemm(benchmark::State& state) {
  const Shape& s = kShapes[static_cast<std::size_t>(state.range(0))];
  const int which = static_cast<int>(state.range(1));
  const ag::DType dt = sizeof(T) == 4 ? ag::kFloat32 : ag::kFloat64;
  ag::manual_seed(0);
  const ag::Tensor a = s.ta ? ag::randn({s.k, s.m}, dt).t() : ag::randn({s.m, s.k}, dt);
  const ag::Tensor b = s.tb ? ag::randn({s.n, s.k}, dt).t() : ag::randn({s.k, s.n}, dt);
  ag::Tensor c = ag::zeros({s.m, s.n}, dt);
  const MatLayout la{s.ta, s.ta ? s.m : s.k}, lb{s.tb, s.tb ? s.k : s.n};
  const T* pa = static_cast<const T*>(a.impl()->storage->data);
  const T* pb = static_cast<const T*>(b.impl()->storage->data);
  T* pc = c.data_ptr<T>();
  const GemmKernel own = which == 3 ? GemmKernel::Avx2 : ag::detail::best_own_gemm_kernel();
  if (which == 3 && (ag::detail::best_own_gemm_kernel() == GemmKernel::Avx2 || !ag::detail::gemm_kernel_supported(GemmKernel::Avx2))) {
    state.SkipWithError("ag's AVX2 kernel is the best here (kernel 1) or cannot run");
    return;
  }
  const int threads = ag::get_num_threads();
  ag::set_num_threads(1);
  for (auto _ : state) {
    if (which == 0) {
      ag::detail::GemmKernelGuard g(GemmKernel::OpenBLAS);
      ag::detail::gemm(la, lb, s.m, s.n, s.k, pa, pb, pc, s.n, T(0));
    } else if (which == 1 || which == 3) {
      ag::detail::own_gemm(own, la, lb, s.m, s.n, s.k, pa, pb, pc, s.n, T(0));
    } else {
      benchmark::DoNotOptimize(ag::matmul_reference(a, b).data_ptr<T>());
    }
    benchmark::ClobberMemory();
  }
  ag::set_num_threads(threads);
  const double flops = 2.0 * s.m * s.n * s.k;
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  const double peak = sizeof(T) == 4 ? fp32_peak() : fp32_peak() / 2;
  state.SetLabel(std::string(s.what) + ", " +
                 (which == 0 ? "OpenBLAS " + ag::detail::openblas_core()
                  : which != 2 ? std::string("ag ") + gemm_kernel_name(own)
                               : std::string("textbook loop")) +
                 " (core peak " + std::to_string(static_cast<int>(peak + 0.5)) + " GFLOP/s)");
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int i = 0; i < static_cast<int>(kShapes.size()); ++i)
    for (int which : {0, 1, 2, 3}) b->Args({i, which});
}
BENCHMARK(BM_Gemm<float>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Gemm<double>)->Apply([](benchmark::internal::Benchmark* b) {
  for (int i : {0, 3, 7}) b->Args({i, 0})->Args({i, 1});  // float64 on three shapes, no textbook loop
})->Unit(benchmark::kMicrosecond);

}  // namespace
