// The machine's fp32 FMA peak, measured at run time (issue 17), so a benchmark report can put
// its kernels' GFLOP/s beside what the cores can do at best. Independent chains of
// acc = acc * x + y on the widest vectors the CPU runs (AVX-512, else AVX2+FMA, else the
// compiler's portable vectors), chosen with __builtin_cpu_supports, so one binary runs anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ag::bench {

struct FmaPeak {
  std::string isa;  // "avx512", "avx2" or "scalar"
  int vector_bits;  // 512, 256, or the portable loop's vector width
  int threads;
  double gflops;  // summed over threads; one FMA counts as 2 FLOPs
  // CPU time the threads got / (wall time x threads) in the measured round: near 1 when each
  // thread had a core to itself; lower when other processes shared the cores (the figure is then
  // below the machine's peak: with Linux's autogroups another busy session halves a 2-core run)
  double cpu_share = 1.0;
  // CPU time other processes used during the whole measurement / (wall time x cores), from
  // /proc/stat in clock ticks (10 ms: coarse below ~0.2 s); -1 where /proc/stat is missing.
  // Unlike a low cpu_share, which our own bugs (threads serialized) also give, a high value here
  // says the figure is disturbed by others.
  double others_share = -1.0;
};

// One ISA's kernel: run(iterations) issues iterations * chains FMAs on vectors of vector_bits,
// each chain depending only on itself, and returns the sum of the accumulators (so the loop
// cannot be removed).
struct FmaKernel {
  std::string isa;
  int vector_bits;
  int chains;
  float (*run)(int64_t iterations);
  double flops(int64_t iterations) const { return 2.0 * (vector_bits / 32) * chains * static_cast<double>(iterations); }
};

// The ISAs this CPU runs, widest first ("scalar" always last).
std::vector<std::string> supported_fma_isas();
// The kernel of `isa` ("best" = the widest supported); throws std::invalid_argument naming the ISA
// when it is unknown or this CPU cannot run it.
FmaKernel fma_kernel(const std::string& isa);

// fp32 FMA GFLOP/s of `threads` std::threads running `isa`'s kernel at once, summed: the best of
// several rounds of seconds/6 each (the first round warms up; the best one is the least disturbed
// by other processes). Throws std::invalid_argument for threads < 1, seconds <= 0 or a bad ISA.
FmaPeak measure_fma_peak(const std::string& isa, int threads, double seconds = 0.3);
// The same on the widest ISA this CPU runs.
FmaPeak measure_fma_peak(int threads, double seconds = 0.3);

// "model name" from /proc/cpuinfo, or "unknown".
std::string cpu_model_name();

}  // namespace ag::bench
