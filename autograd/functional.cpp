// torch.autograd.functional on ag::grad. Each function is a few calls of ag::grad, as in PyTorch:
// vjp is one backward; jvp and hvp use the double-vjp trick (differentiate a backward pass with
// respect to the gradient that seeded it); jacobian is one backward per output element; hessian
// is the jacobian of the gradient.
#include "autograd/functional.h"

#include <stdexcept>
#include <string>

#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag::functional {

namespace {

// The inputs the function is called with: without create_graph, detached copies that require
// grad (the caller's tensors and their .grad are never touched); with it, the inputs themselves
// if they require grad (so the results keep their history), else such copies.
std::vector<Tensor> prepare(const char* op, const std::vector<Tensor>& inputs, bool create_graph) {
  if (inputs.empty()) throw std::invalid_argument(std::string("[") + op + "] expected at least one input");
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.is_floating_point()) {
      throw std::invalid_argument(std::string("[") + op + "] input " + std::to_string(i) +
                                  " must be a defined floating point tensor");
    }
    out.push_back(create_graph && t.requires_grad() ? t : t.detach().requires_grad_(true));
  }
  return out;
}

// Calls fn with grad mode on and checks its result.
Tensor call(const char* op, const Fn& fn, const std::vector<Tensor>& inputs, bool scalar) {
  EnableGradGuard grad_mode;
  Tensor out = fn(inputs);
  if (!out.defined()) throw std::invalid_argument(std::string("[") + op + "] the function returned an undefined tensor");
  if (scalar && out.numel() != 1) {
    throw std::invalid_argument(std::string("[") + op + "] the function must return a single-element tensor, got shape " +
                                out.shape().str());
  }
  return out;
}

// Gradients of `out` (seeded by `v`) with respect to `inputs`; an input out does not depend on
// gets zeros (or a gradient that does not require grad when out itself does not).
std::vector<Tensor> grads_or_zeros(const Tensor& out, const std::vector<Tensor>& inputs, const Tensor& v, bool create_graph) {
  std::vector<Tensor> g;
  if (out.requires_grad()) {
    EnableGradGuard grad_mode;
    g = grad({out}, inputs, {v}, /*retain_graph=*/true, create_graph, /*allow_unused=*/true);
  } else {
    g.resize(inputs.size());
  }
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!g[i].defined()) g[i] = zeros_like(inputs[i]);
  return g;
}

// sum_i sum(a[i] * b[i]) with grad mode on: the scalar whose gradients are the vector products.
Tensor inner(const std::vector<Tensor>& a, const std::vector<Tensor>& b, DType dtype) {
  EnableGradGuard grad_mode;
  Tensor d = zeros({}, dtype);
  for (std::size_t i = 0; i < a.size(); ++i) d = d + sum(a[i] * b[i]);
  return d;
}

Tensor finish(const Tensor& t, bool create_graph) { return create_graph ? t : t.detach(); }

std::vector<Tensor> finish(std::vector<Tensor> ts, bool create_graph) {
  for (Tensor& t : ts) t = finish(t, create_graph);
  return ts;
}

// v given per input, shapes checked; omitted only for one one-element input (then 1).
std::vector<Tensor> per_input(const char* op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v) {
  if (v.empty()) {
    if (inputs.size() == 1 && inputs[0].numel() == 1) return {ones_like(inputs[0])};
    throw std::invalid_argument(std::string("[") + op +
                                "] v can be omitted only for a single input with a single element; give one v per input");
  }
  if (v.size() != inputs.size()) {
    throw std::invalid_argument(std::string("[") + op + "] got " + std::to_string(v.size()) + " tensors in v for " +
                                std::to_string(inputs.size()) + " inputs");
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].defined() || v[i].shape() != inputs[i].shape()) {
      throw std::invalid_argument(std::string("[") + op + "] v[" + std::to_string(i) + "] has shape " +
                                  (v[i].defined() ? v[i].shape().str() : std::string("undefined")) +
                                  " but input " + std::to_string(i) + " has shape " + inputs[i].shape().str());
    }
  }
  return v;
}

// shape a followed by shape b
DimVector joined(const Size& a, const Size& b) {
  DimVector s(a.begin(), a.end());
  for (int64_t d : b) s.push_back(d);
  return s;
}

// The Jacobian of out (any shape) with respect to each input, one backward per element of out.
std::vector<Tensor> jacobian_of(const Tensor& out, const std::vector<Tensor>& inputs, bool create_graph) {
  const int64_t m = out.numel();
  std::vector<std::vector<Tensor>> rows(inputs.size());  // rows[i][j] = d out_j / d input_i
  Tensor flat;
  {
    EnableGradGuard grad_mode;
    flat = out.reshape({-1});
  }
  for (int64_t j = 0; j < m; ++j) {
    Tensor onehot = zeros({m}, out.dtype());
    {
      NoGradGuard no_grad;
      onehot.narrow(0, j, 1).fill_(1.0);
    }
    const std::vector<Tensor> g = grads_or_zeros(flat, inputs, onehot, create_graph);
    for (std::size_t i = 0; i < inputs.size(); ++i) rows[i].push_back(g[i]);
  }
  std::vector<Tensor> jac;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const DimVector shape = joined(out.shape(), inputs[i].shape());
    jac.push_back(m == 0 ? zeros(shape, inputs[i].dtype()) : stack(rows[i], 0).reshape(shape));
  }
  return jac;
}

}  // namespace

std::pair<Tensor, std::vector<Tensor>> vjp(const Fn& fn, const std::vector<Tensor>& inputs0, const Tensor& v,
                                           bool create_graph) {
  const std::vector<Tensor> inputs = prepare("vjp", inputs0, create_graph);
  const Tensor out = call("vjp", fn, inputs, false);
  Tensor seed = v;
  if (!seed.defined()) {
    if (out.numel() != 1) {
      throw std::invalid_argument("[vjp] v can be omitted only when the function returns a single-element tensor, got shape " +
                                  out.shape().str());
    }
    seed = ones_like(out);
  } else if (seed.shape() != out.shape()) {
    throw std::invalid_argument("[vjp] v has shape " + seed.shape().str() + " but the function's output has shape " +
                                out.shape().str());
  }
  return {finish(out, create_graph), finish(grads_or_zeros(out, inputs, seed, create_graph), create_graph)};
}

std::pair<Tensor, std::vector<Tensor>> jvp(const Fn& fn, const std::vector<Tensor>& inputs0, const std::vector<Tensor>& v0,
                                           bool create_graph) {
  const std::vector<Tensor> inputs = prepare("jvp", inputs0, create_graph);
  const std::vector<Tensor> v = per_input("jvp", inputs, v0);
  const Tensor out = call("jvp", fn, inputs, false);
  // The backward pass is linear in its seed u: u -> J^T u. Its own vjp with v is (J^T)^T v = J v.
  Tensor u = zeros_like(out).requires_grad_(true);
  const Tensor dot = inner(grads_or_zeros(out, inputs, u, /*create_graph=*/true), v, out.dtype());
  const Tensor jv = grads_or_zeros(dot, {u}, ones_like(dot), create_graph)[0];
  return {finish(out, create_graph), {finish(jv, create_graph)}};
}

std::pair<Tensor, std::vector<Tensor>> vhp(const Fn& fn, const std::vector<Tensor>& inputs0, const std::vector<Tensor>& v0,
                                           bool create_graph) {
  const std::vector<Tensor> inputs = prepare("vhp", inputs0, create_graph);
  const std::vector<Tensor> v = per_input("vhp", inputs, v0);
  const Tensor out = call("vhp", fn, inputs, true);
  // v^T H = d (grad . v) / d inputs
  const Tensor dot = inner(grads_or_zeros(out, inputs, ones_like(out), /*create_graph=*/true), v, out.dtype());
  return {finish(out, create_graph), finish(grads_or_zeros(dot, inputs, ones_like(dot), create_graph), create_graph)};
}

std::pair<Tensor, std::vector<Tensor>> hvp(const Fn& fn, const std::vector<Tensor>& inputs0, const std::vector<Tensor>& v0,
                                           bool create_graph) {
  const std::vector<Tensor> inputs = prepare("hvp", inputs0, create_graph);
  const std::vector<Tensor> v = per_input("hvp", inputs, v0);
  const Tensor out = call("hvp", fn, inputs, true);
  // H v by the double-vjp trick (as PyTorch computes it): with g = grad(out), the map u -> u^T dg/dx
  // is linear in u; its vjp with v is (dg/dx) v = H v.
  const std::vector<Tensor> g = grads_or_zeros(out, inputs, ones_like(out), /*create_graph=*/true);
  std::vector<Tensor> u;
  for (const Tensor& in : inputs) u.push_back(zeros_like(in).requires_grad_(true));
  const Tensor dot = inner(g, u, out.dtype());
  const Tensor dot2 = inner(grads_or_zeros(dot, inputs, ones_like(dot), /*create_graph=*/true), v, out.dtype());
  return {finish(out, create_graph), finish(grads_or_zeros(dot2, u, ones_like(dot2), create_graph), create_graph)};
}

std::vector<Tensor> jacobian(const Fn& fn, const std::vector<Tensor>& inputs0, bool create_graph) {
  const std::vector<Tensor> inputs = prepare("jacobian", inputs0, create_graph);
  const Tensor out = call("jacobian", fn, inputs, false);
  return finish(jacobian_of(out, inputs, create_graph), create_graph);
}

std::vector<std::vector<Tensor>> hessian(const Fn& fn, const std::vector<Tensor>& inputs0, bool create_graph) {
  const std::vector<Tensor> inputs = prepare("hessian", inputs0, create_graph);
  const Tensor out = call("hessian", fn, inputs, true);
  const std::vector<Tensor> g = grads_or_zeros(out, inputs, ones_like(out), /*create_graph=*/true);
  std::vector<std::vector<Tensor>> h;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    // row block i: the Jacobian of grad_i with respect to every input
    std::vector<Tensor> row = jacobian_of(g[i], inputs, create_graph);
    h.push_back(finish(std::move(row), create_graph));
  }
  return h;
}

}  // namespace ag::functional
