// Custom autograd Functions, libtorch style (torch/csrc/autograd/custom_function.h): an op of your
// own with its own forward and backward, used like any built-in op.
//
//   struct LegendrePolynomial3 : ag::Function<LegendrePolynomial3> {
//     // y = (5 x^3 - 3 x) / 2
//     static Tensor forward(AutogradContext* ctx, Tensor x) {
//       ctx->save_for_backward({x});
//       return 0.5 * (5 * x.pow(3) - 3 * x);
//     }
//     // dx = g * 3/2 (5 x^2 - 1)
//     static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grad_outputs) {
//       Tensor x = ctx->get_saved_variables()[0];
//       return {grad_outputs[0] * 1.5 * (5 * x.pow(2) - 1)};
//     }
//   };
//   Tensor y = LegendrePolynomial3::apply(x);   // y.grad_fn()->name() == "LegendrePolynomial3Backward"
//
// forward runs under NoGradGuard and may take any arguments after ctx: Tensors (a
// std::vector<Tensor> counts as one argument per element, a std::optional<Tensor> as one that is a
// Tensor when it holds a defined one) are the differentiable inputs, everything else is passed
// through. It returns a Tensor or a std::vector<Tensor> (several outputs; apply returns the same).
// apply records one node if grad mode is on and some Tensor input requires grad. backward gets
// one gradient per output and returns one per forward argument: an undefined Tensor for an
// argument that is not a Tensor or needs no gradient (extra undefined ones at the end are
// ignored). Written in ag ops, backward is differentiable again: with create_graph the engine runs
// it with grad mode on and it records its own graph, so gradgradcheck works on a custom Function.
//
// Forward mode (forward_ad.h), as Python's autograd.Function.jvp: an optional
//     static std::vector<Tensor> jvp(AutogradContext* ctx, std::vector<Tensor> grad_inputs)
// gets one tangent per Tensor input (zeros where an input has none; undefined with
// set_materialize_grads(false)) and returns one per output; ctx->save_for_forward({...}) in
// forward keeps what it needs, read back there with ctx->get_saved_variables(). A dual input
// reaching a Function without jvp is PyTorch's error ("You must implement the jvp function ...").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "node.h"
#include "tensor.h"

namespace ag {

// A small libtorch IValue for AutogradContext::saved_data: None, a double, an int64, a bool, a
// string, a Tensor or a list of int64, with libtorch's accessors. Reading the wrong kind throws
// "[IValue] expected Double but got Int".
class IValue {
 public:
  IValue() = default;  // None
  IValue(double v) : v_(v) {}  // NOLINT: implicit, so saved_data["k"] = 2.0 reads as in libtorch
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  IValue(I v) : v_(static_cast<int64_t>(v)) {}  // NOLINT
  IValue(bool v) : v_(v) {}                      // NOLINT
  IValue(std::string v) : v_(std::move(v)) {}    // NOLINT
  IValue(const char* v) : v_(std::string(v)) {}  // NOLINT: a literal is a string, not a bool
  IValue(Tensor v) : v_(std::move(v)) {}         // NOLINT
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT

  bool isNone() const { return v_.index() == 0; }
  bool isDouble() const { return std::holds_alternative<double>(v_); }
  bool isInt() const { return std::holds_alternative<int64_t>(v_); }
  bool isBool() const { return std::holds_alternative<bool>(v_); }
  bool isString() const { return std::holds_alternative<std::string>(v_); }
  bool isTensor() const { return std::holds_alternative<Tensor>(v_); }
  bool isIntList() const { return std::holds_alternative<std::vector<int64_t>>(v_); }

  double toDouble() const { return get<double>("Double"); }
  int64_t toInt() const { return get<int64_t>("Int"); }
  bool toBool() const { return get<bool>("Bool"); }
  const std::string& toStringRef() const { return get<std::string>("String"); }
  const Tensor& toTensor() const { return get<Tensor>("Tensor"); }
  std::vector<int64_t> toIntVector() const { return get<std::vector<int64_t>>("IntList"); }
  // libtorch's name of the kind held: "None", "Double", "Int", "Bool", "String", "Tensor", "IntList"
  std::string tagKind() const;

 private:
  template <class T>
  const T& get(const char* kind) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    wrong_kind(kind);
  }
  [[noreturn]] void wrong_kind(const char* expected) const;
  std::variant<std::monostate, double, int64_t, bool, std::string, Tensor, std::vector<int64_t>> v_;
};

template <class T>
struct Function;

namespace detail {
struct CustomCall;
}

// What forward leaves for backward (libtorch's AutogradContext). One per apply; the node owns it.
struct AutogradContext {
  AutogradContext() = default;
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  // Values other than tensors for backward. A Tensor kept here is neither version-checked nor
  // unpacked with its history; an output of forward kept here would keep the graph alive in a
  // cycle, so apply refuses it: save tensors with save_for_backward.
  std::unordered_map<std::string, IValue> saved_data;

  // Tensors backward will need (inputs, outputs or anything else; undefined ones are kept as
  // undefined). Saved when forward returns: an output is kept without a reference cycle, and
  // get_saved_variables() throws if any of them is modified in place after that.
  void save_for_backward(std::vector<Tensor> to_save);
  // In backward: what save_for_backward saved. In jvp: what save_for_forward saved.
  std::vector<Tensor> get_saved_variables() const;
  // Tensors jvp will need (forward mode), kept as they are.
  void save_for_forward(std::vector<Tensor> to_save) { for_forward_ = std::move(to_save); }
  // Outputs that have no gradient (indices, masks): they come out with requires_grad false and
  // no grad_fn, and backward gets zeros for them. Outputs of an integer or bool dtype are never
  // differentiable, as in PyTorch.
  void mark_non_differentiable(const std::vector<Tensor>& outputs);
  // Inputs forward modified in place (they must be returned as outputs): each becomes an output
  // of this node, as an in-place op's self does. Not for leaves that require grad, nor views.
  void mark_dirty(const std::vector<Tensor>& inputs);
  // true (the default): a gradient that did not arrive for an output is passed to backward as
  // zeros of its shape; false: as an undefined Tensor.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  // Whether the i-th Tensor input (counting Tensor arguments only, as libtorch's edge index) needs
  // a gradient: grad mode was on at apply and it requires grad. Valid in forward and backward.
  bool needs_input_grad(std::size_t output_edge_index) const;

 private:
  friend struct detail::CustomCall;
  std::string_view name_;  // the node's name, for errors
  std::vector<Tensor> to_save_;
  std::vector<SavedTensor> saved_;
  std::vector<Tensor> for_forward_;
  bool in_jvp_ = false;
  std::vector<const TensorImpl*> non_differentiable_, dirty_;
  std::vector<bool> needs_input_grad_;
  bool materialize_grads_ = true;
};

namespace detail {

// "LegendrePolynomial3" from typeid: demangled, without namespaces or enclosing functions.
std::string custom_function_class_name(const std::type_info& t);

using CustomBackward = std::vector<Tensor> (*)(AutogradContext*, std::vector<Tensor>);

// The non-template part of Function<T>::apply: the Tensor arguments in order, and per forward
// argument whether it was one (several entries for a std::vector<Tensor>).
struct CustomCall {
  std::shared_ptr<AutogradContext> ctx = std::make_shared<AutogradContext>();
  std::vector<Tensor> inputs;
  std::vector<bool> is_tensor;
  bool recording = false;

  void add(const Tensor& t) {
    inputs.push_back(t);
    is_tensor.push_back(true);
  }
  void add(const std::vector<Tensor>& ts) {
    for (const Tensor& t : ts) add(t);
  }
  void add(const std::optional<Tensor>& t) {
    if (t && t->defined()) add(*t);
    else is_tensor.push_back(false);
  }
  template <class A>
  void add(const A&) {
    is_tensor.push_back(false);
  }
  // Before forward: whether a node will be recorded, and needs_input_grad; with a dual input,
  // PyTorch's error unless the Function has a jvp.
  void begin(const char* name, bool has_jvp);
  // After finish, with a dual level alive: the outputs' tangents by the Function's jvp.
  void push_tangents(std::vector<Tensor>& outputs, CustomBackward jvp);
  // After forward: outputs made safe to attach (an input or a tensor with history returned as
  // is becomes an alias), the node recorded, the saved tensors saved. Returns the outputs.
  std::vector<Tensor> finish(const char* name, std::vector<Tensor> outputs, CustomBackward backward);
  static bool materialize_grads(const AutogradContext& c) { return c.materialize_grads_; }
};

template <class T, class = void>
struct is_tensor_arg : std::false_type {};
template <class T>
struct is_tensor_arg<T, std::enable_if_t<std::is_base_of_v<Tensor, T>>> : std::true_type {};

}  // namespace detail

// Derive MyFn from Function<MyFn> and give it static forward and backward (see the top of the file).
template <class T>
struct Function {
  template <class... Args>
  static auto apply(Args&&... args) {
    using Out = decltype(T::forward(std::declval<AutogradContext*>(), std::forward<Args>(args)...));
    static_assert(std::is_same_v<Out, Tensor> || std::is_same_v<Out, std::vector<Tensor>>,
                  "ag::Function: forward must return a Tensor or a std::vector<Tensor>");
    detail::CustomCall call;
    (add_arg(call, args), ...);
    constexpr bool has_jvp = requires(AutogradContext* c, std::vector<Tensor> t) { T::jvp(c, t); };
    call.begin(name(), has_jvp);
    Out out;
    {
      NoGradGuard no_grad;
      out = T::forward(call.ctx.get(), std::forward<Args>(args)...);
    }
    std::vector<Tensor> outs;
    if constexpr (std::is_same_v<Out, Tensor>) outs = call.finish(name(), {std::move(out)}, &run_backward);
    else outs = call.finish(name(), std::move(out), &run_backward);
    if constexpr (has_jvp) {
      if (detail::forward_ad_on()) call.push_tangents(outs, &run_jvp);
    }
    if constexpr (std::is_same_v<Out, Tensor>) return outs[0];
    else return outs;
  }

 private:
  // PyTorch's name for a custom Function's node: the class name + "Backward". A function-local
  // static, so the string_view the node holds stays valid.
  static const char* name() {
    static const std::string n = detail::custom_function_class_name(typeid(T)) + "Backward";
    return n.c_str();
  }
  template <class A>
  static void add_arg(detail::CustomCall& call, const A& a) {
    if constexpr (detail::is_tensor_arg<A>::value) call.add(static_cast<const Tensor&>(a));
    else call.add(a);
  }
  static std::vector<Tensor> run_jvp(AutogradContext* ctx, std::vector<Tensor> grad_inputs) {
    if constexpr (requires(AutogradContext* c, std::vector<Tensor> t) { T::jvp(c, t); }) {
      if constexpr (std::is_same_v<decltype(T::jvp(ctx, std::move(grad_inputs))), Tensor>) {
        return {T::jvp(ctx, std::move(grad_inputs))};
      } else {
        return T::jvp(ctx, std::move(grad_inputs));
      }
    } else {
      return {};
    }
  }
  static std::vector<Tensor> run_backward(AutogradContext* ctx, std::vector<Tensor> grad_outputs) {
    if constexpr (std::is_same_v<decltype(T::backward(ctx, std::move(grad_outputs))), Tensor>) {
      return {T::backward(ctx, std::move(grad_outputs))};
    } else {
      return T::backward(ctx, std::move(grad_outputs));
    }
  }
};

}  // namespace ag
