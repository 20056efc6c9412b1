// ag's own threads (autograd/threads.h): parallel_for splits a loop over independent items, e.g.
// the matrices of a batched attention, over get_num_threads() threads.
#pragma once

#include <cstdint>
#include <functional>

namespace ag::detail {

// Calls f(begin, end) on contiguous chunks covering [0, n), one chunk per thread (the calling
// thread runs the first), and returns when all are done; with one thread, n < 2, or less work
// than starting threads is worth (n * flops_per_item below kMinParallelFlops), it is f(0, n) on
// the caller. Meanwhile OpenBLAS runs each call on the thread that makes it (its own
// thread count is restored after). An exception thrown by f on any thread is rethrown here.
// f must not allocate tensors: each thread works on memory the caller prepared.
void parallel_for(int64_t n, double flops_per_item, const std::function<void(int64_t begin, int64_t end)>& f);

// Starting a thread costs tens of microseconds; below this much work a loop runs on the caller.
inline constexpr double kMinParallelFlops = 1 << 24;

}  // namespace ag::detail
