#include "autograd/config.h"

#include <fstream>

#include "autograd/kernels/gemm.h"
#include "autograd/threads.h"

namespace ag {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown";
}

std::string isas() {
  std::string s;
  if (__builtin_cpu_supports("avx512f")) s += "AVX-512F, ";
  if (__builtin_cpu_supports("avx2")) s += "AVX2, ";
  if (__builtin_cpu_supports("fma")) s += "FMA, ";
  return s.empty() ? "none of AVX-512F, AVX2, FMA" : s.substr(0, s.size() - 2);
}

}  // namespace

std::string blas_core_warning() {
  if (!detail::openblas_core_is_older_than_cpu()) return "";
  const detail::GemmKernel best = detail::best_own_gemm_kernel(), used = detail::gemm_kernel();
  const char* coretype = best == detail::GemmKernel::Avx512 ? "SkylakeX" : "Haswell";
  return "OpenBLAS runs its " + detail::openblas_core() + " kernels on this CPU, older than its " +
         (best == detail::GemmKernel::Avx512 ? "AVX-512F" : "AVX2 and FMA") + " allow (OpenBLAS picks them from a table of CPU models); " +
         (used == detail::GemmKernel::OpenBLAS ? std::string("ag still uses them (AG_GEMM=openblas)")
                                               : std::string("ag computes its GEMMs with its own ") + detail::gemm_kernel_name(used) +
                                                     " kernels instead") +
         ". OPENBLAS_CORETYPE=" + coretype + " would give OpenBLAS its fast kernels.";
}

std::string config() {
  const detail::GemmKernel k = detail::gemm_kernel();
  std::string s = "ag on " + cpu_model() + " (" + isas() + ")\n";
  s += "threads: " + std::to_string(get_num_threads()) + " (ag::set_num_threads)\n";
  s += "GEMM: " + (k == detail::GemmKernel::OpenBLAS ? std::string("OpenBLAS, its ") + detail::openblas_core() + " kernels"
                                                      : std::string("ag's own ") + detail::gemm_kernel_name(k) + " kernels") +
       "\n";
  if (const std::string w = blas_core_warning(); !w.empty()) s += "note: " + w + "\n";
  return s;
}

}  // namespace ag
