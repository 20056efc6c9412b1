// "Learning PyTorch with Examples", PyTorch: Custom nn Modules -- translated line by line from
// pytorch/polynomial_module.py. The polynomial as a Module of its own, trained with SGD;
// tests/test_tutorials.cpp checks that it prints what the PyTorch script prints.
#include <iostream>
#include <numbers>
#include <string>

#include <ag/ag.h>

using namespace ag;

class Polynomial3 : public nn::Module {
 public:
  // In the constructor we instantiate four parameters and register them as
  // member parameters.
  Polynomial3() : nn::Module("Polynomial3") {}
  Tensor a = register_parameter("a", randn({}));
  Tensor b = register_parameter("b", randn({}));
  Tensor c = register_parameter("c", randn({}));
  Tensor d = register_parameter("d", randn({}));

  // In the forward function we accept a Tensor of input data and we must return
  // a Tensor of output data. We can use Modules defined in the constructor as
  // well as arbitrary operators on Tensors.
  Tensor forward(const Tensor& x) override { return a + b * x + c * x.pow(2) + d * x.pow(3); }

  // Just like any class, you can also define custom methods on modules
  std::string string() const {
    return "y = " + py_float_repr(a.item()) + " + " + py_float_repr(b.item()) + " x + " + py_float_repr(c.item()) +
           " x^2 + " + py_float_repr(d.item()) + " x^3";
  }
};

int main() {
  manual_seed(0);

  // Create Tensors to hold input and outputs.
  Tensor x = linspace(-std::numbers::pi, std::numbers::pi, 2000);
  Tensor y = sin(x);

  // Construct our model by instantiating the class defined above
  Polynomial3 model;

  // Construct our loss function and an Optimizer. The call to model.parameters()
  // in the SGD constructor will contain the learnable parameters (registered
  // with register_parameter) which are members of the model.
  nn::MSELoss criterion("sum");
  optim::SGD optimizer(model.parameters(), {.lr = 1e-6});
  for (int t = 0; t < 2000; ++t) {
    // Forward pass: Compute predicted y by passing x to the model
    Tensor y_pred = model(x);

    // Compute and print loss
    Tensor loss = criterion(y_pred, y);
    if (t % 100 == 99) std::cout << t << " " << py_float_repr(loss.item()) << "\n";

    // Zero gradients, perform a backward pass, and update the weights.
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }

  std::cout << "Result: " << model.string() << "\n";
}
