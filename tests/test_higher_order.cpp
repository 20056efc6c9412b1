// Higher-order autograd: create_graph, ag::grad, gradgradcheck over every fused op and the ops
// outside the op table (the table's own ops: tests/test_op_table.cpp), third derivatives, the fast
// kernels against the rules they stand in for, fused ops against their composed definitions to
// second order, memory, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "optim/optimizer.h"
#include "test_util.h"

using namespace ag;

namespace {

// Elements differing by more than atol + rtol |b| (in the tensors' dtype).
int64_t count_mismatches(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.dtype() == kFloat32) return testutil::close_mismatches<float>(a, b, rtol, atol);
  return testutil::close_mismatches<double>(a, b, rtol, atol);
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

Tensor leaf(const DimVector& shape, double lo = -1.0, double hi = 1.0) {
  Tensor t = empty(shape, kFloat64);
  uniform_(t, lo, hi);
  return t.requires_grad_();
}

double value(const Tensor& t) { return t.item(); }

// The ops outside the op table and every fused op, on small random float64 inputs.
struct ExtraCase {
  std::string name;
  Fn fn;
  std::vector<DimVector> shapes;
  double lo = -1.0, hi = 1.0;
};

std::vector<ExtraCase> extra_cases() {
  const Tensor mask = tensor({{true, false, true}, {false, false, true}});
  const Tensor keep = tensor({{1.0, 0.0, 1.0}, {1.0, 1.0, 0.0}}, kFloat64);
  return {
      {"erf", [](auto& x) { return erf(x[0]); }, {{2, 3}}},
      {"pow_constant_exponent", [](auto& x) { return pow(x[0], tensor({2.0, 3.0, 0.5}, kFloat64)); }, {{2, 3}}, 0.5, 2.0},
      {"index_add", [](auto& x) { return index_add(x[0], 0, tensor({2, 0, 2}), x[1], 0.5); }, {{3, 2}, {3, 2}}},
      {"nll_loss", [](auto& x) { return nll_loss(log_softmax(x[0], -1), tensor({1, 0, 2})); }, {{3, 4}}},
      {"nll_loss_1d", [](auto& x) { return nll_loss(x[0], tensor(2)); }, {{4}}},
      {"cross_entropy_1d", [](auto& x) { return cross_entropy(x[0], tensor(1)); }, {{4}}},
      {"dropout_with_mask", [keep](auto& x) { return dropout_with_mask(x[0], keep, 0.25); }, {{2, 3}}},
      {"masked_fill_inplace", [mask](auto& x) { Tensor y = x[0] * 1.0; y.masked_fill_(mask, 2.0); return y * y; }, {{2, 3}}},
      {"clone_contiguous", [](auto& x) { return x[0].t().contiguous() * x[0].t().clone(); }, {{2, 3}}},
      {"squeeze_select_narrow", [](auto& x) { return x[0].unsqueeze(0).squeeze(0).select(1, 1) * x[0].narrow(1, 0, 2).sum(); }, {{3, 2}}},
      {"linear", [](auto& x) { return linear(x[0], x[1], x[2]); }, {{3, 4}, {2, 4}, {2}}},
      {"linear_no_bias", [](auto& x) { return linear(x[0], x[1]); }, {{3, 4}, {2, 4}}},
      {"causal_softmax", [](auto& x) { return causal_softmax(x[0], 1.7); }, {{2, 4, 5}}},
      {"causal_qk_softmax", [](auto& x) { return causal_qk_softmax(x[0], x[1], 1.3); }, {{2, 4, 3}, {2, 5, 3}}},
      {"causal_matmul", [](auto& x) { return causal_matmul(x[0], x[1]); }, {{2, 4, 5}, {2, 5, 3}}},
      {"causal_attention_output", [](auto& x) { return causal_attention_output(x[0], x[1], x[2], 1.3); },
       {{2, 4, 3}, {2, 4, 3}, {2, 4, 2}}},
      {"causal_self_attention", [](auto& x) { return causal_self_attention(x[0], x[1], x[2], x[3], 2, 1.3); },
       {{2, 5, 3}, {4, 3}, {4, 3}, {4, 3}}},
      {"layer_norm_3d", [](auto& x) { return layer_norm(x[0], {3}, x[1], x[2]); }, {{2, 2, 3}, {3}, {3}}},
      {"mse_loss", [](auto& x) { return mse_loss(x[0], x[1]); }, {{2, 3}, {2, 3}}},
      {"sqrt_log_pos", [](auto& x) { return sqrt(x[0]) * log(x[0]) + pow(x[0], -1.5); }, {{2, 3}}, 0.5, 2.0},
  };
}

std::vector<Tensor> make_inputs(const ExtraCase& c) {
  std::vector<Tensor> ins;
  for (const auto& s : c.shapes) ins.push_back(leaf(s, c.lo, c.hi));
  return ins;
}

// grad of sum(fn(x) * w) with respect to the inputs, with or without create_graph.
std::vector<Tensor> first_grads(const Fn& fn, const std::vector<Tensor>& ins, bool create_graph) {
  Tensor out = fn(ins);
  manual_seed(5);
  Tensor w = empty(out.shape().vec(), out.dtype());
  uniform_(w, -1.0, 1.0);
  return grad({sum(out * w)}, ins, {}, std::nullopt, create_graph, /*allow_unused=*/true);
}

}  // namespace

// ---------------------------------------------------------------- the API

TEST(CreateGraph, DerivativesOfXCubedToThirdOrder) {
  Tensor x = tensor(2.0, kFloat64).requires_grad_();
  (x * x * x).backward({}, std::nullopt, /*create_graph=*/true);
  Tensor g1 = x.grad();  // 3x^2, with history
  EXPECT_DOUBLE_EQ(value(g1), 12.0);
  ASSERT_TRUE(g1.requires_grad());
  ASSERT_TRUE(g1.grad_fn());
  x.set_grad({});
  g1.backward({}, std::nullopt, true);  // 6x
  Tensor g2 = x.grad();
  EXPECT_DOUBLE_EQ(value(g2), 12.0);
  x.set_grad({});
  g2.backward();  // 6
  EXPECT_DOUBLE_EQ(value(x.grad()), 6.0);
  EXPECT_FALSE(x.grad().requires_grad());
}

TEST(CreateGraph, WithoutItAGradientHasNoHistoryAndCannotBeDifferentiated) {
  Tensor x = tensor(2.0, kFloat64).requires_grad_();
  (x * x * x).backward();
  EXPECT_FALSE(x.grad().requires_grad());
  try {
    x.grad().backward();
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "[backward] element 0 of tensors does not require grad and does not have a grad_fn");
  }
}

TEST(CreateGraph, RetainGraphDefaultsToCreateGraph) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = sum(exp(x));
  y.backward({}, std::nullopt, true);
  EXPECT_NO_THROW(y.backward());  // retained by create_graph
  EXPECT_THROW(y.backward(), std::runtime_error);  // the plain backward freed it
  x.set_grad({});
}

TEST(CreateGraph, LeafGradIsAccumulatedOutOfPlace) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  sum(x * x).backward({}, std::nullopt, true);
  Tensor first = x.grad();
  sum(x * x * x).backward({}, std::nullopt, true);
  EXPECT_EQ(first.to_vector<double>(), (std::vector<double>{2.0, 4.0}));  // not modified in place
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{5.0, 16.0}));
  // the sum carries both histories: d/dx of sum(2x + 3x^2) = 2 + 6x
  Tensor g = grad({sum(x.grad())}, {x})[0];
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{8.0, 14.0}));
  x.set_grad({});  // a gradient with history refers to x: breaking the cycle, as in PyTorch
}

TEST(Grad, ReturnsGradientsWithoutTouchingDotGrad) {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor w = tensor({0.5, -1.0, 2.0}, kFloat64).requires_grad_();
  Tensor h = x * w;  // a non-leaf input
  Tensor y = sum(h * h);
  std::vector<Tensor> g = grad({y}, {x, h}, {}, /*retain_graph=*/true);
  EXPECT_EQ(g[0].to_vector<double>(), (std::vector<double>{0.5 * 2 * 0.5, -1.0 * 2 * -2.0, 2.0 * 2 * 6.0}));
  EXPECT_EQ(g[1].to_vector<double>(), (std::vector<double>{1.0, -4.0, 12.0}));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  EXPECT_FALSE(g[0].requires_grad());
  // several outputs with grad_outputs; an output that is an input gets its seed back
  std::vector<Tensor> g2 = grad({y, h}, {h}, {tensor(2.0, kFloat64), ones_like(h)});
  EXPECT_EQ(g2[0].to_vector<double>(), (std::vector<double>{3.0, -7.0, 25.0}));
}

TEST(Grad, UnusedInputsAndAllowUnused) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_(), z = tensor({3.0}, kFloat64).requires_grad_();
  Tensor y = sum(x * x);
  try {
    grad({y}, {x, z}, {}, true);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "[grad] One of the differentiated Tensors appears to not have been used in the graph. Set "
                 "allow_unused=True if this is the desired behavior. (input 1, shape [1])");
  }
  std::vector<Tensor> g = grad({y}, {x, z}, {}, true, false, /*allow_unused=*/true);
  EXPECT_TRUE(g[0].defined());
  EXPECT_FALSE(g[1].defined());
}

TEST(Grad, ErrorsAsPyTorchGivesThem) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor c = tensor({1.0, 2.0}, kFloat64);
  using testutil::error_of;
  EXPECT_EQ(error_of([&] { grad({x * x}, {x}); }),
            "[grad] grad can be implicitly created only for scalar outputs; got shape [2]");
  EXPECT_EQ(error_of([&] { grad({sum(c)}, {x}); }),
            "[grad] element 0 of tensors does not require grad and does not have a grad_fn");
  EXPECT_EQ(error_of([&] { grad({sum(x)}, {c}); }),
            "[grad] One of the differentiated Tensors does not require grad (input 0, shape [2])");
  EXPECT_EQ(error_of([&] { grad({sum(x)}, {x}, {ones({3}, kFloat64)}); }),
            "[grad] gradient of shape [3] does not match the shape [] of output 0");
  EXPECT_EQ(error_of([&] { grad({sum(x), sum(x)}, {x}, {ones({}, kFloat64)}); }),
            "[grad] got 1 grad_outputs for 2 outputs; give one per output (or none)");
  EXPECT_EQ(error_of([&] { grad({}, {x}); }), "[grad] expected at least one output");
  EXPECT_EQ(error_of([&] { grad({sum(x)}, {}); }), "[grad] expected at least one input");
  Tensor y = sum(exp(x));
  grad({y}, {x});
  EXPECT_EQ(error_of([&] { grad({y}, {x}); }),
            "[backward] Trying to backward through the graph a second time (or directly access saved tensors after "
            "they have already been freed): ExpBackward0's saved tensors were freed. Saved intermediate values of the "
            "graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=true on the first "
            "backward call if you need to backward through the graph a second time");
}

TEST(Grad, RunsOnlyTheNodesThatLeadToTheInputs) {
  // the branch through e cannot run (its saved output was modified in place); grad with respect
  // to x does not need it and must not run it, where backward runs everything
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_(), o = tensor({3.0, 4.0}, kFloat64).requires_grad_();
  Tensor e = exp(o);
  Tensor y = sum(x * x) + sum(e);
  {
    NoGradGuard no_grad;
    e.add_(1.0);
  }
  EXPECT_EQ(grad({y}, {x}, {}, true)[0].to_vector<double>(), (std::vector<double>{2.0, 4.0}));
  EXPECT_THROW(y.backward(), std::runtime_error);
  x.set_grad({});
}

TEST(Grad, AFreedGraphIsAnErrorNeverAMissingPath) {
  // part of the graph was freed by an earlier pass: ag::grad cannot see whether the input lies
  // past it, so it says so (PyTorch: "Trying to backward through the graph a second time")
  // rather than return the gradient of the other paths only
  Tensor x = tensor({0.5, -1.0}, kFloat64).requires_grad_();
  Tensor h = tanh(x);
  grad({sum(h)}, {x});
  try {
    grad({sum(h * h) + sum(x)}, {x});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Trying to backward through the graph a second time (or directly access saved "
                                         "tensors after they have already been freed): TanhBackward0's saved tensors"),
              std::string::npos)
        << e.what();
  }
}

TEST(HigherOrderMemory, ARuleThatThrowsWhileRecordingLeaksNothing) {
  const int64_t baseline = live_nodes();
  {
    Tensor x = tensor({0.5, -1.0}, kFloat64).requires_grad_();
    Tensor y = x * x;
    Tensor e = exp(y);
    {
      NoGradGuard no_grad;
      e.add_(1.0);  // ExpBackward's saved output: its rule throws
    }
    EXPECT_THROW(grad({sum(e) + sum(tanh(y))}, {x}, {}, std::nullopt, /*create_graph=*/true), std::runtime_error);
  }
  EXPECT_EQ(live_nodes(), baseline);
}

TEST(Relu, ANaNPassesItsGradientAsInPyTorch) {
  // PyTorch's threshold_backward zeroes where y <= 0 only
  Tensor x = tensor({NAN, -1.0, 2.0}, kFloat64).requires_grad_();
  for (bool create_graph : {false, true}) {
    Tensor g = grad({sum(relu(x) * 3.0)}, {x}, {}, std::nullopt, create_graph)[0];
    EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{3.0, 0.0, 3.0})) << create_graph;
  }
}

TEST(MaxAll, ANaNMaximumSendsTheGradientToTheNaNsAsInPyTorch) {
  Tensor x = tensor({1.0, NAN, 3.0, NAN}, kFloat64).requires_grad_();
  for (bool create_graph : {false, true}) {
    Tensor g = grad({max(x) * 2.0}, {x}, {}, std::nullopt, create_graph)[0];
    EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{0.0, 1.0, 0.0, 1.0})) << create_graph;
  }
}

TEST(EnableGradGuard, RecordsInsideNoGrad) {
  Tensor x = tensor({1.0}, kFloat64).requires_grad_();
  NoGradGuard off;
  EXPECT_FALSE((x * 2.0).requires_grad());
  {
    EnableGradGuard on;
    EXPECT_TRUE(grad_enabled());
    EXPECT_TRUE((x * 2.0).requires_grad());
  }
  EXPECT_FALSE(grad_enabled());
}

// ---------------------------------------------------------------- memory

TEST(HigherOrderMemory, ABackwardWithoutCreateGraphRecordsNoNode) {
  Tensor x = leaf({3, 4});
  Tensor w = leaf({4, 2});
  Tensor y = sum(tanh(matmul(x, w)) * 2.0);
  const int64_t before = live_nodes();
  y.backward({}, /*retain_graph=*/true);
  EXPECT_EQ(live_nodes(), before);
  grad({y}, {x, w}, {}, true);
  EXPECT_EQ(live_nodes(), before);
  std::vector<Tensor> g = grad({y}, {x, w}, {}, true, /*create_graph=*/true);
  EXPECT_GT(live_nodes(), before);  // the recorded backward pass
  x.set_grad({});
  w.set_grad({});
}

// x requires grad, m = x * y (or x * 2) uses it, x.requires_grad_(false), then x.add_(m): x's new
// history leads to m's node, whose edge (and saved x) went to x as a leaf. PyTorch keeps both, a
// cycle it never frees. Its backward raises the version error when m's node saved x, and "leaf
// variable has been moved into the graph interior" when it did not. ag lets go of x there (a weak
// reference for the saved leaf, the edge marked) and raises the same two errors.
TEST(HigherOrderMemory, AFormerLeafGivenAHistoryInPlaceLeaksNothing) {
  const int64_t baseline = live_nodes();
  for (const bool saves_x : {true, false}) {
    Tensor x = tensor({0.5, -1.0}, kFloat64).requires_grad_();
    Tensor y = tensor({2.0, 3.0}, kFloat64).requires_grad_();
    Tensor m = saves_x ? x * y : x * 2.0;
    x.requires_grad_(false);
    x.add_(m);
    EXPECT_FALSE(x.is_leaf());
    EXPECT_EQ(x.to_vector<double>(), saves_x ? (std::vector<double>{1.5, -4.0}) : (std::vector<double>{1.5, -3.0}));
    const std::string expected = saves_x ? "modified by an inplace operation" : "leaf variable has been moved into the graph interior";
    try {
      sum(x).backward();
      ADD_FAILURE() << "expected an error";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(live_nodes(), baseline);
  {  // without the in-place op the leaf's gradient arrives as before
    Tensor x = tensor({0.5, -1.0}, kFloat64).requires_grad_();
    Tensor y = tensor({2.0, 3.0}, kFloat64).requires_grad_();
    Tensor g = grad({sum(x * y)}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];  // y, through saved y
    EXPECT_EQ(grad({sum(g * x)}, {y})[0].to_vector<double>(), (std::vector<double>{0.5, -1.0}));
  }
}

TEST(HigherOrderMemory, ACreateGraphBackwardsGraphIsFreedWithItsTensors) {
  const int64_t baseline = live_nodes();
  for (int i = 0; i < 1000; ++i) {
    Tensor x = tensor({0.5, -1.0, 2.0}, kFloat64).requires_grad_();
    Tensor y = sum(softmax(x * x, 0) * tanh(x));
    Tensor g = grad({y}, {x}, {}, std::nullopt, true)[0];
    Tensor h = grad({sum(g * g)}, {x}, {}, std::nullopt, true)[0];
    sum(h).backward({}, std::nullopt, true);  // into x.grad, with history
    x.set_grad({});
  }
  EXPECT_EQ(live_nodes(), baseline);
}

// ---------------------------------------------------------------- every op, second order

TEST(Gradgradcheck, FusedOpsAndOpsOutsideTheTable) {
  manual_seed(3);
  for (const ExtraCase& c : extra_cases()) {
    SCOPED_TRACE(c.name);
    GradcheckResult r = gradgradcheck_result(c.fn, make_inputs(c));
    EXPECT_TRUE(r.ok) << r.message;
  }
}

TEST(Gradgradcheck, GivenGradOutputsAndTheReport) {
  Tensor x = tensor({0.3, -0.7}, kFloat64).requires_grad_();
  EXPECT_TRUE(gradgradcheck([](auto& in) { return tanh(in[0]) * in[0]; }, {x}, {tensor({1.0, -2.0}, kFloat64)}));
  // a rule whose first derivative is right but whose recorded form is wrong: x^2 whose node gives
  // 2x in the fast path but 2x + x^2 when recorded
  auto bad = [](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Tensor y = x.detach() * x.detach();
    record(y, "BadSquareBackward", {x}, [s = SavedTensor(x)](const Tensor& g) -> Grads {
      const Tensor v = s.get();
      if (!needs_grad(g, v)) return {g * v.detach() * 2.0};
      return {g * v * 2.0 + g * v * v};
    });
    return y;
  };
  GradcheckResult r = gradgradcheck_result(bad, {x});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("[gradgradcheck] the gradient of input 0 (shape [2]), element 0"), std::string::npos) << r.message;
  EXPECT_THROW(gradgradcheck(bad, {x}), std::runtime_error);
  // a rule that is right to first order in both forms but whose recorded graph is wrong: its
  // second derivative is reported with the input, the element and both values
  auto bad2 = [](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Tensor y = x.detach() * x.detach() * x.detach();
    record(y, "BadCubeBackward", {x}, [s = SavedTensor(x)](const Tensor& g) -> Grads {
      const Tensor v = s.get();
      return {g * v.detach() * v * 3.0};  // d/dx of this is 3 g x, not 6 g x
    });
    return y;
  };
  GradcheckResult r2 = gradgradcheck_result(bad2, {x}, {tensor({1.0, 1.0}, kFloat64)});
  EXPECT_FALSE(r2.ok);
  EXPECT_NE(r2.message.find("[gradgradcheck] second derivative mismatch: element 0 of the gradient of input 0 (shape [2]) "
                            "with respect to input 0 (shape [2]), element 0: numerical 1.8"),
            std::string::npos)
      << r2.message;
  EXPECT_NE(r2.message.find("analytical 0.9"), std::string::npos) << r2.message;
  EXPECT_NE(r2.message.find("max error"), std::string::npos) << r2.message;
}

TEST(Gradgradcheck, LeavesTheInputsGradAlone) {
  // like PyTorch's, gradcheck and gradgradcheck differentiate with ag::grad: a .grad the caller
  // accumulated stays as it was
  Tensor x = tensor({0.5, -1.0}, kFloat64).requires_grad_();
  sum(x * x).backward();
  auto f = [](auto& in) { return tanh(in[0]) * in[0]; };
  EXPECT_TRUE(gradcheck(f, {x}));
  EXPECT_TRUE(gradgradcheck(f, {x}));
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1.0, -2.0}));
}

TEST(Gradgradcheck, Errors) {
  Tensor x32 = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  auto sq = [](auto& in) { return in[0] * in[0]; };
  EXPECT_THROW(gradgradcheck(sq, {x32}), std::invalid_argument);
  EXPECT_THROW(gradgradcheck(sq, {tensor({1.0}, kFloat64)}), std::invalid_argument);  // nothing requires grad
  try {
    gradgradcheck(sq, {x}, {ones({3}, kFloat64)});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "[gradgradcheck] expected one float64 grad_output of the output's shape [2], got 1 tensors (the first of "
                 "shape [3], torch.float64)");
  }
}

TEST(ThirdOrder, TanhSoftmaxAndLayerNorm) {
  // gradgradcheck of x -> d f / dx (recorded) checks f's third derivatives
  auto first_derivative = [](Fn f) {
    return [f](const std::vector<Tensor>& in) {
      EnableGradGuard on;
      Tensor y = f(in);
      Tensor w = tensor({0.3, -1.1, 0.7, 0.2}, kFloat64).narrow(0, 0, y.numel()).reshape(y.shape().vec());
      return grad({sum(y * w)}, {in[0]}, {}, std::nullopt, /*create_graph=*/true)[0];
    };
  };
  manual_seed(8);
  const std::vector<std::pair<std::string, Fn>> fs = {
      {"tanh", [](auto& in) { return tanh(in[0]); }},
      {"softmax", [](auto& in) { return softmax(in[0], -1); }},
      {"layer_norm", [](auto& in) { return layer_norm(in[0], {4}, in[1], in[2]); }},
      {"gelu", [](auto& in) { return gelu(in[0]); }},
  };
  for (const auto& [name, f] : fs) {
    SCOPED_TRACE(name);
    std::vector<Tensor> in{leaf({4})};
    if (name == "layer_norm") in = {leaf({1, 4}), leaf({4}), leaf({4})};
    GradcheckResult r = gradgradcheck_result(first_derivative(f), in);
    EXPECT_TRUE(r.ok) << r.message;
  }
  // and d3/dx3 tanh(x) = -2 (1 - t^2)(1 - 3 t^2) at one point, through three recorded passes
  Tensor x = tensor(0.4, kFloat64).requires_grad_();
  Tensor g1 = grad({tanh(x)}, {x}, {}, std::nullopt, true)[0];
  Tensor g2 = grad({g1}, {x}, {}, std::nullopt, true)[0];
  Tensor g3 = grad({g2}, {x})[0];
  const double t = std::tanh(0.4);
  EXPECT_NEAR(value(g3), -2 * (1 - t * t) * (1 - 3 * t * t), 1e-14);
}

// ---------------------------------------------------------------- fast kernels vs rules

// Each fast kernel stands in for its rule when nothing is recorded: gradients without create_graph
// (kernels) and with it (the rules in ag ops) agree; here for the ops outside the op table (the
// table's own: OpTable.FastKernelsEqualTheRulesTheyStandInFor).
TEST(FastKernels, EqualTheRulesTheyStandInFor) {
  manual_seed(4);
  for (const ExtraCase& c : extra_cases()) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> ins = make_inputs(c);
    std::vector<Tensor> fast = first_grads(c.fn, ins, false), rule = first_grads(c.fn, ins, true);
    for (std::size_t i = 0; i < ins.size(); ++i)
      if (fast[i].defined()) EXPECT_EQ(count_mismatches(rule[i], fast[i], 1e-12, 1e-12), 0) << "input " << i;
  }
}

// ---------------------------------------------------------------- fused vs composed

TEST(FusedOps, EqualTheirComposedDefinitionsToSecondOrder) {
  const Tensor above = triu(ones({4, 5}), 1).bool_();
  struct Pair {
    std::string name;
    Fn fused, composed;
    std::vector<DimVector> shapes;
  };
  const std::vector<Pair> pairs = {
      {"causal_softmax", [](auto& x) { return causal_softmax(x[0], 1.7); },
       [above](auto& x) { return softmax(masked_fill(x[0], above, -INFINITY) / 1.7, -1); }, {{2, 4, 5}}},
      {"causal_qk_softmax", [](auto& x) { return causal_qk_softmax(x[0], x[1], 1.3); },
       [above](auto& x) { return softmax(masked_fill(matmul(x[0], x[1].transpose(-2, -1)), above, -INFINITY) / 1.3, -1); },
       {{2, 4, 3}, {2, 5, 3}}},
      {"causal_matmul", [](auto& x) { return causal_matmul(x[0], x[1]); }, [](auto& x) { return matmul(tril(x[0]), x[1]); },
       {{2, 4, 5}, {2, 5, 3}}},
      {"causal_attention", [](auto& x) { return causal_attention(x[0], x[1], x[2], 1.3).out; },
       [above](auto& x) {
         return matmul(softmax(masked_fill(matmul(x[0], x[1].transpose(-2, -1)), above, -INFINITY) / 1.3, -1), x[2]);
       },
       {{2, 4, 3}, {2, 5, 3}, {2, 5, 2}}},
      {"causal_self_attention", [](auto& x) { return causal_self_attention(x[0], x[1], x[2], x[3], 2, 1.3); },
       [above](auto& x) {
         auto split = [](const Tensor& r) { return r.view({2, 4, 2, 2}).transpose(1, 2); };
         const Tensor q = split(linear(x[0], x[1])), k = split(linear(x[0], x[2])), v = split(linear(x[0], x[3]));
         const Tensor w = softmax(masked_fill(matmul(q, k.transpose(-2, -1)), triu(ones({4, 4}), 1).bool_(), -INFINITY) / 1.3, -1);
         return matmul(w, v).transpose(1, 2).reshape({2, 4, 4});
       },
       {{2, 4, 3}, {4, 3}, {4, 3}, {4, 3}}},
      {"cross_entropy", [](auto& x) { return cross_entropy(x[0], tensor({1, 0, 3})); },
       [](auto& x) { return nll_loss(log_softmax(x[0], -1), tensor({1, 0, 3})); }, {{3, 4}}},
      {"linear", [](auto& x) { return linear(x[0], x[1], x[2]); }, [](auto& x) { return matmul(x[0], x[1].t()) + x[2]; },
       {{3, 4}, {2, 4}, {2}}},
      {"layer_norm", [](auto& x) { return layer_norm(x[0], {4}, x[1], x[2]); },
       [](auto& x) {
         Tensor c = x[0] - mean(x[0], {-1}, true);
         return c / sqrt(mean(c * c, {-1}, true) + 1e-5) * x[1] + x[2];
       },
       {{3, 4}, {4}, {4}}},
  };
  manual_seed(12);
  for (const Pair& p : pairs) {
    SCOPED_TRACE(p.name);
    std::vector<Tensor> ins;
    for (const auto& s : p.shapes) ins.push_back(leaf(s));
    EXPECT_EQ(count_mismatches(p.fused(ins), p.composed(ins), 1e-12, 1e-12), 0) << "forward";
    // the Hessian-vector product of sum(f * w) with v, with respect to every input
    std::vector<Tensor> v;
    for (const Tensor& t : ins) v.push_back(leaf(t.shape().vec()).detach());
    auto hv = [&](const Fn& f) {
      std::vector<Tensor> g = first_grads(f, ins, true);
      Tensor dot = zeros({}, kFloat64);
      for (std::size_t i = 0; i < g.size(); ++i) dot = dot + sum(g[i] * v[i]);
      return grad({dot}, ins, {}, std::nullopt, false, true);
    };
    std::vector<Tensor> a = hv(p.fused), b = hv(p.composed);
    for (std::size_t i = 0; i < ins.size(); ++i) {
      ASSERT_EQ(a[i].defined(), b[i].defined()) << "input " << i;
      if (a[i].defined()) EXPECT_EQ(count_mismatches(a[i], b[i], 1e-10, 1e-10), 0) << "second order, input " << i;
    }
  }
}

// ---------------------------------------------------------------- functional

TEST(Functional, HessianJacobianAndProductsOfKnownFunctions) {
  using namespace ag::functional;
  Tensor x = tensor({1.0, -2.0, 0.5}, kFloat64);
  Fn cube = [](auto& in) { return sum(in[0] * in[0] * in[0]); };
  auto h = hessian(cube, {x});
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0][0].shape(), Size({3, 3}));
  EXPECT_EQ(h[0][0].to_vector<double>(), (std::vector<double>{6, 0, 0, 0, -12, 0, 0, 0, 3}));
  EXPECT_FALSE(h[0][0].requires_grad());
  EXPECT_FALSE(x.requires_grad());  // the caller's tensor is untouched
  auto [out, hv] = hvp(cube, {x}, {tensor({1.0, 1.0, 2.0}, kFloat64)});
  EXPECT_DOUBLE_EQ(value(out), 1 - 8 + 0.125);
  EXPECT_EQ(hv[0].to_vector<double>(), (std::vector<double>{6, -12, 6}));
  auto [out2, vh] = vhp(cube, {x}, {tensor({1.0, 1.0, 2.0}, kFloat64)});
  EXPECT_EQ(vh[0].to_vector<double>(), (std::vector<double>{6, -12, 6}));
  Tensor a = tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}, kFloat64), b = tensor({0.5, -1.0}, kFloat64);
  Fn mv = [](auto& in) { return matmul(in[0], in[1]); };
  auto j = jacobian(mv, {a, b});
  EXPECT_EQ(j[0].shape(), Size({3, 3, 2}));
  EXPECT_EQ(j[1].shape(), Size({3, 2}));
  EXPECT_EQ(j[1].to_vector<double>(), a.to_vector<double>());
  auto [y, jv] = jvp(mv, {a, b}, {zeros_like(a), tensor({1.0, 0.0}, kFloat64)});
  EXPECT_EQ(jv[0].to_vector<double>(), (std::vector<double>{1, 3, 5}));
  auto [y2, vj] = vjp(mv, {a, b}, tensor({1.0, 0.0, -1.0}, kFloat64));
  EXPECT_EQ(vj[1].to_vector<double>(), (std::vector<double>{-4, -4}));
  // an input the function does not use gets zeros
  auto h2 = hessian([](auto& in) { return sum(in[0] * in[0]); }, {x, b});
  EXPECT_EQ(h2[1][1].to_vector<double>(), (std::vector<double>(4, 0.0)));
  EXPECT_EQ(h2[0][1].shape(), Size({3, 2}));
  // create_graph keeps history: the hessian of a hessian-vector product's sum
  Tensor xr = x.detach().requires_grad_();
  auto [o3, hv3] = hvp(cube, {xr}, {ones_like(xr)}, /*create_graph=*/true);
  ASSERT_TRUE(hv3[0].requires_grad());
  EXPECT_EQ(grad({sum(hv3[0])}, {xr})[0].to_vector<double>(), (std::vector<double>{6, 6, 6}));
}

TEST(Functional, Errors) {
  using namespace ag::functional;
  Tensor x = tensor({1.0, 2.0}, kFloat64);
  Fn id2 = [](auto& in) { return in[0] * 2.0; };
  EXPECT_THROW(hessian(id2, {x}), std::invalid_argument);  // not a single-element output
  EXPECT_THROW(hvp([](auto& in) { return sum(in[0]); }, {x}, {}), std::invalid_argument);  // v needed
  EXPECT_THROW(vjp(id2, {x}), std::invalid_argument);  // v needed for a non-scalar output
  EXPECT_THROW(jvp(id2, {x}, {ones({3}, kFloat64)}), std::invalid_argument);
  EXPECT_THROW(jacobian(id2, {tensor({1, 2})}), std::invalid_argument);  // not floating point
  try {
    vhp([](auto& in) { return sum(in[0]); }, {x}, {ones({3}, kFloat64)});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[vhp] v[0] has shape [3] but input 0 has shape [2]");
  }
}

TEST(HigherOrderMemory, ZeroGradDetachesAGradientWithHistory) {
  // backward(create_graph) into parameters, then the optimizer's zero_grad (not set to none), as
  // a gradient-penalty training loop does: the recorded graph goes with the gradient's history
  const int64_t baseline = live_nodes();
  Tensor w = tensor({0.5, -0.25}, kFloat64).requires_grad_();
  optim::SGDOptions o;
  o.lr = 0.1;
  optim::SGD opt({w}, o);
  for (int i = 0; i < 10; ++i) {
    opt.zero_grad();
    sum(tanh(w) * w).backward({}, std::nullopt, /*create_graph=*/true);
    EXPECT_TRUE(w.grad().requires_grad());
    opt.step();
  }
  opt.zero_grad();
  EXPECT_FALSE(w.grad().requires_grad());
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(live_nodes(), baseline);
}
