#include "nn/batchnorm.h"

#include <sstream>
#include <stdexcept>

#include "autograd/format.h"

namespace ag::nn {

BatchNorm1d::BatchNorm1d(int64_t C, double eps_, std::optional<double> momentum_, bool affine_, bool track)
    : Module("BatchNorm1d"), num_features(C), eps(eps_), momentum(momentum_), affine(affine_), track_running_stats(track) {
  if (affine) {
    weight = register_parameter("weight", ones({C}));
    bias = register_parameter("bias", zeros({C}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", zeros({C}));
    running_var = register_buffer("running_var", ones({C}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

static std::string torch_size(const Size& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// PyTorch's check_dims_match_num_input_features
static void check_features(const char* name, const Tensor& t, int64_t C) {
  if (t.defined() && t.numel() != C) {
    throw std::invalid_argument(std::string("[BatchNorm1d] ") + name + " should contain " + std::to_string(C) +
                                " elements not " + std::to_string(t.numel()));
  }
}

// PyTorch refuses integer input, and parameters or running statistics of another dtype than the
// input's ("mixed dtype"); ag names the dtypes
static void check_dtypes(const Tensor& x, std::initializer_list<std::pair<const char*, const Tensor*>> state) {
  if (!x.is_floating_point()) {
    throw std::invalid_argument("[BatchNorm1d] \"batch_norm\" not implemented for " + dtype_name(x.dtype()) +
                                ": expected a floating point input (shape " + x.shape().str() + ")");
  }
  for (const auto& [name, t] : state) {
    if (t->defined() && t->dtype() != x.dtype()) {
      throw std::invalid_argument("[BatchNorm1d] mixed dtype: input is " + dtype_name(x.dtype()) + " but " + name + " is " +
                                  dtype_name(t->dtype()) + "; convert the module (.to) or the input to one dtype");
    }
  }
}

Tensor BatchNorm1d::forward(const Tensor& x) {
  detail::check_defined(x, "BatchNorm1d");
  if (x.dim() != 2 && x.dim() != 3) {
    throw std::invalid_argument("[BatchNorm1d] expected 2D or 3D input (got " + std::to_string(x.dim()) + "D input)");
  }
  const bool batch_stats = is_training() || !running_mean.defined();
  const int64_t C = x.size(1);
  const int64_t n = x.size(0) * (x.dim() == 3 ? x.size(2) : 1);  // values per channel
  if (batch_stats && n == 1) {
    throw std::invalid_argument("[BatchNorm1d] Expected more than 1 value per channel when training, got input size " +
                                torch_size(x.shape()));
  }
  if (x.numel() > 0) {
    check_features("running_mean", running_mean, C);
    check_features("running_var", running_var, C);
    check_features("weight", weight, C);
    check_features("bias", bias, C);
  }
  check_dtypes(x, {{"weight", &weight}, {"bias", &bias}, {"running_mean", &running_mean}, {"running_var", &running_var}});
  // All checked. (PyTorch counts the batch before its checks, so there a rejected call counts too.)
  double f = momentum.value_or(0.0);
  if (is_training() && track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.fill_(num_batches_tracked.item() + 1);
    if (!momentum) f = 1.0 / num_batches_tracked.item();
  }
  if (x.numel() == 0) {  // PyTorch's empty-input path: no statistics, no update
    Tensor y = clone(x);
    if (weight.defined()) y = y * weight[0];
    return bias.defined() ? y + bias[0] : y;
  }

  const DimVector dims = x.dim() == 2 ? DimVector{0} : DimVector{0, 2};
  const DimVector channel = x.dim() == 2 ? DimVector{1, C} : DimVector{1, C, 1};  // broadcasts (C) over x
  Tensor y;
  if (batch_stats) {
    Tensor mean = x.mean(dims, /*keepdim=*/true);  // (1, C[, 1])
    Tensor xc = x - mean;
    Tensor var = (xc * xc).mean(dims, /*keepdim=*/true);  // biased: what normalizes
    y = xc * pow(var + eps, -0.5);
    if (is_training() && track_running_stats) {
      NoGradGuard no_grad;
      running_mean.copy_(running_mean * (1.0 - f) + mean.view({C}) * f);
      running_var.copy_(running_var * (1.0 - f) + var.view({C}) * (f * static_cast<double>(n) / static_cast<double>(n - 1)));
    }
  } else {
    y = (x - running_mean.view(channel)) * pow(running_var.view(channel) + eps, -0.5);
  }
  if (weight.defined()) y = y * weight.view(channel);
  return bias.defined() ? y + bias.view(channel) : y;
}

std::string BatchNorm1d::extra_repr() const {
  auto py_bool = [](bool b) { return std::string(b ? "True" : "False"); };
  return std::to_string(num_features) + ", eps=" + py_float_repr(eps) +
         ", momentum=" + (momentum ? py_float_repr(*momentum) : std::string("None")) + ", affine=" + py_bool(affine) +
         ", track_running_stats=" + py_bool(track_running_stats);
}

void BatchNorm1d::fill_state_dict_defaults(const std::string& prefix, std::map<std::string, Tensor>& state_dict) const {
  if (track_running_stats) state_dict.emplace(prefix + "num_batches_tracked", zeros({}, kInt64));
}

}  // namespace ag::nn
