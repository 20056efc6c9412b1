// Higher-order autograd: ag::grad (torch.autograd.grad) and ag::functional
// (torch.autograd.functional): vjp, jvp, hvp, vhp, jacobian and hessian. Everything here is built
// on the engine's create_graph mode: a backward pass run with grad mode on records its own graph,
// which can be differentiated again.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "tensor.h"

namespace ag {

// torch.autograd.grad: the gradients of `outputs` with respect to `inputs` (leaves or not),
// without touching any .grad. grad_outputs gives one gradient per output (empty: each output
// must hold one element and gets 1). retain_graph defaults to create_graph; with create_graph the
// results carry history and can be differentiated again. An input the outputs do not depend on
// is an error unless allow_unused (then its gradient is an undefined Tensor).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                         bool create_graph = false, bool allow_unused = false);

namespace functional {

// The function type of the functional API (and of gradcheck): inputs -> one tensor.
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Each returns {fn(inputs), result}; without create_graph both are detached and the inputs are
// used through detached copies (their .grad is never touched). An input the output does not
// depend on gets a zero result.

// v^T J: v has the output's shape (may be omitted for a one-element output).
std::pair<Tensor, std::vector<Tensor>> vjp(const Fn& fn, const std::vector<Tensor>& inputs, const Tensor& v = {},
                                           bool create_graph = false);
// J v (by the double-vjp trick): v has one tensor per input (may be omitted for one one-element input).
// The result is one tensor (of the output's shape), returned as a one-element vector like the others.
std::pair<Tensor, std::vector<Tensor>> jvp(const Fn& fn, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v = {}, bool create_graph = false);
// H v and v^T H of a function with a one-element output; v has one tensor per input.
std::pair<Tensor, std::vector<Tensor>> hvp(const Fn& fn, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v = {}, bool create_graph = false);
std::pair<Tensor, std::vector<Tensor>> vhp(const Fn& fn, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v = {}, bool create_graph = false);
// One tensor per input, of shape out.shape + in.shape.
std::vector<Tensor> jacobian(const Fn& fn, const std::vector<Tensor>& inputs, bool create_graph = false);
// H[i][j] of shape in_i.shape + in_j.shape, for a function with a one-element output.
std::vector<std::vector<Tensor>> hessian(const Fn& fn, const std::vector<Tensor>& inputs, bool create_graph = false);

}  // namespace functional

}  // namespace ag
