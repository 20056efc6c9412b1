// Module: the base of every layer, PyTorch style. A module owns named parameters, buffers and
// child modules, in registration order; names are dotted like PyTorch's (attn.W_query.weight).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "../autograd/autograd.h"

namespace ag::nn {

// A leaf tensor that requires grad and prints as "Parameter containing:", like nn.Parameter.
// The tensor is detached from any history first.
Tensor Parameter(const Tensor& data, bool requires_grad = true);

// Named tensors in order: what state_dict() returns and load_state_dict() takes.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// What load_state_dict returns, as PyTorch's _IncompatibleKeys: the module's keys the dict lacks
// and the dict's keys the module has no place for. Prints as PyTorch's repr.
struct IncompatibleKeys {
  std::vector<std::string> missing_keys, unexpected_keys;
};
std::ostream& operator<<(std::ostream& os, const IncompatibleKeys& k);

class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  // Movable, so a module built as a value can be moved into a container
  // (Sequential{Linear(4, 8), ReLU()}); the moved-from module is left empty.
  Module(Module&&) = default;

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
  NamedTensors state_dict() const;
  // Copies the dict's tensors into the parameters and buffers of the same names, in place under
  // no_grad (every handle to them sees the new values; float dtypes convert). A 1-D tensor loads
  // into a 0-dim one as its first element, as in PyTorch. Throws std::runtime_error with PyTorch's
  // text ("Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: ...") for
  // a size mismatch, and with strict also for missing or unexpected keys (a key is unexpected when
  // the name after its module's prefix is neither a parameter, a buffer nor a child there). Unlike
  // PyTorch, nothing is copied when it throws. Returns the missing and unexpected keys.
  IncompatibleKeys load_state_dict(const NamedTensors& state_dict, bool strict = true);
  // This module ("") and every submodule with its dotted name, depth first in registration order;
  // a module registered twice appears once, under its first name (PyTorch's named_modules).
  std::vector<std::pair<std::string, Module*>> named_modules();
  std::vector<std::pair<std::string, const Module*>> named_modules() const;
  std::vector<Module*> modules();
  // Calls fn on every child's subtree (children first), then on this module, as PyTorch does.
  Module& apply(const std::function<void(Module&)>& fn);
  // Sets requires_grad on every parameter.
  Module& requires_grad_(bool requires_grad = true);

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

  // Called by load_state_dict on each module before its keys are matched, with the module's key
  // prefix ("" or "blocks.0.norm."): a module adds the entries a dict may lack (PyTorch's
  // _load_from_state_dict does this for state dicts without version metadata, as ours are).
  virtual void fill_state_dict_defaults(const std::string& /*prefix*/, std::map<std::string, Tensor>& /*state_dict*/) const {}

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> m);
  void collect(const std::string& prefix, bool params, bool recurse, std::vector<std::pair<std::string, Tensor>>& out) const;
  // Calls fn(module, prefix) on this module and every submodule, depth first, without skipping a
  // module registered twice (state_dict and load_state_dict see it under each name, as PyTorch's).
  void walk(const std::string& prefix, const std::function<void(const Module&, const std::string&)>& fn) const;
  bool has_own(const std::string& name) const;  // a parameter, buffer or child of that name

  std::string type_name_;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace ag::nn
