// parallel_for and set_num_threads (autograd/threads.h, kernels/parallel.h) on std::thread and
// OpenBLAS's thread count.
#include "autograd/kernels/parallel.h"

#include <cblas.h>

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "autograd/threads.h"

namespace ag {

void set_num_threads(int n) {
  if (n < 1) throw std::invalid_argument("set_num_threads: expected a positive number of threads, got " + std::to_string(n));
  openblas_set_num_threads(n);
}

int get_num_threads() { return std::max(1, openblas_get_num_threads()); }

}  // namespace ag

namespace ag::detail {

void parallel_for(int64_t n, double flops_per_item, const std::function<void(int64_t, int64_t)>& f) {
  const int64_t threads = static_cast<double>(n) * flops_per_item < kMinParallelFlops ? 1 : std::min<int64_t>(get_num_threads(), n);
  if (threads <= 1) {
    if (n > 0) f(0, n);
    return;
  }
  // OpenBLAS's own threads would compete with ours: each GEMM runs on the thread that calls it
  const int blas_threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
  auto chunk = [&](int64_t t) {
    try {
      f(n * t / threads, n * (t + 1) / threads);
    } catch (...) {
      errors[static_cast<std::size_t>(t)] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads - 1));
  int64_t started = 1;
  try {
    for (; started < threads; ++started) workers.emplace_back(chunk, started);
  } catch (const std::system_error&) {  // no more threads to be had: the caller runs the rest
  }
  for (int64_t t = started; t < threads; ++t) chunk(t);
  chunk(0);
  for (std::thread& w : workers) w.join();
  openblas_set_num_threads(blas_threads);
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ag::detail
