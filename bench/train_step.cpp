// train_step: one Adam training step of TinyCausalLM, the same model, data and step as
// ../shared/reference/torch_bench.py, timed the same way. Its --json has torch_bench.py's keys;
// loss_first equals PyTorch's (same initial weights, same data, same math).
#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <map>
#include <tuple>

#include "next_word/model.h"
#include "optim/optimizer.h"

using namespace ag;

int main(int argc, char** argv) {
  // size: V, T, d, h, B (torch_bench.py's SIZES), default steps and warmup
  const std::map<std::string, std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>> sizes = {
      {"toy", {6, 5, 16, 2, 1}}, {"small", {256, 64, 128, 4, 16}}, {"medium", {512, 256, 256, 8, 16}}};
  const std::map<std::string, std::pair<int, int>> defaults = {{"toy", {500, 50}}, {"small", {50, 5}}, {"medium", {15, 3}}};
  cxxopts::Options cli("train_step", "Time one Adam step of TinyCausalLM (the C++ side of torch_bench.py)");
  cli.add_options()("size", "toy, small or medium", cxxopts::value<std::string>()->default_value("toy"))(
      "threads", "BLAS threads", cxxopts::value<int>()->default_value("1"))("steps", "timed steps", cxxopts::value<int>())(
      "warmup", "untimed steps first", cxxopts::value<int>())("json", "one JSON object like torch_bench.py")("h,help", "help");
  std::string size;
  int threads = 1, steps = 0, warmup = 0;
  bool json = false;
  try {
    auto a = cli.parse(argc, argv);
    if (a.count("help")) {
      std::cout << cli.help() << "\n";
      return 0;
    }
    size = a["size"].as<std::string>();
    if (!sizes.count(size)) throw std::invalid_argument("--size must be toy, small or medium, got '" + size + "'");
    threads = a["threads"].as<int>();
    if (threads < 1) throw std::invalid_argument("--threads must be >= 1");
    steps = a.count("steps") ? a["steps"].as<int>() : defaults.at(size).first;
    warmup = a.count("warmup") ? a["warmup"].as<int>() : defaults.at(size).second;
    if (steps < 1 || warmup < 0) throw std::invalid_argument("--steps must be >= 1 and --warmup >= 0");
    json = a.count("json") > 0;
  } catch (const std::exception& e) {
    std::cerr << "train_step: " << e.what() << " (see --help)\n";
    return 2;
  }
  openblas_set_num_threads(threads);
  const auto [V, T, d, h, B] = sizes.at(size);

  manual_seed(0);
  next_word::TinyCausalLM model(V, T, d, h, 0.0);
  Tensor idx = randint(0, V, {B, T});
  Tensor targets = randint(0, V, {B, T});
  optim::Adam opt(model.parameters(), {.lr = 1e-3});
  auto step = [&]() {
    opt.zero_grad();
    Tensor logits = model.forward2(idx).first;
    Tensor loss = cross_entropy(logits.view({B * T, V}), targets.view({B * T}));
    loss.backward();
    opt.step();
    return loss.item();
  };
  std::vector<double> times;
  double loss0 = 0, loss_last = 0;
  for (int i = 0; i < warmup + steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    loss_last = step();
    const auto t1 = std::chrono::steady_clock::now();
    if (i == 0) loss0 = loss_last;
    if (i >= warmup) times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  const double med = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const double rss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  int64_t n_params = 0;
  for (const Tensor& p : model.parameters()) n_params += p.numel();
  if (json) {
    std::printf(
        "{\"size\": \"%s\", \"V\": %lld, \"T\": %lld, \"d\": %lld, \"h\": %lld, \"B\": %lld, \"threads\": %d, \"steps\": %d, "
        "\"warmup\": %d, \"ms_per_step_median\": %.4f, \"ms_per_step_min\": %.4f, \"ms_per_step_max\": %.4f, "
        "\"steps_per_s\": %.2f, \"peak_rss_mib\": %.1f, \"n_params\": %lld, \"loss_first\": %.5f, \"loss_last\": %.5f, "
        "\"openblas_core\": \"%s\"}\n",
        size.c_str(), static_cast<long long>(V), static_cast<long long>(T), static_cast<long long>(d), static_cast<long long>(h),
        static_cast<long long>(B), threads, steps, warmup, med, sorted.front(), sorted.back(), 1e3 / med, rss_mib,
        static_cast<long long>(n_params), loss0, loss_last, openblas_get_corename());
  } else {
    std::printf("TinyCausalLM size=%s (V=%lld T=%lld d=%lld h=%lld B=%lld) threads=%d\n", size.c_str(), static_cast<long long>(V),
                static_cast<long long>(T), static_cast<long long>(d), static_cast<long long>(h), static_cast<long long>(B), threads);
    std::printf("  %.3f ms/step (median of %d, min %.3f max %.3f), %.1f steps/s, peak RSS %.1f MiB, loss %.4f -> %.4f\n", med,
                steps, sorted.front(), sorted.back(), 1e3 / med, rss_mib, loss0, loss_last);
  }
  return 0;
}
