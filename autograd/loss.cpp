// Losses: nll_loss, cross_entropy = nll_loss(log_softmax(logits)) in one op, and mse_loss.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "autograd/kernels/common.h"
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

// nll_loss's value: -(1/count) times the sum of logp(i, t_i) over the rows that count, summed in
// double; NaN if no row counts.
template <class T, class LogP>
Tensor nll_value(const Targets& targets, DType dtype, LogP logp) {
  double acc = 0;
  for (std::size_t i = 0; i < targets.ids.size(); ++i)
    if (targets.ids[i] >= 0) acc -= static_cast<double>(logp(static_cast<int64_t>(i), targets.ids[i]));
  const T count = static_cast<T>(targets.count);
  return full({}, targets.count ? static_cast<double>(static_cast<T>(acc) / count) : std::numeric_limits<double>::quiet_NaN(),
              dtype);
}

// nll_loss's rule in ag ops: dlogp = -g / count at (i, t_i) for the rows that count, 0 elsewhere.
Tensor nll_loss_backward(const Tensor& g, const std::vector<int64_t>& ids, int64_t count, const Size& shape) {
  Tensor hit = zeros(shape.vec(), kBool);  // true at (i, t_i)
  uint8_t* p = hit.data_ptr<uint8_t>();
  const int64_t c = shape[shape.size() - 1];
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= 0) p[static_cast<int64_t>(i) * c + ids[i]] = 1;
  return masked_fill(expand(-g / static_cast<double>(count), shape.vec()), logical_not(hit), 0.0);
}

// The same rule as one loop (its fast path).
Tensor nll_loss_backward_kernel(const Tensor& g, const std::vector<int64_t>& tg, int64_t count, const Size& from, int64_t n,
                                int64_t c) {
  Tensor d = zeros(from.vec(), g.dtype());
  dispatch_float(g.dtype(), "nll_loss_backward", [&]<typename T>() {
    const T v = -static_cast<T>(g.item()) / static_cast<T>(count);
    T* p = d.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i)
      if (tg[static_cast<std::size_t>(i)] >= 0) p[i * c + tg[static_cast<std::size_t>(i)]] = v;
  });
  return d;
}

// cross_entropy's rule (log_softmax's rule of nll_loss's) as one pass over the logits, from the
// per-row shift and log-sum the forward kept (its fast path).
Tensor cross_entropy_backward_kernel(const Tensor& g, const Tensor& x0, const Tensor& stats, const std::vector<int64_t>& ids,
                                     int64_t count, int64_t n, int64_t c) {
  const Tensor x = x0.contiguous();
  Tensor dx = detail::make_tensor(x.shape(), x.dtype());
  dispatch_float(x.dtype(), "cross_entropy_backward", [&]<typename T>() {
    const T v = -static_cast<T>(g.item()) / static_cast<T>(count);
    std::vector<T> per_row(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) per_row[static_cast<std::size_t>(i)] = ids[static_cast<std::size_t>(i)] >= 0 ? v : T(0);
    const T* shift = stats.data_ptr<T>();
    detail::cross_entropy_backward(x.data_ptr<T>(), shift, shift + n, ids.data(), per_row.data(), n, c, dx.data_ptr<T>());
  });
  return dx;
}

}  // namespace

Tensor nll_loss(const Tensor& logp, const Tensor& target, int64_t ignore_index) {
  const Targets targets = checked_targets(logp, target, ignore_index);
  const std::vector<int64_t>& tg = targets.ids;
  const int64_t count = targets.count;
  const Tensor lp = logp.contiguous();
  const int64_t n = logp.dim() == 2 ? lp.size(0) : 1, c = lp.size(-1);
  // loss = -(1/count) sum_{i: t_i != ignore} logp[i, t_i]
  Tensor out = dispatch_float(lp.dtype(), "nll_loss", [&]<typename T>() {
    const T* p = lp.data_ptr<T>();
    return nll_value<T>(targets, lp.dtype(), [&](int64_t i, int64_t t) { return p[i * c + t]; });
  });
  if (needs_grad(logp)) {
    //  =>  dlogp[i, t_i] = -g / count for the counted rows, 0 elsewhere
    record(out, "NllLossBackward0", {logp}, [tg, count, from = logp.shape(), n, c](const Tensor& g) -> Grads {
      if (!needs_grad(g)) return {nll_loss_backward_kernel(g, tg, count, from, n, c)};
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
  const int64_t n = logits.dim() == 2 ? logits.size(0) : 1, c = logits.size(-1), count = targets.count;
  // log_softmax subtracts the row max, so logits shifted by 1e8 give the same loss.
  Tensor stats = detail::make_tensor(Size{2, n}, logits.dtype());  // per row: shift, log-sum
  Tensor out = dispatch_float(logits.dtype(), "cross_entropy", [&]<typename T>() {
    NoGradGuard no_grad;
    const Tensor x = logits.contiguous();
    const T* px = x.data_ptr<T>();
    T* shift = stats.data_ptr<T>();
    T* ls = shift + n;
    detail::log_softmax_stats(px, n, c, shift, ls);
    // nll_loss of log_softmax's log-probabilities at the targets
    return nll_value<T>(targets, logits.dtype(), [&](int64_t i, int64_t t) -> T { return px[i * c + t] - shift[i] - ls[i]; });
  });
  if (needs_grad(logits)) {
    // loss = -(1/count) sum_i log_softmax(x)[i, t_i]  =>  dx = log_softmax's backward of -g/count at the targets
    record(out, "NllLossBackward0", {logits},
           [sx = SavedTensor(logits), stats, ids = targets.ids, count, n, c](const Tensor& g) -> Grads {
             const Tensor x = sx.get();
             if (!needs_grad(g, x)) return {cross_entropy_backward_kernel(g, x, stats, ids, count, n, c)};
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
