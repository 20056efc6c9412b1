// demo: fits y = sin(x) with a two-layer tanh network and plain gradient descent, printing the
// loss as it falls. It shows the whole cycle: build a graph, backward, update under NoGradGuard.
#include <cmath>
#include <cstdio>
#include <vector>

#include "autograd/autograd.h"

int main() {
  using namespace ag;
  manual_seed(0);

  // 64 points of y = sin(x) on [-3, 3]: x (64, 1), y (64, 1)
  Tensor x = arange(-3.0, 3.0, 6.0 / 64, kFloat32).unsqueeze(1);
  std::vector<float> ys = x.to_vector<float>();
  for (float& v : ys) v = std::sin(v);
  Tensor y = from_vector(ys, {64, 1});

  // Parameters, uniform in [-1, 1): w1 (1, 32), b1 (32), w2 (32, 1), b2 (1)
  auto param = [](std::vector<int64_t> shape) { return (rand(shape) * 2.0 - 1.0).detach().requires_grad_(); };
  Tensor w1 = param({1, 32}), b1 = param({32}), w2 = param({32, 1}), b2 = param({1});
  const std::vector<Tensor> params{w1, b1, w2, b2};

  const double lr = 0.1;
  for (int step = 0; step <= 2000; ++step) {
    Tensor pred = matmul(tanh(matmul(x, w1) + b1), w2) + b2;  // (64, 1)
    Tensor loss = mse_loss(pred, y);
    loss.backward();
    {
      NoGradGuard no_grad;
      for (Tensor p : params) {
        p.add_(p.grad(), -lr);  // p -= lr * grad
        p.set_grad(Tensor());            // zero_grad
      }
    }
    if (step % 200 == 0) std::printf("step %4d  loss %.6f\n", step, loss.item());
  }
  return 0;
}
