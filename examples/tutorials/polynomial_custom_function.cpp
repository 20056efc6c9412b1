// "Learning PyTorch with Examples", PyTorch: Defining New autograd Functions -- translated line by
// line from pytorch/polynomial_custom_function.py. The fit is y = a + b P3(c + d x), where P3 is
// the third Legendre polynomial, an op of our own with its own forward and backward;
// tests/test_tutorials.cpp checks that it prints what the PyTorch script prints.
#include <iostream>
#include <numbers>
#include <vector>

#include <ag/ag.h>

using namespace ag;

// We can implement our own custom autograd Functions by deriving from ag::Function and
// implementing the forward and backward passes which operate on Tensors.
struct LegendrePolynomial3 : Function<LegendrePolynomial3> {
  // In the forward pass we receive a Tensor containing the input and return a Tensor containing
  // the output. ctx is a context object that can be used to stash information for backward
  // computation. You can cache tensors for use in the backward pass using the
  // ctx->save_for_backward method (and other values in ctx->saved_data).
  static Tensor forward(AutogradContext* ctx, Tensor input) {
    ctx->save_for_backward({input});
    return 0.5 * (5 * input.pow(3) - 3 * input);
  }

  // In the backward pass we receive a Tensor containing the gradient of the loss with respect to
  // the output, and we need to compute the gradient of the loss with respect to the input.
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grad_outputs) {
    Tensor input = ctx->get_saved_variables()[0];
    return {grad_outputs[0] * 1.5 * (5 * input.pow(2) - 1)};
  }
};

int main() {
  manual_seed(0);

  const DType dtype = kFloat32;

  // Create Tensors to hold input and outputs.
  // By default, requires_grad=false, which indicates that we do not need to
  // compute gradients with respect to these Tensors during the backward pass.
  Tensor x = linspace(-std::numbers::pi, std::numbers::pi, 2000, dtype);
  Tensor y = sin(x);

  // Create Tensors for weights. For this example, we need
  // 4 weights: y = a + b * P3(c + d * x), these weights need to be initialized
  // not too far from the correct result to ensure convergence.
  // Setting requires_grad(true) indicates that we want to compute gradients with
  // respect to these Tensors during the backward pass.
  Tensor a = full({}, 0.0, Options(dtype).requires_grad(true));
  Tensor b = full({}, -1.0, Options(dtype).requires_grad(true));
  Tensor c = full({}, 0.0, Options(dtype).requires_grad(true));
  Tensor d = full({}, 0.3, Options(dtype).requires_grad(true));

  const double learning_rate = 5e-6;
  for (int t = 0; t < 2000; ++t) {
    // To apply our Function, we use Function::apply. We alias this as 'P3'.
    auto P3 = [](const Tensor& v) { return LegendrePolynomial3::apply(v); };

    // Forward pass: compute predicted y using operations; we compute
    // P3 using our custom autograd operation.
    Tensor y_pred = a + b * P3(c + d * x);

    // Compute and print loss
    Tensor loss = (y_pred - y).pow(2).sum();
    if (t % 100 == 99) std::cout << t << " " << py_float_repr(loss.item()) << "\n";

    // Use autograd to compute the backward pass.
    loss.backward();

    // Update weights using gradient descent
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

  std::cout << "Result: y = " << py_float_repr(a.item()) << " + " << py_float_repr(b.item()) << " * P3("
            << py_float_repr(c.item()) << " + " << py_float_repr(d.item()) << " x)\n";
}
