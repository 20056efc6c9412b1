// Microbenchmarks of the hot kernels (Google Benchmark). Benchmarks are measured here, never in
// tests: `./build/bench/ops_bench --benchmark_filter=Matmul`.
#include <benchmark/benchmark.h>

#include "autograd/autograd.h"

using namespace ag;

// a (n,n) @ b (n,n) forward; counter: GFLOP/s
static void BM_MatmulForward(benchmark::State& state) {
  const int64_t n = state.range(0);
  manual_seed(0);
  Tensor a = rand({n, n}), b = rand({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b).data_ptr<float>());
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
BENCHMARK(BM_MatmulForward)->Arg(16)->Arg(128)->Arg(256);

// forward + backward of sum(a @ b) with both inputs requiring grad: three GEMMs
static void BM_MatmulForwardBackward(benchmark::State& state) {
  const int64_t n = state.range(0);
  manual_seed(0);
  Tensor a = rand({n, n}).requires_grad_(), b = rand({n, n}).requires_grad_();
  for (auto _ : state) {
    a.set_grad(Tensor());
    b.set_grad(Tensor());
    sum(matmul(a, b)).backward();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(6.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
BENCHMARK(BM_MatmulForwardBackward)->Arg(16)->Arg(128)->Arg(256);

// causal-masked softmax over (B*h, T, T) scores, forward + backward; counter: bytes of scores
static void BM_MaskedSoftmaxForwardBackward(benchmark::State& state) {
  const int64_t t = state.range(0);
  manual_seed(0);
  Tensor s = rand({8, t, t}).requires_grad_();
  Tensor mask = triu(ones({t, t}), 1).bool_();
  for (auto _ : state) {
    s.set_grad(Tensor());
    sum(softmax(masked_fill(s, mask, -INFINITY), -1)).backward();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(8 * t * t * 4), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(BM_MaskedSoftmaxForwardBackward)->Arg(5)->Arg(64)->Arg(256);

// cross_entropy over (N, V) logits, forward + backward
static void BM_CrossEntropyForwardBackward(benchmark::State& state) {
  const int64_t n = state.range(0), v = 256;
  manual_seed(0);
  Tensor logits = rand({n, v}).requires_grad_();
  std::vector<int64_t> ids(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = (i * 7) % v;
  Tensor target = from_vector(ids, {n});
  for (auto _ : state) {
    logits.set_grad(Tensor());
    cross_entropy(logits, target).backward();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(n * v * 4), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(BM_CrossEntropyForwardBackward)->Arg(5)->Arg(1024);
