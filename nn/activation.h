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

// x * sigmoid(x)
class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& x) override { return silu(x); }
};

// Flattens dims start_dim..end_dim into one (PyTorch's defaults keep the batch dim).
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override { return flatten(x, start_dim, end_dim); }
  std::string extra_repr() const override {
    return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
  }
  int64_t start_dim, end_dim;
};

// Splits dim into the given sizes (one may be -1).
class Unflatten : public Module {
 public:
  Unflatten(int64_t dim, DimVector sizes) : Module("Unflatten"), dim(dim), sizes(std::move(sizes)) {}
  Tensor forward(const Tensor& x) override { return unflatten(x, dim, sizes); }
  std::string extra_repr() const override {
    std::string s = "dim=" + std::to_string(dim) + ", unflattened_size=(";
    for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
    return s + (sizes.size() == 1 ? ",)" : ")");
  }
  int64_t dim;
  DimVector sizes;
};

// Returns its input (the same tensor).
class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& x) override { return x; }
};

}  // namespace ag::nn
