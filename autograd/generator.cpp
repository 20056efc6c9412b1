#include "autograd/generator.h"

namespace ag {

void Generator::manual_seed(uint64_t seed) {
  seed_ = seed;
  next_double_normal.reset();
  engine_.seed(static_cast<uint32_t>(seed & 0xFFFFFFFFu));
}

Generator& default_generator() {
  // PyTorch starts the default generator from a nondeterministic seed until manual_seed.
  static Generator gen{std::random_device{}()};
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace ag
