// Activation checkpointing (ag::checkpoint, ag::checkpoint_sequential; autograd/saved.h): the
// gradients are those without checkpointing, bit for bit, in float32 and float64, with dropout,
// ag::grad, create_graph, nesting, tensor hooks and the tape; the forward keeps only the inputs;
// the errors are asserted.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/layers.h"
#include "golden_json.h"
#include "test_util.h"

using namespace ag;

namespace {

int64_t mismatches(const Tensor& a, const Tensor& b) {
  return a.dtype() == kFloat32 ? testutil::bit_mismatches<float>(a, b) : testutil::bit_mismatches<double>(a, b);
}
int64_t mismatches(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  int64_t bad = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) bad += mismatches(a[i], b[i]);
  return bad;
}

// A block with a dropout in it: linear, gelu, dropout, linear (its own weights, seeded).
struct Block {
  nn::Linear l1, l2;
  nn::Dropout drop{0.3};
  Block(int64_t d, DType dtype) : l1(d, 2 * d), l2(2 * d, d) {
    l1.to(dtype);
    l2.to(dtype);
  }
  Tensor forward(const Tensor& x) { return l2.forward(drop.forward(gelu(l1.forward(x)))); }
  std::vector<Tensor> params() {
    std::vector<Tensor> p = l1.parameters();
    for (const Tensor& t : l2.parameters()) p.push_back(t);
    return p;
  }
};

// The loss of two blocks in a row, the first (or both, nested) checkpointed, and its gradients
// with respect to the input and every parameter; the random state at the start is fixed.
std::vector<Tensor> block_grads(DType dtype, int mode /* 0 plain, 1 first block checkpointed, 2 nested */) {
  manual_seed(11);
  Block b1(6, dtype), b2(6, dtype);
  manual_seed(21);
  const Tensor x = randn({5, 6}, dtype).requires_grad_();
  manual_seed(22);
  Tensor h;
  if (mode == 0) h = b2.forward(b1.forward(x));
  if (mode == 1) h = b2.forward(checkpoint([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{b1.forward(in[0])}; }, {x})[0]);
  if (mode == 2) {
    h = checkpoint(
        [&](const std::vector<Tensor>& in) {
          const Tensor inner = checkpoint([&](const std::vector<Tensor>& i2) { return std::vector<Tensor>{b1.forward(i2[0])}; }, in)[0];
          return std::vector<Tensor>{b2.forward(inner)};
        },
        {x})[0];
  }
  const Tensor loss = (h * h).sum();
  std::vector<Tensor> wrt{x};
  for (const Tensor& p : b1.params()) wrt.push_back(p);
  for (const Tensor& p : b2.params()) wrt.push_back(p);
  std::vector<Tensor> g = grad({loss}, wrt);
  g.push_back(randn({3}, dtype));  // where the random stream is afterwards
  return g;
}

}  // namespace

TEST(Checkpointing, GradientsAreThoseWithoutItBitForBitWithDropout) {
  for (const DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::vector<Tensor> plain = block_grads(dtype, 0);
    EXPECT_EQ(mismatches(block_grads(dtype, 1), plain), 0) << "one checkpoint";
    EXPECT_EQ(mismatches(block_grads(dtype, 2), plain), 0) << "a checkpoint nested in another";
  }
}

TEST(Checkpointing, TheForwardKeepsOnlyTheInputs) {
  manual_seed(1);
  const Tensor x = randn({32, 32}).requires_grad_();
  std::weak_ptr<Storage> inside;
  const Tensor y = checkpoint(
      [&](const std::vector<Tensor>& in) {
        const Tensor a = in[0].sin();  // saved (twice) by the product below
        inside = a.impl()->storage;
        return std::vector<Tensor>{(a * a).exp()};
      },
      {x})[0];
  EXPECT_TRUE(inside.expired()) << "the activation inside the checkpoint was not kept";
  const Tensor dx = grad({y.sum()}, {x})[0];
  const Tensor a = x.detach().sin();
  EXPECT_EQ(testutil::close_mismatches<float>(dx, (a * a).exp() * 2.0 * a * x.detach().cos(), 1e-5, 1e-6), 0);
  // without checkpoint the product's node holds the activation
  std::weak_ptr<Storage> held;
  const Tensor a2 = x.sin();
  held = a2.impl()->storage;
  const Tensor y2 = (a2 * a2).exp();
  EXPECT_FALSE(held.expired());
  EXPECT_TRUE(y2.requires_grad());
}

TEST(Checkpointing, SecondDerivativesGoThroughACheckpoint) {
  manual_seed(2);
  const Tensor w = randn({4, 3}, kFloat64).requires_grad_();
  const Tensor x = randn({5, 4}, kFloat64).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], in[1]).tanh().pow(2.0)}; };
  auto penalty = [&](bool ckpt) {
    const Tensor y = ckpt ? checkpoint(f, {x, w})[0] : f({x, w})[0];
    const std::vector<Tensor> g = grad({y.sum()}, {x, w}, {}, std::nullopt, /*create_graph=*/true);
    return grad({(g[0] * g[0]).sum() + (g[1] * g[1]).sum()}, {x, w});  // a gradient penalty's gradient
  };
  EXPECT_EQ(mismatches(penalty(true), penalty(false)), 0);
  // and the checkpointed function passes gradgradcheck
  EXPECT_TRUE(gradgradcheck([&](const std::vector<Tensor>& in) { return checkpoint(f, in)[0]; }, {x.detach().requires_grad_(), w.detach().requires_grad_()}));
}

TEST(Checkpointing, WorksWithRetainGraphTensorHooksAndTheTape) {
  manual_seed(3);
  const Tensor x = randn({4, 4}, kFloat64).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].exp().sin()}; };
  int hooked = 0;
  const Tensor y = checkpoint(f, {x})[0];
  y.register_hook([&hooked](const Tensor& g) {
    ++hooked;
    return g * 2.0;
  });
  const Tensor loss = y.sum();
  const BackwardTape tape = record_backward(loss);  // runs backward with the graph retained
  EXPECT_GT(tape.steps.size(), 0u);
  loss.backward({}, /*retain_graph=*/true);
  loss.backward();
  EXPECT_EQ(hooked, 3);
  const Tensor expected = 2.0 * (x.detach().exp().cos() * x.detach().exp()) * 2.0;  // two backward passes, each doubled
  EXPECT_EQ(testutil::close_mismatches<double>(x.grad(), expected, 1e-15, 1e-15), 0);
}

TEST(Checkpointing, WithoutPreservingTheRandomStateTheRecomputeDrawsAfresh) {
  manual_seed(4);
  const Tensor x = ones({200}, kFloat64).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{dropout(in[0] * 1.0, 0.5, true).exp()}; };
  manual_seed(5);
  const Tensor kept = grad({checkpoint(f, {x}, true)[0].sum()}, {x})[0];
  manual_seed(5);
  const Tensor plain = grad({f({x})[0].sum()}, {x})[0];
  EXPECT_EQ(testutil::bit_mismatches<double>(kept, plain), 0);
  manual_seed(5);
  const Tensor y = checkpoint(f, {x}, false)[0];
  const Tensor fresh = grad({y.sum()}, {x})[0];  // the recompute's masks come from the stream after the forward
  EXPECT_GT(sum(ne(fresh, plain)).item(), 0.0);
}

TEST(Checkpointing, CheckpointSequentialEqualsTheSequential) {
  for (const int64_t segments : {1, 2, 3, 5}) {
    SCOPED_TRACE("segments " + std::to_string(segments));
    manual_seed(6);
    nn::Sequential model{nn::Linear(4, 8), nn::Tanh(), nn::Linear(8, 8), nn::Dropout(0.2), nn::Linear(8, 3)};
    model.to(kFloat64);
    const Tensor x = randn({6, 4}, kFloat64).requires_grad_();
    std::vector<Tensor> wrt = model.parameters();
    wrt.push_back(x);
    manual_seed(7);
    const std::vector<Tensor> plain = grad({model.forward(x).pow(2.0).sum()}, wrt);
    manual_seed(7);
    const std::vector<Tensor> ckpt = grad({checkpoint_sequential(model, segments, x).pow(2.0).sum()}, wrt);
    EXPECT_EQ(mismatches(ckpt, plain), 0);
  }
  nn::Sequential two{nn::Linear(2, 2), nn::Tanh()};
  const std::string e = testutil::error_of([&] { checkpoint_sequential(two, 3, ones({1, 2})); });
  EXPECT_NE(e.find("segments"), std::string::npos) << e;
}

TEST(Checkpointing, OutputsThatDoNotRequireGradAreAnError) {
  const Tensor x = ones({3});
  const std::string e = testutil::error_of([&] { checkpoint([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0}; }, {x}); });
  EXPECT_NE(e.find("[checkpoint]"), std::string::npos) << e;
  EXPECT_NE(e.find("requires grad"), std::string::npos) << e;
  NoGradGuard no_grad;  // without grad mode it simply runs
  EXPECT_EQ(checkpoint([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0}; }, {x})[0].sum().item(), 6.0);
}

TEST(Checkpointing, AnInputChangedInPlaceBeforeBackwardIsAnError) {
  const Tensor w = tensor({1.0, 2.0, 3.0}).requires_grad_();
  // the input is not saved itself (exp saves its output): the recompute would read the new value
  Tensor a = w * 1.0;
  const Tensor y = checkpoint([](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] * 2.0).exp()}; }, {a})[0];
  {
    NoGradGuard no_grad;
    a.add_(1.0);
  }
  const std::string e = testutil::error_of([&] { y.sum().backward(); });
  EXPECT_NE(e.find("[checkpoint] input 0 of the checkpointed function (shape [3])"), std::string::npos) << e;
  EXPECT_NE(e.find("modified by an inplace operation"), std::string::npos) << e;
  // the input saved as it is (sin saves it): the saved tensor's own version check says so first
  Tensor b = w * 1.0;
  const Tensor z = checkpoint([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].sin()}; }, {b})[0];
  {
    NoGradGuard no_grad;
    b.add_(1.0);
  }
  const std::string e2 = testutil::error_of([&] { z.sum().backward(); });
  EXPECT_NE(e2.find("modified by an inplace operation"), std::string::npos) << e2;
}

// Gradients through a checkpoint against PyTorch 1.13's torch.utils.checkpoint (use_reentrant=False)
// on a float64 MLP and a causal attention block (tools/golden/make_saved_hooks_golden.py), from the
// same inputs.
TEST(Checkpointing, GradientsMatchPyTorchsCheckpointOnAnMlpAndAnAttentionBlock) {
  const nlohmann::json& gold = testutil::golden_json("saved_hooks.json");
  auto tensors = [](const nlohmann::json& list) {
    std::vector<Tensor> out;
    for (const auto& t : list) out.push_back(from_vector(t[1].get<std::vector<double>>(), t[0].get<std::vector<int64_t>>(), kFloat64));
    return out;
  };
  auto check = [&](const char* which, const std::vector<Tensor>& wrt, const Tensor& loss) {
    SCOPED_TRACE(which);
    EXPECT_NEAR(loss.item(), gold[which]["loss"].get<double>(), 1e-12 * (1 + std::abs(loss.item())));
    const std::vector<Tensor> g = grad({loss}, wrt);
    const std::vector<Tensor> torch = tensors(gold[which]["grads"]);
    ASSERT_EQ(g.size(), torch.size());
    for (std::size_t i = 0; i < g.size(); ++i) EXPECT_EQ(testutil::close_mismatches<double>(g[i], torch[i], 1e-12, 1e-12), 0) << "gradient " << i;
  };
  {
    std::vector<Tensor> in = tensors(gold["mlp"]["inputs"]);
    for (Tensor& t : in) t.requires_grad_();
    const Tensor &w1 = in[0], &w2 = in[1], &w3 = in[2], &x = in[3];
    const Tensor h = checkpoint([&](const std::vector<Tensor>& a) { return std::vector<Tensor>{tanh(matmul(tanh(matmul(a[0], w1)), w2))}; }, {x})[0];
    check("mlp", in, matmul(h, w3).pow(2.0).sum());
  }
  {
    std::vector<Tensor> in = tensors(gold["attention"]["inputs"]);
    const Tensor c = in.back();
    in.pop_back();
    for (Tensor& t : in) t.requires_grad_();
    const Tensor &wq = in[0], &wk = in[1], &wv = in[2], &x = in[3];
    const Tensor mask = triu(ones({6, 6}), 1).to(kBool);
    const Tensor out = checkpoint(
        [&](const std::vector<Tensor>& a) {
          const Tensor q = matmul(a[0], wq), k = matmul(a[0], wk), v = matmul(a[0], wv);
          return std::vector<Tensor>{matmul(softmax(masked_fill(matmul(q, k.t()) / 2.0, mask, -INFINITY), -1), v)};
        },
        {x})[0];
    check("attention", in, (out * c).sum());
  }
}
