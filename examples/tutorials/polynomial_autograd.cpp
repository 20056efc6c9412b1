// "Learning PyTorch with Examples", PyTorch: Tensors and autograd -- translated line by line from
// pytorch/polynomial_autograd.py. The same fit as polynomial_tensor, with the backward pass done
// by autograd; tests/test_tutorials.cpp checks that it prints what the PyTorch script prints.
#include <iostream>
#include <numbers>

#include <ag/ag.h>

int main() {
  using namespace ag;
  manual_seed(0);

  const DType dtype = kFloat32;

  // Create Tensors to hold input and outputs.
  // By default, requires_grad=false, which indicates that we do not need to
  // compute gradients with respect to these Tensors during the backward pass.
  Tensor x = linspace(-std::numbers::pi, std::numbers::pi, 2000, dtype);
  Tensor y = sin(x);

  // Create random Tensors for weights. For a third order polynomial, we need
  // 4 weights: y = a + b x + c x^2 + d x^3
  // Setting requires_grad(true) indicates that we want to compute gradients with
  // respect to these Tensors during the backward pass.
  Tensor a = randn({}, Options(dtype).requires_grad(true));
  Tensor b = randn({}, Options(dtype).requires_grad(true));
  Tensor c = randn({}, Options(dtype).requires_grad(true));
  Tensor d = randn({}, Options(dtype).requires_grad(true));

  const double learning_rate = 1e-6;
  for (int t = 0; t < 2000; ++t) {
    // Forward pass: compute predicted y using operations on Tensors.
    Tensor y_pred = a + b * x + c * x.pow(2) + d * x.pow(3);

    // Compute and print loss using operations on Tensors.
    // Now loss is a 0-dim Tensor; loss.item() gets the scalar value held in the loss.
    Tensor loss = (y_pred - y).pow(2).sum();
    if (t % 100 == 99) std::cout << t << " " << py_float_repr(loss.item()) << "\n";

    // Use autograd to compute the backward pass. This call will compute the
    // gradient of loss with respect to all Tensors with requires_grad=true.
    // After this call a.grad(), b.grad(), c.grad() and d.grad() will be Tensors holding
    // the gradient of the loss with respect to a, b, c, d respectively.
    loss.backward();

    // Manually update weights using gradient descent. Wrap in NoGradGuard (torch.no_grad())
    // because weights have requires_grad=true, but we don't need to track this
    // in autograd.
    {
      NoGradGuard no_grad;
      a -= learning_rate * a.grad();
      b -= learning_rate * b.grad();
      c -= learning_rate * c.grad();
      d -= learning_rate * d.grad();

      // Manually zero the gradients after updating weights (a.grad = None)
      a.set_grad({});
      b.set_grad({});
      c.set_grad({});
      d.set_grad({});
    }
  }

  std::cout << "Result: y = " << py_float_repr(a.item()) << " + " << py_float_repr(b.item()) << " x + "
            << py_float_repr(c.item()) << " x^2 + " << py_float_repr(d.item()) << " x^3\n";
}
