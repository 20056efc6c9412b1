// Losses: nll_loss, cross_entropy = nll_loss(log_softmax(logits)) in one op, and mse_loss. The
// rules are written in ag ops; the loops over rows and targets (forward, and each rule as one pass
// for when nothing is recorded) are in kernels/loss.cpp.
#include <stdexcept>
#include <vector>

#include "autograd/kernels/common.h"
#include "autograd/kernels/loss.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

struct Targets {
  std::vector<int64_t> ids;  // per row; -1 where the target is ignore_index
  int64_t count = 0;         // rows that count
};

// nll_loss's checks of input (N, C) or (C) against target (N) or (), and the targets.
Targets checked_targets(const Tensor& input, const Tensor& target, int64_t ignore_index) {
  const bool batched = input.dim() == 2;
  if (!(input.dim() == 1 || input.dim() == 2) || target.dim() != input.dim() - 1 ||
      (batched && target.size(0) != input.size(0))) {
    detail::shape_error("nll_loss", "expected input (N, C) with target (N), or input (C) with target (), got input " +
                                        input.shape().str() + " and target " + target.shape().str());
  }
  if (target.dtype() != kInt64) {
    throw std::invalid_argument("[nll_loss] expected an int64 target (class indices), got " + dtype_name(target.dtype()));
  }
  const int64_t c = input.size(-1);
  Targets out;
  out.ids = target.to_vector<int64_t>();
  for (int64_t& t : out.ids) {
    if (t == ignore_index) {
      t = -1;
      continue;
    }
    if (t < 0 || t >= c) {
      throw std::out_of_range("[nll_loss] target " + std::to_string(t) + " is out of bounds for " + std::to_string(c) +
                              " classes (input shape " + input.shape().str() + ")");
    }
    ++out.count;
  }
  return out;
}

// nll_loss's rule in ag ops: dlogp = -g / count at (i, t_i) for the rows that count, 0 elsewhere.
Tensor nll_loss_backward(const Tensor& g, const std::vector<int64_t>& ids, int64_t count, const Size& shape) {
  return masked_fill(expand(-g / static_cast<double>(count), shape.vec()), logical_not(kernels::target_mask(ids, shape)), 0.0);
}

}  // namespace

Tensor nll_loss(const Tensor& logp, const Tensor& target, int64_t ignore_index) {
  const Targets targets = checked_targets(logp, target, ignore_index);
  // loss = -(1/count) sum_{i: t_i != ignore} logp[i, t_i]
  Tensor out = kernels::nll_loss(logp, targets.ids, targets.count);
  if (needs_grad(logp)) {
    //  =>  dlogp[i, t_i] = -g / count for the counted rows, 0 elsewhere
    record(out, "NllLossBackward0", {logp}, [tg = targets.ids, count = targets.count, from = logp.shape()](const Tensor& g) -> Grads {
      if (!needs_grad(g)) return {kernels::nll_loss_backward(g, tg, count, from)};
      return {nll_loss_backward(g, tg, count, from)};
    });
  }
  return out;
}

// nll_loss(log_softmax(logits)) in one op, the same bits: the forward keeps two numbers per row
// (the shift and log-sum of log_softmax) instead of the (N, C) log-probabilities, and the backward
// writes log_softmax's gradient of nll_loss's one-hot gradient directly. The node keeps PyTorch's
// name for the loss, NllLossBackward0, and leads straight to the logits.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index) {
  if (logits.dim() != 1 && logits.dim() != 2) {
    detail::shape_error("cross_entropy", "expected logits (N, C) or (C), got " + logits.shape().str() + " (target " +
                                             target.shape().str() + "); reshape to (-1, C) first");
  }
  if (!logits.is_floating_point()) return nll_loss(log_softmax(logits, -1), target, ignore_index);
  const Targets targets = checked_targets(logits, target, ignore_index);
  // log_softmax subtracts the row max, so logits shifted by 1e8 give the same loss.
  Tensor stats;  // per row: shift, log-sum
  Tensor out = kernels::cross_entropy(logits, targets.ids, targets.count, stats);
  if (needs_grad(logits)) {
    // loss = -(1/count) sum_i log_softmax(x)[i, t_i]  =>  dx = log_softmax's backward of -g/count at the targets
    record(out, "NllLossBackward0", {logits},
           [sx = SavedTensor(logits), stats, ids = targets.ids, count = targets.count](const Tensor& g) -> Grads {
             const Tensor x = sx.get();
             if (!needs_grad(g, x)) return {kernels::cross_entropy_backward(g, x, stats, ids, count)};
             // recording the backward's graph: nll_loss's rule, then log_softmax's
             const Tensor logp = log_softmax(x, -1);
             const Tensor dlogp = nll_loss_backward(g, ids, count, x.shape());
             return {dlogp - exp(logp) * sum(dlogp, {-1}, true)};
           });
  }
  return out;
}

Tensor mse_loss(const Tensor& input, const Tensor& target) {
  if (input.shape() != target.shape()) {
    detail::shape_error("mse_loss", "input shape " + input.shape().str() + " and target shape " + target.shape().str() +
                                        " differ");
  }
  Tensor d = sub(input, target);
  Tensor out = mean(mul(d, d));
  if (out.grad_fn()) out.grad_fn()->name = "MseLossBackward0";
  return out;
}

}  // namespace ag
