#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "autograd/kernels.h"
#include "autograd/node.h"
#include "autograd/ops.h"

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

}  // namespace

GradcheckResult gradcheck_result(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
                                 double rtol) {
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].defined() && inputs[k].requires_grad() && inputs[k].dtype() != kFloat64) {
      throw std::invalid_argument("[gradcheck] input " + std::to_string(k) + " is " + dtype_name(inputs[k].dtype()) +
                                  "; gradcheck needs float64 inputs (finite differences in float32 are too noisy)");
    }
  }
  Tensor out = fn(inputs);
  if (out.dtype() != kFloat64) {
    throw std::invalid_argument("[gradcheck] the function returned " + dtype_name(out.dtype()) + "; expected float64");
  }
  const int64_t n_out = out.numel();

  // Analytical Jacobian, one row per output element: backward with a one-hot gradient.
  std::vector<std::vector<std::vector<double>>> ana(inputs.size());  // [input][out j][elem i]
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].defined() && inputs[k].requires_grad()) ana[k].assign(static_cast<std::size_t>(n_out), {});
  }
  if (out.requires_grad()) {
    for (int64_t j = 0; j < n_out; ++j) {
      for (const Tensor& in : inputs)
        if (in.defined()) in.set_grad(Tensor());
      Tensor onehot = zeros(out.shape().vec(), kFloat64);
      onehot.data_ptr<double>()[j] = 1.0;
      out.backward(onehot, /*retain_graph=*/true);
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        if (ana[k].empty()) continue;
        const Tensor g = inputs[k].grad();
        ana[k][static_cast<std::size_t>(j)] = g.defined() ? g.to_vector<double>()
                                                          : std::vector<double>(static_cast<std::size_t>(inputs[k].numel()), 0.0);
      }
    }
  }
  for (const Tensor& in : inputs)
    if (in.defined()) in.set_grad(Tensor());

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
        const double err = std::abs(an - num);
        if (std::isnan(err) && std::isnan(an) != std::isnan(num)) res.max_error = NAN;
        else res.max_error = std::max(res.max_error, err);
        if ((err > atol + rtol * std::abs(num) || std::isnan(an) != std::isnan(num)) && res.ok) {
          res.ok = false;
          std::ostringstream os;
          os.precision(10);
          os << "[gradcheck] Jacobian mismatch for output element " << j << " with respect to input " << k << " (shape "
             << in.shape().str() << "), element " << i << ": numerical " << num << ", analytical " << an;
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

bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
  GradcheckResult r = gradcheck_result(fn, inputs, eps, atol, rtol);
  if (!r.ok) throw std::runtime_error(r.message);
  return true;
}

}  // namespace ag
