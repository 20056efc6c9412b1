// Compiled with -ffp-contract=off (see CMakeLists.txt): the bounds must round like Python's
// doubles do.
#include "nn/init.h"

#include <cmath>
#include <stdexcept>

namespace ag::nn::init {

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  if (t.dim() < 2) {
    throw std::invalid_argument("[init] fan in and fan out can not be computed for a tensor with fewer than 2 dimensions (shape " +
                                t.shape().str() + ")");
  }
  int64_t field = 1;
  for (int64_t i = 2; i < t.dim(); ++i) field *= t.size(i);
  return {t.size(1) * field, t.size(0) * field};
}

double calculate_gain(const std::string& nl, double param) {
  if (nl == "linear" || nl == "sigmoid" || nl == "conv1d" || nl == "conv2d" || nl == "conv3d") return 1.0;
  if (nl == "tanh") return 5.0 / 3;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  throw std::invalid_argument("[init] unsupported nonlinearity " + nl);
}

double kaiming_uniform_bound(int64_t fan, double a, const std::string& nonlinearity) {
  const double gain = calculate_gain(nonlinearity, a);
  const double std = gain / std::sqrt(static_cast<double>(fan));
  return std::sqrt(3.0) * std;
}

Tensor& uniform_(Tensor& t, double a, double b, Generator* gen) {
  NoGradGuard g;
  return ag::uniform_(t, a, b, gen);
}

Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  NoGradGuard g;
  return ag::normal_(t, mean, std, gen);
}

Tensor& zeros_(Tensor& t) {
  NoGradGuard g;
  return t.zero_();
}

Tensor& ones_(Tensor& t) {
  NoGradGuard g;
  return t.fill_(1.0);
}

Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity, Generator* gen) {
  if (mode != "fan_in" && mode != "fan_out") throw std::invalid_argument("[init] mode " + mode + " not supported, please use one of fan_in, fan_out");
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const int64_t fan = mode == "fan_in" ? fan_in : fan_out;
  if (fan == 0) return t;  // PyTorch warns and leaves a zero-element tensor alone
  const double bound = kaiming_uniform_bound(fan, a, nonlinearity);
  return init::uniform_(t, -bound, bound, gen);
}

void linear_reset_parameters(Tensor& weight, Tensor* bias, Generator* gen) {
  kaiming_uniform_(weight, std::sqrt(5.0), "fan_in", "leaky_relu", gen);
  if (bias && bias->defined()) {
    const int64_t fan_in = calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(*bias, -bound, bound, gen);
  }
}

void embedding_reset_parameters(Tensor& weight, Generator* gen) { init::normal_(weight, 0.0, 1.0, gen); }

}  // namespace ag::nn::init
