// Storage allocation with a small cache: training repeats the same shapes every step, so freed
// buffers are kept by size and handed out again instead of going back to malloc (large blocks
// would otherwise be mmapped, page-faulted and unmapped on every step). Buffers of at most
// 4 KiB come from the per-thread free lists of pool.h instead; those of 4 MiB or more lie in
// transparent huge pages where the kernel grants them (big_block).
#include "autograd/storage.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "autograd/pool.h"

namespace ag {

namespace {

constexpr std::size_t kCacheLimit = std::size_t{256} << 20;  // bytes kept for reuse at most

// False once the cache has been destroyed at exit: storages freed later (by other static
// objects) go straight to free(). A plain bool outlives every object with a destructor.
bool g_cache_alive = true;

struct BlockCache {
  std::mutex mu;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;  // by rounded size
  std::size_t cached = 0;

  ~BlockCache() {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [size, blocks] : free_blocks)
      for (void* p : blocks) std::free(p);
    free_blocks.clear();
    g_cache_alive = false;
  }
};

BlockCache& cache() {
  static BlockCache c;
  return c;
}

// Constructs the cache on first use (so it is destroyed after every storage made before it
// existed) and tells whether it is still there.
bool cache_usable() {
  static const bool constructed = (cache(), true);
  return constructed && g_cache_alive;
}

// fork() copies only the forking thread: a thread holding the cache's lock in the parent would
// leave the child's copy locked for good. The fork waits for the lock (held for a map operation
// only, nothing taken inside it) and both sides unlock their copy.
bool g_locked_for_fork = false;
void lock_cache_before_fork() {
  if (!cache_usable()) return;
  cache().mu.lock();
  g_locked_for_fork = true;
}
void unlock_cache_after_fork() {
  if (!g_locked_for_fork) return;
  g_locked_for_fork = false;
  cache().mu.unlock();
}
// Registered while the program starts, before any thread of its own can fork.
[[maybe_unused]] const bool g_fork_handlers =
    (pthread_atfork(lock_cache_before_fork, unlock_cache_after_fork, unlock_cache_after_fork), true);

std::size_t machine_memory() {
  struct sysinfo si {};
  if (sysinfo(&si) != 0) return SIZE_MAX;
  return (static_cast<std::size_t>(si.totalram) + si.totalswap) * si.mem_unit;
}

std::atomic<std::size_t> g_max_alloc{0};  // 0: not yet read

[[noreturn]] void cannot_allocate(std::size_t n) {
  throw std::runtime_error("DefaultCPUAllocator: can't allocate memory: you tried to allocate " + std::to_string(n) +
                           " bytes. Error code 12 (Cannot allocate memory)");
}

}  // namespace

std::size_t detail::max_alloc_bytes() {
  std::size_t m = g_max_alloc.load(std::memory_order_relaxed);
  if (m == 0) {
    m = machine_memory();
    g_max_alloc.store(m, std::memory_order_relaxed);
  }
  return m;
}

void detail::set_max_alloc_bytes(std::size_t bytes) { g_max_alloc.store(bytes == 0 ? machine_memory() : bytes); }

// The data of every empty storage: never read or written, but not null, so a view of an empty
// tensor at an offset (zeros({0, 100}).narrow(1, 99, 1)) adds its offset to a real address (null
// plus an offset is undefined behaviour, even when nothing is dereferenced).
alignas(64) static char g_empty_block[64];

namespace {
thread_local int64_t g_thread_storage_bytes = 0;

// A block of `bytes` (a multiple of 64) from the C library. From 4 MiB on it starts on a 2 MiB
// boundary, spans whole 2 MiB pages and asks the kernel for transparent huge pages
// (madvise(MADV_HUGEPAGE): the kernel's "madvise" mode of THP, this machine's, grants them only
// so; its "always" mode anyway, "never" not at all). A GEMM that
// reads a large operand down its columns (a weight gradient g^T @ x reads a new row of g, a new
// 4 KiB page, for every term of its sums) otherwise misses the TLB on most of its loads: the
// medium training step ran 3-5% faster with them (docs/performance.md). Where the kernel grants
// none, the block is an ordinary one.
constexpr std::size_t kHugePage = std::size_t(2) << 20;
void* big_block(std::size_t bytes) {
  if (bytes < 2 * kHugePage) return std::aligned_alloc(64, bytes);
  const std::size_t whole = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, whole);
#ifdef MADV_HUGEPAGE
  if (p) madvise(p, whole, MADV_HUGEPAGE);
#endif
  return p;
}
}
int64_t detail::thread_storage_bytes() { return g_thread_storage_bytes; }

Storage::Storage(std::size_t n) : nbytes(n) {
  if (n == 0) {
    data = g_empty_block;
    return;
  }
  if (n > detail::max_alloc_bytes()) cannot_allocate(n);
  if (n <= detail::kPoolMaxBlock) {  // small buffers: the per-thread free lists
    data = detail::pool_alloc(n);
    g_thread_storage_bytes += static_cast<int64_t>(n);
    return;
  }
  const std::size_t rounded = (n + 63) / 64 * 64;
  if (cache_usable()) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.free_blocks.find(rounded);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      data = it->second.back();
      it->second.pop_back();
      c.cached -= rounded;
      g_thread_storage_bytes += static_cast<int64_t>(n);
      return;
    }
  }
  data = big_block(rounded);
  if (!data) cannot_allocate(n);
  g_thread_storage_bytes += static_cast<int64_t>(n);
}

Storage::~Storage() {
  if (!data || nbytes == 0) return;
  g_thread_storage_bytes -= static_cast<int64_t>(nbytes);
  if (nbytes <= detail::kPoolMaxBlock) {
    detail::pool_free(data, nbytes);
    return;
  }
  const std::size_t rounded = (nbytes + 63) / 64 * 64;
  if (cache_usable()) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.cached + rounded <= kCacheLimit) {
      c.free_blocks[rounded].push_back(data);
      c.cached += rounded;
      return;
    }
  }
  std::free(data);
}

}  // namespace ag
