// Losses: cross_entropy = nll_loss(log_softmax(logits)), and mse_loss.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "autograd/kernels.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

Tensor nll_loss(const Tensor& logp, const Tensor& target, int64_t ignore_index) {
  const bool batched = logp.dim() == 2;
  if (!(logp.dim() == 1 || logp.dim() == 2) || target.dim() != logp.dim() - 1 || (batched && target.size(0) != logp.size(0))) {
    detail::shape_error("nll_loss", "expected input (N, C) with target (N), or input (C) with target (), got input " +
                                        logp.shape().str() + " and target " + target.shape().str());
  }
  if (target.dtype() != kInt64) {
    throw std::invalid_argument("[nll_loss] expected an int64 target (class indices), got " + dtype_name(target.dtype()));
  }
  const Tensor lp = logp.contiguous();
  const int64_t n = batched ? lp.size(0) : 1, c = lp.size(-1);
  const std::vector<int64_t> tg = target.to_vector<int64_t>();
  int64_t count = 0;
  for (int64_t t : tg) {
    if (t == ignore_index) continue;
    if (t < 0 || t >= c) {
      throw std::out_of_range("[nll_loss] target " + std::to_string(t) + " is out of bounds for " + std::to_string(c) +
                              " classes (input shape " + logp.shape().str() + ")");
    }
    ++count;
  }
  // loss = -(1/count) sum_{i: t_i != ignore} logp[i, t_i]
  Tensor out = dispatch_float(lp.dtype(), "nll_loss", [&]<typename T>() {
    const T* p = lp.data_ptr<T>();
    double acc = 0;
    for (int64_t i = 0; i < n; ++i)
      if (tg[static_cast<std::size_t>(i)] != ignore_index) acc -= static_cast<double>(p[i * c + tg[static_cast<std::size_t>(i)]]);
    const double v = count ? static_cast<double>(static_cast<T>(acc) / static_cast<T>(count)) : std::numeric_limits<double>::quiet_NaN();
    return full({}, v, lp.dtype());
  });
  if (needs_grad(logp)) {
    //  =>  dlogp[i, t_i] = -g / count for the counted rows, 0 elsewhere
    record(out, "NllLossBackward0", {logp}, [tg, ignore_index, count, from = logp.shape(), n, c](const Tensor& g) -> Grads {
      Tensor d = zeros(from.vec(), g.dtype());
      dispatch_float(g.dtype(), "nll_loss_backward", [&]<typename T>() {
        const T v = -static_cast<T>(g.item()) / static_cast<T>(count);
        T* p = d.data_ptr<T>();
        for (int64_t i = 0; i < n; ++i)
          if (tg[static_cast<std::size_t>(i)] != ignore_index) p[i * c + tg[static_cast<std::size_t>(i)]] = v;
      });
      return {d};
    });
  }
  return out;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index) {
  if (logits.dim() != 1 && logits.dim() != 2) {
    detail::shape_error("cross_entropy", "expected logits (N, C) or (C), got " + logits.shape().str() + " (target " +
                                             target.shape().str() + "); reshape to (-1, C) first");
  }
  // log_softmax subtracts the row max, so logits shifted by 1e8 give the same loss.
  return nll_loss(log_softmax(logits, -1), target, ignore_index);
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
