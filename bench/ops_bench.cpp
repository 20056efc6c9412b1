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

// ---- forward mode (issue 28): an MLP's loss, x (64, 128) -> tanh(x W1) W2 (128, 64) -> cross_entropy

namespace {
std::vector<Tensor> mlp_params() {
  manual_seed(0);
  return {rand({128, 128}) * 0.1, rand({128, 64}) * 0.1};
}
Tensor mlp_loss(const std::vector<Tensor>& p) {
  static const Tensor x = rand({64, 128});
  static const Tensor target = from_vector(std::vector<int64_t>(64, 3), {64});
  return cross_entropy(matmul(tanh(matmul(x, p[0])), p[1]), target);
}
}  // namespace

// arg 0: the plain forward; 1: the forward with one tangent (func::jvp: loss and J u)
static void BM_ForwardModeMlpLoss(benchmark::State& state) {
  const std::vector<Tensor> p = mlp_params();
  const std::vector<Tensor> u{rand({128, 128}), rand({128, 64})};
  for (auto _ : state) {
    if (state.range(0) == 0) benchmark::DoNotOptimize(mlp_loss(p).item());
    else benchmark::DoNotOptimize(func::jvp(mlp_loss, p, u).second.item());
  }
}
BENCHMARK(BM_ForwardModeMlpLoss)->Arg(0)->Arg(1);

// A Hessian-vector product of the MLP loss: arg 0 by the double-vjp trick (functional::hvp),
// 1 forward-over-reverse (func::jvp of ag::grad)
static void BM_HvpMlpLoss(benchmark::State& state) {
  const std::vector<Tensor> p = mlp_params();
  const std::vector<Tensor> v{rand({128, 128}), rand({128, 64})};
  std::vector<Tensor> leaves;
  for (const Tensor& t : p) leaves.push_back(t.detach().requires_grad_());
  const func::Fn grad_w1 = [](const std::vector<Tensor>& xs) { return ag::grad({mlp_loss(xs)}, xs)[0]; };
  for (auto _ : state) {
    if (state.range(0) == 0) benchmark::DoNotOptimize(functional::hvp(mlp_loss, p, v).second[0].data_ptr<float>());
    else benchmark::DoNotOptimize(func::jvp(grad_w1, leaves, v).second.data_ptr<float>());
  }
}
BENCHMARK(BM_HvpMlpLoss)->Arg(0)->Arg(1);

// The Jacobian of a tall function (8 inputs -> 256 outputs) and a wide one (256 -> 8): arg
// {0: tall, 1: wide} x {0: jacfwd, 1: jacrev}. jacfwd should win on the tall one.
static void BM_JacfwdVsJacrev(benchmark::State& state) {
  manual_seed(0);
  const bool wide = state.range(0) == 1;
  const Tensor w = rand(wide ? std::vector<int64_t>{256, 8} : std::vector<int64_t>{8, 256});
  const Tensor x = rand({wide ? 256 : 8});
  const func::Fn f = [&w](const std::vector<Tensor>& in) { return tanh(matmul(in[0], w)); };
  for (auto _ : state) {
    if (state.range(1) == 0) benchmark::DoNotOptimize(func::jacfwd(f, {x})[0].data_ptr<float>());
    else benchmark::DoNotOptimize(func::jacrev(f, {x})[0].data_ptr<float>());
  }
  state.SetLabel(std::string(wide ? "wide" : "tall") + (state.range(1) == 0 ? " jacfwd" : " jacrev"));
}
BENCHMARK(BM_JacfwdVsJacrev)->ArgsProduct({{0, 1}, {0, 1}});

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
