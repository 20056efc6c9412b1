// "Learning PyTorch with Examples", PyTorch: optim -- translated line by line from
// pytorch/polynomial_optim.py. The nn version with RMSprop doing the updates;
// tests/test_tutorials.cpp checks that it prints what the PyTorch script prints.
#include <iostream>
#include <numbers>

#include <ag/ag.h>

int main() {
  using namespace ag;
  manual_seed(0);

  // Create Tensors to hold input and outputs.
  Tensor x = linspace(-std::numbers::pi, std::numbers::pi, 2000);
  Tensor y = sin(x);

  // Prepare the input tensor (x, x^2, x^3).
  Tensor p = tensor({1, 2, 3});
  Tensor xx = x.unsqueeze(-1).pow(p);

  // Use the nn package to define our model and loss function.
  nn::Sequential model{
      nn::Linear(3, 1),
      nn::Flatten(0, 1)};
  nn::MSELoss loss_fn("sum");

  // Use the optim package to define an Optimizer that will update the weights of
  // the model for us. Here we will use RMSprop; the optim package contains many other
  // optimization algorithms. The first argument to the RMSprop constructor tells the
  // optimizer which Tensors it should update.
  const double learning_rate = 1e-3;
  optim::RMSprop optimizer(model.parameters(), {.lr = learning_rate});
  for (int t = 0; t < 2000; ++t) {
    // Forward pass: compute predicted y by passing x to the model.
    Tensor y_pred = model(xx);

    // Compute and print loss.
    Tensor loss = loss_fn(y_pred, y);
    if (t % 100 == 99) std::cout << t << " " << py_float_repr(loss.item()) << "\n";

    // Before the backward pass, use the optimizer object to zero all of the
    // gradients for the variables it will update (which are the learnable
    // weights of the model). This is because by default, gradients are
    // accumulated in buffers (i.e, not overwritten) whenever backward()
    // is called.
    optimizer.zero_grad();

    // Backward pass: compute gradient of the loss with respect to model
    // parameters
    loss.backward();

    // Calling the step function on an Optimizer makes an update to its
    // parameters
    optimizer.step();
  }

  nn::Linear& linear_layer = model.at<nn::Linear>(0);
  std::cout << "Result: y = " << py_float_repr(linear_layer.bias.item()) << " + "
            << py_float_repr(linear_layer.weight.select(1, 0).item()) << " x + "
            << py_float_repr(linear_layer.weight.select(1, 1).item()) << " x^2 + "
            << py_float_repr(linear_layer.weight.select(1, 2).item()) << " x^3\n";
}
