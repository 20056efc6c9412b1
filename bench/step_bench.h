// The command line, timing loop and report that the training-step benchmarks share (train_step's
// CLI and --json keys, those of ../shared/reference/torch_bench.py): --size, --threads, --steps,
// --warmup, --json; the median, min and max ms of the timed steps; peak RSS; the first and last loss.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cxxopts.hpp>
#include <functional>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace step_bench {

struct Cli {
  std::string size;
  int threads = 1, steps = 0, warmup = 0;
  bool json = false;
};

// Parses the shared flags into `cli`. `defaults` maps each accepted size to its default (steps,
// warmup); `check` may throw std::invalid_argument for a further rule. Returns -1 to go on, or the
// exit code to leave with: 0 after --help, 2 after bad input (one line on stderr).
inline int parse(int argc, char** argv, const std::string& program, const std::string& description,
                 const std::map<std::string, std::pair<int, int>>& defaults, Cli& cli,
                 const std::function<void(const Cli&)>& check = {}) {
  std::string sizes;
  for (const auto& [name, _] : defaults) sizes += (sizes.empty() ? "" : ", ") + name;
  cxxopts::Options opts(program, description);
  opts.add_options()("size", sizes, cxxopts::value<std::string>()->default_value(defaults.begin()->first))(
      "threads", "threads (train_step: ag::set_num_threads, OpenBLAS's and ag's)", cxxopts::value<int>()->default_value("1"))("steps", "timed steps", cxxopts::value<int>())(
      "warmup", "untimed steps first", cxxopts::value<int>())("json", "one JSON object like torch_bench.py")("h,help", "help");
  try {
    auto a = opts.parse(argc, argv);
    if (a.count("help")) {
      std::cout << opts.help() << "\n";
      return 0;
    }
    cli.size = a["size"].as<std::string>();
    if (!defaults.count(cli.size)) throw std::invalid_argument("--size must be one of " + sizes + ", got '" + cli.size + "'");
    cli.threads = a["threads"].as<int>();
    if (cli.threads < 1) throw std::invalid_argument("--threads must be >= 1");
    cli.steps = a.count("steps") ? a["steps"].as<int>() : defaults.at(cli.size).first;
    cli.warmup = a.count("warmup") ? a["warmup"].as<int>() : defaults.at(cli.size).second;
    if (cli.steps < 1 || cli.warmup < 0) throw std::invalid_argument("--steps must be >= 1 and --warmup >= 0");
    cli.json = a.count("json") > 0;
    if (check) check(cli);
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << " (see --help)\n";
    return 2;
  }
  return -1;
}

struct Times {
  std::vector<double> ms;  // the timed steps' milliseconds, sorted
  double loss_first = 0, loss_last = 0;
};

// Runs warmup + steps calls of step() (which returns the loss), timing each; the warmup ones are
// not kept. loss_first is the first call's loss.
inline Times time_steps(int warmup, int steps, const std::function<double()>& step) {
  Times r;
  r.ms.reserve(steps);
  for (int i = 0; i < warmup + steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    r.loss_last = step();
    const auto t1 = std::chrono::steady_clock::now();
    if (i == 0) r.loss_first = r.loss_last;
    if (i >= warmup) r.ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(r.ms.begin(), r.ms.end());
  return r;
}

struct Dims {
  int64_t V, T, d, h, B;
};

// One JSON object with torch_bench.py's keys (--json) and then `extra_json` (", \"key\": value"...),
// else two readable lines under `title`.
inline void report(const std::string& title, const Cli& cli, const Dims& m, const Times& t, int64_t n_params,
                   const std::string& extra_json = "") {
  const std::size_t n = t.ms.size();
  const double med = n % 2 ? t.ms[n / 2] : (t.ms[n / 2 - 1] + t.ms[n / 2]) / 2;
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const double rss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  const auto ll = [](int64_t x) { return static_cast<long long>(x); };
  if (cli.json) {
    std::printf(
        "{\"size\": \"%s\", \"V\": %lld, \"T\": %lld, \"d\": %lld, \"h\": %lld, \"B\": %lld, \"threads\": %d, \"steps\": %d, "
        "\"warmup\": %d, \"ms_per_step_median\": %.4f, \"ms_per_step_min\": %.4f, \"ms_per_step_max\": %.4f, "
        "\"steps_per_s\": %.2f, \"peak_rss_mib\": %.1f, \"n_params\": %lld, \"loss_first\": %.5f, \"loss_last\": %.5f%s}\n",
        cli.size.c_str(), ll(m.V), ll(m.T), ll(m.d), ll(m.h), ll(m.B), cli.threads, cli.steps, cli.warmup, med, t.ms.front(),
        t.ms.back(), 1e3 / med, rss_mib, ll(n_params), t.loss_first, t.loss_last, extra_json.c_str());
  } else {
    std::printf("%s size=%s (V=%lld T=%lld d=%lld h=%lld B=%lld) threads=%d\n", title.c_str(), cli.size.c_str(), ll(m.V), ll(m.T),
                ll(m.d), ll(m.h), ll(m.B), cli.threads);
    std::printf("  %.4f ms/step (median of %d, min %.4f max %.4f), %.1f steps/s, peak RSS %.1f MiB, loss %.4f -> %.4f\n", med,
                cli.steps, t.ms.front(), t.ms.back(), 1e3 / med, rss_mib, t.loss_first, t.loss_last);
  }
}

}  // namespace step_bench
