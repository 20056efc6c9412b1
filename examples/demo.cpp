// demo: fits y = sin(x) with a two-layer tanh network and plain gradient descent, printing the
// loss as it falls. It shows the whole cycle: build a graph, backward, update under NoGradGuard.
#include <cxxopts.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include <ag/ag.h>

int main(int argc, char** argv) {
  using namespace ag;
  cxxopts::Options cli("demo", "Fit y = sin(x) with a two-layer network and print the loss");
  cli.add_options()
      ("steps", "training steps", cxxopts::value<int>()->default_value("2000"))
      ("lr", "learning rate", cxxopts::value<double>()->default_value("0.1"))
      ("hidden", "hidden units", cxxopts::value<int>()->default_value("32"))
      ("seed", "random seed", cxxopts::value<uint64_t>()->default_value("0"))
      ("h,help", "show this help");
  int steps = 0, hidden = 0;
  double lr = 0;
  uint64_t seed = 0;
  try {
    auto args = cli.parse(argc, argv);
    if (args.count("help")) {
      std::cout << cli.help() << "\n";
      return 0;
    }
    if (!args.unmatched().empty()) throw std::invalid_argument("unexpected argument '" + args.unmatched()[0] + "'");
    steps = args["steps"].as<int>();
    lr = args["lr"].as<double>();
    hidden = args["hidden"].as<int>();
    seed = args["seed"].as<uint64_t>();
    if (steps < 0) throw std::invalid_argument("--steps must be >= 0, got " + std::to_string(steps));
    if (hidden < 1) throw std::invalid_argument("--hidden must be >= 1, got " + std::to_string(hidden));
    if (!(lr > 0) || !std::isfinite(lr)) throw std::invalid_argument("--lr must be a positive number, got " + std::to_string(lr));
  } catch (const std::exception& e) {
    std::cerr << "demo: " << e.what() << " (see --help)\n";
    return 2;
  }
  manual_seed(seed);

  // 64 points of y = sin(x) on [-3, 3]: x (64, 1), y (64, 1)
  Tensor x = arange(-3.0, 3.0, 6.0 / 64, kFloat32).unsqueeze(1);
  std::vector<float> ys = x.to_vector<float>();
  for (float& v : ys) v = std::sin(v);
  Tensor y = from_vector(ys, {64, 1});

  // Parameters, uniform in [-1, 1): w1 (1, H), b1 (H), w2 (H, 1), b2 (1)
  auto param = [](std::vector<int64_t> shape) { return (rand(shape) * 2.0 - 1.0).detach().requires_grad_(); };
  const int64_t H = hidden;
  Tensor w1 = param({1, H}), b1 = param({H}), w2 = param({H, 1}), b2 = param({1});
  const std::vector<Tensor> params{w1, b1, w2, b2};

  for (int step = 0; step <= steps; ++step) {
    Tensor pred = matmul(tanh(matmul(x, w1) + b1), w2) + b2;  // (64, 1)
    Tensor loss = mse_loss(pred, y);
    loss.backward();
    {
      NoGradGuard no_grad;
      for (Tensor p : params) {
        p.add_(p.grad(), -lr);  // p -= lr * grad
        p.set_grad(Tensor());   // zero_grad
      }
    }
    if (step % std::max(1, steps / 10) == 0 || step == steps) std::printf("step %4d  loss %.6f\n", step, loss.item());
  }
  return 0;
}
