// The per-thread free lists behind pool.h.
#include "autograd/pool.h"

#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define AG_POOL_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AG_POOL_OFF 1
#endif
#endif

namespace ag::detail {

namespace {

constexpr std::size_t kClasses = kPoolMaxBlock / kPoolGranule;

struct FreeBlock {
  FreeBlock* next;
};

// Zero-initialized and trivially destructible, so the fast path has no initialization guard.
thread_local FreeBlock* tl_free[kClasses];
// Bytes on this thread's lists (each block counted at its class's size), kept at most
// kPoolThreadCacheBytes: a thread that frees what others made would otherwise keep all of it.
thread_local std::size_t tl_cached = 0;
// Set once this thread's lists were released at its exit: blocks freed later (static tensors
// destroyed after thread-locals) go straight back to the system.
thread_local bool tl_dead = false;

void* raw_alloc(std::size_t bytes) { return ::operator new(bytes, std::align_val_t(kPoolGranule)); }
void raw_free(void* p) noexcept { ::operator delete(p, std::align_val_t(kPoolGranule)); }

struct Reaper {
  Reaper() = default;
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;
  ~Reaper() {
    for (FreeBlock*& head : tl_free) {
      while (head) {
        FreeBlock* b = head;
        head = b->next;
        raw_free(b);
      }
    }
    tl_cached = 0;
    tl_dead = true;
  }
};

[[maybe_unused]] void ensure_reaper() {
  thread_local Reaper reaper;
  (void)reaper;
}

[[maybe_unused]] bool pooled(std::size_t bytes) { return bytes != 0 && bytes <= kPoolMaxBlock && !tl_dead; }

}  // namespace

std::size_t pool_cached_bytes() { return tl_cached; }

bool pool_enabled() {
#ifdef AG_POOL_OFF
  return false;
#else
  return true;
#endif
}

void* pool_alloc(std::size_t bytes) {
#ifndef AG_POOL_OFF
  if (pooled(bytes)) {
    const std::size_t c = (bytes - 1) / kPoolGranule;
    if (FreeBlock* b = tl_free[c]) {
      tl_free[c] = b->next;
      tl_cached -= (c + 1) * kPoolGranule;
      return b;
    }
    ensure_reaper();
    return raw_alloc((c + 1) * kPoolGranule);
  }
#endif
  return raw_alloc(bytes == 0 ? 1 : bytes);
}

void pool_free(void* p, std::size_t bytes) noexcept {
  if (!p) return;
#ifndef AG_POOL_OFF
  if (pooled(bytes)) {
    const std::size_t c = (bytes - 1) / kPoolGranule;
    const std::size_t size = (c + 1) * kPoolGranule;
    if (tl_cached + size <= kPoolThreadCacheBytes) {
      // A thread that only frees (a consumer) never allocated, so its lists' reaper may not exist
      // yet; the first block of a class makes sure, so its lists are released when it exits.
      if (!tl_free[c]) ensure_reaper();
      FreeBlock* b = static_cast<FreeBlock*>(p);
      b->next = tl_free[c];
      tl_free[c] = b;
      tl_cached += size;
      return;
    }
  }
#else
  (void)bytes;
#endif
  raw_free(p);
}

}  // namespace ag::detail
