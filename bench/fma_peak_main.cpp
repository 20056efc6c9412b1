// fma_peak: this machine's fp32 FMA peak (GFLOP/s) on one core, on min(2, cores) cores, and on
// 256-bit vectors (AVX2) for comparison, measured now, so a benchmark run can quote it beside its
// kernels. One human line per measurement, or with --json one object:
//   {"cpu", "isa", "vector_bits", "seconds", "gflops_1core", "cpu_share_1core", "others_share_1core",
//    "threads_2core", "gflops_2core", "cpu_share_2core", "others_share_2core", "gflops_1core_256" (null without AVX2),
//    "runs": [{"isa", "vector_bits", "threads", "gflops", "cpu_share", "others_share"}, ...]}
// others_share (fma_peak.h) above ~0.1 says other processes used the cores: the figure may be low.
#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "fma_peak.h"

using namespace ag::bench;

int main(int argc, char** argv) {
  cxxopts::Options cli("fma_peak", "Measure this machine's fp32 FMA peak (GFLOP/s)");
  cli.add_options()("seconds", "time per measurement", cxxopts::value<double>()->default_value("0.3"))(
      "threads", "thread counts to measure (default 1 and min(2, cores))", cxxopts::value<std::vector<int>>())(
      "isa", "avx512, avx2, scalar or best", cxxopts::value<std::string>()->default_value("best"))(
      "json", "one JSON object")("h,help", "help");
  double seconds = 0;
  std::vector<int> thread_counts;
  std::string isa;
  bool json = false;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int two = std::min(2, cores);
  try {
    auto a = cli.parse(argc, argv);
    if (a.count("help")) {
      std::cout << cli.help() << "\n";
      return 0;
    }
    seconds = a["seconds"].as<double>();
    if (!(seconds > 0)) throw std::invalid_argument("--seconds must be > 0");
    thread_counts = a.count("threads") ? a["threads"].as<std::vector<int>>() : std::vector<int>{1, two};
    for (int t : thread_counts)
      if (t < 1) throw std::invalid_argument("--threads must be >= 1, got " + std::to_string(t));
    isa = fma_kernel(a["isa"].as<std::string>()).isa;
    json = a.count("json") > 0;
  } catch (const std::exception& e) {
    std::cerr << "fma_peak: " << e.what() << " (see --help)\n";
    return 2;
  }

  // other processes used more than the cores this measurement left idle (+0.1 for noise)
  auto disturbed = [&](const FmaPeak& r) { return r.others_share > 1.0 - std::min(r.threads, cores) / double(cores) + 0.1; };

  // every measurement once: the requested thread counts, 1 and min(2, cores) for the JSON keys,
  // and AVX2 on one thread (gflops_1core_256)
  std::vector<FmaPeak> runs;
  auto run = [&](const std::string& which, int threads) {
    for (const FmaPeak& r : runs)
      if (r.isa == which && r.threads == threads) return r;
    runs.push_back(measure_fma_peak(which, threads, seconds));
    const FmaPeak& r = runs.back();
    if (!json)
      std::printf("%-6s (%3d-bit) %d thread%s: %8.1f GFLOP/s fp32 (cpu share %.2f, other processes %.2f)%s\n", r.isa.c_str(),
                  r.vector_bits, r.threads, r.threads == 1 ? " " : "s", r.gflops, r.cpu_share, r.others_share,
                  disturbed(r) ? " disturbed" : "");
    return r;
  };
  for (int t : thread_counts) run(isa, t);
  const FmaPeak one = run(isa, 1), both = run(isa, two);
  const auto avx2 = supported_fma_isas();
  const bool has_avx2 = std::find(avx2.begin(), avx2.end(), "avx2") != avx2.end();
  const double one_256 = has_avx2 ? run("avx2", 1).gflops : 0;

  if (json) {
    nlohmann::ordered_json j;
    j["cpu"] = cpu_model_name();
    j["isa"] = isa;
    j["vector_bits"] = runs.front().vector_bits;
    j["seconds"] = seconds;
    j["gflops_1core"] = one.gflops;
    j["cpu_share_1core"] = one.cpu_share;
    j["others_share_1core"] = one.others_share;
    j["threads_2core"] = two;
    j["gflops_2core"] = both.gflops;
    j["cpu_share_2core"] = both.cpu_share;
    j["others_share_2core"] = both.others_share;
    j["gflops_1core_256"] = has_avx2 ? nlohmann::ordered_json(one_256) : nlohmann::ordered_json(nullptr);
    j["runs"] = nlohmann::ordered_json::array();
    for (const FmaPeak& r : runs)
      j["runs"].push_back({{"isa", r.isa}, {"vector_bits", r.vector_bits}, {"threads", r.threads}, {"gflops", r.gflops}, {"cpu_share", r.cpu_share},
                           {"others_share", r.others_share}});
    std::cout << j.dump() << "\n";
  } else {
    std::printf("cpu: %s; %d cores: %.2fx one core\n", cpu_model_name().c_str(), two, both.gflops / one.gflops);
  }
  return 0;
}
