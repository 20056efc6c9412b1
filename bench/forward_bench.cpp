// Forward mode against reverse mode (Google Benchmark), on the loss of train_step's small model
// (TinyCausalLM: vocabulary 256, context 64, dim 128, 4 heads, batch 16), side by side:
//   BM_SmallLoss/forward         the plain forward pass (NoGradGuard)
//   BM_SmallLoss/jvp             the same pass with every parameter carrying a tangent: the loss
//                                and its directional derivative J u (forward mode, NoGradGuard)
//   BM_SmallLossHvp/double_vjp   H v by the double-vjp trick: a create_graph backward, then the
//                                backward of <g, v> (functional::hvp's way)
//   BM_SmallLossHvp/fwd_over_rev H v as the tangent of the gradient: one forward and one backward
//                                pass with the parameters carrying v
// and jacfwd against jacrev on a tall function (8 inputs, 512 outputs) and a wide one (512
// inputs, 8 outputs). Part of ops_bench (with the examples built):
// `./build/bench/ops_bench --benchmark_filter='SmallLoss|Jacobian'`; docs/performance.md has a run.
#include <benchmark/benchmark.h>

#include <vector>

#include "autograd/autograd.h"
#include "autograd/func.h"
#include "next_word/model.h"

using namespace ag;

namespace {

const int64_t V = 256, T = 64, D = 128, H = 4, B = 16;

// The small model, its data, and a tangent (or v) per parameter, all from fixed seeds.
struct SmallLoss {
  int seeded = (manual_seed(0), 0);  // before the model draws its weights, as train_step
  next_word::TinyCausalLM model{V, T, D, H, 0.0};
  Tensor idx, targets;
  std::vector<Tensor> params, values, us;
  SmallLoss() {
    idx = randint(0, V, {B, T});
    targets = randint(0, V, {B, T});
    params = model.parameters();
    for (const Tensor& p : params) {
      values.push_back(p.detach().clone());
      us.push_back(randn_like(p));
    }
  }
  Tensor loss() { return cross_entropy(model.forward(idx).view({B * T, V}), targets.view({B * T})); }
  // Inside a dual level: each parameter takes the tangent us[i] (an in-place copy of a dual
  // tensor gives its destination the tangent), so the model's forward pushes tangents.
  void carry_tangents() {
    NoGradGuard no_grad;
    for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(forward_ad::make_dual(values[i], us[i]));
  }
};

void BM_SmallLoss(benchmark::State& state) {
  SmallLoss s;
  const bool jvp = state.range(0) == 1;
  NoGradGuard no_grad;  // reverse mode off; forward mode is not affected by it
  for (auto _ : state) {
    if (!jvp) {
      benchmark::DoNotOptimize(s.loss().item());
      continue;
    }
    forward_ad::DualLevel level;
    s.carry_tangents();
    const forward_ad::UnpackedDual l = forward_ad::unpack_dual(s.loss());
    benchmark::DoNotOptimize(l.tangent.item());
  }
  state.SetLabel(jvp ? "jvp (loss and J u)" : "forward");
}
BENCHMARK(BM_SmallLoss)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SmallLossHvp(benchmark::State& state) {
  SmallLoss s;
  const bool fwd_over_rev = state.range(0) == 1;
  for (auto _ : state) {
    std::vector<Tensor> hv;
    if (fwd_over_rev) {
      forward_ad::DualLevel level;
      s.carry_tangents();
      for (const Tensor& g : grad({s.loss()}, s.params)) hv.push_back(forward_ad::unpack_dual(g).tangent);
    } else {
      const std::vector<Tensor> g = grad({s.loss()}, s.params, {}, std::nullopt, /*create_graph=*/true);
      Tensor gv = sum(g[0] * s.us[0]);
      for (std::size_t i = 1; i < g.size(); ++i) gv = gv + sum(g[i] * s.us[i]);
      hv = grad({gv}, s.params);
    }
    benchmark::DoNotOptimize(hv[0].data_ptr<float>());
  }
  state.SetLabel(fwd_over_rev ? "forward-over-reverse" : "double vjp");
}
BENCHMARK(BM_SmallLossHvp)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// tall: R^8 -> R^512 (jacfwd: 8 forward passes; jacrev: 512 backward passes); wide: the reverse
void BM_Jacobian(benchmark::State& state) {
  const bool tall = state.range(0) == 1, fwd = state.range(1) == 1;
  manual_seed(0);
  const int64_t n_in = tall ? 8 : 512, n_out = tall ? 512 : 8;
  const Tensor W = randn({n_out, n_in}, kFloat64) / 8.0;
  const Tensor x = randn({n_in}, kFloat64);
  const func::Fn f = [&](const std::vector<Tensor>& in) { return tanh(matmul(W, in[0])); };
  for (auto _ : state) benchmark::DoNotOptimize((fwd ? func::jacfwd(f, {x}) : func::jacrev(f, {x}))[0].data_ptr<double>());
  state.SetLabel(std::string(tall ? "tall 8 -> 512, " : "wide 512 -> 8, ") + (fwd ? "jacfwd" : "jacrev"));
}
BENCHMARK(BM_Jacobian)->ArgsProduct({{1, 0}, {1, 0}})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
