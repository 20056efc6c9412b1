// nn::init: PyTorch's parameter initializers (torch.nn.init), drawing from the generator exactly
// as PyTorch does, so modules built after manual_seed(s) hold PyTorch's numbers.
#pragma once

#include <string>
#include <utility>

#include "../autograd/autograd.h"

namespace ag::nn::init {

// (fan_in, fan_out) of a weight: dims 1 and 0 times the product of the remaining dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

// torch.nn.init.calculate_gain for "linear", "sigmoid", "tanh", "relu", "leaky_relu" (with its
// negative slope as param).
double calculate_gain(const std::string& nonlinearity, double param = 0.01);

// The bound kaiming_uniform_ draws within: gain / sqrt(fan) * sqrt(3), in double as PyTorch
// computes it (for Linear's a = sqrt(5) this often differs from 1/sqrt(fan_in) in the last place).
double kaiming_uniform_bound(int64_t fan, double a, const std::string& nonlinearity = "leaky_relu");

// All of these run under NoGradGuard and return their argument.
Tensor& uniform_(Tensor& t, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
Tensor& normal_(Tensor& t, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
Tensor& kaiming_uniform_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);

// nn.Linear's reset_parameters: kaiming_uniform_(weight, a=sqrt(5)), then bias uniform in
// +-1/sqrt(fan_in). Draw order: all weights row by row, then the biases.
void linear_reset_parameters(Tensor& weight, Tensor* bias, Generator* gen = nullptr);

// nn.Embedding's reset_parameters: normal_(0, 1) over the flattened weight.
void embedding_reset_parameters(Tensor& weight, Generator* gen = nullptr);

}  // namespace ag::nn::init
