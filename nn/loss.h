// Losses as modules, as torch.nn's: each holds the functional loss's options (autograd/ops.h has
// the losses and their defaults) and its forward(input, target) calls it. They print as PyTorch's
// (MSELoss(), CrossEntropyLoss()); BCELoss and BCEWithLogitsLoss keep their weights as buffers.
#pragma once

#include <string>
#include <utility>

#include "module.h"

namespace ag::nn {

// The two-input call of every loss module; Module's one-input forward is not a loss's.
class Loss : public Module {
 public:
  Loss(std::string type_name, std::string reduction) : Module(std::move(type_name)), reduction(std::move(reduction)) {}
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string reduction;
};

class L1Loss : public Loss {
 public:
  explicit L1Loss(std::string reduction = "mean") : Loss("L1Loss", std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override { return l1_loss(input, target, reduction); }
};

class MSELoss : public Loss {
 public:
  explicit MSELoss(std::string reduction = "mean") : Loss("MSELoss", std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override { return mse_loss(input, target, reduction); }
};

class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(int64_t ignore_index = -100, std::string reduction = "mean", double label_smoothing = 0.0)
      : Loss("CrossEntropyLoss", std::move(reduction)), ignore_index(ignore_index), label_smoothing(label_smoothing) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return cross_entropy(input, target, ignore_index, reduction, label_smoothing);
  }
  int64_t ignore_index;
  double label_smoothing;
};

class NLLLoss : public Loss {
 public:
  explicit NLLLoss(int64_t ignore_index = -100, std::string reduction = "mean")
      : Loss("NLLLoss", std::move(reduction)), ignore_index(ignore_index) {}
  Tensor forward(const Tensor& input, const Tensor& target) override { return nll_loss(input, target, ignore_index, reduction); }
  int64_t ignore_index;
};

class BCELoss : public Loss {
 public:
  explicit BCELoss(const Tensor& weight = {}, std::string reduction = "mean") : Loss("BCELoss", std::move(reduction)) {
    if (weight.defined()) this->weight = register_buffer("weight", weight);
  }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return binary_cross_entropy(input, target, weight, reduction);
  }
  Tensor weight;
};

class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(const Tensor& weight = {}, std::string reduction = "mean", const Tensor& pos_weight = {})
      : Loss("BCEWithLogitsLoss", std::move(reduction)) {
    if (weight.defined()) this->weight = register_buffer("weight", weight);
    if (pos_weight.defined()) this->pos_weight = register_buffer("pos_weight", pos_weight);
  }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight);
  }
  Tensor weight, pos_weight;
};

class SmoothL1Loss : public Loss {
 public:
  explicit SmoothL1Loss(std::string reduction = "mean", double beta = 1.0) : Loss("SmoothL1Loss", std::move(reduction)), beta(beta) {}
  Tensor forward(const Tensor& input, const Tensor& target) override { return smooth_l1_loss(input, target, reduction, beta); }
  double beta;
};

class HuberLoss : public Loss {
 public:
  explicit HuberLoss(std::string reduction = "mean", double delta = 1.0) : Loss("HuberLoss", std::move(reduction)), delta(delta) {}
  Tensor forward(const Tensor& input, const Tensor& target) override { return huber_loss(input, target, reduction, delta); }
  double delta;
};

class KLDivLoss : public Loss {
 public:
  explicit KLDivLoss(std::string reduction = "mean", bool log_target = false)
      : Loss("KLDivLoss", std::move(reduction)), log_target(log_target) {}
  Tensor forward(const Tensor& input, const Tensor& target) override { return kl_div(input, target, reduction, log_target); }
  bool log_target;
};

}  // namespace ag::nn
