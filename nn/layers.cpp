#include "nn/layers.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "autograd/format.h"
#include "autograd/saved.h"
#include "nn/init.h"

namespace ag::nn {

static std::string bool_str(bool b) { return b ? "True" : "False"; }

Linear::Linear(int64_t in, int64_t out, bool with_bias) : Module("Linear"), in_features(in), out_features(out) {
  if (in < 0 || out < 0) {
    throw std::invalid_argument("[Linear] in_features and out_features must be non-negative, got " + std::to_string(in) +
                                " and " + std::to_string(out));
  }
  weight = register_parameter("weight", empty({out, in}));
  if (with_bias) bias = register_parameter("bias", empty({out}));
  init::linear_reset_parameters(weight, with_bias ? &bias : nullptr);
}

Tensor Linear::forward(const Tensor& x) {
  if (x.dim() == 0 || x.size(-1) != in_features) {
    throw std::invalid_argument("[Linear] input of shape " + x.shape().str() + " does not end in in_features=" +
                                std::to_string(in_features) + " (weight shape " + weight.shape().str() + ")");
  }
  return linear(x, weight, bias);  // any (*, in) input, as F.linear
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", bias=" + bool_str(bias.defined());
}

Embedding::Embedding(int64_t num, int64_t dim) : Module("Embedding"), num_embeddings(num), embedding_dim(dim) {
  if (num < 0 || dim < 0) throw std::invalid_argument("[Embedding] sizes must be non-negative, got " + std::to_string(num) + ", " + std::to_string(dim));
  weight = register_parameter("weight", empty({num, dim}));
  init::embedding_reset_parameters(weight);
}

Tensor Embedding::forward(const Tensor& ids) { return embedding(weight, ids); }

std::string Embedding::extra_repr() const { return std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim); }

Dropout::Dropout(double p_) : Module("Dropout"), p(p_) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw std::invalid_argument("[Dropout] dropout probability has to be between 0 and 1, but got " + py_float_repr(p));
  }
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training()); }

std::string Dropout::extra_repr() const { return "p=" + py_float_repr(p) + ", inplace=False"; }

LayerNorm::LayerNorm(std::vector<int64_t> shape, double eps_, bool affine)
    : Module("LayerNorm"), normalized_shape(std::move(shape)), eps(eps_) {
  if (affine) {
    weight = register_parameter("weight", ones(normalized_shape));
    bias = register_parameter("bias", zeros(normalized_shape));
  }
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, normalized_shape, weight, bias, eps); }

std::string LayerNorm::extra_repr() const {
  std::string s = "(";
  for (std::size_t i = 0; i < normalized_shape.size(); ++i) s += (i ? ", " : "") + std::to_string(normalized_shape[i]);
  if (normalized_shape.size() == 1) s += ",";
  return s + "), eps=" + py_float_repr(eps) + ", elementwise_affine=" + bool_str(weight.defined());
}

Sequential::Sequential(std::initializer_list<SequentialItem> modules) : Module("Sequential") {
  for (const SequentialItem& m : modules) push_back(m.module());
}

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) : Module("Sequential") {
  for (auto& m : modules) push_back(std::move(m));
}

void Sequential::push_back(std::shared_ptr<Module> m) { register_module(std::to_string(size()), std::move(m)); }

std::shared_ptr<Module> Sequential::operator[](std::size_t i) const {
  if (i >= size()) {
    throw std::out_of_range("Sequential: index " + std::to_string(i) + " is out of range (it holds " + std::to_string(size()) +
                            " modules)");
  }
  return named_children()[i].second;
}

void Sequential::not_a(std::size_t i, const char* mangled_type) const {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled_type, nullptr, nullptr, &status), std::free);
  throw std::invalid_argument("Sequential::at: module " + std::to_string(i) + " is a " + (*this)[i]->type_name() + ", not " +
                              (status == 0 ? name.get() : mangled_type));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& [n, m] : named_children()) y = m->forward(y);
  return y;
}

}  // namespace ag::nn

namespace ag {

Tensor checkpoint_sequential(const nn::Sequential& modules, int64_t segments, const Tensor& input, bool preserve_rng_state) {
  const int64_t n = static_cast<int64_t>(modules.size());
  if (segments < 1 || segments > n) {
    throw std::invalid_argument("[checkpoint_sequential] segments must be between 1 and the number of modules (" + std::to_string(n) +
                                "), got " + std::to_string(segments));
  }
  auto run = [&modules](int64_t begin, int64_t end, Tensor x) {
    for (int64_t j = begin; j < end; ++j) x = modules[static_cast<std::size_t>(j)]->forward(x);
    return x;
  };
  const int64_t size = n / segments;
  Tensor x = input;
  int64_t start = 0;
  for (; start < size * (segments - 1); start += size) {
    const int64_t end = start + size;
    x = checkpoint([run, start, end](const std::vector<Tensor>& in) { return std::vector<Tensor>{run(start, end, in[0])}; }, {x},
                   preserve_rng_state)[0];
  }
  return run(start, n, x);
}

}  // namespace ag
