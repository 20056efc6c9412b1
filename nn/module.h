// Module: the base of every layer, PyTorch style. A module owns named parameters, buffers and
// child modules, in registration order; names are dotted like PyTorch's (attn.W_query.weight).
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autograd.h"

namespace ag::nn {

// A leaf tensor that requires grad and prints as "Parameter containing:", like nn.Parameter.
// The tensor is detached from any history first.
Tensor Parameter(const Tensor& data, bool requires_grad = true);

class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Single-input modules override this; Sequential chains it.
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  // ---- registration (returns what it registered) ----
  Tensor register_parameter(const std::string& name, const Tensor& t, bool requires_grad = true);
  Tensor register_buffer(const std::string& name, const Tensor& t);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }

  // ---- traversal ----
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
  // Parameters then buffers, each with its dotted name, module by module in registration order.
  std::vector<std::pair<std::string, Tensor>> state_dict() const;

  // ---- mode and state ----
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // PyTorch 1.13's default: zero existing gradients in place; set_to_none=true drops them.
  void zero_grad(bool set_to_none = false);
  // Converts floating parameters and buffers in place (every handle to them sees the change).
  void to(DType dtype);

  // ---- printing: the module tree like PyTorch's repr ----
  const std::string& type_name() const { return type_name_; }
  virtual std::string extra_repr() const { return ""; }
  std::string repr() const;

 protected:
  bool training_ = true;

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> m);
  void collect(const std::string& prefix, bool params, bool recurse, std::vector<std::pair<std::string, Tensor>>& out) const;

  std::string type_name_;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace ag::nn
