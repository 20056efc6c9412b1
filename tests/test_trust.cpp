// Trust on every path: calls a user can write that used to crash, do nothing, or give a number
// PyTorch would not. Expected values are PyTorch 1.13's (tools/golden/make_trust_golden.py writes
// tests/golden/trust.json); each test was seen failing on the code before its fix.
#include <gtest/gtest.h>

#include <climits>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/layers.h"
#include "optim/optimizer.h"
#include "golden_json.h"
#include "test_util.h"

using namespace ag;
using testutil::error_of;

namespace {

const nlohmann::json& golden() { return testutil::golden_json("trust.json"); }

std::vector<double> numbers(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

void expect_close(const Tensor& t, const nlohmann::json& want, double tol = 1e-12) {
  const std::vector<double> got = t.to_vector<double>(), w = numbers(want);
  ASSERT_EQ(got.size(), w.size());
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(got[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

// ---------------------------------------------------------------- shape arithmetic

TEST(ShapeArithmetic, RefusesWhatPyTorchRefusesAndKeepsWhatItKeeps) {
  const nlohmann::json& g = golden().at("shapes");
  constexpr int64_t big = int64_t{1} << 62, k32 = int64_t{1} << 32;
  const std::vector<std::pair<std::string, std::function<Tensor()>>> cases = {
      {"zeros_2_62", [] { return zeros({big}); }},
      {"zeros_neg", [] { return zeros({-2}); }},
      {"view_2_32_squared", [] { return zeros({0}).view({k32, k32}); }},
      {"narrow_int64_max", [] { return zeros({3}).narrow(0, 1, INT64_MAX); }},
      {"expand_neg2", [] { return ones({1}).expand({-2}); }},
      {"expand_overflow", [] { return ones({1, 1}).expand({big, big}); }},
      {"slice_huge_step", [] { return arange(5.0).slice(0, 0, 5, big); }},
      {"slice_huge_step_from_2", [] { return arange(5.0).slice(0, 2, std::nullopt, big); }},
      {"zeros_0_2_62_4", [] { return zeros({0, big, 4}); }},
      {"size0_of_scalar", [] { return zeros({tensor(3.0).size(0)}); }},
      {"repeat_overflow", [] { return ones({2}).repeat({big}); }},
  };
  ASSERT_EQ(cases.size(), g.size());
  for (const auto& [name, f] : cases) {
    SCOPED_TRACE(name);
    const nlohmann::json& want = g.at(name);
    if (want.is_boolean()) {
      EXPECT_ANY_THROW(f());
    } else {
      Tensor t;
      ASSERT_NO_THROW(t = f());
      EXPECT_EQ(t.shape().vec(), DimVector(want.get<std::vector<int64_t>>()));
    }
  }
  // the slice with a huge step reads the right element
  EXPECT_EQ(arange(5.0).slice(0, 2, std::nullopt, big).item(), 2.0);
}

TEST(ShapeArithmetic, ErrorsNameTheOpAndTheShape) {
  constexpr int64_t big = int64_t{1} << 62;
  EXPECT_EQ(error_of([] { zeros({-2}); }), "[zeros] Trying to create tensor with negative dimension -2: [-2]");
  EXPECT_EQ(error_of([] { zeros({big}); }),
            "[zeros] Storage size calculation overflowed with sizes=[4611686018427387904]");
  EXPECT_TRUE(contains(error_of([] { zeros({0}).view({int64_t{1} << 32, int64_t{1} << 32}); }),
                       "[view] integer multiplication overflow"));
  EXPECT_EQ(error_of([] { zeros({3}).narrow(0, 1, INT64_MAX); }),
            "[narrow] start (1) + length (9223372036854775807) exceeds dimension size (3) of shape [3]");
  EXPECT_TRUE(contains(error_of([] { ones({1}).expand({-2}); }), "[expand] the expanded size -2 is invalid"));
  EXPECT_EQ(error_of([] { tensor(3.0).size(0); }), "[size] Dimension specified as 0 but tensor has no dimensions");
  EXPECT_EQ(error_of([] { tensor(3.0).stride(-1); }), "[stride] Dimension specified as -1 but tensor has no dimensions");
  // more than the machine's memory and swap: refused before malloc, with PyTorch's words
  EXPECT_TRUE(contains(error_of([] { empty({int64_t{1} << 50}); }),
                       "can't allocate memory: you tried to allocate 4503599627370496 bytes"));
}

// ---------------------------------------------------------------- set_grad and the optimizers

TEST(SetGrad, RefusesAGradientOfAnotherSizeOrType) {
  Tensor w = zeros({1000}, Options().requires_grad());
  EXPECT_TRUE(contains(error_of([&] { w.set_grad(zeros({1})); }), "assigned grad has data of a different size"));
  EXPECT_TRUE(contains(error_of([&] { w.set_grad(zeros({10, 100})); }), "assigned grad has data of a different size"));
  EXPECT_TRUE(contains(error_of([&] { w.set_grad(zeros({1000}, kFloat64)); }), "assigned grad has data of a different type"));
  EXPECT_TRUE(contains(error_of([&] { w.set_grad(w); }), "can't assign Variable as its own grad"));
  EXPECT_FALSE(w.grad().defined());
  w.set_grad(ones({1000}));  // the right one is taken, and none clears it
  EXPECT_EQ(w.grad().sum().item(), 1000.0);
  w.set_grad({});
  EXPECT_FALSE(w.grad().defined());
}

TEST(SetGrad, EveryOptimizerChecksTheGradientBeforeItsLoop) {
  const auto step_with = [](const std::function<void(optim::Optimizer&)>& run, optim::Optimizer& opt, const Tensor& w) {
    w.impl()->grad = zeros({1}).impl_ptr();  // past set_grad's check, as a user poking impl() could
    return error_of([&] { run(opt); });
  };
  Tensor w = zeros({1000}, Options().requires_grad());
  optim::SGD sgd({w}, {.lr = 0.1, .momentum = 0.9});
  optim::Adam adam({w}, {});
  optim::RMSprop rms({w}, {});
  optim::Adagrad ada({w}, {});
  const auto step = [](optim::Optimizer& o) { o.step(); };
  EXPECT_TRUE(contains(step_with(step, sgd, w), "[SGD] the gradient (torch.float32, shape [1]) does not match its parameter"));
  EXPECT_TRUE(contains(step_with(step, adam, w), "[Adam] the gradient"));
  EXPECT_TRUE(contains(step_with(step, rms, w), "[RMSprop] the gradient"));
  EXPECT_TRUE(contains(step_with(step, ada, w), "[Adagrad] the gradient"));
  EXPECT_EQ(ag::abs(w).sum().item(), 0.0);  // nothing was written
}

// ---------------------------------------------------------------- assignment through a temporary

TEST(AssignThroughView, WritesIntoTheTensorItViews) {
  Tensor x = arange(12.0, kFloat32).view({3, 4});
  x[0] = tensor({9.0, 8.0, 7.0, 6.0});
  x[2] = 2.5;
  x.select(1, 3) = tensor({-1.0, -2.0, -3.0});
  x.narrow(1, 1, 2) = 0.5;
  x[1][2] = 42;
  expect_close(x, golden().at("assign_plain").at("values"));
  x[1] += 1.0;  // compound assignment on a temporary writes too
  x[1] -= tensor({1.0});
  EXPECT_EQ(x[1].to_vector<float>(), (std::vector<float>{4, 0.5, 42, -2}));
  EXPECT_EQ(x.dtype(), kFloat32);
  // a named tensor still rebinds: only a temporary writes
  Tensor row = x[0];
  row = zeros({4});
  EXPECT_EQ(x[0][0].item(), 9.0);
  // the value broadcasts as copy_ does, and a shape that cannot is an error
  x[1] = tensor({7.0});
  EXPECT_EQ(x[1].sum().item(), 28.0);
  EXPECT_ANY_THROW(x[1] = ones({3}));
}

TEST(AssignThroughView, RecordsCopySlicesOnTheBaseAsPyTorch) {
  const nlohmann::json& g = golden().at("assign_graph");
  Tensor w = arange(12.0, kFloat64).view({3, 4}).detach().requires_grad_();
  Tensor t = tensor({1.0, -1.0, 0.5, 2.0}, Options(kFloat64).requires_grad());
  Tensor x = w * 2;
  x[0] = t * 3;
  EXPECT_EQ(x.grad_fn()->name(), g.at("grad_fn_after_first").get<std::string>());
  x[2] = 2.5;
  EXPECT_EQ(x.grad_fn()->name(), g.at("grad_fn").get<std::string>());
  const auto next = x.grad_fn()->next_functions();
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].first->name(), g.at("next")[0].get<std::string>());
  EXPECT_EQ(next[1].first, nullptr);  // the constant 2.5 needs no gradient
  const Tensor weights = linspace(-1, 1, 12, kFloat64).view({3, 4});
  Tensor loss = (x * x * weights).sum();
  EXPECT_NEAR(loss.item(), g.at("loss").get<double>(), 1e-12);
  loss.backward();
  expect_close(x, g.at("values"));
  expect_close(w.grad(), g.at("w_grad"));
  expect_close(t.grad(), g.at("t_grad"));
}

TEST(AssignThroughView, APlainTensorWrittenWithAGradBecomesANonLeaf) {
  const nlohmann::json& g = golden().at("assign_into_plain");
  Tensor z = zeros({2, 3}, kFloat64);
  Tensor s = tensor({1.0, 2.0, 3.0}, Options(kFloat64).requires_grad());
  z[1] = s * s;
  EXPECT_EQ(z.grad_fn()->name(), g.at("grad_fn").get<std::string>());
  EXPECT_EQ(z.requires_grad(), g.at("requires_grad").get<bool>());
  EXPECT_EQ(z.is_leaf(), g.at("is_leaf").get<bool>());
  (z * tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, kFloat64)).sum().backward();
  expect_close(s.grad(), g.at("s_grad"));
}

TEST(AssignThroughView, InPlaceArithmeticOnAStridedViewOfANonLeaf) {
  const nlohmann::json& g = golden().at("view_mul_");
  Tensor w = arange(6.0, kFloat64).view({2, 3}).detach().requires_grad_();
  Tensor y = w * 1.5;
  Tensor v = y.t()[1];
  Tensor u = tensor({0.25, -0.5}, Options(kFloat64).requires_grad());
  v.mul_(u);
  EXPECT_EQ(y.grad_fn()->name(), g.at("grad_fn").get<std::string>());
  EXPECT_EQ(v.grad_fn()->name(), g.at("view_grad_fn").get<std::string>());
  (y * y).sum().backward();
  expect_close(y, g.at("values"));
  expect_close(w.grad(), g.at("w_grad"));
  expect_close(u.grad(), g.at("u_grad"));
  // second order through CopySlices
  Tensor w2 = arange(6.0, kFloat64).view({2, 3}).detach().requires_grad_();
  const auto f = [](const std::vector<Tensor>& in) {
    Tensor y2 = in[0] * 1.5;
    Tensor v2 = y2.t()[1];
    v2.mul_(in[1]);
    return (y2 * y2 * y2).sum();
  };
  Tensor u2 = tensor({0.25, -0.5}, Options(kFloat64).requires_grad());
  EXPECT_TRUE(gradcheck(f, {w2, u2}));
  EXPECT_TRUE(gradgradcheck(f, {w2, u2}));
}

TEST(AssignThroughView, AViewTakenBeforeItsBaseWasWrittenFollowsTheBase) {
  const nlohmann::json& g = golden().at("stale_view");
  Tensor w = arange(6.0, kFloat64).view({2, 3}).detach().requires_grad_();
  Tensor y = w * 2;
  Tensor row1 = y[1];
  y[0] = ones({3}, kFloat64);
  y.mul_(3.0);
  (row1 * tensor({1.0, 2.0, 3.0}, kFloat64)).sum().backward();
  expect_close(row1, g.at("values"));
  expect_close(w.grad(), g.at("w_grad"));
}

TEST(AssignThroughView, CopyAndFillInAGraphAsPyTorch) {
  const nlohmann::json& g = golden().at("copy_graph");
  Tensor w = ones({3}, Options(kFloat64).requires_grad());
  Tensor y = w * 2;
  Tensor src = tensor({1.0, 2.0, 3.0}, Options(kFloat64).requires_grad());
  y.copy_(src);
  EXPECT_EQ(y.grad_fn()->name(), g.at("grad_fn").get<std::string>());
  const auto next = y.grad_fn()->next_functions();
  EXPECT_EQ(next[0].first->name(), g.at("next")[0].get<std::string>());
  EXPECT_EQ(next[1].first->name(), g.at("next")[1].get<std::string>());
  (y * y).sum().backward();
  expect_close(w.grad(), g.at("w_grad"));
  expect_close(src.grad(), g.at("src_grad"));
  Tensor a = w * 2, b = w * 2;
  a.fill_(4.0);
  b.zero_();
  EXPECT_EQ(a.grad_fn()->name(), golden().at("fill_graph").at("fill").get<std::string>());
  EXPECT_EQ(b.grad_fn()->name(), golden().at("fill_graph").at("zero").get<std::string>());
}

TEST(AssignThroughView, AViewOfALeafThatRequiresGradIsRefusedWithPyTorchsWords) {
  Tensor x = ones({3, 4}, Options().requires_grad());
  const std::string e = error_of([&] { x[0] = ones({4}); });
  EXPECT_TRUE(contains(e, "a view of a leaf Variable that requires grad is being used in an in-place operation")) << e;
  EXPECT_EQ(x.sum().item(), 12.0);
  {
    NoGradGuard no_grad;  // as an optimizer or an initializer writes
    x[0] = zeros({4});
  }
  EXPECT_EQ(x.sum().item(), 8.0);
}

// ---------------------------------------------------------------- Sequential in written order

TEST(SequentialOrder, BracedLayersAreBuiltInTheOrderWrittenWithPyTorchsWeights) {
  manual_seed(0);
  nn::Sequential net{nn::Linear(2, 16), nn::ReLU(), nn::Linear(16, 1)};
  const nlohmann::json& g = golden().at("sequential");
  const auto sd = net.state_dict();
  ASSERT_EQ(sd.size(), g.size());
  for (const auto& [name, t] : sd) {
    SCOPED_TRACE(name);
    expect_close(t, g.at(name), 1e-7);
  }
  // the parenthesized form, whose arguments GCC builds right to left, does not compile
  static_assert(!std::is_constructible_v<nn::Sequential, nn::Linear, nn::ReLU, nn::Linear>);
}

// ---------------------------------------------------------------- dtype inference, flags

TEST(FullDtype, IsInferredFromTheValueAsLibtorch) {
  const nlohmann::json& g = golden().at("full_dtype");
  EXPECT_EQ(g.at("int").get<std::string>(), "torch.int64");
  EXPECT_EQ(full({2}, 7).dtype(), kInt64);
  EXPECT_EQ(full({2}, int64_t{7}).dtype(), kInt64);
  EXPECT_EQ(g.at("bool").get<std::string>(), "torch.bool");
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_EQ(g.at("float").get<std::string>(), "torch.float32");
  EXPECT_EQ(full({2}, 7.0).dtype(), kFloat32);
  EXPECT_EQ(full({2}, 7, kFloat64).dtype(), kFloat64);  // a given dtype wins
  // all 64 bits of an integer value, not rounded through a double
  EXPECT_EQ(full({1}, (int64_t{1} << 62) + 1).to_vector<int64_t>()[0], g.at("big")[0].get<int64_t>());
}

TEST(RequiresGradFlag, ANonLeafMayAskAgainButNotDrop) {
  Tensor x = ones({3}, Options().requires_grad());
  Tensor y = x * 2;
  EXPECT_NO_THROW(y.requires_grad_(true));
  EXPECT_TRUE(y.requires_grad());
  EXPECT_TRUE(contains(error_of([&] { y.requires_grad_(false); }),
                       "you can only change requires_grad flags of leaf variables"));
}

// ---------------------------------------------------------------- a second backward

TEST(SecondBackward, RunsWhereNothingFreedIsNeededAndRefusesWhereItIs) {
  Tensor a = ones({3}, Options().requires_grad());
  Tensor y = (a + 2).sum();  // AddBackward0 and SumBackward0 save no tensor
  y.backward();
  EXPECT_NO_THROW(y.backward());
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{2, 2, 2}));
  Tensor b = ones({3}, Options().requires_grad());
  Tensor z = (b * b).sum();  // MulBackward0 saved b
  z.backward();
  EXPECT_TRUE(contains(error_of([&] { z.backward(); }), "Trying to backward through the graph a second time"));
  EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

// ---------------------------------------------------------------- messages

TEST(Messages, KeepPyTorchsKeyWordsAndNameTheOpCalled) {
  Tensor undefined;
  EXPECT_TRUE(contains(error_of([&] { undefined.item(); }), "[item]"));
  EXPECT_TRUE(contains(error_of([&] { undefined.to_vector<float>(); }), "[to_vector]"));
  Tensor a = ones({3}, Options().requires_grad());
  Tensor b = a * 1;
  Tensor c = b * b;
  {
    NoGradGuard g;
    b.add_(1.0);
  }
  EXPECT_TRUE(contains(error_of([&] { c.sum().backward(); }),
                       "one of the variables needed for gradient computation has been modified by an inplace operation: "
                       "[torch.FloatTensor [3]] is at version 1; expected version 0 instead"));
}

// PyTorch 2.x's rule (1.13's depended on the order): the retained gradient is the one after every
// tensor hook, whichever of retain_grad() and register_hook() came first.
TEST(RetainGrad, IsTheGradientAfterEveryHookInEitherOrder) {
  const nlohmann::json& g = golden().at("retain_grad_order");
  for (const bool retain_first : {true, false}) {
    SCOPED_TRACE(retain_first ? "retain_grad first" : "register_hook first");
    Tensor x = tensor({1.0, 2.0}, Options(kFloat64).requires_grad());
    Tensor y = x * 3;
    if (retain_first) y.retain_grad();
    y.register_hook([](const Tensor& grad) { return grad * 10; });
    if (!retain_first) y.retain_grad();
    (y * y).sum().backward();
    expect_close(y.grad(), g.at("after_hooks"));
    expect_close(x.grad(), g.at("x_grad"));
  }
}
