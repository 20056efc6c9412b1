// ag::func: function transforms in the manner of torch.func (functorch 1.13), built on forward
// mode (forward_ad.h) and on ag::grad. fn takes the inputs and returns one tensor, as in
// ag::functional. Each transform opens its own dual level, so none may run inside a DualLevel.
//
//   auto [y, jv] = ag::func::jvp(f, {x}, {v});       // f(x) and J v in one forward pass
//   // forward-over-reverse Hessian-vector product: the jvp of the gradient
//   auto grad_f = [&](const std::vector<Tensor>& xs) { return ag::grad({f(xs)}, xs)[0]; };
//   auto [g, hv] = ag::func::jvp(grad_f, {x.detach().requires_grad_()}, {v});
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "functional.h"
#include "tensor.h"

namespace ag::func {

using Fn = functional::Fn;

// (fn(primals), J tangents) in one forward pass (torch.func.jvp): tangents has one tensor per
// primal, of its shape. An output that does not depend on the primals gets a zero tangent.
std::pair<Tensor, Tensor> jvp(const Fn& fn, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents);

// fn(primals) and the function tangents -> J tangents at the primals (torch.func.linearize); each
// call is one forward pass in forward mode.
std::pair<Tensor, std::function<Tensor(const std::vector<Tensor>&)>> linearize(const Fn& fn,
                                                                                const std::vector<Tensor>& primals);

// The Jacobian by forward mode, one forward pass per input element (a column each): one tensor
// per input, of shape out.shape + in.shape, as functional::jacobian. Pays where inputs are fewer
// than outputs.
std::vector<Tensor> jacfwd(const Fn& fn, const std::vector<Tensor>& inputs);

// The Jacobian by reverse mode, one backward pass per output element (a row each); same shapes.
// Runs inside a dual level too: tangents of the inputs flow through it (forward-over-reverse).
std::vector<Tensor> jacrev(const Fn& fn, const std::vector<Tensor>& inputs);

// H[i][j] of shape in_i.shape + in_j.shape, for fn with a one-element output: jacfwd of the
// gradient (jacfwd of jacrev, as torch.func.hessian), each column a forward-over-reverse pass.
std::vector<std::vector<Tensor>> hessian(const Fn& fn, const std::vector<Tensor>& inputs);

}  // namespace ag::func
