// Custom autograd Functions (function.h): what Function<T>::apply does around the user's forward
// -- which outputs get a history, what is saved and how -- and the node's backward around the
// user's backward: missing gradients as zeros, then PyTorch's checks of what backward returned.
#include "autograd/function.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "autograd/ops.h"

namespace ag {

// ---- IValue ----

std::string IValue::tagKind() const {
  static const char* const kinds[] = {"None", "Double", "Int", "Bool", "String", "Tensor", "IntList"};
  return kinds[v_.index()];
}

void IValue::wrong_kind(const char* expected) const {
  throw std::runtime_error(std::string("[IValue] expected ") + expected + " but got " + tagKind());
}

// ---- AutogradContext ----

void AutogradContext::save_for_backward(std::vector<Tensor> to_save) { to_save_ = std::move(to_save); }

std::vector<Tensor> AutogradContext::get_saved_variables() const {
  if (in_jvp_) return for_forward_;
  std::vector<Tensor> out;
  out.reserve(saved_.size());
  for (const SavedTensor& s : saved_) out.push_back(s.get());
  return out;
}

void AutogradContext::mark_non_differentiable(const std::vector<Tensor>& outputs) {
  for (const Tensor& t : outputs)
    if (t.defined()) non_differentiable_.push_back(t.impl());
}

void AutogradContext::mark_dirty(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (t.defined()) dirty_.push_back(t.impl());
}

bool AutogradContext::needs_input_grad(std::size_t output_edge_index) const {
  if (output_edge_index >= needs_input_grad_.size()) {
    throw std::out_of_range("[" + std::string(name_) + "] needs_input_grad(" + std::to_string(output_edge_index) +
                            "): the function has " + std::to_string(needs_input_grad_.size()) +
                            " Tensor inputs (the index counts Tensor arguments only)");
  }
  return needs_input_grad_[output_edge_index];
}

namespace detail {

std::string custom_function_class_name(const std::type_info& t) {
  int status = 0;
  char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string full = status == 0 && d ? d : t.name();
  std::free(d);
  // the part after the last "::" outside <...> and (...): "ns::(anonymous namespace)::Fn" -> "Fn",
  // "Test_Body()::Fn" -> "Fn", "ns::Fn<ns::A>" -> "Fn<ns::A>"
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    const char c = full[i];
    if (c == '<' || c == '(') ++depth;
    else if (c == '>' || c == ')') --depth;
    else if (depth == 0 && c == ':' && i + 1 < full.size() && full[i + 1] == ':') start = i + 2;
  }
  return full.substr(start);
}

namespace {

bool contains(const std::vector<const TensorImpl*>& v, const TensorImpl* p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

// Whether a tensor of shape `from` broadcasts to `to` (so a gradient of shape `to` sums back).
bool expandable_to(const Size& from, const Size& to) {
  if (from.size() > to.size()) return false;
  for (int64_t i = 1; i <= from.size(); ++i) {
    const int64_t a = from[from.size() - i], b = to[to.size() - i];
    if (a != b && a != 1) return false;
  }
  return true;
}

struct OutputInfo {
  bool defined = false;
  Size shape;
  DType dtype = kFloat32;
};

struct InputInfo {
  bool needs_grad = false;
  Size shape;
  DType dtype = kFloat32;
};

// The node's backward: the user's backward between PyTorch's preparation of its arguments
// (CppNode::apply: zeros for missing gradients) and PyTorch's checks of its results (the count,
// non-Tensor arguments, then validate_outputs: shape, reduced if it broadcasts, and dtype).
struct CustomNodeBackward {
  std::shared_ptr<AutogradContext> ctx;
  std::string_view name;
  CustomBackward backward;
  std::vector<bool> is_tensor;  // per forward argument
  std::vector<InputInfo> inputs;
  std::vector<OutputInfo> outputs;

  Grads operator()(const std::vector<Tensor>& grad_outputs) const {
    std::vector<Tensor> gs(grad_outputs);
    for (std::size_t k = 0; k < gs.size(); ++k) {
      if (!gs[k].defined() && CustomCall::materialize_grads(*ctx) && outputs[k].defined)
        gs[k] = zeros(outputs[k].shape.vec(), outputs[k].dtype);
    }
    std::vector<Tensor> r = backward(ctx.get(), std::move(gs));
    const std::size_t n = is_tensor.size();
    // extra gradients are fine as long as they are all undefined (libtorch and PyTorch)
    if (r.size() > n && std::all_of(r.begin() + static_cast<std::ptrdiff_t>(n), r.end(),
                                    [](const Tensor& t) { return !t.defined(); }))
      r.resize(n);
    if (r.size() != n) {
      throw std::runtime_error("function " + std::string(name) + " returned an incorrect number of gradients (expected " +
                               std::to_string(n) + ", got " + std::to_string(r.size()) + ")");
    }
    Grads out;
    out.reserve(inputs.size());
    for (std::size_t i = 0, j = 0; i < n; ++i) {
      Tensor& g = r[i];
      if (!is_tensor[i]) {
        if (g.defined()) {
          throw std::runtime_error("function " + std::string(name) + " returned a gradient different than None at position " +
                                   std::to_string(i + 1) + ", but the corresponding forward input was not a Variable");
        }
        continue;
      }
      const InputInfo& in = inputs[j++];
      if (!g.defined() || !in.needs_grad) {  // the engine drops a gradient for an input that needs none
        out.push_back(Tensor());
        continue;
      }
      if (g.shape() != in.shape) {
        if (!expandable_to(in.shape, g.shape())) {
          throw std::runtime_error("Function " + std::string(name) + " returned an invalid gradient at index " +
                                   std::to_string(j - 1) + " - got " + g.shape().str() +
                                   " but expected shape compatible with " + in.shape.str());
        }
        g = sum_to(g, in.shape);
      }
      if (g.dtype() != in.dtype) g = g.to(in.dtype);
      out.push_back(std::move(g));
    }
    return out;
  }
};

}  // namespace

void CustomCall::begin(const char* name, bool has_jvp) {
  ctx->name_ = name;
  // a node only for inputs that require grad (needs_grad is also true for a dual input)
  recording = grad_enabled() && std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.defined() && t.requires_grad(); });
  // forward mode: a Function without jvp refuses a dual input, rather than drop its tangent
  if (!has_jvp && detail::forward_ad_on())
    for (const Tensor& t : inputs)
      if (detail::tangent_of(t).defined()) {
        throw std::runtime_error("[" + std::string(name) + "] You must implement the jvp function for custom "
                                 "autograd.Function to use it with forward mode AD (an input of shape " +
                                 t.shape().str() + " is a dual tensor)");
      }
  ctx->needs_input_grad_.clear();
  for (const Tensor& t : inputs) ctx->needs_input_grad_.push_back(recording && t.defined() && t.requires_grad());
}

std::vector<Tensor> CustomCall::finish(const char* name, std::vector<Tensor> outs, CustomBackward backward) {
  AutogradContext& c = *ctx;
  const std::string fn = std::string("[").append(name).append("] ");
  auto is_input = [&](const TensorImpl* p) {
    return std::any_of(inputs.begin(), inputs.end(), [p](const Tensor& t) { return t.impl() == p; });
  };
  for (const TensorImpl* d : c.dirty_) {
    if (!is_input(d)) {
      throw std::runtime_error(fn + "mark_dirty can only accept input tensors, but a tensor of shape " + d->shape.str() +
                               " isn't one");
    }
    const bool returned = std::any_of(outs.begin(), outs.end(), [d](const Tensor& t) { return t.impl() == d; });
    if (!returned) {
      throw std::runtime_error(fn + "Some elements marked as dirty during the forward method were not returned as output. "
                               "The inputs that are modified inplace must all be outputs of the Function.");
    }
  }
  // An output that is an input, an earlier output or a tensor with history of its own is
  // returned as an alias (PyTorch's view_as(self)), so giving it this node's history changes no
  // tensor the caller holds. An input marked dirty is the exception: it takes the node's history.
  std::vector<const TensorImpl*> original(outs.size());
  for (std::size_t k = 0; k < outs.size(); ++k) {
    Tensor& o = outs[k];
    if (!o.defined()) continue;
    const TensorImpl* p = o.impl();
    original[k] = p;
    const bool repeated = std::find(original.begin(), original.begin() + static_cast<std::ptrdiff_t>(k), p) !=
                          original.begin() + static_cast<std::ptrdiff_t>(k);
    if (contains(c.dirty_, p) && !repeated) continue;
    if (repeated || is_input(p) || o.requires_grad()) o = o.detach();
  }
  c.dirty_.clear();
  if (!recording) {  // no node: nothing to save, and backward never runs
    c.to_save_.clear();
    c.non_differentiable_.clear();
    return outs;
  }
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const Tensor& o = outs[k];
    if (!o.defined() || o.impl() != original[k] || !is_input(o.impl())) continue;  // not a dirty input
    if (o.requires_grad() && o.is_leaf()) {
      throw std::runtime_error(fn + "a leaf Variable that requires grad has been used in an in-place operation. "
                               "(mark_dirty on an input of shape " + o.shape().str() + ")");
    }
    if (o.impl()->is_view) {
      throw std::runtime_error(fn + "mark_dirty on a view (shape " + o.shape().str() +
                               ") is not supported; modify a clone or the base instead");
    }
  }

  CustomNodeBackward bw;
  bw.ctx = ctx;
  bw.name = name;
  bw.backward = backward;
  bw.is_tensor = std::move(is_tensor);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    InputInfo in;
    in.needs_grad = c.needs_input_grad_[i];
    if (in.needs_grad) {
      in.shape = inputs[i].shape();
      in.dtype = inputs[i].dtype();
    }
    bw.inputs.push_back(std::move(in));
  }
  std::vector<bool> differentiable(outs.size());
  std::vector<Tensor> slots(outs);  // an undefined output holds its place with an empty tensor
  for (std::size_t k = 0; k < outs.size(); ++k) {
    OutputInfo info;
    if (outs[k].defined()) {
      info = {true, outs[k].shape(), outs[k].dtype()};
      differentiable[k] = is_floating(outs[k].dtype()) && !contains(c.non_differentiable_, original[k]);
    } else {
      slots[k] = zeros({0});
    }
    bw.outputs.push_back(std::move(info));
  }
  c.non_differentiable_.clear();
  record_multi(slots, differentiable, name, inputs, std::move(bw));

  // Saved now that the outputs have their history (libtorch's save_variables): an output of this
  // node is saved without a reference cycle and gets its history back when backward unpacks it.
  std::shared_ptr<Node> node;
  for (std::size_t k = 0; k < outs.size() && !node; ++k)
    if (differentiable[k]) node = outs[k].grad_fn();
  for (const Tensor& t : c.to_save_) {
    const bool is_output = t.defined() && node && t.grad_fn() == node;
    c.saved_.emplace_back(t, is_output);
  }
  c.to_save_.clear();
  detail::adopt_saved(node);  // what it saved is its node's (saved_tensors())
  for (const auto& [key, v] : c.saved_data) {
    if (v.isTensor() && v.toTensor().defined() && node && v.toTensor().grad_fn() == node) {
      const std::string msg = fn + "saved_data[\"" + key + "\"] holds an output of the function, which would keep "
                              "the graph alive in a reference cycle; save it with ctx->save_for_backward instead";
      c.saved_.clear();
      c.saved_data.clear();  // breaks the cycle, so the node dies with the outputs
      throw std::runtime_error(msg);
    }
  }
  return outs;
}

void CustomCall::push_tangents(std::vector<Tensor>& outs, CustomBackward jvp) {
  std::vector<Tensor> tangents;
  bool any = false;
  for (const Tensor& t : inputs) {
    Tensor d = tangent_of(t);
    any = any || d.defined();
    if (!d.defined() && t.defined() && ctx->materialize_grads_ && t.is_floating_point()) d = zeros_like(t);
    tangents.push_back(std::move(d));
  }
  if (!any) return;
  std::vector<Tensor> result;
  {
    JvpPause pause;  // the jvp's own ops push no tangent
    ctx->in_jvp_ = true;
    try {
      result = jvp(ctx.get(), std::move(tangents));
    } catch (...) {
      ctx->in_jvp_ = false;
      throw;
    }
    ctx->in_jvp_ = false;
  }
  ctx->for_forward_.clear();
  const std::string fn = std::string("[").append(ctx->name_).append("] ");
  if (result.size() != outs.size()) {
    throw std::runtime_error(fn + "jvp returned " + std::to_string(result.size()) + " tangents for " +
                             std::to_string(outs.size()) + " outputs");
  }
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (!result[k].defined() || !outs[k].defined()) continue;
    if (result[k].shape() != outs[k].shape()) {
      throw std::runtime_error(fn + "jvp returned a tangent of shape " + result[k].shape().str() + " for output " +
                               std::to_string(k) + " of shape " + outs[k].shape().str());
    }
    bool shared = false;  // a tangent returned as it came (an identity) gets a copy of its own
    for (const Tensor& in : inputs) shared = shared || (in.defined() && in.impl()->fw_grad && in.impl()->fw_grad == result[k].impl_ptr());
    set_tangent(outs[k], shared ? clone(result[k]) : result[k]);
  }
}

}  // namespace detail

}  // namespace ag
