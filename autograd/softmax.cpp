// softmax and log_softmax over any dim, stable: the row max is subtracted before exp; and
// causal_softmax, the attention weights' softmax with the upper triangle masked. Each rule is
// written in ag ops, so a backward pass that records its graph (create_graph) can be
// differentiated again; the row loops (forward, and each rule as one pass per row for when nothing
// is recorded) are in kernels/softmax.cpp.
#include <string>

#include "autograd/kernels/common.h"
#include "autograd/kernels/softmax.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

// PyTorch has no integer softmax ("softmax_lastdim_kernel_impl" not implemented for 'Long'); nor
// has ag: an integer input is refused rather than converted.
void check_floating(const Tensor& x, const char* op) {
  detail::check_defined(x, op);
  if (!x.is_floating_point()) {
    detail::shape_error(op, std::string("not implemented for integer or bool input: expected a floating point tensor, got ") +
                                dtype_name(x.dtype()) + " of shape " + x.shape().str());
  }
}

// The fast paths run over rows of the last dim.
bool last_dim(const Tensor& t, int64_t dim) { return t.dim() == 0 || wrap_dim(dim, t.dim(), "softmax", t.shape()) == t.dim() - 1; }

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  check_floating(x, "softmax");
  // y = exp(x - max) / sum(exp(x - max), dim)
  Tensor y = kernels::softmax(x, wrap_dim(dim, x.dim(), "softmax", x.shape()), false);
  if (needs_grad(x)) {
    // y = softmax(x)  =>  dx = y * (g - sum(g * y, dim))
    record(y, "SoftmaxBackward0", {x}, [sy = SavedTensor(y, true), dim](const Tensor& g) -> Grads {
      const Tensor y = sy.get();
      if (!needs_grad(g, y) && last_dim(y, dim)) return {kernels::softmax_backward_lastdim(g, y, false)};
      return {y * (g - sum(g * y, {dim}, true))};
    },
    // jvp: the Jacobian diag(y) - y y^T is symmetric, so dy = y * (dx - sum(dx * y, dim))
    [&](const Tangents& d) { return y * (d[0] - sum(d[0] * y, {dim}, true)); });
  }
  return y;
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  check_floating(x, "log_softmax");
  // y = x - max - log(sum(exp(x - max), dim))
  Tensor y = kernels::softmax(x, wrap_dim(dim, x.dim(), "log_softmax", x.shape()), true);
  if (needs_grad(x)) {
    // y = x - logsumexp(x)  =>  dx = g - exp(y) * sum(g, dim)
    record(y, "LogSoftmaxBackward0", {x}, [sy = SavedTensor(y, true), dim](const Tensor& g) -> Grads {
      const Tensor y = sy.get();
      if (!needs_grad(g, y) && last_dim(y, dim)) return {kernels::softmax_backward_lastdim(g, y, true)};
      return {g - exp(y) * sum(g, {dim}, true)};
    },
    // jvp: dy = dx - sum(exp(y) * dx, dim)
    [&](const Tangents& d) { return d[0] - sum(exp(y) * d[0], {dim}, true); });
  }
  return y;
}

// One fused op for the causal attention weights (see ops.h). The composed version,
// softmax(masked_fill(scores, triu(ones(Tq, Tk), 1), -inf) / divisor, -1), is its tested reference.
Tensor causal_softmax(const Tensor& scores, double divisor) {
  if (scores.dim() < 2 || !scores.is_floating_point()) {
    detail::shape_error("causal_softmax", "expects a floating point tensor of at least 2 dims (..., Tq, Tk), got " +
                                              dtype_name(scores.dtype()) + " of shape " + scores.shape().str());
  }
  const int64_t tq = scores.size(-2), n = scores.size(-1);
  Tensor y = kernels::causal_softmax(scores, divisor);
  if (needs_grad(scores)) {
    // y = softmax(masked(scores) / divisor)  =>  dscores = y * (g - sum(g * y)) / divisor, 0 where masked
    // (the rules of softmax, div and masked_fill in turn: causal_softmax_backward)
    record(y, "CausalSoftmaxBackward0", {scores}, [sy = SavedTensor(y, true), tq, n, divisor](const Tensor& g) -> Grads {
      const Tensor y = sy.get();
      if (!needs_grad(g, y)) return {kernels::causal_softmax_backward(g, y, tq, n, divisor)};
      return {causal_softmax_backward(g, y, divisor)};
    },
    // jvp: the Jacobian is symmetric (y is 0 where masked), so it is the same rule on dscores
    [&](const Tangents& d) { return causal_softmax_backward(d[0], y, divisor); });
  }
  return y;
}

Tensor causal_softmax_backward(const Tensor& g, const Tensor& y, double divisor) {
  const Tensor above = triu(ones({y.size(-2), y.size(-1)}), 1).bool_();
  return masked_fill(y * (g - sum(g * y, {-1}, true)) / divisor, above, 0.0);
}

}  // namespace ag
