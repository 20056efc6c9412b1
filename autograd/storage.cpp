// Storage allocation with a small cache: training repeats the same shapes every step, so freed
// buffers are kept by size and handed out again instead of going back to malloc (large blocks
// would otherwise be mmapped, page-faulted and unmapped on every step). Buffers of at most
// 4 KiB come from the per-thread free lists of pool.h instead.
#include "autograd/storage.h"

#include <cstdlib>
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

}  // namespace

Storage::Storage(std::size_t n) : nbytes(n) {
  if (n == 0) return;
  if (n <= detail::kPoolMaxBlock) {  // small buffers: the per-thread free lists
    data = detail::pool_alloc(n);
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
      return;
    }
  }
  data = std::aligned_alloc(64, rounded);
  if (!data) throw std::bad_alloc();
}

Storage::~Storage() {
  if (!data) return;
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
