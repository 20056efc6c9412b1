// ag::func on dual tensors (forward_ad.h) and ag::grad. jacfwd pushes one one-hot tangent per
// input element; jacrev pulls one one-hot gradient per output element; hessian pushes tangents
// through a backward pass (its backward rules are ag ops, so they carry tangents).
#include "autograd/func.h"

#include <stdexcept>
#include <string>

#include "autograd/forward_ad.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag::func {

namespace {

void check_inputs(const char* op, const std::vector<Tensor>& inputs) {
  if (inputs.empty()) throw std::invalid_argument(std::string("[") + op + "] expected at least one input");
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined() || !inputs[i].is_floating_point()) {
      throw std::invalid_argument(std::string("[") + op + "] input " + std::to_string(i) +
                                  " must be a defined floating point tensor");
    }
}

Tensor call(const char* op, const Fn& fn, const std::vector<Tensor>& inputs) {
  Tensor out = fn(inputs);
  if (!out.defined()) throw std::invalid_argument(std::string("[") + op + "] the function returned an undefined tensor");
  return out;
}

// A one-hot tensor of t's shape and dtype: 1 at flat position k.
Tensor one_hot(const Tensor& t, int64_t k) {
  Tensor e = zeros({t.numel()}, t.dtype());
  e.narrow(0, k, 1).fill_(1.0);
  return e.view(t.shape().vec());
}

// The Jacobian out.shape + in.shape from its columns (each of out's shape, one per element of
// in: jacfwd) or its rows (each of in's shape, one per element of out: jacrev).
Tensor jacobian_of(const std::vector<Tensor>& parts, const Tensor& out, const Tensor& in, bool columns) {
  DimVector shape = out.shape().vec();
  for (int64_t s : in.shape()) shape.push_back(s);
  if (parts.empty()) return zeros(shape, columns ? out.dtype() : in.dtype());
  std::vector<Tensor> flat;
  for (const Tensor& c : parts) flat.push_back(reshape(c, {-1}));
  return reshape(stack(flat, columns ? 1 : 0), shape);
}

// The input jacrev differentiates: a fresh leaf that requires grad, keeping t's tangent if it
// has one (so a tangent pushed into jacrev flows through the backward passes).
Tensor rev_input(const Tensor& t) {
  Tensor leaf = t.detach().requires_grad_(true);
  const Tensor tangent = forward_ad::unpack_dual(t).tangent;
  return tangent.defined() ? forward_ad::make_dual(leaf, tangent) : leaf;
}

// The gradient of the one-element fn(xs) with respect to xs (zeros where it does not depend).
std::vector<Tensor> gradient(const Fn& fn, const std::vector<Tensor>& xs) {
  EnableGradGuard grad_mode;
  const Tensor out = call("hessian", fn, xs);
  if (out.numel() != 1) {
    throw std::invalid_argument("[hessian] the function must return a single-element tensor, got shape " + out.shape().str());
  }
  std::vector<Tensor> g(xs.size());
  if (out.requires_grad()) g = grad({out}, xs, {}, /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!g[i].defined()) g[i] = zeros_like(xs[i]);
  return g;
}

}  // namespace

std::pair<Tensor, Tensor> jvp(const Fn& fn, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents) {
  check_inputs("jvp", primals);
  if (primals.size() != tangents.size()) {
    throw std::invalid_argument("[jvp] Expected primals and tangents to have the same length, got " +
                                std::to_string(primals.size()) + " primals and " + std::to_string(tangents.size()) +
                                " tangents");
  }
  forward_ad::DualLevel level;
  std::vector<Tensor> duals;
  for (std::size_t i = 0; i < primals.size(); ++i) duals.push_back(forward_ad::make_dual(primals[i], tangents[i]));
  const Tensor out = call("jvp", fn, duals);
  auto [primal, tangent] = forward_ad::unpack_dual(out);
  if (!tangent.defined()) tangent = zeros_like(out);
  return {primal, tangent};
}

std::pair<Tensor, std::function<Tensor(const std::vector<Tensor>&)>> linearize(const Fn& fn,
                                                                                const std::vector<Tensor>& primals) {
  check_inputs("linearize", primals);
  std::vector<Tensor> at;
  for (const Tensor& p : primals) at.push_back(p.detach());
  Tensor out;
  {
    NoGradGuard no_grad;
    out = call("linearize", fn, at);
  }
  return {out, [fn, at](const std::vector<Tensor>& tangents) { return jvp(fn, at, tangents).second; }};
}

std::vector<Tensor> jacfwd(const Fn& fn, const std::vector<Tensor>& inputs) {
  check_inputs("jacfwd", inputs);
  std::vector<Tensor> xs;
  for (const Tensor& t : inputs) xs.push_back(t.detach());
  Tensor out;
  std::vector<Tensor> jac;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::vector<Tensor> cols;
    for (int64_t k = 0; k < xs[i].numel(); ++k) {
      std::vector<Tensor> args = xs;
      forward_ad::DualLevel level;
      args[i] = forward_ad::make_dual(xs[i], one_hot(xs[i], k));
      const auto [y, dy] = forward_ad::unpack_dual(call("jacfwd", fn, args));
      out = y.detach();
      cols.push_back(dy.defined() ? dy.detach() : zeros_like(out));
    }
    if (!out.defined()) out = call("jacfwd", fn, xs).detach();  // an empty input: the output's shape
    jac.push_back(jacobian_of(cols, out, xs[i], true));
  }
  return jac;
}

std::vector<Tensor> jacrev(const Fn& fn, const std::vector<Tensor>& inputs) {
  check_inputs("jacrev", inputs);
  std::vector<Tensor> xs;
  for (const Tensor& t : inputs) xs.push_back(rev_input(t));
  EnableGradGuard grad_mode;
  const Tensor out = call("jacrev", fn, xs);
  std::vector<std::vector<Tensor>> rows(xs.size());
  for (int64_t k = 0; k < out.numel(); ++k) {
    std::vector<Tensor> g(xs.size());
    if (out.requires_grad()) {
      g = grad({out}, xs, {one_hot(out, k)}, /*retain_graph=*/true, /*create_graph=*/false, /*allow_unused=*/true);
    }
    for (std::size_t i = 0; i < xs.size(); ++i) rows[i].push_back(g[i].defined() ? g[i] : zeros_like(xs[i]));
  }
  std::vector<Tensor> jac;
  for (std::size_t i = 0; i < xs.size(); ++i) jac.push_back(jacobian_of(rows[i], out, xs[i], false));
  return jac;
}

std::vector<std::vector<Tensor>> hessian(const Fn& fn, const std::vector<Tensor>& inputs) {
  check_inputs("hessian", inputs);
  std::vector<Tensor> xs;
  for (const Tensor& t : inputs) xs.push_back(t.detach());
  // cols[i][j]: the columns of H[i][j], one per element of input j (each of input i's shape)
  std::vector<std::vector<std::vector<Tensor>>> cols(xs.size(), std::vector<std::vector<Tensor>>(xs.size()));
  for (std::size_t j = 0; j < xs.size(); ++j)
    for (int64_t k = 0; k < xs[j].numel(); ++k) {
      forward_ad::DualLevel level;
      std::vector<Tensor> args;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        Tensor leaf = xs[i].detach().requires_grad_(true);
        args.push_back(i == j ? forward_ad::make_dual(leaf, one_hot(xs[j], k)) : leaf);
      }
      const std::vector<Tensor> g = gradient(fn, args);
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const Tensor t = forward_ad::unpack_dual(g[i]).tangent;
        cols[i][j].push_back(t.defined() ? t.detach() : zeros_like(xs[i]));
      }
    }
  std::vector<std::vector<Tensor>> h(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i)
    for (std::size_t j = 0; j < xs.size(); ++j) h[i].push_back(jacobian_of(cols[i][j], xs[i], xs[j], true));
  return h;
}

}  // namespace ag::func
