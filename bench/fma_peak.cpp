// fp32 FMA peak kernels and their timing (see fma_peak.h). Each kernel keeps `chains`
// accumulators in registers and updates each with acc = acc * x + y, x = 0.999, y = 0.001: the
// values stay near 1 (no overflow, no denormals) and the chains are independent, so enough of
// them (latency 4-5 cycles x 2 FMA pipes = 8-10 in flight) keep every FMA pipe busy.
#include "fma_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define AG_FMA_X86 1
#endif

namespace ag::bench {
namespace {

constexpr float kMul = 0.999f, kAdd = 0.001f;

template <std::size_t N>
float sum_lanes(const float (&v)[N]) {
  float s = 0;
  for (float x : v) s += x;
  return s;
}

#ifdef AG_FMA_X86
// 16 zmm accumulators + 2 constants of the 32 zmm registers
constexpr int kChains512 = 16;
__attribute__((target("avx512f"))) float run_avx512(int64_t iterations) {
  const __m512 x = _mm512_set1_ps(kMul), y = _mm512_set1_ps(kAdd);
  __m512 acc[kChains512];
#pragma GCC unroll 16
  for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_set1_ps(1.0f + 0.01f * j);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_fmadd_ps(acc[j], x, y);
  }
#pragma GCC unroll 16
  for (int j = 1; j < kChains512; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  alignas(64) float lanes[16];  // not _mm512_reduce_add_ps: GCC 12 warns inside its header
  _mm512_store_ps(lanes, acc[0]);
  return sum_lanes(lanes);
}

// 12 ymm accumulators + 2 constants of the 16 ymm registers (16 would spill)
constexpr int kChains256 = 12;
__attribute__((target("avx2,fma"))) float run_avx2(int64_t iterations) {
  const __m256 x = _mm256_set1_ps(kMul), y = _mm256_set1_ps(kAdd);
  __m256 acc[kChains256];
#pragma GCC unroll 12
  for (int j = 0; j < kChains256; ++j) acc[j] = _mm256_set1_ps(1.0f + 0.01f * j);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains256; ++j) acc[j] = _mm256_fmadd_ps(acc[j], x, y);
  }
#pragma GCC unroll 12
  for (int j = 1; j < kChains256; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc[0]);
  return sum_lanes(lanes);
}
#endif

// The portable loop: plain floats the compiler vectorizes at the build's baseline width (SSE2 on
// x86-64: 4 lanes, multiply then add, as SSE2 has no FMA; NEON on arm64, where it does fuse).
#if defined(__AVX512F__)
constexpr int kPortableBits = 512;
#elif defined(__AVX__)
constexpr int kPortableBits = 256;
#elif defined(__SSE2__) || defined(__ARM_NEON)
constexpr int kPortableBits = 128;
#else
constexpr int kPortableBits = 32;
#endif
constexpr int kChainsPortable = 12, kPortableLanes = kPortableBits / 32;
float run_portable(int64_t iterations) {
  float acc[kChainsPortable * kPortableLanes];
  for (int j = 0; j < kChainsPortable * kPortableLanes; ++j) acc[j] = 1.0f + 0.01f * static_cast<float>(j / kPortableLanes);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 64
    for (int j = 0; j < kChainsPortable * kPortableLanes; ++j) acc[j] = acc[j] * kMul + kAdd;
  }
  return sum_lanes(acc);
}

bool cpu_runs(const std::string& isa) {
#ifdef AG_FMA_X86
  __builtin_cpu_init();
  if (isa == "avx512") return __builtin_cpu_supports("avx512f");
  if (isa == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return isa == "scalar";
}

using Clock = std::chrono::steady_clock;
// A block is 8192 iterations: ~10-100 us, short enough to stop near the deadline.
constexpr int64_t kBlock = 8192;
std::atomic<float> g_sink{0};

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Busy clock ticks of the whole machine (every CPU) and of this process, or {-1, -1}.
struct Ticks {
  double machine = -1, self = -1;
};
Ticks busy_ticks() {
  Ticks t;
  std::ifstream stat("/proc/stat"), self("/proc/self/stat");
  std::string cpu, comm_and_rest;
  double user, nice, system, idle, iowait, irq, softirq, steal;
  if (stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal && cpu == "cpu")
    t.machine = user + nice + system + irq + softirq + steal;
  // /proc/self/stat: after "(comm)", field 3 onward; utime and stime are fields 14 and 15
  std::getline(self, comm_and_rest);
  std::istringstream rest(comm_and_rest.substr(comm_and_rest.rfind(')') + 1));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  if (rest) t.self = utime + stime;
  return t;
}

}  // namespace

std::vector<std::string> supported_fma_isas() {
  std::vector<std::string> out;
  for (const char* isa : {"avx512", "avx2", "scalar"})
    if (cpu_runs(isa)) out.emplace_back(isa);
  return out;
}

FmaKernel fma_kernel(const std::string& isa_in) {
  const std::string isa = isa_in == "best" ? supported_fma_isas().front() : isa_in;
  if (isa != "avx512" && isa != "avx2" && isa != "scalar")
    throw std::invalid_argument("fma_kernel: unknown ISA '" + isa + "' (expected avx512, avx2, scalar or best)");
  if (!cpu_runs(isa)) throw std::invalid_argument("fma_kernel: this CPU does not run ISA '" + isa + "'");
#ifdef AG_FMA_X86
  if (isa == "avx512") return {isa, 512, kChains512, run_avx512};
  if (isa == "avx2") return {isa, 256, kChains256, run_avx2};
#endif
  return {isa, kPortableBits, kChainsPortable, run_portable};
}

FmaPeak measure_fma_peak(const std::string& isa, int threads, double seconds) {
  if (threads < 1) throw std::invalid_argument("measure_fma_peak: threads must be >= 1, got " + std::to_string(threads));
  if (!(seconds > 0)) throw std::invalid_argument("measure_fma_peak: seconds must be > 0, got " + std::to_string(seconds));
  const FmaKernel k = fma_kernel(isa);
  constexpr int kRounds = 6;
  const auto window = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds / kRounds));
  FmaPeak best{k.isa, k.vector_bits, threads, 0.0, 0.0, -1.0};
  const Ticks ticks0 = busy_ticks();
  const Clock::time_point t0 = Clock::now();
  for (int round = 0; round < kRounds; ++round) {
    // all threads spin until `go`, then run blocks until the shared deadline
    std::atomic<bool> go{false};
    std::vector<int64_t> iterations(static_cast<std::size_t>(threads), 0);
    std::vector<Clock::time_point> ends(static_cast<std::size_t>(threads));
    std::vector<double> cpu(static_cast<std::size_t>(threads), 0.0);
    Clock::time_point start, deadline;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        while (!go.load(std::memory_order_acquire)) {
        }
        const double cpu0 = thread_cpu_seconds();
        float sum = 0;
        int64_t n = 0;
        do {
          sum += k.run(kBlock);
          n += kBlock;
        } while (Clock::now() < deadline);
        ends[static_cast<std::size_t>(t)] = Clock::now();
        cpu[static_cast<std::size_t>(t)] = thread_cpu_seconds() - cpu0;
        iterations[static_cast<std::size_t>(t)] = n;
        g_sink.fetch_add(sum, std::memory_order_relaxed);
      });
    start = Clock::now();
    deadline = start + window;
    go.store(true, std::memory_order_release);
    for (std::thread& th : pool) th.join();
    // total work over the wall time from the start to the last thread's end
    double flops = 0;
    for (int64_t n : iterations) flops += k.flops(n);
    const double wall = std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) - start).count();
    if (flops / wall * 1e-9 > best.gflops) {
      best.gflops = flops / wall * 1e-9;
      double cpu_total = 0;
      for (double c : cpu) cpu_total += c;
      best.cpu_share = cpu_total / (wall * threads);
    }
  }
  const Ticks ticks1 = busy_ticks();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const long hz = sysconf(_SC_CLK_TCK);
  const double cores = static_cast<double>(std::max(1u, std::thread::hardware_concurrency()));
  if (ticks0.machine >= 0 && ticks0.self >= 0 && ticks1.machine >= 0 && ticks1.self >= 0 && hz > 0) {
    const double others = (ticks1.machine - ticks0.machine) - (ticks1.self - ticks0.self);
    best.others_share = std::max(0.0, others / static_cast<double>(hz) / (wall * cores));
  }
  return best;
}

FmaPeak measure_fma_peak(int threads, double seconds) { return measure_fma_peak("best", threads, seconds); }

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto first = line.find_first_not_of(" \t", colon + 1);
    return first == std::string::npos ? "unknown" : line.substr(first);
  }
  return "unknown";
}

}  // namespace ag::bench
