#include "nn/module.h"

#include <sstream>
#include <stdexcept>

#include "autograd/kernels/common.h"

namespace ag::nn {

Tensor Parameter(const Tensor& data, bool requires_grad) {
  Tensor p = data.detach();
  if (requires_grad) p.requires_grad_(true);
  p.impl()->is_parameter = true;
  return p;
}

Tensor Module::forward(const Tensor&) {
  throw std::logic_error("[" + type_name_ + "] this module has no single-input forward");
}

static void check_name(const std::string& name, const std::string& owner) {
  if (name.empty() || name.find('.') != std::string::npos) {
    throw std::invalid_argument("[" + owner + "] invalid name \"" + name + "\": names are non-empty and contain no \".\"");
  }
}

Tensor Module::register_parameter(const std::string& name, const Tensor& t, bool requires_grad) {
  check_name(name, type_name_);
  Tensor p = t.impl()->is_parameter ? t : Parameter(t, requires_grad);
  for (auto& [n, v] : params_) {
    if (n == name) {
      v = p;
      return p;
    }
  }
  params_.emplace_back(name, p);
  return p;
}

Tensor Module::register_buffer(const std::string& name, const Tensor& t) {
  check_name(name, type_name_);
  buffers_.emplace_back(name, t);
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> m) {
  check_name(name, type_name_);
  if (!m) throw std::invalid_argument("[" + type_name_ + "] register_module(\"" + name + "\") got a null module");
  children_.emplace_back(name, std::move(m));
}

void Module::collect(const std::string& prefix, bool params, bool recurse, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [n, t] : params ? params_ : buffers_) out.emplace_back(prefix + n, t);
  if (!recurse) return;
  for (const auto& [n, c] : children_) c->collect(prefix + n + ".", params, true, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", true, recurse, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", false, recurse, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [n, c] : children_) out.push_back(c);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::state_dict() const {
  // PyTorch orders a state_dict module by module: a module's own parameters, then its own
  // buffers, then each child's entries.
  std::vector<std::pair<std::string, Tensor>> out;
  struct Walk {
    static void go(const Module& m, const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) {
      for (const auto& [n, t] : m.params_) out.emplace_back(prefix + n, t);
      for (const auto& [n, t] : m.buffers_) out.emplace_back(prefix + n, t);
      for (const auto& [n, c] : m.children_) go(*c, prefix + n + ".", out);
    }
  };
  Walk::go(*this, "", out);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
}

void Module::zero_grad(bool set_to_none) { zero_grads(parameters(), set_to_none); }

// Replaces t's data with a converted copy, keeping the same TensorImpl so every handle (the
// module's, an optimizer's) sees the new dtype.
static void convert_in_place(const Tensor& t, DType dtype) {
  if (!is_floating(t.dtype()) || t.dtype() == dtype) return;
  Tensor c = detail::make_tensor(t.shape(), dtype);
  detail::copy_into(c, t);
  TensorImpl* impl = t.impl();
  impl->storage = c.impl()->storage;
  impl->strides = c.strides();
  impl->offset = 0;
  impl->dtype = dtype;
  impl->grad = nullptr;
}

void Module::to(DType dtype) {
  if (!is_floating(dtype)) throw std::invalid_argument("[" + type_name_ + ".to] expects a floating dtype, got " + dtype_name(dtype));
  for (auto& [n, t] : named_parameters()) convert_in_place(t, dtype);
  for (auto& [n, t] : named_buffers()) convert_in_place(t, dtype);
}

std::string Module::repr() const {
  std::string extra = extra_repr();
  if (children_.empty()) return type_name_ + "(" + extra + ")";
  std::ostringstream os;
  os << type_name_ << "(\n";
  if (!extra.empty()) os << "  " << extra << "\n";
  for (const auto& [n, c] : children_) {
    std::string child = c->repr();
    std::string indented;  // continuation lines of the child get two more spaces
    for (char ch : child) {
      indented += ch;
      if (ch == '\n') indented += "  ";
    }
    os << "  (" << n << "): " << indented << "\n";
  }
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

}  // namespace ag::nn
