// The random generator: PyTorch's CPU generator (an mt19937 engine) so that the same seed gives
// the same numbers as torch.manual_seed. See ../shared/docs/torch-rng.md for the bit-exact spec.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <random>

namespace ag {

// Threads may share a generator (the default one above all): every random op holds mutex() for
// its whole call, as PyTorch's CPU generator does, so one call's numbers are consecutive in the
// stream whatever other threads draw. The single draws below (random, unit_float, ...) do not lock
// (a lock per number would cost more than the number); code that calls them on a generator other
// threads use holds mutex() around them.
class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;  // torch.Generator()'s seed
  explicit Generator(uint64_t seed = kDefaultSeed) { manual_seed(seed); }
  // A copy is a snapshot of the state (seed, engine, cached normal), taken under the source's
  // lock, with a mutex of its own; assigning one back restores the state (torch.get_rng_state /
  // set_rng_state in one step, each safe against draws on other threads).
  Generator(const Generator& other);
  Generator& operator=(const Generator& other);

  // Reseeds the engine with the low 32 bits of `seed` (as PyTorch does) and clears the
  // cached normal value. A negative seed wraps as two's complement, as in PyTorch. Locks.
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const;  // locks

  // Held by every random op for its whole call (PyTorch's gen.mutex()).
  std::mutex& mutex() const { return mutex_; }

  uint32_t random() { return static_cast<uint32_t>(engine_()); }
  // Two draws, the first is the high word.
  uint64_t random64() {
    uint64_t hi = random();
    uint64_t lo = random();
    return (hi << 32) | lo;
  }
  // Uniform in [0, 1): 24 low bits of one draw (float32) or 53 low bits of random64() (float64).
  float unit_float() { return static_cast<float>(random() & 0xFFFFFFu) * 0x1.0p-24f; }
  double unit_double() { return static_cast<double>(random64() & ((1ULL << 53) - 1)) * 0x1.0p-53; }

  // The second value of the last scalar Box-Muller pair, used by the next scalar-path normal
  // (of any dtype, mean or std). manual_seed clears it.
  std::optional<double> next_double_normal;

 private:
  mutable std::mutex mutex_;
  std::mt19937 engine_;
  uint64_t seed_ = kDefaultSeed;
};

// The global generator every random function uses when none is passed. A fork() waits for a
// draw in progress on it to end, so the child's copy is never left locked.
Generator& default_generator();
// torch.manual_seed(seed)
void manual_seed(uint64_t seed);

}  // namespace ag
