// Optimizers with PyTorch 1.13's exact update rules (the single-tensor code paths of
// torch.optim), options structs with PyTorch's defaults, and PyTorch's argument checks.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "../autograd/autograd.h"

namespace ag::optim {

namespace lr_scheduler {
class LRScheduler;
}

// One parameter group, as PyTorch's param_groups[0]: the hyperparameters a user or a
// learning-rate scheduler reads and changes between steps are lr(), momentum() and betas().
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
  // param_groups[0]['momentum'] of SGD and RMSprop; nullopt for optimizers without one. The
  // setters check values as the constructors do and throw for optimizers without the field.
  virtual std::optional<double> momentum() const { return std::nullopt; }
  virtual void set_momentum(double momentum);
  // param_groups[0]['betas'] of Adam and AdamW; nullopt for optimizers without them.
  virtual std::optional<std::pair<double, double>> betas() const { return std::nullopt; }
  virtual void set_betas(std::pair<double, double> betas);
  // param_groups[0]['initial_lr']: the lr the first scheduler attached to this optimizer
  // started from (OneCycleLR sets it to max_lr / div_factor); later schedulers start there too.
  std::optional<double> initial_lr() const { return initial_lr_; }
  void set_initial_lr(double lr) { initial_lr_ = lr; }
  const std::vector<Tensor>& params() const { return params_; }

 protected:
  std::vector<Tensor> params_;
  double lr_;

 private:
  // Schedulers write lr as PyTorch writes param_group['lr']: unchecked, so a schedule that
  // overshoots (OneCycleLR's linear anneal ends slightly below zero) keeps PyTorch's numbers.
  friend class lr_scheduler::LRScheduler;
  std::optional<double> initial_lr_;
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
  std::optional<double> momentum() const override { return opt_.momentum; }
  void set_momentum(double momentum) override;

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
  std::optional<std::pair<double, double>> betas() const override { return opt_.betas; }
  void set_betas(std::pair<double, double> betas) override;

 protected:
  Adam(std::vector<Tensor> params, const AdamOptions& options, bool decoupled, const char* name);

 private:
  AdamOptions opt_;
  bool decoupled_;  // AdamW: p *= 1 - lr wd, instead of adding wd p to the gradient
  std::vector<int64_t> step_;  // per parameter: steps where it had a gradient, as PyTorch's state['step']
  std::vector<Tensor> exp_avg_, exp_avg_sq_, max_exp_avg_sq_;
};

// AdamW: Adam with decoupled weight decay (p *= 1 - lr wd before the Adam update).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options = {});
};

struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;
  bool centered = false;
};

// g += wd p; v = alpha v + (1-alpha) g^2; avg = sqrt(v - a^2) + eps with a = alpha a + (1-alpha) g
// if centered, else sqrt(v) + eps; then buf = momentum buf + g / avg, p -= lr buf if momentum > 0,
// else p -= lr g / avg
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& options = {});
  void step() override;
  std::optional<double> momentum() const override { return opt_.momentum; }
  void set_momentum(double momentum) override;

 private:
  RMSpropOptions opt_;
  std::vector<Tensor> square_avg_, grad_avg_, momentum_buffer_;
};

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0.0;
  double weight_decay = 0.0;
  double initial_accumulator_value = 0.0;
  double eps = 1e-10;
};

// g += wd p; sum += g^2 (sum starts at initial_accumulator_value);
// p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps), t = this parameter's step count
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, const AdagradOptions& options = {});
  void step() override;

 private:
  AdagradOptions opt_;
  std::vector<Tensor> sum_;
  std::vector<int64_t> step_;  // per parameter: steps where it had a gradient, as PyTorch's state['step']
};

}  // namespace ag::optim
