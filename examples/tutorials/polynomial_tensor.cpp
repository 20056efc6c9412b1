// "Learning PyTorch with Examples", PyTorch: Tensors -- translated line by line from
// pytorch/polynomial_tensor.py. Fits y = sin(x) with a third order polynomial, computing the
// gradients by hand; tests/test_tutorials.cpp checks that it prints what the PyTorch script prints.
#include <iostream>
#include <numbers>

#include <ag/ag.h>

int main() {
  using namespace ag;
  manual_seed(0);

  const DType dtype = kFloat32;

  // Create random input and output data
  Tensor x = linspace(-std::numbers::pi, std::numbers::pi, 2000, dtype);
  Tensor y = sin(x);

  // Randomly initialize weights
  Tensor a = randn({}, dtype);
  Tensor b = randn({}, dtype);
  Tensor c = randn({}, dtype);
  Tensor d = randn({}, dtype);

  const double learning_rate = 1e-6;
  for (int t = 0; t < 2000; ++t) {
    // Forward pass: compute predicted y
    Tensor y_pred = a + b * x + c * x.pow(2) + d * x.pow(3);

    // Compute and print loss
    double loss = (y_pred - y).pow(2).sum().item();
    if (t % 100 == 99) std::cout << t << " " << py_float_repr(loss) << "\n";

    // Backprop to compute gradients of a, b, c, d with respect to loss
    Tensor grad_y_pred = 2.0 * (y_pred - y);
    Tensor grad_a = grad_y_pred.sum();
    Tensor grad_b = (grad_y_pred * x).sum();
    Tensor grad_c = (grad_y_pred * x.pow(2)).sum();
    Tensor grad_d = (grad_y_pred * x.pow(3)).sum();

    // Update weights using gradient descent
    a -= learning_rate * grad_a;
    b -= learning_rate * grad_b;
    c -= learning_rate * grad_c;
    d -= learning_rate * grad_d;
  }

  std::cout << "Result: y = " << py_float_repr(a.item()) << " + " << py_float_repr(b.item()) << " x + "
            << py_float_repr(c.item()) << " x^2 + " << py_float_repr(d.item()) << " x^3\n";
}
