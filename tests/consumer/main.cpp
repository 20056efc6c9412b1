// A program outside ag's source tree, built against an installed ag the way a user builds one:
// find_package(ag), ag::ag, and nothing but #include <ag/ag.h>. tools/test_all.sh installs ag into
// a temporary prefix, builds this project against it, runs it and compares what it prints with
// tests/golden/consumer.txt, which tools/golden/consumer.py makes by running the same steps in PyTorch.
#include <iostream>

#include <ag/ag.h>

int main() {
  using namespace ag;
  manual_seed(0);
  nn::Linear lin(3, 2);
  optim::SGD opt(lin.parameters(), {.lr = 0.05, .momentum = 0.9});
  Tensor x = tensor({{1.0, 2.0, 3.0}, {-1.0, 0.5, 2.0}});
  Tensor target = tensor({{1.0, 0.0}, {0.0, 1.0}});
  std::cout << lin << "\n";
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    Tensor loss = mse_loss(lin(x), target);
    loss.backward();
    opt.step();
    std::cout << "step " << step << " loss " << loss.detach() << "\n";
  }
  std::cout << "weight.grad\n" << lin.weight.grad() << "\n";
  std::cout << "weight\n" << lin.weight.detach() << "\n";
  return 0;
}
