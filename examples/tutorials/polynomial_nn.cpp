// "Learning PyTorch with Examples", PyTorch: nn -- translated line by line from
// pytorch/polynomial_nn.py. The polynomial as a Linear(3, 1) layer on (x, x^2, x^3);
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

  // For this example, the output y is a linear function of (x, x^2, x^3), so
  // we can consider it as a linear layer neural network. Let's prepare the
  // tensor (x, x^2, x^3).
  Tensor p = tensor({1, 2, 3});
  Tensor xx = x.unsqueeze(-1).pow(p);

  // In the above code, x.unsqueeze(-1) has shape (2000, 1), and p has shape
  // (3,), for this case, broadcasting semantics will apply to obtain a tensor
  // of shape (2000, 3)

  // Use the nn package to define our model as a sequence of layers. nn::Sequential
  // is a Module which contains other Modules, and applies them in sequence to
  // produce its output. The Linear Module computes output from input using a
  // linear function, and holds internal Tensors for its weight and bias.
  // The Flatten layer flattens the output of the linear layer to a 1D tensor,
  // to match the shape of `y`.
  nn::Sequential model{
      nn::Linear(3, 1),
      nn::Flatten(0, 1)};

  // The nn package also contains definitions of popular loss functions; in this
  // case we will use Mean Squared Error (MSE) as our loss function.
  nn::MSELoss loss_fn("sum");

  const double learning_rate = 1e-6;
  for (int t = 0; t < 2000; ++t) {
    // Forward pass: compute predicted y by passing x to the model. Modules
    // overload operator() so you can call them like functions. When
    // doing so you pass a Tensor of input data to the Module and it produces
    // a Tensor of output data.
    Tensor y_pred = model(xx);

    // Compute and print loss. We pass Tensors containing the predicted and true
    // values of y, and the loss function returns a Tensor containing the
    // loss.
    Tensor loss = loss_fn(y_pred, y);
    if (t % 100 == 99) std::cout << t << " " << py_float_repr(loss.item()) << "\n";

    // Zero the gradients before running the backward pass.
    model.zero_grad();

    // Backward pass: compute gradient of the loss with respect to all the learnable
    // parameters of the model. Internally, the parameters of each Module are stored
    // in Tensors with requires_grad=true, so this call will compute gradients for
    // all learnable parameters in the model.
    loss.backward();

    // Update the weights using gradient descent. Each parameter is a Tensor, so
    // we can access its gradients like we did before.
    {
      NoGradGuard no_grad;
      for (Tensor param : model.parameters()) param -= learning_rate * param.grad();
    }
  }

  // You can access the first layer of `model` like accessing the first item of a list
  // (at<Linear> gives it as the Linear it is: PyTorch's model[0])
  nn::Linear& linear_layer = model.at<nn::Linear>(0);

  // For linear layer, its parameters are stored as `weight` and `bias`
  // (weight.select(1, i) is weight[:, i]).
  std::cout << "Result: y = " << py_float_repr(linear_layer.bias.item()) << " + "
            << py_float_repr(linear_layer.weight.select(1, 0).item()) << " x + "
            << py_float_repr(linear_layer.weight.select(1, 1).item()) << " x^2 + "
            << py_float_repr(linear_layer.weight.select(1, 2).item()) << " x^3\n";
}
