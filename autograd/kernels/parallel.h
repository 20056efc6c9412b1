// ag's own threads (autograd/threads.h): parallel_for splits a loop over independent items, e.g.
// the matrices of a batched attention, over get_num_threads() threads.
#pragma once

#include <cstdint>
#include <functional>

namespace ag::detail {

// Calls f(begin, end) on contiguous chunks covering [0, n), one chunk per thread (the calling
// thread runs some too), and returns when all are done; with one thread, n < 2, less work than
// waking threads is worth (n * flops_per_item below kMinParallelFlops), or inside another
// parallel_for, it is f(0, n) on the caller. OpenBLAS runs each call on the thread that makes it.
// An exception thrown by f on any thread is rethrown here. f must not allocate tensors: each
// thread works on memory the caller prepared.
void parallel_for(int64_t n, double flops_per_item, const std::function<void(int64_t begin, int64_t end)>& f);

// True on a thread while it runs a chunk of a parallel_for (a GEMM there stays on that thread).
bool in_parallel_region();

// Waking a thread costs microseconds to tens of them; below this much work a loop runs on the caller.
inline constexpr double kMinParallelFlops = 1 << 24;

}  // namespace ag::detail
