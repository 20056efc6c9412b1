// Activations as modules, for Sequential: each forward is the functional op, each prints like
// PyTorch's repr (ReLU(), GELU(approximate='none'), Softmax(dim=1)).
#pragma once

#include <optional>
#include <string>

#include "module.h"

namespace ag::nn {

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override { return tanh(x); }
};

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override { return relu(x); }
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override { return sigmoid(x); }
};

// approximate: "none" (erf) or "tanh"
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none") : Module("GELU"), approximate(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override { return gelu(x, approximate); }
  std::string extra_repr() const override { return "approximate='" + approximate + "'"; }
  std::string approximate;
};

// softmax over `dim`. Without a dim (PyTorch's deprecated dim=None) it picks PyTorch's legacy
// choice: dim 0 for 0-, 1- and 3-dim input, else dim 1 (PyTorch also warns; we do not).
class Softmax : public Module {
 public:
  explicit Softmax(std::optional<int64_t> dim = std::nullopt) : Module("Softmax"), dim(dim) {}
  Tensor forward(const Tensor& x) override {
    const int64_t d = x.dim();
    return softmax(x, dim.value_or(d == 0 || d == 1 || d == 3 ? 0 : 1));
  }
  std::string extra_repr() const override { return "dim=" + (dim ? std::to_string(*dim) : std::string("None")); }
  std::optional<int64_t> dim;
};

// Returns its input (the same tensor).
class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& x) override { return x; }
};

}  // namespace ag::nn
