// Microbenchmarks of the hot kernels (Google Benchmark). Benchmarks are measured here, never in
// tests: `./build/bench/ops_bench --benchmark_filter=Matmul`.
#include <benchmark/benchmark.h>

#include <cmath>

#include "autograd/autograd.h"
#include "fma_peak.h"
#include "nn/attention.h"

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

// A projection of the medium step, x (4096, 256) @ w^T (256, 256) as linear runs it, on
// get_num_threads() = arg threads: 1 is one OpenBLAS call, 2 splits C's rows into two slabs over
// ag's pool (kernels/blas.cpp). Counter: GFLOP/s (BM_FmaPeak: one core's peak).
static void BM_ProjectionGemmThreads(benchmark::State& state) {
  const int before = get_num_threads();
  set_num_threads(static_cast<int>(state.range(0)));
  manual_seed(0);
  Tensor x = rand({4096, 256}), w = rand({256, 256});
  for (auto _ : state) benchmark::DoNotOptimize(linear(x, w, Tensor()).data_ptr<float>());
  set_num_threads(before);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * 4096 * 256 * 256, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
BENCHMARK(BM_ProjectionGemmThreads)->Arg(1)->Arg(2)->UseRealTime();

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

// The same weights through the fused causal_softmax (same bits as the composed ops above)
static void BM_CausalSoftmaxForwardBackward(benchmark::State& state) {
  const int64_t t = state.range(0);
  manual_seed(0);
  Tensor s = rand({8, t, t}).requires_grad_();
  for (auto _ : state) {
    s.set_grad(Tensor());
    sum(causal_softmax(s, 1.0)).backward();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(8 * t * t * 4), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(BM_CausalSoftmaxForwardBackward)->Arg(5)->Arg(64)->Arg(256);

// softmax over the last dim of (rows, n), forward only
static void BM_SoftmaxForward(benchmark::State& state) {
  const int64_t n = state.range(0), rows = 1024;
  manual_seed(0);
  Tensor x = rand({rows, n});
  for (auto _ : state) benchmark::DoNotOptimize(softmax(x, -1).data_ptr<float>());
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(rows * n * 4), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(BM_SoftmaxForward)->Arg(64)->Arg(256);

// The causal attention core, softmax(masked(q k^T) / sqrt(E)) @ v, forward + backward on
// (B*h = 32, T, E = 32): arg 1 = composed ops (matmul, causal_softmax, matmul), arg 0 = the
// block-skipping causal_qk_softmax and causal_matmul, arg 2 = both in one causal_attention node
// (the same GEMMs; its backward keeps the weights' gradient per matrix in cache). Counter:
// GFLOP/s of the full (unskipped) GEMMs; BM_FmaPeak in the same report is the core's peak.
static void BM_CausalAttentionCore(benchmark::State& state) {
  const int64_t t = state.range(0), e = 32;
  const int64_t variant = state.range(1);
  manual_seed(0);
  Tensor q = randn({32, t, e}).requires_grad_(), k = randn({32, t, e}).requires_grad_(), v = randn({32, t, e}).requires_grad_();
  const double divisor = std::sqrt(static_cast<double>(e));
  for (auto _ : state) {
    for (Tensor* p : {&q, &k, &v}) p->set_grad(Tensor());
    Tensor ctx = variant == 1   ? matmul(causal_softmax(matmul(q, k.transpose(1, 2)), divisor), v)
                 : variant == 0 ? causal_matmul(causal_qk_softmax(q, k, divisor), v)
                                : causal_attention(q, k, v, divisor).out;
    sum(ctx).backward();
  }
  const double flops = 6.0 * 2.0 * 32 * static_cast<double>(t * t * e);  // two GEMMs forward, four backward
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_CausalAttentionCore)->ArgsProduct({{64, 256}, {1, 0, 2}});

// nn::MultiHeadAttention (seed 003's fused causal attention) forward + backward on (B, T, d)
// input, at the small and medium train_step shapes; counter: GFLOP/s of its GEMMs
static void BM_AttentionForwardBackward(benchmark::State& state) {
  const int64_t b = state.range(0), t = state.range(1), d = state.range(2), h = state.range(3);
  manual_seed(0);
  nn::MultiHeadAttention mha(d, d, t, 0.0, h);
  Tensor x = rand({b, t, d}).requires_grad_();
  for (auto _ : state) {
    mha.zero_grad();
    x.set_grad(Tensor());
    sum(mha.forward(x)).backward();
  }
  // forward: 4 projections (2 b t d d each) and 2 attention products (2 b t t d each); backward twice that
  const double flops = 3.0 * (4 * 2.0 * b * t * d * d + 2 * 2.0 * b * t * t * d);
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_AttentionForwardBackward)->Args({16, 64, 128, 4})->Args({4, 256, 256, 8});

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

// The machine's fp32 FMA peak on one thread (fma_peak.h, the widest ISA this CPU runs), so every
// report carries the ceiling beside the kernels above; counter: GFLOP/s
static void BM_FmaPeak(benchmark::State& state) {
  const ag::bench::FmaKernel k = ag::bench::fma_kernel("best");
  constexpr int64_t iterations = 1 << 16;
  float sum = 0;
  for (auto _ : state) {
    sum += k.run(iterations);
    benchmark::DoNotOptimize(sum);
  }
  state.SetLabel(k.isa + " " + std::to_string(k.vector_bits) + "-bit");
  state.counters["GFLOP/s"] = benchmark::Counter(k.flops(iterations), benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
BENCHMARK(BM_FmaPeak);
