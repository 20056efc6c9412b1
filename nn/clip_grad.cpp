#include "nn/clip_grad.h"

#include <cmath>
#include <stdexcept>

namespace ag::nn {

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type, bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return zeros({});
  // total = norm of the per-gradient norms, computed like PyTorch in the gradients' dtype
  double total = 0;
  std::vector<double> norms;
  for (const Tensor& g : grads) {
    double acc = 0;
    for (double v : g.to_vector<double>()) {
      if (std::isinf(norm_type)) acc = std::max(acc, std::abs(v));
      else acc += std::pow(std::abs(v), norm_type);
    }
    norms.push_back(std::isinf(norm_type) ? acc : std::pow(acc, 1.0 / norm_type));
  }
  if (std::isinf(norm_type)) {
    for (double n : norms) total = std::max(total, n);
  } else {
    for (double n : norms) total += std::pow(n, norm_type);
    total = std::pow(total, 1.0 / norm_type);
  }
  const DType dt = grads[0].dtype();
  if (dt == kFloat32) total = static_cast<float>(total);
  if (error_if_nonfinite && !std::isfinite(total)) {
    throw std::runtime_error("[clip_grad_norm_] the total norm of order " + std::to_string(norm_type) +
                             " for gradients is non-finite, so it cannot be clipped");
  }
  double coef = max_norm / (total + 1e-6);
  if (dt == kFloat32) coef = static_cast<float>(coef);
  if (coef < 1.0) {
    for (Tensor g : grads) g.mul_(coef);
  }
  return full({}, total, dt);
}

}  // namespace ag::nn
