// The engine: accumulation, retain_graph, freed graphs, no-grad, deep graphs, in-place safety.
#include <gtest/gtest.h>

#include "autograd/autograd.h"

using namespace ag;

TEST(Backward, LeafGradAccumulatesWithPlusEqualsAcrossCalls) {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  sum(x * x).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 4, 6}));
  sum(x * 3.0).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{5, 7, 9}));
}

TEST(Backward, NodeUsedOnTwoPathsGetsTheSumOfBothGradients) {
  Tensor x = tensor({2.0}, kFloat64).requires_grad_();
  Tensor y = x * 3.0;            // used twice below
  Tensor z = y * y + exp(y);     // dz/dx = (2y + e^y) * 3
  z.sum().backward();
  EXPECT_NEAR(x.grad().item(), (2 * 6.0 + std::exp(6.0)) * 3, 1e-9);
}

TEST(Backward, ExplicitGradientForNonScalarOutput) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = x * x;
  y.backward(tensor({10.0, 100.0}, kFloat64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{20, 400}));
}

TEST(Backward, NonScalarWithoutGradientIsAClearError) {
  Tensor x = ones({2, 2}).requires_grad_();
  try {
    (x * 2.0).backward();
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("only for scalar outputs; got shape [2, 2]"), std::string::npos) << e.what();
  }
}

TEST(Backward, GradientOfWrongShapeIsRejected) {
  Tensor x = ones({2, 2}).requires_grad_();
  EXPECT_THROW((x * 2.0).backward(ones({3})), std::invalid_argument);
}

TEST(Backward, TensorWithoutHistoryCannotBackward) {
  Tensor x = ones({2});
  EXPECT_THROW(sum(x).backward(), std::runtime_error);
}

TEST(Backward, SecondBackwardThroughFreedGraphThrows) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor loss = sum(exp(x));
  loss.backward();
  try {
    loss.backward();
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("backward through the graph a second time"), std::string::npos) << e.what();
  }
}

TEST(Backward, RetainGraphAllowsASecondBackward) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor loss = sum(exp(x));
  loss.backward({}, /*retain_graph=*/true);
  loss.backward();
  EXPECT_NEAR(x.grad().to_vector<double>()[1], 2 * std::exp(2.0), 1e-12);
}

TEST(Backward, GraphIsReleasedAfterBackward) {
  const int64_t before = live_nodes();
  {
    Tensor x = ones({3, 3}, kFloat64).requires_grad_();
    Tensor loss = sum(softmax(matmul(x, x), -1) * 2.0);
    EXPECT_GT(live_nodes(), before);
    loss.backward();
    // SumBackward0 and MulBackward0 (by a number) saved no tensor: they keep their edges, so a
    // second backward may run them, as in PyTorch. SoftmaxBackward0 saved its output: it is
    // released and drops its edges, so the matmul's node below it is freed.
    EXPECT_LE(live_nodes(), before + 3);
  }
  EXPECT_EQ(live_nodes(), before);
}

TEST(Backward, GraphWithoutBackwardIsFreedWithItsTensors) {
  const int64_t before = live_nodes();
  {
    Tensor x = ones({4}).requires_grad_();
    Tensor y = tanh(x * 2.0 + 1.0);
    EXPECT_EQ(live_nodes(), before + 3);
  }
  EXPECT_EQ(live_nodes(), before);
}

TEST(Backward, HundredThousandOpChainDoesNotOverflowTheStack) {
  Tensor x = tensor({1.0}, kFloat64).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  y.sum().backward();
  EXPECT_EQ(x.grad().item(), 1.0);
  y = Tensor();  // releasing the chain is iterative too (edges were cleared by backward)
}

TEST(Backward, UnreleasedDeepChainIsDestroyedWithoutRecursionOverflow) {
  const int64_t before = live_nodes();
  {
    Tensor x = tensor({1.0}, kFloat64).requires_grad_();
    Tensor y = x;
    for (int i = 0; i < 100000; ++i) y = y + 1.0;
  }
  EXPECT_EQ(live_nodes(), before);
}

TEST(NoGrad, GuardStopsRecordingAndRestoresOnExit) {
  Tensor x = ones({2}).requires_grad_();
  {
    NoGradGuard g;
    Tensor y = x * 2.0;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
  }
  EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(Detach, SharesStorageButHasNoHistory) {
  Tensor x = ones({2}).requires_grad_();
  Tensor y = (x * 2.0).detach();
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(y.is_leaf());
  Tensor z = x.detach();
  EXPECT_TRUE(z.shares_storage(x));
}

TEST(GradFn, NamesFollowPyTorch) {
  Tensor a = ones({2, 3}).requires_grad_();
  Tensor b = ones({3, 4}).requires_grad_();
  Tensor v = ones({3}).requires_grad_();
  EXPECT_EQ(matmul(a, b).grad_fn()->name(), "MmBackward0");
  EXPECT_EQ(matmul(v, b).grad_fn()->name(), "SqueezeBackward4");
  EXPECT_EQ(matmul(a, v).grad_fn()->name(), "MvBackward0");
  EXPECT_EQ(matmul(v, v).grad_fn()->name(), "DotBackward0");
  EXPECT_EQ((a + a).grad_fn()->name(), "AddBackward0");
  EXPECT_EQ((1.0 - a).grad_fn()->name(), "RsubBackward1");
  EXPECT_EQ(sum(a).grad_fn()->name(), "SumBackward0");
  EXPECT_EQ(sum(a, {0}).grad_fn()->name(), "SumBackward1");
  EXPECT_EQ(softmax(a, -1).grad_fn()->name(), "SoftmaxBackward0");
  EXPECT_EQ(masked_fill(a, gt(a, 0.0), 0.0).grad_fn()->name(), "MaskedFillBackward0");
  EXPECT_EQ(cat({a, a}, 0).grad_fn()->name(), "CatBackward0");
  EXPECT_EQ(stack({a, a}, 0).grad_fn()->name(), "StackBackward0");
  EXPECT_EQ(cross_entropy(a, tensor({0, 1})).grad_fn()->name(), "NllLossBackward0");
  EXPECT_EQ(layer_norm(a, {3}).grad_fn()->name(), "NativeLayerNormBackward0");
  EXPECT_EQ(a.view({3, 2}).grad_fn()->name(), "ViewBackward0");
  EXPECT_EQ(a.transpose(0, 1).grad_fn()->name(), "TransposeBackward0");
  EXPECT_EQ(a.T().grad_fn()->name(), "PermuteBackward0");
  EXPECT_EQ(a.unsqueeze(0).grad_fn()->name(), "UnsqueezeBackward0");
  EXPECT_EQ(a[0].grad_fn()->name(), "SelectBackward0");
  EXPECT_EQ(a.slice(1, 1, std::nullopt).grad_fn()->name(), "SliceBackward0");
  EXPECT_EQ(embedding(b, tensor({0})).grad_fn()->name(), "EmbeddingBackward0");
}

// ---- in-place safety ----

TEST(InPlace, ModifyingASavedTensorMakesBackwardThrowNotLie) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = x * 2.0;
  Tensor z = exp(y);  // exp saves its output z
  {
    NoGradGuard g;
    z.mul_(3.0);
  }
  try {
    sum(z).backward();
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos) << e.what();
  }
}

TEST(InPlace, OptimizerStyleUpdateOfAWeightBeforeBackwardIsCaught) {
  Tensor w = ones({2, 2}, kFloat64).requires_grad_();
  Tensor x = ones({2, 2}, kFloat64);
  Tensor loss = sum(matmul(x, w) * matmul(x, w));  // (x@w)*(x@w) saves x@w; mm saves x
  Tensor loss2 = sum(matmul(w, w));                // mm saves w
  {
    NoGradGuard g;
    w.add_(ones({2, 2}, kFloat64), -0.1);
  }
  EXPECT_NO_THROW(loss.backward());  // saved values are x and x@w, both untouched
  EXPECT_THROW(loss2.backward(), std::runtime_error);
}

TEST(InPlace, LeafRequiringGradCannotBeModifiedOutsideNoGrad) {
  Tensor w = ones({2}).requires_grad_();
  EXPECT_THROW(w.add_(1.0), std::runtime_error);
  EXPECT_THROW(w.zero_(), std::runtime_error);
  {
    NoGradGuard g;
    EXPECT_NO_THROW(w.mul_(2.0));
  }
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(InPlace, MaskedFillInPlaceOnNonLeafIsDifferentiable) {
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}}, kFloat64).requires_grad_();
  Tensor s = x * 2.0;
  Tensor mask = tensor({{0, 1}, {0, 0}}, kBool);
  s.masked_fill_(mask, -INFINITY);
  EXPECT_EQ(s.grad_fn()->name(), "MaskedFillBackward0");
  sum(softmax(s, -1) * tensor({{1.0, 0.0}, {0.0, 1.0}}, kFloat64)).backward();
  // row 0: softmax([2, -inf]) = [1, 0] has zero gradient; the filled entry gets none
  const auto g = x.grad().to_vector<double>();
  EXPECT_EQ(g[0], 0.0);
  EXPECT_EQ(g[1], 0.0);
  const double p = 1 / (1 + std::exp(2.0));  // softmax([6, 8])[0]
  EXPECT_NEAR(g[3], 2 * p * (1 - p), 1e-12);
  EXPECT_NEAR(g[2], -2 * p * (1 - p), 1e-12);
}

TEST(InPlace, AViewOfAModifiedBaseFollowsTheBaseAsInPyTorch) {
  // PyTorch regenerates the view's grad_fn (AsStridedBackward0) from the base's new history
  Tensor x = ones({2, 3}, kFloat64).requires_grad_();
  Tensor s = x * 2.0;
  Tensor v = s.transpose(0, 1);
  s.masked_fill_(tensor({1, 0, 0}, kBool), 0.0);
  sum(v * tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}, kFloat64)).backward();
  EXPECT_EQ(v.grad_fn()->name(), "AsStridedBackward0");
  // d/dx of 2 x except where the mask filled column 0: weights 1 3 5 / 2 4 6, transposed back
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0.0, 6.0, 10.0, 0.0, 8.0, 12.0}));
}

TEST(InPlace, MaskedFillOnAViewThatRequiresGradRecordsCopySlices) {
  Tensor x = ones({2, 3}, kFloat64).requires_grad_();
  Tensor y = x * 2.0;
  Tensor v = y.transpose(0, 1);
  v.masked_fill_(tensor({1, 0}, kBool), 0.0);  // v's column 0 is y's row 0
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(v.grad_fn()->name(), "AsStridedBackward0");
  sum(v).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 0, 2, 2, 2}));
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 0, 0, 2, 2, 2}));
}

TEST(InPlace, ZeroAndFillBumpTheVersionUnderNoGrad) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = exp(x);
  Tensor keep = y;  // exp saved y
  {
    NoGradGuard g;
    keep.zero_();
  }
  EXPECT_THROW(sum(y).backward(), std::runtime_error);
}

TEST(Graph, DotOfASmallGraphNamesOpsShapesAndParameters) {
  Tensor w = ones({3, 2}).requires_grad_();
  Tensor b = zeros({2}).requires_grad_();
  Tensor x = ones({4, 3});
  Tensor loss = sum(tanh(matmul(x, w) + b));
  const std::string dot = to_dot(loss, {{"w", w}, {"b", b}});
  EXPECT_EQ(dot,
            "digraph autograd {\n"
            "  rankdir=BT;\n"
            "  node [fontname=\"Helvetica\", fontsize=10];\n"
            "  n0 [label=\"SumBackward0\\n[]\", shape=box, style=filled, fillcolor=\"#dbe8fb\"];\n"
            "  n1 [label=\"TanhBackward0\\n[4, 2]\", shape=box];\n"
            "  n2 [label=\"AddBackward0\\n[4, 2]\", shape=box];\n"
            "  n3 [label=\"MmBackward0\\n[4, 2]\", shape=box];\n"
            "  n4 [label=\"b\\n[2]\", shape=ellipse, style=filled, fillcolor=\"#e4f5dc\"];\n"
            "  n5 [label=\"w\\n[3, 2]\", shape=ellipse, style=filled, fillcolor=\"#e4f5dc\"];\n"
            "  n1 -> n0;\n"
            "  n2 -> n1;\n"
            "  n3 -> n2;\n"
            "  n4 -> n2;\n"
            "  n5 -> n3;\n"
            "}\n");
  loss.backward();
  EXPECT_THROW(to_dot(loss), std::runtime_error);  // freed by backward
  EXPECT_THROW(to_dot(w), std::invalid_argument);  // a leaf has no graph
}
