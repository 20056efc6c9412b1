// Storage: the reference-counted buffer that tensors and their views share.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ag {

// One allocation, 64-byte aligned, plus the version counter that catches in-place writes to
// data autograd saved for backward. Every in-place op bumps `version`; a saved tensor remembers
// the version it was saved at and refuses to be used for backward if it changed.
struct Storage {
  explicit Storage(std::size_t nbytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data = nullptr;
  std::size_t nbytes = 0;
  uint64_t version = 0;
};

namespace detail {
// The largest allocation a Storage attempts: by default the machine's memory plus swap, which is
// what Linux's default overcommit heuristic refuses beyond, so a request PyTorch gets "can't
// allocate memory" for is refused here too, with PyTorch's words, before malloc sees it (under
// AddressSanitizer an oversized malloc would abort instead). The fuzzer lowers it.
std::size_t max_alloc_bytes();
void set_max_alloc_bytes(std::size_t bytes);
// The bytes of the storages made on this thread minus those freed on it (one add per storage):
// a test measures what a graph holds as the drop when the graph is destroyed.
int64_t thread_storage_bytes();
}  // namespace detail

}  // namespace ag
