// A free list per block size for the small objects autograd makes by the hundred per training
// step: tensor impls, storages and their small buffers, graph nodes. A toy model's step creates
// about 600 of them; glibc's malloc keeps only 7 free blocks of a size in its fast cache, so most
// of them took its slow paths, and allocation was a third of the step. Here a freed block goes to
// its thread's list for its size class and the next request of that class pops it.
//
// A block freed on another thread than the one that made it goes to the freeing thread's lists:
// a thread that only frees (the consumer of a producer/consumer queue) would gather blocks
// forever, so each thread caches at most kPoolThreadCacheBytes in all and returns the blocks
// beyond that to the system.
//
// Blocks are 64-byte aligned (tensor data needs that). Under AddressSanitizer the pool is off, so
// every block is a fresh allocation and use-after-free stays detectable.
#pragma once

#include <cstddef>
#include <memory>

namespace ag::detail {

constexpr std::size_t kPoolGranule = 64;      // size classes are multiples of this
constexpr std::size_t kPoolMaxBlock = 4096;   // larger blocks bypass the pool
constexpr std::size_t kPoolThreadCacheBytes = std::size_t{4} << 20;  // a thread's lists, all classes

void* pool_alloc(std::size_t bytes);
void pool_free(void* p, std::size_t bytes) noexcept;
bool pool_enabled();  // false under AddressSanitizer
// Bytes on the calling thread's free lists (size classes' sizes), at most kPoolThreadCacheBytes.
std::size_t pool_cached_bytes();

// For std::allocate_shared: the object and its control block in one pooled block.
template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}  // NOLINT: rebinding must be implicit
  T* allocate(std::size_t n) { return static_cast<T*>(pool_alloc(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { pool_free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>&) const noexcept { return true; }
};

template <class T, class... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
  return std::allocate_shared<T>(PoolAllocator<T>(), std::forward<Args>(args)...);
}

}  // namespace ag::detail
