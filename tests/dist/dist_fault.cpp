// A data-parallel training loop in which rank 1 fails on purpose at step 3, for
// tests/dist/test_dist_faults.cpp: `throw` (an exception, caught and reported as train_text does),
// `uncaught` (an exception nobody catches), `hang` (rank 1 stops answering; the others' collective
// times out after 2 s).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

#include <ag/ag.h>

using namespace ag;

static void train(const std::string& mode) {
  manual_seed(0);
  nn::Linear net(8, 4);
  dist::DistributedDataParallel ddp(net);
  optim::SGD opt(net.parameters(), {.lr = 0.1});
  for (int step = 0; step < 100; ++step) {
    if (step == 3 && dist::rank() == 1) {
      if (mode == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
      throw std::runtime_error("injected failure at step 3");
    }
    opt.zero_grad();
    ddp.forward(randn({4, 8})).pow(2.0).sum().backward();
    opt.step();
  }
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "throw" && mode != "uncaught" && mode != "hang") {
    std::cerr << "dist_fault: the mode must be throw, uncaught or hang\n";
    return 2;
  }
  dist::InitGuard mpi(&argc, &argv, std::chrono::seconds(2));
  if (mode == "uncaught") {
    train(mode);
    return 0;
  }
  try {
    train(mode);
  } catch (const std::exception& e) {
    // one write: mpirun forwards each write of a rank on its own, and may print its abort
    // banner between two of them
    std::cerr << ("dist_fault: rank " + std::to_string(dist::rank()) + ": " + e.what() + "\n") << std::flush;
    dist::abort(1);
  }
  return 0;
}
