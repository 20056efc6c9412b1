// Looking inside the engine (issue 12): next_functions walks of the seed tutorials' graphs,
// gradient hooks, retain_grad and anomaly mode, against PyTorch 1.13
// (tests/golden/hooks.json, made by tools/golden/make_hooks_golden.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ag/ag.h"

using namespace ag;

namespace {

const nlohmann::json& golden() {
  static const nlohmann::json j = [] {
    std::ifstream f(std::string(AG_GOLDEN_DIR) + "/hooks.json");
    if (!f) throw std::runtime_error("cannot open tests/golden/hooks.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
std::vector<double> expected(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

// grad_fn.next_functions printed recursively, one line per node, as the golden script does.
void walk(const std::shared_ptr<Node>& fn, int depth, int64_t idx, std::vector<std::string>& out) {
  std::string line(static_cast<std::size_t>(2 * depth), ' ');
  line += fn ? fn->name() : "None";
  if (idx >= 0) line += " [" + std::to_string(idx) + "]";
  out.push_back(line);
  if (!fn) return;
  for (const auto& [next, i] : fn->next_functions()) walk(next, depth + 1, i, out);
}

std::vector<std::string> walk(const Tensor& t) {
  std::vector<std::string> out;
  walk(t.grad_fn(), 0, -1, out);
  return out;
}

Tensor seed_inputs() {
  return tensor({{0.43, 0.15, 0.89}, {0.55, 0.87, 0.66}, {0.57, 0.85, 0.64},
                 {0.22, 0.58, 0.33}, {0.77, 0.25, 0.10}, {0.05, 0.80, 0.55}});
}

void expect_walk(const std::string& key, const Tensor& out) {
  const auto want = golden()["walks"][key].get<std::vector<std::string>>();
  const auto got = walk(out);
  std::string w, g;
  for (const auto& l : want) w += l + "\n";
  for (const auto& l : got) g += l + "\n";
  EXPECT_EQ(g, w) << key;
}

}  // namespace

TEST(NextFunctions, SeedGraphsWalkAsInPyTorch) {
  using namespace ag::nn;
  Tensor x = seed_inputs();
  manual_seed(123);
  expect_walk("seed000_SelfAttention", SelfAttention(3, 2, 4).forward(x));
  Tensor enc = tensor({{1.16, 0.23}, {0.57, 1.36}, {4.41, -2.16}});
  Tensor mask = eq(tril(ones({3, 3})), zeros({3, 3}));
  expect_walk("seed001_SelfAttention_masked", LinearSelfAttention().forward(enc, mask));
  expect_walk("seed003_SelfAttentionV2", SelfAttentionV2(3, 2).forward(x));
  // seed 003's batched causal modules, with the composed ops PyTorch records
  Tensor batch = stack({x, x}, 0);
  CausalAttention ca(3, 2, 6, 0.0);
  MultiHeadAttention mha(3, 2, 6, 0.0, 2);
  set_fused_attention(false);
  Tensor ca_out = ca.forward(batch), mha_out = mha.forward(batch);
  set_fused_attention(true);
  expect_walk("seed003_CausalAttention", ca_out);
  expect_walk("seed003_MultiHeadAttention", mha_out);
  // fused (the default), the masked softmax and the two products are one fused node of ag's:
  // forward, which returns no weights, records one node from the input and the three projections'
  // weights to the context (causal_self_attention); forward_with_weights the projections, and the
  // node whose weights are an output
  std::string fused;
  for (const auto& l : walk(mha.forward(batch))) fused += l + "\n";
  EXPECT_EQ(fused.find("Softmax"), std::string::npos) << fused;
  EXPECT_NE(fused.find("      CausalSelfAttentionBackward0 [0]\n        None [0]\n        AccumulateGrad [0]\n"
                       "        AccumulateGrad [0]\n        AccumulateGrad [0]\n"),
            std::string::npos)
      << fused;
  std::string with_weights;
  for (const auto& l : walk(mha.forward_with_weights(batch).first)) with_weights += l + "\n";
  EXPECT_NE(with_weights.find("          UnsafeViewBackward0 [0]\n            TransposeBackward0 [0]\n"), std::string::npos)
      << with_weights;
  // with a bias on the projections, the attention alone is fused (its three inputs the heads)
  MultiHeadAttention biased(3, 2, 6, 0.0, 2, true);
  std::string heads;
  for (const auto& l : walk(biased.forward(batch))) heads += l + "\n";
  const std::string attention = "          ScaledDotProductFlashAttentionForCpuBackward0 [0]\n",
                    projection = "            TransposeBackward0 [0]\n";
  EXPECT_NE(heads.find(attention + projection), std::string::npos) << heads;
  int64_t projections = 0;
  for (std::size_t at = heads.find(projection); at != std::string::npos; at = heads.find(projection, at + 1)) ++projections;
  EXPECT_EQ(projections, 3) << heads;
}

TEST(NextFunctions, LeavesAreAccumulateGradNodesThatStayTheSameWhileHeld) {
  Tensor a = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = a * 2;
  auto nf = y.grad_fn()->next_functions();
  ASSERT_EQ(nf.size(), 2u);
  EXPECT_EQ(nf[0].first->name(), "AccumulateGrad");
  EXPECT_EQ(nf[0].first->variable().impl(), a.impl());
  EXPECT_EQ(nf[1].first, nullptr);  // the scalar operand: no gradient, (None, 0) in PyTorch
  EXPECT_EQ((a * 3).grad_fn()->next_functions()[0].first, nf[0].first);
  EXPECT_FALSE(y.grad_fn()->variable().defined());
  // a multi-output node: the edge says which output the input was
  Tensor s = sum(y);
  EXPECT_EQ(s.grad_fn()->next_functions()[0].first, y.grad_fn());
}

TEST(Hooks, RunInRegistrationOrderAndReplaceTheGradient) {
  const auto& j = golden()["hooks"]["order"];
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = x * 2;
  std::vector<std::string> calls;
  auto note = [&](const char* tag, const Tensor& g) {
    std::string s = std::string(tag) + " [";
    auto v = vals(g);
    char buf[32];
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%g", v[i]);
      s += (i ? ", " : "") + std::string(buf);
    }
    calls.push_back(s + "]");
  };
  y.register_hook([&](const Tensor& g) { note("a", g); return g * 10; });
  y.retain_grad();
  y.register_hook([&](const Tensor& g) { note("b", g); return Tensor(); });
  y.register_hook([&](const Tensor& g) { note("c", g); return g + 1; });
  sum(y * tensor({3.0, 4.0}, kFloat64)).backward();
  EXPECT_EQ(calls, j["calls"].get<std::vector<std::string>>());
  EXPECT_EQ(vals(y.grad()), expected(j["y_grad"]));
  EXPECT_EQ(vals(x.grad()), expected(j["x_grad"]));
  EXPECT_TRUE(y.retains_grad());
  EXPECT_FALSE(x.retains_grad());
}

TEST(Hooks, RemovedHookDoesNotRunAndIdsArePositions) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = x * 2;
  const unsigned h0 = y.register_hook([](const Tensor& g) { return g * 10; });
  const unsigned h1 = y.register_hook([](const Tensor& g) { return g * 3; });
  EXPECT_EQ(h0, 0u);
  EXPECT_EQ(h1, 1u);
  y.remove_hook(h0);
  EXPECT_THROW(y.remove_hook(h0), std::invalid_argument);
  EXPECT_THROW(y.remove_hook(7), std::invalid_argument);
  sum(y).backward();
  EXPECT_EQ(vals(x.grad()), expected(golden()["hooks"]["removed"]["x_grad"]));
  y.remove_hook(h1);  // after backward freed the graph (and its hooks): nothing to do, as PyTorch
}

TEST(Hooks, LeafHookSeesTheSummedGradientOnceBeforeAccumulation) {
  const auto& j = golden()["hooks"]["leaf"];
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  std::vector<std::vector<double>> calls;
  x.register_hook([&](const Tensor& g) {
    calls.push_back(vals(g));
    return g * 3;
  });
  sum(x * x + x).backward();
  EXPECT_EQ(vals(x.grad()), expected(j["grad_after_first"]));
  sum(x * 5).backward();
  EXPECT_EQ(vals(x.grad()), expected(j["grad_after_second"]));
  EXPECT_EQ(calls, j["calls"].get<std::vector<std::vector<double>>>());
}

// PyTorch 2's register_post_accumulate_grad_hook: once per backward, after the gradient hooks and
// after .grad holds the sum; never for ag::grad; leaves only.
TEST(Hooks, PostAccumulateGradHookSeesTheAccumulatedGradOnce) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  std::vector<std::vector<double>> seen;
  x.register_hook([](const Tensor& g) { return g * 10; });
  x.register_post_accumulate_grad_hook([&](const Tensor& leaf) { seen.push_back(vals(leaf.grad())); });
  (x * 2 + x * 3).sum().backward();  // two paths, one call
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<double>{50, 50}));
  (x * x).sum().backward();  // accumulates: 50 + 10 * 2x
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], (std::vector<double>{70, 90}));
  ag::grad({(x * x).sum()}, {x});
  EXPECT_EQ(seen.size(), 2u);
  Tensor y = x * 2;
  EXPECT_THROW(y.register_post_accumulate_grad_hook([](const Tensor&) {}), std::runtime_error);
  EXPECT_THROW(tensor({1.0}).register_post_accumulate_grad_hook([](const Tensor&) {}), std::runtime_error);
}

// detail::queue_callback (PyTorch's queue_callback): runs once when the backward pass that queued
// it has finished, after every leaf's .grad is final.
TEST(Hooks, QueuedCallbackRunsAfterTheWholeBackward) {
  Tensor a = tensor({3.0}).requires_grad_(), b = tensor({4.0}).requires_grad_();
  std::vector<double> at_end;
  int queued = 0;
  a.register_hook([&](const Tensor& g) {
    if (queued++ == 0) detail::queue_callback([&] { at_end = {a.grad().item(), b.grad().item()}; });
    return Tensor();
  });
  (a * b + b * b).sum().backward();
  EXPECT_EQ(at_end, (std::vector<double>{4, 11}));
  EXPECT_THROW(detail::queue_callback([] {}), std::logic_error);
}

TEST(Hooks, OnlyOnTensorsThatRequireGradAndOnlyDefinedShapes) {
  Tensor c = zeros({2});
  EXPECT_THROW(c.register_hook([](const Tensor& g) { return g; }), std::runtime_error);
  EXPECT_THROW(c.retain_grad(), std::runtime_error);
  Tensor u;
  EXPECT_THROW(u.register_hook([](const Tensor& g) { return g; }), std::logic_error);
  Tensor x = ones({2}).requires_grad_();
  x.register_hook([](const Tensor&) { return ones({3}); });
  try {
    sum(x * 2).backward();
    FAIL() << "a hook returning the wrong shape must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("shape [3]"), std::string::npos) << e.what();
  }
}

TEST(RetainGrad, ViewsReusedTensorsAndRepeatedBackward) {
  const auto& j = golden()["hooks"]["retain"];
  Tensor a = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor c = a * 1.5;
  Tensor v = c[1];
  v.retain_grad();
  Tensor b = a * 3;
  b.retain_grad();
  b.retain_grad();  // twice is once
  Tensor loss = v * v + sum(b * b + b);
  EXPECT_FALSE(c.grad().defined());
  loss.backward(Tensor(), true);
  EXPECT_EQ(vals(v.grad()), expected(j["once"]["v"]));
  EXPECT_EQ(vals(b.grad()), expected(j["once"]["b"]));
  EXPECT_FALSE(c.grad().defined());  // not retained
  loss.backward();
  EXPECT_EQ(vals(v.grad()), expected(j["twice"]["v"]));
  EXPECT_EQ(vals(b.grad()), expected(j["twice"]["b"]));
  EXPECT_EQ(vals(a.grad()), expected(j["a"]));
}

TEST(RetainGrad, FollowsTheTensorThroughInPlaceOps) {
  const auto& j = golden()["hooks"]["retain_inplace"];
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor a = x * 2;
  a.retain_grad();
  a.mul_(3.0);
  Tensor b = x * 2;
  b.retain_grad();
  b.masked_fill_(tensor({true, false}), 5.0);
  sum(a * a + b * b).backward();
  EXPECT_EQ(vals(a.grad()), expected(j["a"]));
  EXPECT_EQ(vals(b.grad()), expected(j["b"]));
  EXPECT_EQ(vals(x.grad()), expected(j["x"]));
}

TEST(Hooks, UnderCreateGraphTheReplacementIsDifferentiated) {
  const auto& j = golden()["hooks"]["create_graph"];
  Tensor x = tensor({0.5, -1.5}, kFloat64).requires_grad_();
  Tensor y = pow(x, 3.0);
  y.register_hook([y](const Tensor& g) { return g * y; });
  Tensor gx = grad({sum(y)}, {x}, {}, std::nullopt, true)[0];
  Tensor ggx = grad({sum(gx)}, {x})[0];
  EXPECT_EQ(vals(gx), expected(j["gx"]));
  EXPECT_EQ(vals(ggx), expected(j["ggx"]));
}

TEST(Hooks, GraphsWithHooksAndRetainedTensorsAreFreed) {
  const int64_t before = live_nodes();
  {
    Tensor x = ones({3}).requires_grad_();
    Tensor y = x * 2;
    y.retain_grad();
    y.register_hook([y](const Tensor& g) { return g; });  // the hook holds y: the node holds the hook
    x.register_hook([](const Tensor& g) { return g; });
    sum(y * y).backward();
  }
  EXPECT_EQ(live_nodes(), before);
}

namespace {
// The golden script's chain of 20 ops; op 12 takes the square root of a negative number.
int g_label_line = 0;
Tensor twenty_ops(const Tensor& x) {
  Tensor h = x;
  for (int i = 0; i < 20; ++i) {
    if (i == 11) {
      g_label_line = __LINE__; AnomalyLabel label("the square root");  // NOLINT: one line, for the test
      h = sqrt(h - 10.0);
    } else if (i % 3 == 0) {
      h = tanh(h) * 1.5;
    } else if (i % 3 == 1) {
      h = h * h + 0.25;
    } else {
      h = exp(-h);
    }
  }
  return sum(h);
}
}  // namespace

TEST(Anomaly, FindsTheNaNInTwentyOpsAndNamesTheForwardOpThatMadeIt) {
  const std::string torch_msg = golden()["anomaly"]["message"];
  Tensor x = tensor({0.5, 1.5, 2.0}).requires_grad_();
  {
    Tensor loss = twenty_ops(x);  // anomaly mode off: the NaN passes silently, as in PyTorch
    loss.backward();
    EXPECT_TRUE(std::isnan(x.grad().to_vector<double>()[0]));
    x.set_grad({});
  }
  DetectAnomalyGuard anomaly;
  EXPECT_TRUE(is_anomaly_enabled());
  Tensor loss = twenty_ops(x);
  try {
    loss.backward();
    FAIL() << "anomaly mode must throw";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(torch_msg, 0), 0u) << msg;  // PyTorch's message first
    const std::string line = __FILE__ ":" + std::to_string(g_label_line);  // the AnomalyLabel's
    EXPECT_NE(msg.find("The first forward op whose output held a NaN: node #24 of the forward pass "
                       "(SqrtBackward0), recorded under the label \"the square root\" (" + line + ")"),
              std::string::npos)
        << msg;
  }
  EXPECT_FALSE(x.grad().defined());
}

TEST(Anomaly, NaNFromABackwardRuleWithAFiniteForwardAndTheGuardRestores) {
  Tensor x = tensor({0.0, 4.0}).requires_grad_();
  {
    DetectAnomalyGuard anomaly;
    // finite forward (sqrt(0) * 0 = 0); SqrtBackward0 gets a zero gradient at 0: 0 / (2 sqrt(0)) is
    // nan (PyTorch 1.13 throws "Function 'SqrtBackward0' returned nan values in its 0th output.")
    Tensor y = sum(sqrt(x) * 0.0);
    try {
      y.backward();
      FAIL() << "anomaly mode must throw";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("Function 'SqrtBackward0' returned nan values in its 0th output. It was made by node #1 of", 0), 0u) << msg;
      EXPECT_NE(msg.find("No forward op output held a NaN"), std::string::npos) << msg;
    }
  }
  EXPECT_FALSE(is_anomaly_enabled());
  set_detect_anomaly(true);
  EXPECT_TRUE(is_anomaly_enabled());
  set_detect_anomaly(false);
  sum(sqrt(x) * 0.0).backward();  // off again: no check
  EXPECT_TRUE(std::isnan(x.grad().to_vector<double>()[0]));
}
