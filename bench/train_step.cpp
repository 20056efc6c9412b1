// train_step: one Adam training step of TinyCausalLM, the same model, data and step as
// ../shared/reference/torch_bench.py, timed the same way. Its --json has torch_bench.py's keys
// and the OpenBLAS core that ran (openblas_core) and who computed the GEMMs (gemm: "openblas" or
// ag's own kernel, autograd/kernels/gemm.h); loss_first equals PyTorch's (same initial
// weights, same data, same math).
#include <cblas.h>

#include <map>
#include <tuple>

#include "autograd/kernels/gemm.h"
#include "next_word/model.h"
#include "optim/optimizer.h"
#include "step_bench.h"

using namespace ag;

int main(int argc, char** argv) {
  // size: V, T, d, h, B (torch_bench.py's SIZES), default steps and warmup
  const std::map<std::string, std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>> sizes = {
      {"toy", {6, 5, 16, 2, 1}}, {"small", {256, 64, 128, 4, 16}}, {"medium", {512, 256, 256, 8, 16}}};
  step_bench::Cli cli;
  const int rc = step_bench::parse(argc, argv, "train_step", "Time one Adam step of TinyCausalLM (the C++ side of torch_bench.py)",
                                   {{"toy", {500, 50}}, {"small", {50, 5}}, {"medium", {15, 3}}}, cli);
  if (rc >= 0) return rc;
  set_num_threads(cli.threads);  // OpenBLAS's threads and ag's
  const auto [V, T, d, h, B] = sizes.at(cli.size);

  manual_seed(0);
  next_word::TinyCausalLM model(V, T, d, h, 0.0);
  Tensor idx = randint(0, V, {B, T});
  Tensor targets = randint(0, V, {B, T});
  optim::Adam opt(model.parameters(), {.lr = 1e-3});
  const step_bench::Times times = step_bench::time_steps(cli.warmup, cli.steps, [&]() {
    opt.zero_grad();
    Tensor logits = model.forward(idx);
    Tensor loss = cross_entropy(logits.view({B * T, V}), targets.view({B * T}));
    loss.backward();
    opt.step();
    return loss.item();
  });
  int64_t n_params = 0;
  for (const Tensor& p : model.parameters()) n_params += p.numel();
  step_bench::report("TinyCausalLM", cli, {V, T, d, h, B}, times, n_params,
                     std::string(", \"openblas_core\": \"") + openblas_get_corename() + "\", \"gemm\": \"" +
                         detail::gemm_kernel_name(detail::gemm_kernel()) + "\"");
  return 0;
}
