#include "autograd/generator.h"

#include <pthread.h>

namespace ag {

Generator::Generator(const Generator& other) {
  std::lock_guard<std::mutex> lock(other.mutex_);
  engine_ = other.engine_;
  seed_ = other.seed_;
  next_double_normal = other.next_double_normal;
}

Generator& Generator::operator=(const Generator& other) {
  if (this == &other) return *this;
  std::scoped_lock lock(mutex_, other.mutex_);  // both, in a deadlock-free order
  engine_ = other.engine_;
  seed_ = other.seed_;
  next_double_normal = other.next_double_normal;
  return *this;
}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  next_double_normal.reset();
  engine_.seed(static_cast<uint32_t>(seed & 0xFFFFFFFFu));
}

uint64_t Generator::initial_seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_;
}

Generator& default_generator() {
  // PyTorch starts the default generator from a nondeterministic seed until manual_seed.
  static Generator gen{std::random_device{}()};
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

namespace {

// fork() copies only the forking thread: a draw on another thread would leave the child's copy
// of the default generator locked forever. The fork waits for that draw to end (a draw holds
// nothing else while locked, so this cannot deadlock) and both sides unlock their copy (a plain
// mutex may be unlocked by the child's thread, which is the forking one).
void lock_before_fork() { default_generator().mutex().lock(); }
void unlock_after_fork() { default_generator().mutex().unlock(); }

// Registered while the program starts, before any thread of its own can fork.
[[maybe_unused]] const bool g_fork_handlers = (pthread_atfork(lock_before_fork, unlock_after_fork, unlock_after_fork), true);

}  // namespace

}  // namespace ag
