// Kernels of the losses; their rules and formulas are in loss.cpp.
#include "autograd/kernels/loss.h"

#include <limits>

#include "autograd/kernels/common.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/softmax.h"

namespace ag::kernels {

namespace {

// nll_loss's value: -(1/count) times the sum of logp(i, t_i) over the rows that count, summed in
// double; NaN if no row counts.
template <class T, class LogP>
Tensor nll_value(const std::vector<int64_t>& ids, int64_t count, DType dtype, LogP logp) {
  double acc = 0;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= 0) acc -= static_cast<double>(logp(static_cast<int64_t>(i), ids[i]));
  const T n = static_cast<T>(count);
  return detail::scalar_tensor(count ? static_cast<double>(static_cast<T>(acc) / n) : std::numeric_limits<double>::quiet_NaN(),
                               dtype);
}

}  // namespace

Tensor nll_loss(const Tensor& logp, const std::vector<int64_t>& ids, int64_t count) {
  const Tensor lp = detail::contiguous_values(logp);
  const int64_t c = lp.size(-1);
  return dispatch_float(lp.dtype(), "nll_loss", [&]<typename T>() {
    const T* p = lp.data_ptr<T>();
    return nll_value<T>(ids, count, lp.dtype(), [&](int64_t i, int64_t t) { return p[i * c + t]; });
  });
}

Tensor nll_loss_backward(const Tensor& g, const std::vector<int64_t>& ids, int64_t count, const Size& shape) {
  Tensor d = detail::zeros_tensor(shape, g.dtype());
  const int64_t n = static_cast<int64_t>(ids.size()), c = shape[shape.size() - 1];
  dispatch_float(g.dtype(), "nll_loss_backward", [&]<typename T>() {
    const T v = -static_cast<T>(g.item()) / static_cast<T>(count);
    T* p = d.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i)
      if (ids[static_cast<std::size_t>(i)] >= 0) p[i * c + ids[static_cast<std::size_t>(i)]] = v;
  });
  return d;
}

Tensor target_mask(const std::vector<int64_t>& ids, const Size& shape) {
  Tensor hit = detail::zeros_tensor(shape, kBool);
  uint8_t* p = hit.data_ptr<uint8_t>();
  const int64_t c = shape[shape.size() - 1];
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= 0) p[static_cast<int64_t>(i) * c + ids[i]] = 1;
  return hit;
}

// About what one logit costs in either pass (an exp and a few adds), in FLOPs, for parallel_for.
constexpr double kRowFlops = 16;

Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& ids, int64_t count, Tensor& stats) {
  const int64_t n = static_cast<int64_t>(ids.size()), c = logits.size(-1);
  stats = detail::make_tensor(Size{2, n}, logits.dtype());  // per row: shift, log-sum
  return dispatch_float(logits.dtype(), "cross_entropy", [&]<typename T>() {
    const Tensor x = detail::contiguous_values(logits);
    const T* px = x.data_ptr<T>();
    T* shift = stats.data_ptr<T>();
    T* ls = shift + n;
    // rows split over ag's threads (each row's numbers are the same on any thread)
    detail::parallel_for(n, kRowFlops * static_cast<double>(c), [&](int64_t b, int64_t e) {
      log_softmax_stats(px + b * c, e - b, c, shift + b, ls + b);
    });
    // nll_loss of log_softmax's log-probabilities at the targets
    return nll_value<T>(ids, count, logits.dtype(), [&](int64_t i, int64_t t) -> T { return px[i * c + t] - shift[i] - ls[i]; });
  });
}

Tensor cross_entropy_backward(const Tensor& g, const Tensor& logits, const Tensor& stats, const std::vector<int64_t>& ids,
                              int64_t count) {
  const Tensor x = detail::contiguous_values(logits);
  const int64_t n = static_cast<int64_t>(ids.size()), c = x.size(-1);
  Tensor dx = detail::make_tensor(x.shape(), x.dtype());
  dispatch_float(x.dtype(), "cross_entropy_backward", [&]<typename T>() {
    const T v = -static_cast<T>(g.item()) / static_cast<T>(count);
    std::vector<T> per_row(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) per_row[static_cast<std::size_t>(i)] = ids[static_cast<std::size_t>(i)] >= 0 ? v : T(0);
    const T* shift = stats.data_ptr<T>();
    const T* px = x.data_ptr<T>();
    T* pdx = dx.data_ptr<T>();
    detail::parallel_for(n, kRowFlops * static_cast<double>(c), [&](int64_t b, int64_t e) {
      cross_entropy_backward(px + b * c, shift + b, shift + n + b, ids.data() + b, per_row.data() + b, e - b, c, pdx + b * c);
    });
  });
  return dx;
}

Tensor cross_entropy_jvp(const Tensor& dlogits, const Tensor& logits, const Tensor& stats, const std::vector<int64_t>& ids,
                         int64_t count) {
  const Tensor x = detail::contiguous_values(logits), dx = detail::contiguous_values(dlogits);
  const int64_t n = static_cast<int64_t>(ids.size()), c = x.size(-1);
  return dispatch_float(x.dtype(), "cross_entropy_jvp", [&]<typename T>() {
    std::vector<T> term(static_cast<std::size_t>(n));
    const T* shift = stats.data_ptr<T>();
    const T* px = x.data_ptr<T>();
    const T* pdx = dx.data_ptr<T>();
    detail::parallel_for(n, kRowFlops * static_cast<double>(c), [&](int64_t b, int64_t e) {
      cross_entropy_jvp(px + b * c, shift + b, shift + n + b, ids.data() + b, pdx + b * c, e - b, c, term.data() + b);
    });
    // nll_loss of the log-probabilities' tangent: -(1/count) times the sum of the terms
    return nll_value<T>(ids, count, x.dtype(), [&](int64_t i, int64_t) { return term[static_cast<std::size_t>(i)]; });
  });
}

}  // namespace ag::kernels
