// The basic layers: Linear, Embedding, Dropout, LayerNorm, and the containers Sequential and
// ModuleList. Constructor arguments, defaults, parameter names and initialization are PyTorch's.
// Includes the activation modules and BatchNorm1d, so this one header gives every layer.
#pragma once

#include <concepts>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "activation.h"
#include "batchnorm.h"
#include "loss.h"
#include "module.h"

namespace ag::nn {

// y = x W^T + b; weight (out_features, in_features), bias (out_features). Initialized as
// nn.Linear: kaiming-uniform weight, then the bias (draws from the default generator).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined when bias=false
};

// Lookup table: ids (*) int64 -> (*, embedding_dim). weight ~ N(0, 1) as nn.Embedding.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& ids) override;
  std::string extra_repr() const override;
  int64_t num_embeddings, embedding_dim;
  Tensor weight;
};

// Inverted dropout in training mode, identity in eval mode.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p;
};

// Normalizes over the trailing normalized_shape dims; weight ones, bias zeros.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool elementwise_affine = true)
      : LayerNorm(std::vector<int64_t>{dim}, eps, elementwise_affine) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::vector<int64_t> normalized_shape;
  double eps;
  Tensor weight, bias;
};

// A module given by value (A deduced from A&& is then a non-reference: an rvalue, to be moved).
template <class A>
concept ModuleValue = std::derived_from<A, Module> && std::same_as<A, std::remove_cv_t<A>>;
// A shared_ptr to a module.
template <class A>
concept ModulePtr = std::is_convertible_v<std::remove_cvref_t<A>, std::shared_ptr<Module>>;

// One element of Sequential{...}: a module by value (moved into a shared_ptr of its own type) or
// a shared_ptr to one. An lvalue module is neither copied nor stolen: it does not convert.
class SequentialItem {
 public:
  template <class M>
    requires ModuleValue<M>
  SequentialItem(M&& m) : module_(std::make_shared<M>(std::move(m))) {}  // NOLINT: converts implicitly
  template <class P>
    requires(ModulePtr<P> && !ModuleValue<std::remove_cvref_t<P>>)
  SequentialItem(P&& p) : module_(std::forward<P>(p)) {}  // NOLINT: converts implicitly
  const std::shared_ptr<Module>& module() const { return module_; }

 private:
  std::shared_ptr<Module> module_;
};

// Children named "0", "1", ...; forward chains them. Built from a braced list of modules,
//   Sequential seq{Linear(4, 8), ReLU(), Linear(8, 2)};
// by value (each moved into a shared_ptr of its own type) or as shared_ptrs, or from a vector of
// shared_ptrs. Braces, not parentheses: the modules of a braced list are built in the order they
// are written, so after manual_seed(0) their weights are PyTorch's. The arguments of a call are
// built in an order the compiler picks (GCC: right to left), so Sequential(Linear(...), ReLU(),
// Linear(...)) would draw the last layer's weights first; that form does not compile (nor does
// make_shared<Sequential>(a, b): write make_shared<Sequential>(Sequential{a, b})). A Sequential
// in the list is nested as a child, as in PyTorch.
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<SequentialItem> modules);
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> m);
  template <ModuleValue M>  // moved into a new shared_ptr<M>
  void push_back(M&& m) {
    push_back(std::make_shared<M>(std::move(m)));
  }
  Tensor forward(const Tensor& x) override;
  std::size_t size() const { return named_children().size(); }
  // PyTorch's model[i]; throws std::out_of_range past the end ("index 5 is out of range").
  std::shared_ptr<Module> operator[](std::size_t i) const;
  // The i-th module as its own type, libtorch's at<M>: model.at<Linear>(0).weight is PyTorch's
  // model[0].weight. Throws std::invalid_argument if that module is not an M.
  template <class M>
  M& at(std::size_t i) const {
    M* m = dynamic_cast<M*>((*this)[i].get());
    if (!m) not_a(i, typeid(M).name());
    return *m;
  }

 private:
  [[noreturn]] void not_a(std::size_t i, const char* mangled_type) const;
};

// Holds submodules, named "0", "1", ...; no forward of its own.
template <class M = Module>
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  void push_back(std::shared_ptr<M> m) {
    items_.push_back(m);
    register_module(std::to_string(items_.size() - 1), m);
  }
  std::size_t size() const { return items_.size(); }
  const std::shared_ptr<M>& operator[](std::size_t i) const { return items_.at(i); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

}  // namespace ag::nn

namespace ag {
// PyTorch's torch.utils.checkpoint.checkpoint_sequential: the modules split into `segments`
// chunks of size() / segments (the last takes the rest); every chunk but the last runs under
// ag::checkpoint (autograd/saved.h), so only its input is kept, and the last runs as usual.
// segments must be between 1 and the number of modules. The modules must outlive the backward
// pass (the recompute runs them again).
Tensor checkpoint_sequential(const nn::Sequential& modules, int64_t segments, const Tensor& input, bool preserve_rng_state = true);
}  // namespace ag
