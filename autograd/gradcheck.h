// gradcheck: compares the gradients backward computes with central finite differences, in
// float64, over every element of every input that requires grad (PyTorch's torch.autograd.gradcheck).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tensor.h"

namespace ag {

struct GradcheckResult {
  bool ok = true;
  double max_error = 0;  // largest |analytical - numerical| seen
  std::string message;   // on failure: which input, which element, both values
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Full Jacobian check: for every output element j (one ag::grad each, retain_graph; no .grad is
// touched) and every element i of every input that requires grad,
// |analytical - numerical| <= atol + rtol |numerical|, compared as PyTorch's allclose: equal values
// (equal infinities too) match, a NaN never does, not even a NaN in both Jacobians at one place.
// Inputs must be float64 (like PyTorch, float32 is refused: its rounding swamps the differences).
GradcheckResult gradcheck_result(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6,
                                 double atol = 1e-5, double rtol = 1e-3);

// The same, throwing std::runtime_error with the failure message; returns true otherwise.
bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6, double atol = 1e-5,
               double rtol = 1e-3);

// PyTorch's gradcheck keyword arguments. check_forward_ad: the Jacobian by forward mode too (one
// jvp per input element, forward_ad.h), against the same finite differences; check_backward_ad:
// by reverse mode (the positional form's check). fast_mode: PyTorch's fast mode, which compares
// v^T J u for random u (per input) and v (over the output), drawn from the default generator,
// instead of every element of J: v^T (J u) by finite differences along u against <J^T v, u>
// (backward) and <v, J u> (forward). The slow mode is the default and the reference.
struct GradcheckOptions {
  double eps = 1e-6, atol = 1e-5, rtol = 1e-3;
  bool check_forward_ad = false;
  bool check_backward_ad = true;
  bool fast_mode = false;
};
GradcheckResult gradcheck_result(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& options);
bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& options);

// gradgradcheck (torch.autograd.gradgradcheck): gradcheck of the second derivatives. The function
// checked is (inputs..., grad_output) -> ag::grad(fn(inputs), inputs that require grad,
// grad_output, create_graph=true), flattened into one vector: its analytical Jacobian comes from
// differentiating the graph that backward pass recorded, its numerical one from finite differences
// of the first-order gradients. grad_outputs: one float64 tensor of fn's output shape, or empty to
// draw it uniformly from [-1, 1) as PyTorch does (from the default generator). float64 only. The
// report names the gradient and element, the input (or grad_output) and element, numerical vs
// analytical and the max error.
GradcheckResult gradgradcheck_result(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& grad_outputs = {}, double eps = 1e-6, double atol = 1e-5,
                                     double rtol = 1e-3);
// PyTorch's gradgradcheck keyword arguments: check_rev_over_rev differentiates the recorded
// backward pass by reverse mode (the positional form's check), check_fwd_over_rev by forward mode
// (a jvp through the backward pass, one per input element), each against the same finite
// differences. The fields from GradcheckOptions other than eps, atol and rtol are not used
// (PyTorch's gradgradcheck has no check_forward_ad or check_backward_ad); fast_mode is refused
// (not implemented yet).
struct GradgradcheckOptions : GradcheckOptions {
  bool check_fwd_over_rev = false;
  bool check_rev_over_rev = true;
};
GradcheckResult gradgradcheck_result(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& grad_outputs, const GradgradcheckOptions& options);
bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const std::vector<Tensor>& grad_outputs,
                   const GradgradcheckOptions& options);

// The same, throwing std::runtime_error with the failure message; returns true otherwise.
bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const std::vector<Tensor>& grad_outputs = {},
                   double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3);

}  // namespace ag
