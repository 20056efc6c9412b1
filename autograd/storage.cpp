#include "autograd/storage.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace ag {

Storage::Storage(std::size_t n) : nbytes(n) {
  if (n == 0) return;
  std::size_t rounded = (n + 63) / 64 * 64;
  data = std::aligned_alloc(64, rounded);
  if (!data) throw std::bad_alloc();
}

Storage::~Storage() { std::free(data); }

}  // namespace ag
