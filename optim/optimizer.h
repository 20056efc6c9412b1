// Optimizers with PyTorch 1.13's exact update rules (the single-tensor code paths of
// torch.optim), options structs with PyTorch's defaults, and PyTorch's argument checks.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "autograd/autograd.h"

namespace ag::optim {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;
  // Applies one update from the parameters' .grad (parameters without a grad are skipped).
  virtual void step() = 0;
  // Like PyTorch 1.13's default (set_to_none=false): zeroes existing gradients in place;
  // set_to_none=true drops them instead.
  void zero_grad(bool set_to_none = false);
  double lr() const { return lr_; }
  void set_lr(double lr);
  const std::vector<Tensor>& params() const { return params_; }

 protected:
  std::vector<Tensor> params_;
  double lr_;
};

struct SGDOptions {
  std::optional<double> lr;  // required, as in PyTorch
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

// d = g + wd p; buf = momentum buf + (1 - dampening) d (buf = d at the first step);
// d = nesterov ? d + momentum buf : buf; p -= lr d
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  void step() override;
  const SGDOptions& options() const { return opt_; }

 private:
  SGDOptions opt_;
  std::vector<Tensor> momentum_buffer_;
};

struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool amsgrad = false;
};

struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;  // decoupled
  bool amsgrad = false;
};

// Adam: g += wd p (L2); m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)   (v -> max over steps if amsgrad)
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = {});
  void step() override;

 protected:
  Adam(std::vector<Tensor> params, const AdamOptions& options, bool decoupled, const char* name);

 private:
  AdamOptions opt_;
  bool decoupled_;  // AdamW: p *= 1 - lr wd, instead of adding wd p to the gradient
  int64_t step_ = 0;
  std::vector<Tensor> exp_avg_, exp_avg_sq_, max_exp_avg_sq_;
};

// AdamW: Adam with decoupled weight decay (p *= 1 - lr wd before the Adam update).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options = {});
};

}  // namespace ag::optim
