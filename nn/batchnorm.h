// BatchNorm1d, as PyTorch's nn.BatchNorm1d: normalizes each channel of (N, C) or (N, C, L) input
// by batch statistics in training (updating the running ones) and by the running ones in eval.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "module.h"

namespace ag::nn {

// Training (or no running stats kept):
//   mean = x.mean over N (and L),  var = ((x - mean)^2).mean over N (and L)  (biased)
//   y = (x - mean) / sqrt(var + eps) * weight + bias
//   running_mean = (1 - f) * running_mean + f * mean
//   running_var  = (1 - f) * running_var  + f * var * n / (n - 1)   (unbiased, n = N * L)
// with f = momentum, or 1 / num_batches_tracked when momentum is nullopt (PyTorch's None: a
// cumulative average). Eval: y = (x - running_mean) / sqrt(running_var + eps) * weight + bias.
// The forward is written in ag ops (mean, sub, mul, pow), so its gradients of any order come
// from theirs; its grad_fn is AddBackward0 (PyTorch's is NativeBatchNormBackward0).
// Parameters weight (ones) and bias (zeros) when affine; buffers running_mean (zeros),
// running_var (ones) and num_batches_tracked (int64, 0-dim) when track_running_stats.
class BatchNorm1d : public Module {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  Tensor weight, bias;                                    // (C), undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;  // undefined unless track_running_stats

 protected:
  // A dict without num_batches_tracked loads it as 0, as PyTorch does for a dict without version
  // metadata (a plain dict, a file's tensors).
  void fill_state_dict_defaults(const std::string& prefix, std::map<std::string, Tensor>& state_dict) const override;
};

}  // namespace ag::nn
