#include "autograd/gradcheck.h"

#include <cmath>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "autograd/forward_ad.h"
#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/functional.h"
#include "autograd/ops.h"
#include "autograd/random.h"

namespace ag {

namespace {

// Storage offsets of t's elements in row-major order (works for any strides).
std::vector<int64_t> element_offsets(const Tensor& t) {
  std::vector<int64_t> offs;
  offs.reserve(static_cast<std::size_t>(t.numel()));
  detail::walk<1>(t.shape(), {&t.strides()}, {t.storage_offset()}, [&](const std::array<int64_t, 1>& o) { offs.push_back(o[0]); });
  return offs;
}

std::vector<double> eval_flat(const GradcheckFn& fn, const std::vector<Tensor>& inputs) {
  NoGradGuard g;
  Tensor out = fn(inputs);
  return out.to_vector<double>();
}

// The analytical Jacobian by forward mode: one jvp per element i of each input k in `ana`
// (ana[k] non-empty), a one-hot tangent on that input alone, giving column i.
void forward_jacobian(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                      std::vector<std::vector<std::vector<double>>>& ana) {
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (ana[k].empty()) continue;
    for (int64_t i = 0; i < inputs[k].numel(); ++i) {
      forward_ad::DualLevel level;
      std::vector<Tensor> args = inputs;
      Tensor onehot = zeros(inputs[k].shape().vec(), kFloat64);
      onehot.data_ptr<double>()[i] = 1.0;
      args[k] = forward_ad::make_dual(inputs[k], onehot);
      const Tensor t = forward_ad::unpack_dual(fn(args)).tangent;
      if (!t.defined()) continue;
      const std::vector<double> col = t.to_vector<double>();
      for (std::size_t j = 0; j < col.size(); ++j) ana[k][j][static_cast<std::size_t>(i)] = col[j];
    }
  }
}

// The check itself; `where(j, k, i)` says in words which output element j, input k and element i
// a mismatch is at. `forward`: the analytical Jacobian by forward mode instead of reverse mode.
GradcheckResult check_jacobian(const char* op, const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
                               double rtol, const std::function<std::string(int64_t, std::size_t, std::size_t)>& where,
                               bool forward = false) {
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].defined() && inputs[k].requires_grad() && inputs[k].dtype() != kFloat64) {
      throw std::invalid_argument(std::string("[") + op + "] input " + std::to_string(k) + " is " + dtype_name(inputs[k].dtype()) +
                                  "; gradcheck needs float64 inputs (finite differences in float32 are too noisy)");
    }
  }
  Tensor out = fn(inputs);
  if (out.dtype() != kFloat64) {
    throw std::invalid_argument(std::string("[") + op + "] the function returned " + dtype_name(out.dtype()) + "; expected float64");
  }
  const int64_t n_out = out.numel();

  // Analytical Jacobian, one row per output element: ag::grad with a one-hot gradient (no .grad
  // is touched).
  std::vector<std::vector<std::vector<double>>> ana(inputs.size());  // [input][out j][elem i]
  std::vector<Tensor> wrt;
  std::vector<std::size_t> wrt_index;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].defined() || !inputs[k].requires_grad()) continue;
    ana[k].assign(static_cast<std::size_t>(n_out), std::vector<double>(static_cast<std::size_t>(inputs[k].numel()), 0.0));
    wrt.push_back(inputs[k]);
    wrt_index.push_back(k);
  }
  if (forward) {
    forward_jacobian(fn, inputs, ana);
  } else if (out.requires_grad() && !wrt.empty()) {
    for (int64_t j = 0; j < n_out; ++j) {
      Tensor onehot = zeros(out.shape().vec(), kFloat64);
      onehot.data_ptr<double>()[j] = 1.0;
      const std::vector<Tensor> g = grad({out}, wrt, {onehot}, /*retain_graph=*/true, false, /*allow_unused=*/true);
      for (std::size_t a = 0; a < g.size(); ++a)
        if (g[a].defined()) ana[wrt_index[a]][static_cast<std::size_t>(j)] = g[a].to_vector<double>();
    }
  }

  // Numerical Jacobian by central differences, compared column by column.
  GradcheckResult res;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (ana[k].empty()) continue;
    const Tensor& in = inputs[k];
    double* base = static_cast<double*>(in.impl()->storage->data);
    const std::vector<int64_t> offs = element_offsets(in);
    for (std::size_t i = 0; i < offs.size(); ++i) {
      const double orig = base[offs[i]];
      base[offs[i]] = orig + eps;
      const std::vector<double> plus = eval_flat(fn, inputs);
      base[offs[i]] = orig - eps;
      const std::vector<double> minus = eval_flat(fn, inputs);
      base[offs[i]] = orig;
      for (int64_t j = 0; j < n_out; ++j) {
        const auto uj = static_cast<std::size_t>(j);
        const double num = (plus[uj] - minus[uj]) / (2 * eps);
        const double an = ana[k][uj][i];
        // PyTorch's allclose (isclose, equal_nan=False): equal values match (so do equal
        // infinities); otherwise the error must be finite and within atol + rtol |numerical|. So a
        // NaN never matches, also a NaN in both Jacobians at the same place.
        const double err = an == num ? 0.0 : std::abs(an - num);
        const bool match = an == num || (std::isfinite(err) && err <= atol + rtol * std::abs(num));
        if (std::isnan(err) || std::isnan(res.max_error)) res.max_error = NAN;
        else res.max_error = std::max(res.max_error, err);
        if (!match && res.ok) {
          res.ok = false;
          std::ostringstream os;
          os.precision(10);
          os << "[" << op << "] " << where(j, k, i) << ": numerical " << num << ", analytical " << an;
          if (std::isnan(an) && std::isnan(num)) os << " (NaN in both Jacobians: a NaN never matches, as in PyTorch's allclose)";
          else if (std::isnan(an) || std::isnan(num)) os << " (a NaN never matches, as in PyTorch's allclose)";
          res.message = os.str();
        }
      }
    }
  }
  if (!res.ok) {
    std::ostringstream os;
    os << res.message << "; max error " << res.max_error;
    res.message = os.str();
  }
  return res;
}

// PyTorch's fast mode: v^T J u against v^T (finite differences along u), u per input that
// requires grad and v over the output uniform in [-1, 1) from the default generator.
GradcheckResult check_fast(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& o) {
  std::vector<Tensor> us(inputs.size()), wrt, wrt_u;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].defined() || !inputs[k].requires_grad()) continue;
    us[k] = rand(inputs[k].shape().vec(), kFloat64) * 2.0 - 1.0;
    wrt.push_back(inputs[k]);
    wrt_u.push_back(us[k]);
  }
  const Tensor out = fn(inputs);
  const Tensor v = rand(out.shape().vec(), kFloat64) * 2.0 - 1.0;
  double num = 0;
  {
    NoGradGuard g;
    std::vector<Tensor> plus = inputs, minus = inputs;
    for (std::size_t k = 0; k < inputs.size(); ++k)
      if (us[k].defined()) plus[k] = inputs[k] + us[k] * o.eps, minus[k] = inputs[k] - us[k] * o.eps;
    num = sum(v * (fn(plus) - fn(minus))).item() / (2 * o.eps);
  }
  GradcheckResult res;
  auto compare = [&](double an, const char* mode) {
    const double err = an == num ? 0.0 : std::abs(an - num);
    res.max_error = std::isnan(err) ? NAN : std::max(res.max_error, err);
    if (res.ok && !(an == num || (std::isfinite(err) && err <= o.atol + o.rtol * std::abs(num)))) {
      res.ok = false;
      std::ostringstream os;
      os.precision(10);
      os << "[gradcheck] fast mode: v^T J u computed with " << mode << " mode is " << an << ", numerical " << num
         << " (u random per input, v random over the output)";
      res.message = os.str();
    }
  };
  if (o.check_backward_ad) {
    double an = 0;
    if (out.requires_grad() && !wrt.empty()) {
      const std::vector<Tensor> g = grad({out}, wrt, {v}, /*retain_graph=*/true, false, /*allow_unused=*/true);
      for (std::size_t a = 0; a < g.size(); ++a)
        if (g[a].defined()) an += sum(g[a] * wrt_u[a]).item();
    }
    compare(an, "backward");
  }
  if (o.check_forward_ad) {
    forward_ad::DualLevel level;
    std::vector<Tensor> args = inputs;
    for (std::size_t k = 0; k < inputs.size(); ++k)
      if (us[k].defined()) args[k] = forward_ad::make_dual(inputs[k], us[k]);
    const Tensor t = forward_ad::unpack_dual(fn(args)).tangent;
    compare(t.defined() ? sum(v * t).item() : 0.0, "forward");
  }
  if (!res.ok) res.message += "; max error " + std::to_string(res.max_error);
  return res;
}

}  // namespace

GradcheckResult gradcheck_result(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& o) {
  if (!o.check_forward_ad && !o.check_backward_ad) {
    throw std::invalid_argument("[gradcheck] Expected at least one of check_forward_ad or check_backward_ad to be True");
  }
  if (o.fast_mode) return check_fast(fn, inputs, o);
  GradcheckResult res;
  if (o.check_backward_ad) res = gradcheck_result(fn, inputs, o.eps, o.atol, o.rtol);
  if (!res.ok || !o.check_forward_ad) return res;
  GradcheckResult fw = check_jacobian(
      "gradcheck", fn, inputs, o.eps, o.atol, o.rtol,
      [&](int64_t j, std::size_t k, std::size_t i) {
        return "Jacobian computed with forward mode mismatch for output element " + std::to_string(j) +
               " with respect to input " + std::to_string(k) + " (shape " + inputs[k].shape().str() + "), element " +
               std::to_string(i);
      },
      /*forward=*/true);
  fw.max_error = std::max(fw.max_error, res.max_error);
  return fw;
}

bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
  GradcheckResult r = gradcheck_result(fn, inputs, options);
  if (!r.ok) throw std::runtime_error(r.message);
  return true;
}

GradcheckResult gradcheck_result(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
                                 double rtol) {
  return check_jacobian("gradcheck", fn, inputs, eps, atol, rtol, [&](int64_t j, std::size_t k, std::size_t i) {
    return "Jacobian mismatch for output element " + std::to_string(j) + " with respect to input " + std::to_string(k) +
           " (shape " + inputs[k].shape().str() + "), element " + std::to_string(i);
  });
}

GradcheckResult gradgradcheck_result(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& grad_outputs, double eps, double atol, double rtol) {
  GradgradcheckOptions o;
  o.eps = eps, o.atol = atol, o.rtol = rtol;
  return gradgradcheck_result(fn, inputs, grad_outputs, o);
}

GradcheckResult gradgradcheck_result(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& grad_outputs, const GradgradcheckOptions& o) {
  if (o.fast_mode) throw std::invalid_argument("[gradgradcheck] fast_mode is not implemented yet");
  if (!o.check_fwd_over_rev && !o.check_rev_over_rev) {
    throw std::invalid_argument("[gradgradcheck] Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True");
  }
  const double eps = o.eps, atol = o.atol, rtol = o.rtol;
  std::vector<std::size_t> diff;  // the inputs fn is differentiated with respect to
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].defined() && inputs[k].requires_grad()) diff.push_back(k);
  if (diff.empty()) throw std::invalid_argument("[gradgradcheck] no input requires grad");
  for (std::size_t k : diff) {
    if (inputs[k].dtype() != kFloat64) {
      throw std::invalid_argument("[gradgradcheck] input " + std::to_string(k) + " is " + dtype_name(inputs[k].dtype()) +
                                  "; gradgradcheck needs float64 inputs (finite differences in float32 are too noisy)");
    }
  }
  Tensor out0;  // fn's output with its graph: its shape, and the first-order gradients below
  {
    EnableGradGuard grad_mode;
    out0 = fn(inputs);
  }
  Tensor go;
  if (grad_outputs.empty()) {  // random, as PyTorch draws them: uniform in [-1, 1), requiring grad
    go = empty(out0.shape().vec(), kFloat64);
    uniform_(go, -1.0, 1.0);
  } else {
    if (grad_outputs.size() != 1 || !grad_outputs[0].defined() || grad_outputs[0].shape() != out0.shape() ||
        grad_outputs[0].dtype() != kFloat64) {
      throw std::invalid_argument("[gradgradcheck] expected one float64 grad_output of the output's shape " +
                                  out0.shape().str() + ", got " + std::to_string(grad_outputs.size()) + " tensors" +
                                  (grad_outputs.empty() || !grad_outputs[0].defined()
                                       ? std::string()
                                       : " (the first of shape " + grad_outputs[0].shape().str() + ", " +
                                             dtype_name(grad_outputs[0].dtype()) + ")"));
    }
    go = grad_outputs[0].detach();
  }
  go.requires_grad_(true);

  // (inputs..., grad_output) -> the gradients of fn's output seeded with grad_output, with respect
  // to the inputs that require grad, flattened into one vector; computed with create_graph so
  // that gradcheck differentiates the backward pass itself.
  const std::size_t n = inputs.size();
  std::vector<int64_t> starts;  // where each differentiated input's gradient starts in the vector
  int64_t total = 0;
  for (std::size_t k : diff) {
    starts.push_back(total);
    total += inputs[k].numel();
  }
  GradcheckFn grad_fn = [&fn, &diff, n, total](const std::vector<Tensor>& ext) {
    EnableGradGuard grad_mode;
    const std::vector<Tensor> x(ext.begin(), ext.begin() + static_cast<std::ptrdiff_t>(n));
    const Tensor out = fn(x);
    std::vector<Tensor> wrt;
    for (std::size_t k : diff) wrt.push_back(x[k]);
    std::vector<Tensor> g(wrt.size());
    // forward over reverse (a dual level is alive) needs no graph of the backward pass: its jvps
    // go through the rules as a plain backward runs them, fast kernels' guards included
    const bool create_graph = !forward_ad::level_alive();
    if (out.requires_grad()) g = grad({out}, wrt, {ext[n]}, /*retain_graph=*/true, create_graph, /*allow_unused=*/true);
    std::vector<Tensor> flat;
    for (std::size_t i = 0; i < g.size(); ++i) flat.push_back(g[i].defined() ? g[i].reshape({-1}) : zeros({wrt[i].numel()}, kFloat64));
    return total ? cat(flat, 0) : zeros({0}, kFloat64);
  };
  std::vector<Tensor> ext(inputs);
  ext.push_back(go);
  // First, the recorded first derivatives (the rules in ag ops) must equal the ones a backward
  // without create_graph computes (the fast kernels, which gradcheck holds to finite differences):
  // the check below differentiates the recorded ones, so on its own it would accept a wrong rule
  // whose derivative is consistent with it.
  {
    const std::vector<double> recorded = eval_flat(grad_fn, ext);
    std::vector<Tensor> wrt;
    for (std::size_t k : diff) wrt.push_back(inputs[k]);
    std::vector<Tensor> g(wrt.size());
    if (out0.requires_grad()) g = grad({out0}, wrt, {go}, /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
    for (std::size_t a = 0; a < g.size(); ++a) {
      const std::vector<double> fast =
          g[a].defined() ? g[a].to_vector<double>() : std::vector<double>(static_cast<std::size_t>(wrt[a].numel()), 0.0);
      for (std::size_t e = 0; e < fast.size(); ++e) {
        const double r = recorded[static_cast<std::size_t>(starts[a]) + e];
        const double err = std::abs(r - fast[e]);
        if (err > atol + rtol * std::abs(fast[e]) || std::isnan(r) != std::isnan(fast[e])) {
          std::ostringstream os;
          os.precision(10);
          os << "[gradgradcheck] the gradient of input " << diff[a] << " (shape " << wrt[a].shape().str() << "), element " << e
             << ", is " << r << " when its backward is recorded (create_graph) but " << fast[e]
             << " without: a backward rule and its fast kernel disagree";
          return GradcheckResult{false, err, os.str()};
        }
      }
    }
  }
  const auto where = [&](const char* mode) {
    return [&, mode](int64_t j, std::size_t k, std::size_t i) {
      std::size_t a = 0;  // output element j is element j - starts[a] of the gradient of input diff[a]
      while (a + 1 < starts.size() && starts[a + 1] <= j) ++a;
      std::string wrt = k < n ? "input " + std::to_string(k) + " (shape " + inputs[k].shape().str() + ")"
                              : "the grad_output (shape " + go.shape().str() + ")";
      return std::string("second derivative") + mode + " mismatch: element " + std::to_string(j - starts[a]) +
             " of the gradient of input " + std::to_string(diff[a]) + " (shape " + inputs[diff[a]].shape().str() +
             ") with respect to " + wrt + ", element " + std::to_string(i);
    };
  };
  GradcheckResult res;
  if (o.check_rev_over_rev) res = check_jacobian("gradgradcheck", grad_fn, ext, eps, atol, rtol, where(""));
  if (!res.ok || !o.check_fwd_over_rev) return res;
  // forward over reverse: the same Jacobian of the backward pass, by jvps through it
  GradcheckResult fw = check_jacobian("gradgradcheck", grad_fn, ext, eps, atol, rtol, where(" (forward over reverse)"), true);
  fw.max_error = std::max(fw.max_error, res.max_error);
  return fw;
}

bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const std::vector<Tensor>& grad_outputs,
                   const GradgradcheckOptions& options) {
  GradcheckResult r = gradgradcheck_result(fn, inputs, grad_outputs, options);
  if (!r.ok) throw std::runtime_error(r.message);
  return true;
}

bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const std::vector<Tensor>& grad_outputs, double eps,
                   double atol, double rtol) {
  GradcheckResult r = gradgradcheck_result(fn, inputs, grad_outputs, eps, atol, rtol);
  if (!r.ok) throw std::runtime_error(r.message);
  return true;
}

bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
  GradcheckResult r = gradcheck_result(fn, inputs, eps, atol, rtol);
  if (!r.ok) throw std::runtime_error(r.message);
  return true;
}

}  // namespace ag
