// torch.optim.lr_scheduler's get_lr() formulas, line for line (PyTorch 1.13). Each comment
// gives PyTorch's expression; the C++ evaluates it in the same order, so the doubles agree.
#include "optim/lr_scheduler.h"

#include "autograd/format.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace ag::optim::lr_scheduler {

namespace {

void require(bool ok, const std::string& msg) {
  if (!ok) throw std::invalid_argument(msg);
}

constexpr double pi = std::numbers::pi;  // == Python's math.pi

}  // namespace

// ---- the base ----

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {}

void LRScheduler::initial_step() {
  // group.setdefault('initial_lr', group['lr']); base_lrs = [group['initial_lr'] ...]
  if (!optimizer_.initial_lr()) optimizer_.set_initial_lr(optimizer_.lr());
  base_lrs = {*optimizer_.initial_lr()};
  last_epoch = -1;
  step();
}

void LRScheduler::step() {
  ++last_epoch;
  const double lr = get_lr();
  optimizer_.lr_ = lr;  // param_group['lr'] = lr
  last_lr_ = {lr};
}

// ---- StepLR ----

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  initial_step();
}

double StepLR::get_lr() {
  const double lr = optimizer_.lr();
  if (last_epoch == 0) return lr;
  require(step_size_ != 0, "StepLR: integer modulo by zero (step_size is 0)");  // Python's ZeroDivisionError
  if (last_epoch % step_size_ != 0) return lr;
  return lr * gamma_;  // group['lr'] * gamma
}

// ---- MultiStepLR ----

MultiStepLR::MultiStepLR(Optimizer& optimizer, const std::vector<int64_t>& milestones, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  for (int64_t m : milestones) ++milestones_[m];
  initial_step();
}

double MultiStepLR::get_lr() {
  const double lr = optimizer_.lr();
  const auto it = milestones_.find(last_epoch);
  if (it == milestones_.end()) return lr;
  return lr * std::pow(gamma_, static_cast<double>(it->second));  // group['lr'] * gamma ** milestones[last_epoch]
}

// ---- ExponentialLR ----

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {
  initial_step();
}

double ExponentialLR::get_lr() {
  const double lr = optimizer_.lr();
  return last_epoch == 0 ? lr : lr * gamma_;
}

// ---- CosineAnnealingLR ----

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  initial_step();
}

double CosineAnnealingLR::get_lr() {
  const double lr = optimizer_.lr(), base_lr = base_lrs[0], T = static_cast<double>(T_max_);
  const double e = static_cast<double>(last_epoch);
  if (last_epoch == 0) return lr;
  // (PyTorch's branch for `_step_count == 1 and last_epoch > 0` serves schedulers resumed at a
  // given last_epoch, which these constructors do not take.)
  require(T_max_ != 0, "CosineAnnealingLR: integer modulo by zero (T_max is 0)");  // Python's ZeroDivisionError
  if ((last_epoch - 1 - T_max_) % (2 * T_max_) == 0)  // the bottom of the cosine: climb back
    return lr + (base_lr - eta_min_) * (1 - std::cos(pi / T)) / 2;
  // (1 + cos(pi * e / T)) / (1 + cos(pi * (e - 1) / T)) * (group['lr'] - eta_min) + eta_min
  return (1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T)) * (lr - eta_min_) + eta_min_;
}

// ---- LambdaLR ----

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda)
    : LRScheduler(optimizer), lr_lambda_(std::move(lr_lambda)) {
  require(static_cast<bool>(lr_lambda_), "LambdaLR: lr_lambda is empty");
  initial_step();
}

double LambdaLR::get_lr() { return base_lrs[0] * lr_lambda_(last_epoch); }

// ---- LinearLR ----

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  require(!(start_factor > 1.0 || start_factor < 0), "Starting multiplicative factor expected to be between 0 and 1.");
  require(!(end_factor > 1.0 || end_factor < 0), "Ending multiplicative factor expected to be between 0 and 1.");
  initial_step();
}

double LinearLR::get_lr() {
  const double lr = optimizer_.lr();
  if (last_epoch == 0) return lr * start_factor_;
  if (last_epoch > total_iters_) return lr;
  // group['lr'] * (1. + (end - start) / (total_iters * start + (last_epoch - 1) * (end - start)))
  const double den = static_cast<double>(total_iters_) * start_factor_ +
                     static_cast<double>(last_epoch - 1) * (end_factor_ - start_factor_);
  require(den != 0, "LinearLR: float division by zero (start_factor is 0)");  // Python's ZeroDivisionError
  return lr * (1. + (end_factor_ - start_factor_) / den);
}

// ---- OneCycleLR ----

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, const OneCycleLROptions& o)
    : LRScheduler(optimizer), total_steps_(total_steps), opt_(o) {
  require(total_steps > 0, "Expected positive integer total_steps, but got " + std::to_string(total_steps));
  require(!(o.pct_start < 0 || o.pct_start > 1), "Expected float between 0 and 1 pct_start, but got " + py_float_repr(o.pct_start));
  require(o.anneal_strategy == "cos" || o.anneal_strategy == "linear",
          "anneal_strategy must by one of 'cos' or 'linear', instead got " + o.anneal_strategy);
  // group['initial_lr'], group['max_lr'], group['min_lr']
  const double initial_lr = max_lr / o.div_factor, min_lr = initial_lr / o.final_div_factor;
  optimizer_.set_initial_lr(initial_lr);
  const double up_end = o.pct_start * static_cast<double>(total_steps) - 1, last = static_cast<double>(total_steps - 1);
  const double m_max = o.max_momentum, m_base = o.base_momentum;
  if (o.three_phase) {
    phases_ = {{up_end, initial_lr, max_lr, m_max, m_base},
               {2 * o.pct_start * static_cast<double>(total_steps) - 2, max_lr, initial_lr, m_base, m_max},
               {last, initial_lr, min_lr, m_max, m_max}};
  } else {
    phases_ = {{up_end, initial_lr, max_lr, m_max, m_base}, {last, max_lr, min_lr, m_base, m_max}};
  }
  if (o.cycle_momentum) {
    require(optimizer_.momentum() || optimizer_.betas(), "optimizer must support momentum with `cycle_momentum` option enabled");
    use_beta1_ = optimizer_.betas().has_value();
    if (use_beta1_)
      optimizer_.set_betas({m_max, optimizer_.betas()->second});
    else
      optimizer_.set_momentum(m_max);
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (opt_.anneal_strategy == "cos") {
    const double cos_out = std::cos(pi * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

double OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch;
  require(step_num <= total_steps_, "Tried to step " + std::to_string(step_num + 1) +
                                        " times. The specified number of total steps is " + std::to_string(total_steps_));
  double start_step = 0, lr = 0, momentum = 0;
  for (std::size_t i = 0; i < phases_.size(); ++i) {
    const Phase& phase = phases_[i];
    if (static_cast<double>(step_num) <= phase.end_step || i + 1 == phases_.size()) {
      const double span = phase.end_step - start_step;
      require(span != 0, "OneCycleLR: float division by zero (a phase of the schedule has no steps: pct_start * total_steps is too small)");
      const double pct = (static_cast<double>(step_num) - start_step) / span;
      lr = anneal(phase.start_lr, phase.end_lr, pct);
      momentum = anneal(phase.start_momentum, phase.end_momentum, pct);
      break;
    }
    start_step = phase.end_step;
  }
  if (opt_.cycle_momentum) {
    if (use_beta1_)
      optimizer_.set_betas({momentum, optimizer_.betas()->second});
    else
      optimizer_.set_momentum(momentum);
  }
  return lr;
}

}  // namespace ag::optim::lr_scheduler
