// Losses: nll_loss, cross_entropy = nll_loss(log_softmax(logits)) in one op, and mse_loss. The
// rules are written in ag ops; the loops over rows and targets (forward, and each rule as one pass
// for when nothing is recorded) are in kernels/loss.cpp.
#include <sstream>
#include <stdexcept>
#include <string>
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

enum class Reduction { None, Mean, Sum };

Reduction parse_reduction(const std::string& reduction, const char* op) {
  if (reduction == "mean") return Reduction::Mean;
  if (reduction == "sum") return Reduction::Sum;
  if (reduction == "none") return Reduction::None;
  throw std::invalid_argument(std::string("[") + op + "] " + reduction +
                              " is not a valid value for reduction (expected \"mean\", \"sum\" or \"none\")");
}

Tensor reduce(const Tensor& losses, Reduction r) {
  return r == Reduction::Mean ? mean(losses) : r == Reduction::Sum ? sum(losses) : losses;
}

// Gives the loss's last node PyTorch's name for the loss (it has one node where ag has a few).
Tensor named(Tensor loss, const char* grad_fn) {
  detail::name_node(loss, grad_fn, nullptr);  // its rule stays the reduction's
  return loss;
}

// The losses take floating point input, as PyTorch's.
void check_floating(const Tensor& input, const char* op) {
  if (!input.is_floating_point()) {
    throw std::invalid_argument(std::string("[") + op + "] expected a floating point input, got " +
                                dtype_name(input.dtype()) + " of shape " + input.shape().str());
  }
}

// Unlike PyTorch, which warns and broadcasts, the elementwise losses refuse input and target shapes
// that differ: broadcasting a (N) target against an (N, 1) input is almost always a bug.
void same_shapes(const Tensor& input, const Tensor& target, const char* op, bool floating_only = true) {
  detail::check_defined(input, op);
  detail::check_defined(target, op);
  if (floating_only) check_floating(input, op);
  if (input.shape() != target.shape()) {
    detail::shape_error(op, "input shape " + input.shape().str() + " and target shape " + target.shape().str() + " differ");
  }
}

// A weight (or pos_weight) broadcasts to the input's shape, never beyond it (PyTorch's error), and
// gets no gradient (PyTorch: "the derivative for 'weight' is not implemented").
void check_weight(const Tensor& input, const Tensor& weight, const char* op, const char* name) {
  if (!weight.defined()) return;
  if (broadcast_shapes(input.shape(), weight.shape(), op) != input.shape()) {
    detail::shape_error(op, std::string(name) + " of shape " + weight.shape().str() + " does not broadcast to the input's shape " +
                                input.shape().str());
  }
  if (weight.requires_grad() && grad_enabled()) {
    throw std::invalid_argument(std::string("[") + op + "] the derivative for '" + name + "' is not implemented.");
  }
}

// The gradient of each element of a reduced loss: g expanded ("sum"), divided by the count ("mean").
Tensor elementwise_grad(const Tensor& g, Reduction r, const Size& shape) {
  if (r == Reduction::None) return g;
  return expand(r == Reduction::Mean ? g / static_cast<double>(shape.numel()) : g, shape.vec());
}

// A loss over (N, C, d1, ..., dk) inputs and (N, d1, ..., dk) targets: the classes moved last and
// flattened to (N d1 ... dk, C) rows, the per-element losses ("none") shaped as the target again.
// grad_fn NllLoss2DBackward0, PyTorch's name for every input of more than 2 dims, except the
// per-element losses of 3-D or 5-D+ inputs, which PyTorch views back from 4-D (ViewBackward0).
template <class F>
Tensor over_spatial_dims(const Tensor& x, const Tensor& target, Reduction r, const char* op, F&& loss) {
  DimVector want{x.size(0)}, perm{0};
  for (int64_t d = 2; d < x.dim(); ++d) want.push_back(x.size(d)), perm.push_back(d);
  perm.push_back(1);
  if (target.shape() != Size(want)) {
    detail::shape_error(op, "expected target size " + Size(want).str() + " for input " + x.shape().str() + ", got " +
                                target.shape().str());
  }
  const Tensor rows = reshape(permute(x, perm), {-1, x.size(1)});
  Tensor out = loss(rows, reshape(target, {-1}));
  if (r == Reduction::None) out = view(out, want);
  return r == Reduction::None && x.dim() != 4 ? out : named(out, "NllLoss2DBackward0");
}

// nll_loss's rule in ag ops: dlogp = -g / count at (i, t_i) for the rows that count, 0 elsewhere.
Tensor nll_loss_backward(const Tensor& g, const std::vector<int64_t>& ids, int64_t count, const Size& shape) {
  return masked_fill(expand(-g / static_cast<double>(count), shape.vec()), logical_not(kernels::target_mask(ids, shape)), 0.0);
}

}  // namespace

// loss = -(1/count) sum_{i: t_i != ignore} logp[i, t_i] ("mean"), the sum without 1/count ("sum"),
// or per row -logp[i, t_i], 0 for ignored rows ("none").
Tensor nll_loss(const Tensor& logp, const Tensor& target, int64_t ignore_index, const std::string& reduction) {
  detail::check_defined(logp, "nll_loss");
  detail::check_defined(target, "nll_loss");
  const Reduction r = parse_reduction(reduction, "nll_loss");
  check_floating(logp, "nll_loss");
  if (logp.dim() > 2) return over_spatial_dims(logp, target, r, "nll_loss", [&](const Tensor& x, const Tensor& t) {
      return nll_loss(x, t, ignore_index, reduction);
    });
  const Targets targets = checked_targets(logp, target, ignore_index);
  if (r != Reduction::Mean) {
    // the target's entry of each row, as a masked sum: -sum_c logp[i, c] [c == t_i]
    const Tensor picked = masked_fill(logp, logical_not(kernels::target_mask(targets.ids, logp.shape())), 0.0);
    return named(reduce(neg(sum(picked, {-1})), r), "NllLossBackward0");
  }
  Tensor out = kernels::nll_loss(logp, targets.ids, targets.count);
  if (needs_grad(logp)) {
    //  =>  dlogp[i, t_i] = -g / count for the counted rows, 0 elsewhere
    record(out, "NllLossBackward0", {logp}, [tg = targets.ids, count = targets.count, from = logp.shape()](const Tensor& g) -> Grads {
      if (!needs_grad(g)) return {kernels::nll_loss_backward(g, tg, count, from)};
      return {nll_loss_backward(g, tg, count, from)};
    },
    [&](const Tangents& d) { return nll_loss(d[0], target, ignore_index, reduction); });  // jvp: the loss is linear in logp
  }
  return out;
}

// nll_loss(log_softmax(logits)) in one op, the same bits: the forward keeps two numbers per row
// (the shift and log-sum of log_softmax) instead of the (N, C) log-probabilities, and the backward
// writes log_softmax's gradient of nll_loss's one-hot gradient directly. The node keeps PyTorch's
// name for the loss, NllLossBackward0, and leads straight to the logits.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, const std::string& reduction,
                     double label_smoothing) {
  detail::check_defined(logits, "cross_entropy");
  detail::check_defined(target, "cross_entropy");
  const Reduction r = parse_reduction(reduction, "cross_entropy");
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
    std::ostringstream got;
    got << label_smoothing;
    throw std::invalid_argument("[cross_entropy] label_smoothing must be between 0.0 and 1.0. Got: " + got.str());
  }
  if (logits.dim() == 0) {
    detail::shape_error("cross_entropy", "expected logits (N, C, d1, ...) or (C), got a 0-dim tensor (target " +
                                             target.shape().str() + ")");
  }
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1;
  const double classes = static_cast<double>(logits.size(class_dim));
  if (target.is_floating_point()) {
    // class probabilities p (smoothed: p (1 - e) + e / C): loss_i = -sum_c p[i, c] log_softmax(x)[i, c],
    // the mean divides by the number of rows (every element of the batch dims)
    if (target.shape() != logits.shape()) {
      detail::shape_error("cross_entropy", "class-probability target " + target.shape().str() +
                                               " must have the logits' shape " + logits.shape().str());
    }
    if (ignore_index >= 0) {
      throw std::invalid_argument("[cross_entropy] ignore_index is not supported for floating point target");
    }
    const Tensor p = label_smoothing > 0 ? target * (1.0 - label_smoothing) + label_smoothing / classes : target;
    const Tensor terms = log_softmax(logits, class_dim) * p;
    if (r == Reduction::None) return neg(sum(terms, {class_dim}));
    const Tensor total = neg(sum(terms));
    if (r == Reduction::Sum) return total;
    return named(total / (static_cast<double>(logits.numel()) / classes), "DivBackward1");  // PyTorch's div by a Scalar
  }
  if (label_smoothing > 0) {
    // (1 - e) nll + (e / C) smooth, smooth_i = -sum_c log_softmax(x)[i, c] (0 for ignored rows),
    // averaged over the rows that count for "mean"
    const Tensor logp = log_softmax(logits, class_dim);
    const Tensor nll = nll_loss(logp, target, ignore_index, reduction);
    const Tensor ignored = eq(target, static_cast<double>(ignore_index));
    Tensor smooth = masked_fill(neg(sum(logp, {class_dim})), ignored, 0.0);
    if (r == Reduction::Sum) smooth = sum(smooth);
    if (r == Reduction::Mean) smooth = sum(smooth) / sum(logical_not(ignored)).item();
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / classes);
  }
  if (logits.dim() > 2 || r != Reduction::Mean || !logits.is_floating_point()) {
    return nll_loss(log_softmax(logits, class_dim), target, ignore_index, reduction);
  }
  const Targets targets = checked_targets(logits, target, ignore_index);
  // log_softmax subtracts the row max, so logits shifted by 1e8 give the same loss.
  Tensor stats;  // per row: shift, log-sum
  Tensor out = kernels::cross_entropy(logits, targets.ids, targets.count, stats);
  if (needs_grad(logits)) {
    // loss = -(1/count) sum_i log_softmax(x)[i, t_i]  =>  dx = log_softmax's backward of -g/count at the targets
    record(out, "NllLossBackward0", {logits},
           [sx = SavedTensor(logits), ss = SavedTensor(stats), ids = targets.ids, count = targets.count](const Tensor& g) -> Grads {
             const Tensor x = sx.get(), stats = ss.get();
             if (!needs_grad(g, x)) return {kernels::cross_entropy_backward(g, x, stats, ids, count)};
             // recording the backward's graph: nll_loss's rule, then log_softmax's
             const Tensor logp = log_softmax(x, -1);
             const Tensor dlogp = nll_loss_backward(g, ids, count, x.shape());
             return {dlogp - exp(logp) * sum(dlogp, {-1}, true)};
           },
           // jvp: nll_loss is linear, so dloss = nll_loss(dlogp), dlogp = dx - sum(softmax(x) * dx) (log_softmax's jvp)
           [&](const Tangents& d) {
             if (detail::tangent_kernel_applies({&d[0]}, {&logits}))
               return kernels::cross_entropy_jvp(d[0], logits, stats, targets.ids, targets.count);
             const Tensor dlogp = d[0] - sum(softmax(logits, -1) * d[0], {-1}, true);
             return nll_loss(dlogp, target, ignore_index, reduction);
           });
  }
  return out;
}

// (input - target)^2, reduced
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  const Reduction r = parse_reduction(reduction, "mse_loss");
  same_shapes(input, target, "mse_loss");
  const Tensor d = sub(input, target);
  return named(reduce(mul(d, d), r), "MseLossBackward0");
}

// |input - target|, reduced. PyTorch 1.13 composes it too (AbsBackward0, then Sum/MeanBackward0).
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  const Reduction r = parse_reduction(reduction, "l1_loss");
  same_shapes(input, target, "l1_loss", /*floating_only=*/false);  // integers: "none" and "sum", as PyTorch
  return reduce(abs(sub(input, target)), r);
}

// d = input - target: 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (l1_loss for beta 0)
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double beta) {
  const Reduction r = parse_reduction(reduction, "smooth_l1_loss");
  same_shapes(input, target, "smooth_l1_loss");
  if (beta < 0) throw std::invalid_argument("[smooth_l1_loss] smooth_l1_loss does not support negative values for beta.");
  if (beta == 0) return named(l1_loss(input, target, reduction), "SmoothL1LossBackward0");
  const Tensor d = sub(input, target), ad = abs(d);
  return named(reduce(where(lt(ad, beta), d * d * (0.5 / beta), ad - 0.5 * beta), r), "SmoothL1LossBackward0");
}

// d = input - target: 0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double delta) {
  const Reduction r = parse_reduction(reduction, "huber_loss");
  same_shapes(input, target, "huber_loss");
  if (!(delta > 0)) throw std::invalid_argument("[huber_loss] huber_loss does not support non-positive values for delta.");
  const Tensor d = sub(input, target), ad = abs(d);
  return named(reduce(where(lt(ad, delta), d * d * 0.5, (ad - 0.5 * delta) * delta), r), "HuberLossBackward0");
}

// -w (t log(x) + (1 - t) log(1 - x)), each log clamped to >= -100 as PyTorch does
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, const std::string& reduction) {
  const Reduction r = parse_reduction(reduction, "binary_cross_entropy");
  same_shapes(input, target, "binary_cross_entropy");
  check_floating(target, "binary_cross_entropy");
  check_weight(input, weight, "binary_cross_entropy", "weight");
  if (input.numel() > 0) {
    NoGradGuard no_grad;
    if (!(min(input).item() >= 0.0 && max(input).item() <= 1.0)) {
      throw std::invalid_argument("[binary_cross_entropy] all elements of input should be between 0 and 1 (input " +
                                  input.shape().str() + ")");
    }
  }
  Tensor out;
  {
    NoGradGuard no_grad;
    Tensor l = neg(target * clamp_min(log(input), -100.0) + rsub(target, 1.0) * clamp_min(log(rsub(input, 1.0)), -100.0));
    if (weight.defined()) l = l * weight;
    out = reduce(l, r);
  }
  if (needs_grad(input, target)) {
    const bool gx = input.requires_grad(), gt = target.requires_grad();
    // the loss's own rule, as PyTorch's (its composed gradient would be 0/0 = NaN at x = 0 or 1):
    //   dx = g w (x - t) / max(x (1 - x), 1e-12),  dt = g w (max(log(1 - x), -100) - max(log(x), -100))
    record(out, "BinaryCrossEntropyBackward0", {input, target},
           [sx = SavedTensor(input), st = SavedTensor(target), weight, r, shape = input.shape(), gx, gt](const Tensor& g) -> Grads {
             const Tensor x = sx.get(), t = st.get();
             Tensor ge = elementwise_grad(g, r, shape);
             if (weight.defined()) ge = ge * weight;
             Tensor dx, dt;
             // PyTorch's EPSILON is the float 1e-12f, also in float64
             if (gx) dx = ge * (x - t) / clamp_min(rsub(x, 1.0) * x, static_cast<double>(1e-12f));
             if (gt) dt = ge * (clamp_min(log(rsub(x, 1.0)), -100.0) - clamp_min(log(x), -100.0));
             return {dx, dt};
           },
           // jvp: the same factors on the tangents, then the reduction
           [&](const Tangents& d) {
             Tensor dl;
             if (d[0].defined()) dl = d[0] * (input - target) / clamp_min(rsub(input, 1.0) * input, static_cast<double>(1e-12f));
             if (d[1].defined()) {
               const Tensor term = d[1] * (clamp_min(log(rsub(input, 1.0)), -100.0) - clamp_min(log(input), -100.0));
               dl = dl.defined() ? dl + term : term;
             }
             if (weight.defined()) dl = dl * weight;
             return reduce(dl, r);
           });
  }
  return out;
}

// PyTorch's stable form, with m = max(-x, 0) and lw = 1 + (pos_weight - 1) t (1 without pos_weight):
//   w ((1 - t) x + lw (log(exp(-m) + exp(-x - m)) + m))
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const std::string& reduction, const Tensor& pos_weight) {
  const Reduction r = parse_reduction(reduction, "binary_cross_entropy_with_logits");
  same_shapes(input, target, "binary_cross_entropy_with_logits");
  check_floating(target, "binary_cross_entropy_with_logits");
  check_weight(input, weight, "binary_cross_entropy_with_logits", "weight");
  check_weight(input, pos_weight, "binary_cross_entropy_with_logits", "pos_weight");
  const Tensor m = clamp_min(neg(input), 0.0);
  const Tensor log_sum = log(exp(neg(m)) + exp(neg(input) - m));  // log(1 + exp(-x)) - m
  const Tensor linear_part = rsub(target, 1.0) * input;
  Tensor l = pos_weight.defined() ? linear_part + ((pos_weight - 1.0) * target + 1.0) * (log_sum + m) : linear_part + m + log_sum;
  if (weight.defined()) l = l * weight;
  return named(reduce(l, r), "BinaryCrossEntropyWithLogitsBackward0");
}

namespace {

// PyTorch's xlogy: x log(y), 0 where x = 0 (unless y is NaN)
//   =>  dx = g xlogy(x != 0, y) (log(y), 0 where x = 0 unless y is NaN),  dy = g x / y
// (so xlogy(t, t) is NaN for t < 0 and its t-gradient NaN at t <= 0, as in PyTorch)
Tensor xlogy(const Tensor& x, const Tensor& y) {
  auto zero_where_x_is = [](const Tensor& x, const Tensor& y, const Tensor& v) {
    return where(logical_and(eq(x, 0.0), eq(y, y)), 0.0, v);
  };
  Tensor out;
  {
    NoGradGuard no_grad;
    out = zero_where_x_is(x, y, x * log(y));
  }
  if (needs_grad(x, y)) {
    record(out, "XlogyBackward0", {x, y},
           [sx = SavedTensor(x), sy = SavedTensor(y), gx = x.requires_grad(), gy = y.requires_grad(), zero_where_x_is](
               const Tensor& g) -> Grads {
             const Tensor x = sx.get(), y = sy.get();
             Tensor dx, dy;
             if (gx) dx = g * zero_where_x_is(x, y, log(y));
             if (gy) dy = g * x / y;
             return {dx, dy};
           },
           // jvp: dout = dx log(y) (0 where x = 0) + dy x / y
           [&](const Tangents& d) {
             Tensor dout;
             if (d[0].defined()) dout = d[0] * zero_where_x_is(x, y, log(y));
             if (d[1].defined()) dout = dout.defined() ? dout + d[1] * x / y : d[1] * x / y;
             return dout;
           });
  }
  return out;
}

}  // namespace

// input holds log-probabilities; target probabilities (log-probabilities with log_target):
//   xlogy(t, t) - t x  (0 where t = 0, NaN where t < 0), or exp(t) (t - x). "batchmean" divides
//   the sum by the batch size.
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction, bool log_target) {
  const bool batchmean = reduction == "batchmean";
  const Reduction r = batchmean ? Reduction::Sum : parse_reduction(reduction, "kl_div");
  same_shapes(input, target, "kl_div");
  Tensor l;
  if (log_target) {
    l = exp(target) * (target - input);
  } else {
    l = xlogy(target, target) - target * input;
  }
  const Tensor out = reduce(l, r);
  return batchmean && input.dim() > 0 ? out / static_cast<double>(input.size(0)) : out;
}

}  // namespace ag
