// Learning-rate schedulers as torch.optim.lr_scheduler in PyTorch 1.13: same names, arguments,
// defaults and errors, and the same recursive ("chainable") formulas, which compute each lr from
// the optimizer's current one, so every value equals PyTorch's to the last bit (the closed forms
// differ in the last bits, e.g. CosineAnnealingLR's).
//
//   optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
//   optim::lr_scheduler::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   for (int epoch = 0; epoch < 100; ++epoch) { train(opt); sched.step(); }
//
// Constructing a scheduler performs its initial step, as PyTorch's does: it records the
// optimizer's initial_lr (if no scheduler did before) and sets the lr of epoch 0. A scheduler
// keeps a reference to its optimizer, which must outlive it. ag's optimizers hold one parameter
// group, so get_last_lr() has one element.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "optimizer.h"

namespace ag::optim::lr_scheduler {

// PyTorch's _LRScheduler.
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  // last_epoch += 1, then sets the optimizer's lr to the schedule's value for last_epoch.
  void step();
  // The lr set by the last step(), one per parameter group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  Optimizer& optimizer() const { return optimizer_; }

  int64_t last_epoch = -1;     // steps taken; 0 after construction
  std::vector<double> base_lrs;  // the optimizer's initial_lr, one per parameter group

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // The end of PyTorch's _LRScheduler.__init__, which derived constructors call last, once
  // their fields are set: records initial_lr and base_lrs, then takes the step to epoch 0.
  void initial_step();
  // The chainable form: the lr for last_epoch, from the current lr (optimizer_.lr()).
  virtual double get_lr() = 0;

  Optimizer& optimizer_;

 private:
  std::vector<double> last_lr_;
};

// lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  double get_lr() override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr *= gamma each time last_epoch reaches a milestone (gamma^k for a milestone given k times);
// milestones need not be sorted.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, const std::vector<int64_t>& milestones, double gamma = 0.1);

 protected:
  double get_lr() override;

 private:
  std::map<int64_t, int64_t> milestones_;  // epoch -> how many times it was given (a Counter)
  double gamma_;
};

// lr *= gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  double get_lr() override;

 private:
  double gamma_;
};

// eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2, computed recursively from the
// current lr, and rising again after T_max (a cosine of period 2 T_max).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  double get_lr() override;

 private:
  int64_t T_max_;
  double eta_min_;
};

// lr = base_lr * lr_lambda(epoch).
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t epoch)> lr_lambda);

 protected:
  double get_lr() override;

 private:
  std::function<double(int64_t)> lr_lambda_;
};

// The factor on base_lr goes linearly from start_factor to end_factor over total_iters epochs.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  double get_lr() override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

struct OneCycleLROptions {
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  // "cos" or "linear"
  bool cycle_momentum = true;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
};

// The 1cycle policy: lr rises from max_lr / div_factor to max_lr over pct_start of total_steps,
// then falls to max_lr / div_factor / final_div_factor (three_phase: back to the start first,
// then down); the momentum (SGD's, RMSprop's, or Adam's beta1) moves the opposite way between
// max_momentum and base_momentum. Meant to be stepped after every batch, total_steps times.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, const OneCycleLROptions& options = {});

 protected:
  double get_lr() override;

 private:
  struct Phase {
    double end_step, start_lr, end_lr, start_momentum, end_momentum;
  };
  double anneal(double start, double end, double pct) const;

  int64_t total_steps_;
  OneCycleLROptions opt_;
  std::vector<Phase> phases_;
  bool use_beta1_ = false;
};

}  // namespace ag::optim::lr_scheduler
