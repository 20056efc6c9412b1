#include "nn/module.h"

#include <algorithm>
#include <set>
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

void Module::walk(const std::string& prefix, const std::function<void(const Module&, const std::string&)>& fn) const {
  fn(*this, prefix);
  for (const auto& [n, c] : children_) c->walk(prefix + n + ".", fn);
}

bool Module::has_own(const std::string& name) const {
  auto named = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.first == name; });
  };
  return named(params_) || named(buffers_) || named(children_);
}

NamedTensors Module::state_dict() const {
  // PyTorch orders a state_dict module by module: a module's own parameters, then its own
  // buffers, then each child's entries.
  NamedTensors out;
  walk("", [&](const Module& m, const std::string& prefix) {
    for (const auto& [n, t] : m.params_) out.emplace_back(prefix + n, t);
    for (const auto& [n, t] : m.buffers_) out.emplace_back(prefix + n, t);
  });
  return out;
}

static std::string torch_size(const Size& s) {
  std::ostringstream os;
  os << s;  // torch.Size([2, 3])
  return os.str();
}

static std::string quoted_list(const std::vector<std::string>& keys) {
  std::string s;
  for (const auto& k : keys) s += (s.empty() ? "\"" : ", \"") + k + "\"";
  return s;
}

IncompatibleKeys Module::load_state_dict(const NamedTensors& state_dict, bool strict) {
  std::map<std::string, Tensor> given;
  for (const auto& [k, t] : state_dict) {
    if (!given.emplace(k, t).second) throw std::invalid_argument("[load_state_dict] duplicate key \"" + k + "\" in state_dict");
  }
  // PyTorch's _load_from_state_dict, module by module; the copies wait until all is checked.
  IncompatibleKeys keys;
  std::vector<std::string> errors;
  std::vector<std::pair<Tensor, Tensor>> copies;  // (into, from)
  walk("", [&](const Module& m, const std::string& prefix) {
    m.fill_state_dict_defaults(prefix, given);
    for (const auto* own : {&m.params_, &m.buffers_}) {
      for (const auto& [n, t] : *own) {
        auto it = given.find(prefix + n);
        if (it == given.end()) {
          keys.missing_keys.push_back(prefix + n);
          continue;
        }
        Tensor from = it->second;
        detail::check_defined(from, "load_state_dict");
        if (t.dim() == 0 && from.dim() == 1) from = from[0];  // PyTorch's backward compatibility with 0.3
        if (from.shape() != t.shape()) {
          errors.push_back("size mismatch for " + prefix + n + ": copying a param with shape " + torch_size(from.shape()) +
                           " from checkpoint, the shape in current model is " + torch_size(t.shape()) + ".");
          continue;
        }
        copies.emplace_back(t, from);
      }
    }
    for (const auto& [k, t] : state_dict) {  // under this prefix, the next name must be one of m's own
      if (k.rfind(prefix, 0) != 0) continue;
      const std::size_t dot = k.find('.', prefix.size());
      if (!m.has_own(k.substr(prefix.size(), dot == std::string::npos ? std::string::npos : dot - prefix.size()))) {
        keys.unexpected_keys.push_back(k);
      }
    }
  });
  if (strict && !keys.unexpected_keys.empty()) {
    errors.insert(errors.begin(), "Unexpected key(s) in state_dict: " + quoted_list(keys.unexpected_keys) + ". ");
  }
  if (strict && !keys.missing_keys.empty()) {
    errors.insert(errors.begin(), "Missing key(s) in state_dict: " + quoted_list(keys.missing_keys) + ". ");
  }
  if (!errors.empty()) {
    std::string msg = "Error(s) in loading state_dict for " + type_name_ + ":";
    for (const auto& e : errors) msg += "\n\t" + e;
    throw std::runtime_error(msg);
  }
  NoGradGuard no_grad;
  for (auto& [into, from] : copies) into.copy_(from);
  return keys;
}

std::ostream& operator<<(std::ostream& os, const IncompatibleKeys& k) {
  if (k.missing_keys.empty() && k.unexpected_keys.empty()) return os << "<All keys matched successfully>";
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "'" : ", '") + x + "'";
    return "[" + s + "]";
  };
  return os << "_IncompatibleKeys(missing_keys=" << list(k.missing_keys) << ", unexpected_keys=" << list(k.unexpected_keys) << ")";
}

// Depth first from m, skipping modules already listed (PyTorch's memo).
template <class M>
static void named_modules_into(M& m, const std::string& name, std::vector<std::pair<std::string, M*>>& out,
                               std::set<const Module*>& seen) {
  if (!seen.insert(&m).second) return;
  out.emplace_back(name, &m);
  for (const auto& [n, c] : m.named_children()) named_modules_into<M>(*c, name.empty() ? n : name + "." + n, out, seen);
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  std::set<const Module*> seen;
  named_modules_into<Module>(*this, "", out, seen);
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  std::set<const Module*> seen;
  named_modules_into<const Module>(*this, "", out, seen);
  return out;
}

std::vector<Module*> Module::modules() {
  std::vector<Module*> out;
  for (auto& [n, m] : named_modules()) out.push_back(m);
  return out;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  std::set<const Module*> seen;  // PyTorch's children() yields a module registered twice once
  for (auto& [n, c] : children_) {
    if (seen.insert(c.get()).second) c->apply(fn);
  }
  fn(*this);
  return *this;
}

Module& Module::requires_grad_(bool requires_grad) {
  for (Tensor& p : parameters()) p.requires_grad_(requires_grad);
  return *this;
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
