// The op table's elementwise group (see op_table.h): the unary and binary elementwise ops of
// issue 13 (sin ... elu, clamp, minimum/maximum, where, tensor-tensor comparisons). Creation and
// in-place ops are tested in test_creation_inplace.cpp, not here.
#include <algorithm>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "op_table.h"

namespace optable {

namespace {

using Shapes = std::vector<std::vector<int64_t>>;
using ag::Tensor;
const std::vector<int64_t> kScalar{};  // a 0-dim tensor's shape

// One input: a matrix, size-1 and broadcastable dims, a 0-dim tensor and an empty one.
std::vector<Sample> unary_samples() {
  return {Sample{Shapes{{3, 4}}}, Sample{Shapes{{2, 1, 3}}}, Sample{Shapes{{5}}}, Sample{Shapes{kScalar}},
          Sample{Shapes{{0, 3}}}};
}

// Two inputs broadcast together: equal shapes, size-1 dims on both sides, a 0-dim operand on
// either side, different ranks, and an empty result.
std::vector<Sample> binary_samples() {
  return {Sample{Shapes{{3, 4}, {3, 4}}}, Sample{Shapes{{3, 1}, {1, 4}}}, Sample{Shapes{kScalar, {2, 3}}},
          Sample{Shapes{{2, 3}, kScalar}},  Sample{Shapes{{2, 3, 4}, {4}}},  Sample{Shapes{{0, 3}, {3}}}};
}

bool broadcastable(const Size& a, const Size& b) {
  for (int64_t i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const int64_t da = a[a.size() - i], db = b[b.size() - i];
    if (da != db && da != 1 && db != 1) return false;
  }
  return true;
}

// A fuzz step applying a one-input op to the pool tensor a.
Fuzz unary_step(std::function<Tensor(const Tensor&)> f, std::string text) {
  return [f, text](std::mt19937_64&, const Size&, const Size&) -> std::optional<FuzzStep> {
    return FuzzStep{[f](const Tensor& a, const Tensor&) { return f(a); }, text};
  };
}

// A fuzz step applying a two-input op to a and b, when their shapes broadcast.
Fuzz binary_step(std::function<Tensor(const Tensor&, const Tensor&)> f, std::string text) {
  return [f, text](std::mt19937_64&, const Size& a, const Size& b) -> std::optional<FuzzStep> {
    if (!broadcastable(a, b)) return std::nullopt;
    return FuzzStep{f, text};
  };
}

// where's condition for an input of shape s: True at even row-major positions. The same mask in
// PyTorch is kEvenMask below (with s the shape of x[0]).
Tensor even_mask(const Size& s) {
  std::vector<double> v(static_cast<std::size_t>(s.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i % 2 == 0 ? 1.0 : 0.0;
  return ag::from_vector(v, s.vec(), ag::kBool);
}
const std::string kEvenMask = "(torch.arange(x[0].numel()) % 2 == 0).reshape(x[0].shape)";

OpInfo unary(std::string name, std::string torch, std::function<Tensor(const Tensor&)> f, Domain domain = {},
             bool floating_only = false) {
  OpInfo op;
  op.name = name;
  op.torch = std::move(torch);
  op.fn = [f](const std::vector<Tensor>& x) { return f(x[0]); };
  op.samples = unary_samples();
  op.domain = domain;
  op.floating_only = floating_only;
  op.fuzz = unary_step(f, name + "(a)");
  return op;
}

OpInfo binary(std::string name, std::string torch, std::function<Tensor(const Tensor&, const Tensor&)> f) {
  OpInfo op;
  op.name = name;
  op.torch = std::move(torch);
  op.fn = [f](const std::vector<Tensor>& x) { return f(x[0], x[1]); };
  op.samples = binary_samples();
  op.floating_only = false;
  op.fuzz = binary_step(f, name + "(a, b)");
  return op;
}

// A comparison: bool output, no gradient, not drawn by the fuzzer.
OpInfo comparison(std::string name, std::string torch, std::function<Tensor(const Tensor&, const Tensor&)> f) {
  OpInfo op = binary(std::move(name), std::move(torch), std::move(f));
  op.order = 0;
  op.fuzz = nullptr;
  return op;
}

}  // namespace

std::vector<OpInfo> elementwise_ops() {
  using namespace ag;
  // integers give float32 (floating_only false: PyTorch promotes them, it does not refuse them)
  OpInfo log1p_op = unary("log1p", "torch.log1p(x[0])", [](const Tensor& a) { return log1p(a); }, Domain{-0.5, 2.0});
  log1p_op.fuzz = unary_step([](const Tensor& a) { return log1p(a * a); }, "log1p(a * a)");
  OpInfo rsqrt_op = unary("rsqrt", "torch.rsqrt(x[0])", [](const Tensor& a) { return rsqrt(a); }, Domain{0.5, 2.0});
  rsqrt_op.fuzz = unary_step([](const Tensor& a) { return rsqrt(a * a + 0.5); }, "rsqrt(a * a + 0.5)");
  OpInfo recip_op = unary("reciprocal", "torch.reciprocal(x[0])", [](const Tensor& a) { return reciprocal(a); }, Domain{0.5, 2.0});
  recip_op.fuzz = unary_step([](const Tensor& a) { return reciprocal(a * a + 0.5); }, "reciprocal(a * a + 0.5)");

  // beta x > threshold (x > 0.5) takes the linear branch; softplus jumps there (0.5 vs
  // log(1 + e) / 2), so the fuzzer, whose inputs can fall anywhere, does not draw it
  OpInfo softplus_threshold = unary("softplus_beta_threshold", "torch.nn.functional.softplus(x[0], 2.0, 1.0)",
                                    [](const Tensor& a) { return softplus(a, 2.0, 1.0); }, {}, true);
  softplus_threshold.fuzz = nullptr;

  // sign's gradient is 0 everywhere (SignBackward0): nothing for gradcheck to check
  OpInfo sign_op = unary("sign", "torch.sign(x[0])", [](const Tensor& a) { return sign(a); });
  sign_op.order = 0;
  sign_op.fuzz = nullptr;

  // rounding: piecewise constant, gradient 0 everywhere (RoundBackward0, ...); int64 input is
  // returned as it is, so these are not floating_only. frac's gradient is g; it jumps at whole
  // numbers, so its inputs stay within (1.1, 1.9).
  auto rounding = [](std::string name, std::function<Tensor(const Tensor&)> f, bool floating_only = false) {
    OpInfo op = unary(name, "torch." + name + "(x[0])", std::move(f), {}, floating_only);
    op.order = 0;
    op.fuzz = nullptr;
    return op;
  };
  OpInfo round_decimals = rounding("round", [](const Tensor& a) { return round(a, 1); }, true);
  round_decimals.name = "round_decimals";
  round_decimals.torch = "torch.round(x[0], decimals=1)";
  OpInfo round_negative_decimals = rounding("round", [](const Tensor& a) { return round(a * 30.0, -1); }, true);
  round_negative_decimals.name = "round_negative_decimals";
  round_negative_decimals.torch = "torch.round(x[0] * 30, decimals=-1)";
  OpInfo frac_op = unary("frac", "torch.frac(x[0])", [](const Tensor& a) { return frac(a); }, Domain{1.1, 1.9}, true);
  frac_op.fuzz = elementwise_fuzz([](const Tensor& a) { return frac(a); }, "frac", Domain{1.1, 1.9});

  // where: cond of x[0]'s shape, x[1] broadcast to it
  OpInfo where_op = binary("where", "torch.where(" + kEvenMask + ", x[0], x[1])",
                           [](const Tensor& a, const Tensor& b) { return where(even_mask(a.shape()), a, b); });
  where_op.samples = {Sample{Shapes{{3, 4}, {3, 4}}}, Sample{Shapes{{3, 4}, {4}}}, Sample{Shapes{{2, 3}, kScalar}},
                      Sample{Shapes{kScalar, kScalar}}, Sample{Shapes{{0, 3}, {3}}}};
  where_op.fuzz = [](std::mt19937_64&, const Size& a, const Size& b) -> std::optional<FuzzStep> {
    if (!broadcastable(a, b) || broadcast_shapes(a, b, "where") != a) return std::nullopt;
    return FuzzStep{[](const Tensor& x, const Tensor& y) { return where(even_mask(x.shape()), x, y); }, "where(even, a, b)"};
  };
  // the condition broadcast too: cond (3, 1) against a and b
  OpInfo where_bc = binary("where_cond_broadcast", "torch.where(torch.tensor([[True], [False], [True]]), x[0], x[1])",
                           [](const Tensor& a, const Tensor& b) { return where(tensor({{true}, {false}, {true}}), a, b); });
  where_bc.samples = {Sample{Shapes{{1, 4}, {4}}}, Sample{Shapes{{3, 4}, {3, 1}}}, Sample{Shapes{{2, 3, 4}, kScalar}},
                      Sample{Shapes{kScalar, {1, 4}}}};
  where_bc.fuzz = nullptr;

  return {
      unary("sin", "torch.sin(x[0])", [](const Tensor& a) { return sin(a); }),
      unary("cos", "torch.cos(x[0])", [](const Tensor& a) { return cos(a); }),
      log1p_op,
      unary("expm1", "torch.expm1(x[0])", [](const Tensor& a) { return expm1(a); }),
      rsqrt_op,
      recip_op,
      // integers stay integers
      unary("abs", "torch.abs(x[0])", [](const Tensor& a) { return abs(a); }),
      unary("square", "torch.square(x[0])", [](const Tensor& a) { return square(a); }),
      sign_op,
      rounding("round", [](const Tensor& a) { return round(a); }),
      round_decimals,
      round_negative_decimals,
      rounding("floor", [](const Tensor& a) { return floor(a); }),
      rounding("ceil", [](const Tensor& a) { return ceil(a); }),
      rounding("trunc", [](const Tensor& a) { return trunc(a); }),
      frac_op,
      unary("clamp", "torch.clamp(x[0], -0.5, 0.5)", [](const Tensor& a) { return clamp(a, -0.5, 0.5); }),
      unary("clamp_min_only", "torch.clamp(x[0], min=-0.5)", [](const Tensor& a) { return clamp(a, -0.5, std::nullopt); }),
      unary("clamp_max_only", "torch.clamp(x[0], max=0.5)", [](const Tensor& a) { return clamp(a, std::nullopt, 0.5); }),
      unary("clamp_min", "torch.clamp_min(x[0], -0.5)", [](const Tensor& a) { return clamp_min(a, -0.5); }),
      unary("clamp_max", "torch.clamp_max(x[0], 0.5)", [](const Tensor& a) { return clamp_max(a, 0.5); }),
      // activations: floating point only
      unary("softplus", "torch.nn.functional.softplus(x[0])", [](const Tensor& a) { return softplus(a); }, {}, true),
      softplus_threshold,
      unary("silu", "torch.nn.functional.silu(x[0])", [](const Tensor& a) { return silu(a); }, {}, true),
      unary("leaky_relu", "torch.nn.functional.leaky_relu(x[0])", [](const Tensor& a) { return leaky_relu(a); }, {}, true),
      unary("leaky_relu_slope", "torch.nn.functional.leaky_relu(x[0], 0.2)",
            [](const Tensor& a) { return leaky_relu(a, 0.2); }, {}, true),
      unary("elu", "torch.nn.functional.elu(x[0])", [](const Tensor& a) { return elu(a); }, {}, true),
      unary("elu_alpha", "torch.nn.functional.elu(x[0], 0.5)", [](const Tensor& a) { return elu(a, 0.5); }, {}, true),

      binary("minimum", "torch.minimum(x[0], x[1])", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }),
      binary("maximum", "torch.maximum(x[0], x[1])", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }),
      where_op,
      where_bc,
      // a number for one branch: a 0-dim tensor of the other's dtype
      unary("where_scalar_other", "torch.where(" + kEvenMask + ", x[0], 0.5)",
            [](const Tensor& a) { return where(even_mask(a.shape()), a, 0.5); }),
      unary("where_scalar_self", "torch.where(" + kEvenMask + ", 0.5, x[0])",
            [](const Tensor& a) { return where(even_mask(a.shape()), 0.5, a); }),

      comparison("gt_tensor", "torch.gt(x[0], x[1])", [](const Tensor& a, const Tensor& b) { return gt(a, b); }),
      comparison("lt_tensor", "torch.lt(x[0], x[1])", [](const Tensor& a, const Tensor& b) { return lt(a, b); }),
      comparison("ge_tensor", "torch.ge(x[0], x[1])", [](const Tensor& a, const Tensor& b) { return ge(a, b); }),
      comparison("le_tensor", "torch.le(x[0], x[1])", [](const Tensor& a, const Tensor& b) { return le(a, b); }),
      comparison("ne_tensor", "torch.ne(x[0], x[1])", [](const Tensor& a, const Tensor& b) { return ne(a, b); }),
  };
}

}  // namespace optable
