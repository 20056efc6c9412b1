// Custom autograd Functions (autograd/function.h) against PyTorch 1.13's torch.autograd.Function:
// values, gradients and double backward of the same Functions (tests/golden/custom_function.json,
// from tools/golden/make_custom_function_golden.py, whose Python classes are the twins of the
// structs below), the context's API, gradcheck and gradgradcheck, graphs freed, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

using namespace ag;

namespace {

const nlohmann::json& golden_cases() {
  static const nlohmann::json j = [] {
    std::ifstream f(std::string(AG_GOLDEN_DIR) + "/custom_function.json");
    if (!f) throw std::runtime_error("cannot open tests/golden/custom_function.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

const nlohmann::json& golden(const std::string& c) { return golden_cases().at(c); }

Tensor vec(const nlohmann::json& j) { return tensor(j.get<std::vector<double>>(), kFloat64); }
Tensor leaf(const nlohmann::json& j) { return vec(j).requires_grad_(); }

// Every element within 1e-12 relative of PyTorch's (float64, the same formulas).
void expect_golden(const Tensor& got, const nlohmann::json& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << " is undefined";
  const std::vector<double> g = got.to_vector<double>(), w = want.get<std::vector<double>>();
  ASSERT_EQ(g.size(), w.size()) << what;
  double worst = 0;
  for (std::size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - w[i]) / (1 + std::abs(w[i])));
  EXPECT_LE(worst, 1e-12) << what << ": max relative difference " << worst;
}

// ---------------------------------------------------------------- the Functions (Python twins in
// tools/golden/make_custom_function_golden.py)

// PyTorch's tutorial: y = (5 x^3 - 3 x) / 2  =>  dx = g * 3/2 (5 x^2 - 1)
struct LegendrePolynomial3 : Function<LegendrePolynomial3> {
  static Tensor forward(AutogradContext* ctx, Tensor input) {
    ctx->save_for_backward({input});
    return 0.5 * (5 * input.pow(3) - 3 * input);
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grad_outputs) {
    Tensor input = ctx->get_saved_variables()[0];
    return {grad_outputs[0] * 1.5 * (5 * input.pow(2) - 1)};
  }
};

// y = exp(x)  =>  dx = g * y: saves its own output
struct Exp : Function<Exp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor y = x.exp();
    ctx->save_for_backward({y});
    return y;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    return {g[0] * ctx->get_saved_variables()[0]};
  }
};

// y = k a b  =>  da = g k b, db = g k a; the number k sits between the tensors
struct ScaledProduct : Function<ScaledProduct> {
  static Tensor forward(AutogradContext* ctx, Tensor a, double k, Tensor b) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["k"] = k;
    return k * a * b;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    auto s = ctx->get_saved_variables();
    const double k = ctx->saved_data["k"].toDouble();
    return {g[0] * k * s[1], Tensor(), g[0] * k * s[0]};
  }
};

// (values, indices) = max(x, 1): the indices are int64, so not differentiable; saved for backward
struct MaxDim : Function<MaxDim> {
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x) {
    auto [values, indices] = x.max(1);
    ctx->mark_non_differentiable({indices});
    ctx->save_for_backward({indices});
    ctx->saved_data["shape"] = std::vector<int64_t>(x.shape().begin(), x.shape().end());
    return {values, indices};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    Tensor indices = ctx->get_saved_variables()[0];
    const std::vector<int64_t> shape = ctx->saved_data["shape"].toIntVector();
    return {zeros(DimVector(shape.begin(), shape.end()), g[0].dtype()).scatter_add(1, indices.unsqueeze(1), g[0].unsqueeze(1))};
  }
};

// (x^2, (x > 0) as float64): the float mask is marked non-differentiable; backward gets zeros for it
struct SquareAndMask : Function<SquareAndMask> {
  static Tensor last_mask_grad;  // what backward received for the mask
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x) {
    Tensor mask = gt(x, 0.0).to(x.dtype());
    ctx->mark_non_differentiable({mask});
    ctx->save_for_backward({x});
    return {x * x, mask};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    last_mask_grad = g[1];
    Tensor x = ctx->get_saved_variables()[0];
    return {2 * x * g[0] + g[1]};
  }
};
Tensor SquareAndMask::last_mask_grad;

// x *= 2 in place, marked dirty  =>  dx = 2 g
struct MulInPlace : Function<MulInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2.0);
    ctx->mark_dirty({x});
    return x;
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {2 * g[0]}; }
};

struct BadCount : Function<BadCount> {
  static Tensor forward(AutogradContext*, Tensor a, Tensor b) { return a * b; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0]}; }
};

struct BadShape : Function<BadShape> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 2; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {cat({g[0], g[0]})}; }
};

// backward returns a gradient of a shape that broadcasts the input's: PyTorch sums it back
struct BroadcastGrad : Function<BroadcastGrad> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 2; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) {
    return {(2 * g[0]).expand({2, g[0].size(0)}) * tensor({{1.0}, {10.0}}, kFloat64)};
  }
};

struct ExtraNones : Function<ExtraNones> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 3; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {3 * g[0], Tensor(), Tensor()}; }
};

struct GradForNumber : Function<GradForNumber> {
  static Tensor forward(AutogradContext*, Tensor x, double k) { return x * k; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0], g[0]}; }
};

// ---------------------------------------------------------------- helpers

// y = fn(x); dx = d sum(y w) / dx with create_graph; ddx = d sum(dx v) / dx (as the script).
template <class F>
void check_first_and_second(const std::string& name, F fn) {
  const auto& c = golden(name);
  Tensor x = leaf(c.at("x")), w = vec(c.at("w")), v = vec(c.at("v"));
  Tensor y = fn(x);
  expect_golden(y, c.at("y"), name + " y");
  EXPECT_EQ(y.grad_fn()->name(), c.at("grad_fn").get<std::string>());
  Tensor dx = grad({sum(y * w)}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  expect_golden(dx, c.at("dx"), name + " dx");
  ASSERT_TRUE(dx.requires_grad()) << "create_graph: the gradient must carry history";
  Tensor ddx = grad({sum(dx * v)}, {x})[0];
  expect_golden(ddx, c.at("ddx"), name + " ddx");
}

Tensor random_input(const DimVector& shape, double lo = -1.5, double hi = 1.5) {
  Tensor t = empty(shape, kFloat64);
  uniform_(t, lo, hi);
  return t.requires_grad_();
}

}  // namespace

// ---------------------------------------------------------------- values, gradients, double backward

TEST(CustomFunction, LegendrePolynomial3MatchesPyTorchToSecondOrder) {
  check_first_and_second("LegendrePolynomial3", [](const Tensor& x) { return LegendrePolynomial3::apply(x); });
}

TEST(CustomFunction, SavedOutputMatchesPyTorchToSecondOrder) {
  // the second derivative runs through the saved output's history: the Exp node itself
  check_first_and_second("Exp", [](const Tensor& x) { return Exp::apply(x); });
}

TEST(CustomFunction, NumberArgumentBetweenTensorsMatchesPyTorch) {
  const auto& c = golden("ScaledProduct");
  Tensor a = leaf(c.at("a")), b = leaf(c.at("b")), w = vec(c.at("w")), v = vec(c.at("v"));
  Tensor y = ScaledProduct::apply(a, c.at("k").get<double>(), b);
  expect_golden(y, c.at("y"), "y");
  EXPECT_EQ(y.grad_fn()->name(), c.at("grad_fn").get<std::string>());
  EXPECT_EQ(y.grad_fn()->next_functions().size(), 2u) << "one edge per Tensor argument";
  auto d = grad({sum(y * w)}, {a, b}, {}, std::nullopt, true);
  expect_golden(d[0], c.at("da"), "da");
  expect_golden(d[1], c.at("db"), "db");
  auto dd = grad({sum(d[0] * v) + sum(d[1] * v)}, {a, b});
  expect_golden(dd[0], c.at("dda"), "dda");
  expect_golden(dd[1], c.at("ddb"), "ddb");
}

TEST(CustomFunction, NonDifferentiableIntegerOutputIsSavedAndRoutesTheGradient) {
  const auto& c = golden("MaxDim");
  const auto shape = c.at("shape").get<std::vector<int64_t>>();
  Tensor x = vec(c.at("x")).reshape(DimVector(shape.begin(), shape.end())).detach().requires_grad_();
  auto out = MaxDim::apply(x);
  ASSERT_EQ(out.size(), 2u);
  expect_golden(out[0], c.at("values"), "values");
  EXPECT_EQ(out[1].to_vector<int64_t>(), c.at("indices").get<std::vector<int64_t>>());
  EXPECT_EQ(out[1].requires_grad(), c.at("indices_requires_grad").get<bool>());
  EXPECT_EQ(out[1].grad_fn(), nullptr);
  EXPECT_EQ(out[0].grad_fn()->name(), c.at("grad_fn").get<std::string>());
  sum(out[0] * tensor({2.0, -3.0}, kFloat64)).backward();
  expect_golden(x.grad(), c.at("dx"), "dx");
}

TEST(CustomFunction, MarkedNonDifferentiableOutputHasNoHistoryAndItsGradientIsZeros) {
  const auto& c = golden("SquareAndMask");
  Tensor x = leaf(c.at("x"));
  auto out = SquareAndMask::apply(x);
  expect_golden(out[0], c.at("square"), "square");
  expect_golden(out[1], c.at("mask"), "mask");
  EXPECT_EQ(out[1].requires_grad(), c.at("mask_requires_grad").get<bool>());
  EXPECT_EQ(out[1].grad_fn() != nullptr, c.at("mask_has_grad_fn").get<bool>());
  EXPECT_TRUE(out[0].requires_grad());
  SquareAndMask::last_mask_grad = Tensor();
  sum(out[0] * vec(c.at("w"))).backward();
  expect_golden(x.grad(), c.at("dx"), "dx");
  ASSERT_TRUE(SquareAndMask::last_mask_grad.defined()) << "a gradient that never arrived is materialized";
  EXPECT_EQ(SquareAndMask::last_mask_grad.shape(), out[1].shape());
  EXPECT_EQ(sum(abs(SquareAndMask::last_mask_grad)).item(), 0.0);
}

// ---------------------------------------------------------------- the context

namespace {
struct TwoOutputs : Function<TwoOutputs> {
  static std::vector<Tensor> received;  // what backward got
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x, bool materialize) {
    ctx->set_materialize_grads(materialize);
    return {x * 2, x * 3};
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) {
    received = g;
    Tensor r = zeros({3}, kFloat64);
    if (g[0].defined()) r = r + 2 * g[0];
    if (g[1].defined()) r = r + 3 * g[1];
    return {r, Tensor()};
  }
};
std::vector<Tensor> TwoOutputs::received;
}  // namespace

TEST(CustomFunction, MaterializeGradsGivesZerosForOutputsWithoutGradientUnlessTurnedOff) {
  for (bool materialize : {true, false}) {
    Tensor x = ones({3}, kFloat64).requires_grad_();
    auto out = TwoOutputs::apply(x, materialize);
    EXPECT_EQ(out[0].grad_fn(), out[1].grad_fn()) << "one node for both outputs";
    EXPECT_EQ(out[1].output_nr(), 1);
    sum(out[1]).backward();  // only the second output is used
    ASSERT_EQ(TwoOutputs::received.size(), 2u);
    EXPECT_EQ(TwoOutputs::received[0].defined(), materialize);
    if (materialize) EXPECT_EQ(sum(abs(TwoOutputs::received[0])).item(), 0.0);
    EXPECT_EQ(x.grad().to_vector<double>(), std::vector<double>(3, 3.0));
  }
}

namespace {
struct NeedsGrad : Function<NeedsGrad> {
  static std::vector<bool> in_forward, in_backward;
  static Tensor forward(AutogradContext* ctx, Tensor a, double k, Tensor b) {
    in_forward = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    ctx->save_for_backward({a, b});
    return k * a * b;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    in_backward = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    auto s = ctx->get_saved_variables();
    Tensor da = ctx->needs_input_grad(0) ? g[0] * s[1] : Tensor();
    Tensor db = ctx->needs_input_grad(1) ? g[0] * s[0] : Tensor();
    return {da, Tensor(), db};
  }
};
std::vector<bool> NeedsGrad::in_forward, NeedsGrad::in_backward;
}  // namespace

TEST(CustomFunction, NeedsInputGradCountsTensorInputsAndFollowsRequiresGradAndGradMode) {
  Tensor a = tensor({1.0, 2.0}, kFloat64).requires_grad_(), b = tensor({3.0, 4.0}, kFloat64);
  Tensor y = NeedsGrad::apply(a, 2.0, b);
  EXPECT_EQ(NeedsGrad::in_forward, (std::vector<bool>{true, false}));
  sum(y).backward();
  EXPECT_EQ(NeedsGrad::in_backward, (std::vector<bool>{true, false}));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{3.0, 4.0}));

  b.requires_grad_();
  sum(NeedsGrad::apply(a, 2.0, b)).backward();
  EXPECT_EQ(NeedsGrad::in_backward, (std::vector<bool>{true, true}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1.0, 2.0}));
  {
    NoGradGuard no_grad;  // no node: nothing needs a gradient, and the output has no history
    Tensor z = NeedsGrad::apply(a, 2.0, b);
    EXPECT_EQ(NeedsGrad::in_forward, (std::vector<bool>{false, false}));
    EXPECT_FALSE(z.requires_grad());
  }
  Tensor c = tensor({1.0, 1.0}, kFloat64);
  EXPECT_FALSE(NeedsGrad::apply(c, 2.0, c).requires_grad()) << "no input requires grad: no node";
  AutogradContext ctx;
  EXPECT_THROW(ctx.needs_input_grad(0), std::out_of_range);
}

namespace {
struct SavedData : Function<SavedData> {
  static std::vector<std::string> seen;
  static Tensor forward(AutogradContext* ctx, Tensor x, double d, int64_t i, bool flag, std::string s) {
    ctx->saved_data["d"] = d;
    ctx->saved_data["i"] = i;
    ctx->saved_data["n"] = 7;  // an int literal is an Int
    ctx->saved_data["flag"] = flag;
    ctx->saved_data["s"] = s;
    ctx->saved_data["lit"] = "literal";  // a string, not a bool
    ctx->saved_data["x"] = x;            // an input may be kept here
    ctx->saved_data["dims"] = std::vector<int64_t>{2, 3};
    return x * d;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    auto& sd = ctx->saved_data;
    seen = {std::to_string(sd["d"].toDouble()), std::to_string(sd["i"].toInt()), std::to_string(sd["n"].toInt()),
            sd["flag"].toBool() ? "true" : "false", sd["s"].toStringRef(), sd["lit"].toStringRef(),
            std::to_string(sd["x"].toTensor().numel()), std::to_string(sd["dims"].toIntVector()[1]),
            sd["missing"].tagKind()};
    return {g[0] * sd["d"].toDouble(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};
std::vector<std::string> SavedData::seen;

struct KeepsOutputInSavedData : Function<KeepsOutputInSavedData> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    Tensor y = x * 2;
    ctx->saved_data["y"] = y;
    return y;
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {2 * g[0]}; }
};
}  // namespace

TEST(CustomFunction, SavedDataRoundTripsEveryKind) {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  sum(SavedData::apply(x, 2.5, int64_t{-4}, true, std::string("abc"))).backward();
  EXPECT_EQ(SavedData::seen, (std::vector<std::string>{"2.500000", "-4", "7", "true", "abc", "literal", "3", "3", "None"}));
  EXPECT_EQ(x.grad().to_vector<double>(), std::vector<double>(3, 2.5));

  IValue v = 3;
  EXPECT_TRUE(v.isInt());
  EXPECT_EQ(testutil::error_of([&] { v.toDouble(); }), "[IValue] expected Double but got Int");
  EXPECT_EQ(testutil::error_of([&] { IValue().toTensor(); }), "[IValue] expected Tensor but got None");
  EXPECT_TRUE(IValue(2.0f).isDouble());
  EXPECT_TRUE(IValue(false).isBool());
}

TEST(CustomFunction, AnOutputKeptInSavedDataIsRefusedAndLeaksNothing) {
  const int64_t before = live_nodes();
  {
    Tensor x = ones({2}, kFloat64).requires_grad_();
    const std::string e = testutil::error_of([&] { KeepsOutputInSavedData::apply(x); });
    EXPECT_NE(e.find("[KeepsOutputInSavedDataBackward] saved_data[\"y\"] holds an output"), std::string::npos) << e;
  }
  EXPECT_EQ(live_nodes(), before) << "the refused node is freed, not kept alive by a cycle";
}

TEST(CustomFunction, ASavedTensorModifiedInPlaceMakesBackwardThrowPyTorchsError) {
  const std::string want = golden("inplace_saved_output_error").get<std::string>();
  ASSERT_NE(want.find("modified by an inplace operation"), std::string::npos);
  // the saved output, modified after apply (PyTorch's case)
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = Exp::apply(x);
  y.mul_(2.0);
  std::string e = testutil::error_of([&] { sum(y).backward(); });
  EXPECT_NE(e.find("modified by an inplace operation"), std::string::npos) << e;
  // a saved input
  Tensor a = tensor({1.0, 2.0}, kFloat64).requires_grad_(), b = tensor({3.0, 4.0}, kFloat64);
  Tensor z = ScaledProduct::apply(a, 1.0, b);
  b.add_(1.0);
  e = testutil::error_of([&] { sum(z).backward(); });
  EXPECT_NE(e.find("modified by an inplace operation"), std::string::npos) << e;
  // untouched: fine
  Tensor z2 = ScaledProduct::apply(a, 1.0, b);
  EXPECT_NO_THROW(sum(z2).backward());
}

TEST(CustomFunction, MarkDirtyGivesTheModifiedInputTheNodesHistory) {
  const auto& c = golden("MulInPlace");
  Tensor x = leaf(c.at("x"));
  Tensor h = x * 1.0;
  Tensor out = MulInPlace::apply(h);
  expect_golden(out, c.at("out"), "out");
  EXPECT_EQ(out.impl() == h.impl(), c.at("same_tensor").get<bool>());
  EXPECT_EQ(h.grad_fn()->name(), c.at("grad_fn").get<std::string>());
  sum(out * vec(c.at("w"))).backward();
  expect_golden(x.grad(), c.at("dx"), "dx");
  const std::string want = c.at("leaf_error").get<std::string>();
  const std::string e = testutil::error_of([&] { MulInPlace::apply(leaf(c.at("x"))); });
  EXPECT_NE(e.find(want), std::string::npos) << e;
}

namespace {
struct GradModeSeen : Function<GradModeSeen> {
  static bool in_forward, in_backward;
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    in_forward = grad_enabled();
    ctx->save_for_backward({x});
    return x * x;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    in_backward = grad_enabled();
    return {2 * ctx->get_saved_variables()[0] * g[0]};
  }
};
bool GradModeSeen::in_forward = true, GradModeSeen::in_backward = true;
}  // namespace

TEST(CustomFunction, ForwardRunsWithGradModeOffAndBackwardWithItOnOnlyUnderCreateGraph) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = GradModeSeen::apply(x);
  EXPECT_FALSE(GradModeSeen::in_forward);
  EXPECT_TRUE(grad_enabled()) << "restored after forward";
  EXPECT_EQ(y.grad_fn()->name(), "GradModeSeenBackward");
  EXPECT_EQ(y.grad_fn()->next_functions()[0].first->name(), "AccumulateGrad") << "its edge leads to the leaf";
  Tensor g = grad({sum(y)}, {x})[0];
  EXPECT_FALSE(GradModeSeen::in_backward);
  EXPECT_FALSE(g.requires_grad());
  g = grad({sum(GradModeSeen::apply(x))}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(GradModeSeen::in_backward);
  EXPECT_TRUE(g.requires_grad());
}

// ---------------------------------------------------------------- inputs and outputs

namespace {
struct SumAll : Function<SumAll> {
  static Tensor forward(AutogradContext* ctx, std::vector<Tensor> xs, double k) {
    ctx->saved_data["n"] = static_cast<int64_t>(xs.size());
    Tensor s = xs[0] * k;
    for (std::size_t i = 1; i < xs.size(); ++i) s = s + xs[i] * k;
    ctx->saved_data["k"] = k;
    return s;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    std::vector<Tensor> r(static_cast<std::size_t>(ctx->saved_data["n"].toInt()), g[0] * ctx->saved_data["k"].toDouble());
    r.push_back(Tensor());  // k
    return r;
  }
};

struct Identity : Function<Identity> {
  static Tensor forward(AutogradContext*, Tensor x) { return x; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0]}; }
};

struct OptionalBias : Function<OptionalBias> {
  static Tensor forward(AutogradContext*, Tensor x, std::optional<Tensor> bias) {
    return bias ? x + *bias : x * 1.0;
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0], g[0]}; }
};
}  // namespace

TEST(CustomFunction, VectorOfTensorsIsOneInputPerElement) {
  Tensor a = tensor({1.0, 2.0}, kFloat64).requires_grad_(), b = tensor({3.0, 4.0}, kFloat64).requires_grad_();
  Tensor y = SumAll::apply(std::vector<Tensor>{a, b}, 2.0);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{8.0, 12.0}));
  EXPECT_EQ(y.grad_fn()->next_functions().size(), 2u);
  sum(y).backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{2.0, 2.0}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{2.0, 2.0}));
}

TEST(CustomFunction, OptionalTensorIsAnInputOnlyWhenItHoldsOne) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_(), bias = tensor({0.5, 0.5}, kFloat64).requires_grad_();
  sum(OptionalBias::apply(x, std::optional<Tensor>(bias))).backward();
  EXPECT_EQ(bias.grad().to_vector<double>(), (std::vector<double>{1.0, 1.0}));
  // without a bias the second gradient is for a non-Tensor argument: PyTorch's error
  const std::string e = testutil::error_of([&] { sum(OptionalBias::apply(x, std::nullopt)).backward(); });
  EXPECT_NE(e.find("different than None at position 2"), std::string::npos) << e;
}

TEST(CustomFunction, ReturningAnInputGivesAnAliasAndLeavesTheInputAlone) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = Identity::apply(x);
  EXPECT_TRUE(x.is_leaf()) << "the input keeps its own (lack of) history";
  EXPECT_NE(y.impl(), x.impl());
  EXPECT_TRUE(y.shares_storage(x));
  EXPECT_EQ(y.grad_fn()->name(), "IdentityBackward");
  sum(y * 3.0).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{3.0, 3.0}));
}

// ---------------------------------------------------------------- gradcheck, gradgradcheck

namespace {
// (sin x, cos x), both outputs saved: under create_graph each comes back as its own output of the node
struct SinCos : Function<SinCos> {
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x) {
    Tensor s = sin(x), c = cos(x);
    ctx->save_for_backward({s, c});
    return {s, c};
  }
  // ds = g_s cos x, dc = -g_c sin x
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    auto sc = ctx->get_saved_variables();
    return {g[0] * sc[1] - g[1] * sc[0]};
  }
};
}  // namespace

TEST(CustomFunction, GradcheckAndGradgradcheckPass) {
  manual_seed(3);
  struct Case {
    const char* name;
    GradcheckFn fn;
    std::vector<DimVector> shapes;
  };
  const std::vector<Case> cases = {
      {"LegendrePolynomial3", [](auto& in) { return LegendrePolynomial3::apply(in[0]); }, {{2, 3}}},
      {"Exp", [](auto& in) { return Exp::apply(in[0]); }, {{4}}},
      {"Exp_twice", [](auto& in) { return Exp::apply(Exp::apply(in[0]) * 0.5); }, {{3}}},
      {"ScaledProduct", [](auto& in) { return ScaledProduct::apply(in[0], 1.3, in[1]); }, {{3}, {3}}},
      {"MaxDim", [](auto& in) { return MaxDim::apply(in[0])[0]; }, {{3, 4}}},
      {"SquareAndMask", [](auto& in) { return SquareAndMask::apply(in[0])[0]; }, {{5}}},
      {"SumAll", [](auto& in) { return SumAll::apply(std::vector<Tensor>{in[0], in[1]}, -0.7); }, {{2}, {2}}},
      {"SinCos_saved_outputs", [](auto& in) { auto o = SinCos::apply(in[0]); return o[0] * o[1].pow(2) + o[1]; }, {{4}}},
      {"SinCos_second_output_only", [](auto& in) { return SinCos::apply(in[0])[1].pow(3); }, {{4}}},
      {"two_outputs_both_used", [](auto& in) { auto o = TwoOutputs::apply(in[0], true); return o[0] * o[1].pow(2); }, {{3}}},
      {"in_a_graph", [](auto& in) { return sum(tanh(LegendrePolynomial3::apply(in[0] * in[1])) * Exp::apply(in[1])); },
       {{3}, {3}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> ins;
    for (const auto& s : c.shapes) ins.push_back(random_input(s));
    const GradcheckResult r1 = gradcheck_result(c.fn, ins);
    EXPECT_TRUE(r1.ok) << r1.message << " (max error " << r1.max_error << ")";
    const GradcheckResult r2 = gradgradcheck_result(c.fn, ins);
    EXPECT_TRUE(r2.ok) << r2.message << " (max error " << r2.max_error << ")";
  }
}

// ---------------------------------------------------------------- memory

TEST(CustomFunction, GraphIsFreedAfterBackwardAlsoWithASavedOutput) {
  const int64_t before = live_nodes();
  {
    Tensor x = tensor({0.5, -1.0, 2.0}, kFloat64).requires_grad_();
    for (int i = 0; i < 50; ++i) {
      Tensor y = Exp::apply(LegendrePolynomial3::apply(x));
      auto mv = MaxDim::apply(y.reshape({1, 3}));
      sum(y * mv[0]).backward();
    }
    EXPECT_EQ(live_nodes(), before) << "every node freed with its tensors";
    {
      Tensor y = Exp::apply(x);
      EXPECT_GT(live_nodes(), before);
    }
    EXPECT_EQ(live_nodes(), before) << "a saved output holds no cycle: dropping y frees its node";
    // double backward with create_graph: the recorded gradient refers back to the nodes until reset
    for (int i = 0; i < 20; ++i) {
      Tensor y = Exp::apply(x);
      Tensor g = grad({sum(y * y)}, {x}, {}, std::nullopt, true)[0];
      sum(g).backward();
    }
    x.set_grad({});
    EXPECT_EQ(live_nodes(), before);
  }
  EXPECT_EQ(live_nodes(), before);
}

TEST(CustomFunction, SecondBackwardThroughAFreedNodeIsAnError) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = sum(Exp::apply(x));
  y.backward();
  EXPECT_NE(testutil::error_of([&] { y.backward(); }).find("second time"), std::string::npos);
  Tensor z = sum(Exp::apply(x));
  z.backward({}, /*retain_graph=*/true);
  EXPECT_NO_THROW(z.backward());
}

// ---------------------------------------------------------------- names

namespace ns_for_names {
struct Inner : Function<Inner> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 2; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {2 * g[0]}; }
};
template <class T>
struct Templated : Function<Templated<T>> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 2; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {2 * g[0]}; }
};
}  // namespace ns_for_names

TEST(CustomFunction, NodeNameIsTheClassNameAndBackwardAsPyTorchNamesPythonFunctions) {
  Tensor x = ones({2}, kFloat64).requires_grad_();
  EXPECT_EQ(LegendrePolynomial3::apply(x).grad_fn()->name(), golden("LegendrePolynomial3").at("grad_fn").get<std::string>());
  EXPECT_EQ(ns_for_names::Inner::apply(x).grad_fn()->name(), "InnerBackward");
  EXPECT_EQ(ns_for_names::Templated<int>::apply(x).grad_fn()->name(), "Templated<int>Backward");
  struct Local : Function<Local> {
    static Tensor forward(AutogradContext*, Tensor x) { return x * 2; }
    static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {2 * g[0]}; }
  };
  EXPECT_EQ(Local::apply(x).grad_fn()->name(), "LocalBackward");
  // next_functions: the leaf as its AccumulateGrad node, as for any op
  auto next = Exp::apply(LegendrePolynomial3::apply(x)).grad_fn()->next_functions();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].first->name(), "LegendrePolynomial3Backward");
  EXPECT_EQ(next[0].first->next_functions()[0].first->name(), "AccumulateGrad");
}

// ---------------------------------------------------------------- what backward may return

TEST(CustomFunction, WrongNumberOfGradientsIsPyTorchsError) {
  const auto& errors = golden("errors");
  Tensor a = tensor({1.0, 2.0}, kFloat64).requires_grad_(), b = tensor({3.0, 4.0}, kFloat64).requires_grad_();
  EXPECT_EQ(testutil::error_of([&] { sum(BadCount::apply(a, b)).backward(); }), errors.at("BadCount").get<std::string>());
  EXPECT_EQ(testutil::error_of([&] { sum(GradForNumber::apply(a, 3.0)).backward(); }),
            errors.at("GradForNumber").get<std::string>());
  // extra undefined gradients at the end are fine
  const auto& c = golden("ExtraNones");
  Tensor x = leaf(c.at("x"));
  sum(ExtraNones::apply(x)).backward();
  expect_golden(x.grad(), c.at("dx"), "dx");
}

TEST(CustomFunction, GradientOfWrongShapeIsPyTorchsErrorAndABroadcastOneIsSummed) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  EXPECT_EQ(testutil::error_of([&] { sum(BadShape::apply(x)).backward(); }),
            golden("errors").at("BadShape").get<std::string>());
  const auto& c = golden("BroadcastGrad");
  Tensor y = leaf(c.at("x"));
  sum(BroadcastGrad::apply(y)).backward();
  expect_golden(y.grad(), c.at("dx"), "dx");
}

TEST(CustomFunction, AGradientOfAnotherDtypeIsCastToTheInputs) {
  struct FloatGrad : Function<FloatGrad> {
    static Tensor forward(AutogradContext*, Tensor x) { return x * 2; }
    static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {(2 * g[0]).to(kFloat32)}; }
  };
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor g = grad({sum(FloatGrad::apply(x))}, {x})[0];
  EXPECT_EQ(g.dtype(), kFloat64);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{2.0, 2.0}));
}
