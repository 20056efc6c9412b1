// Every node says which rule ran (Node::rule(): the op that recorded it and its row in
// docs/derivatives.md). For every entry of the op table and every sample, each node of the
// recorded graph -- and of the graph its backward records with create_graph -- has a row.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "autograd/autograd.h"
#include "op_table.h"

using namespace ag;

namespace {

// Every node reachable from `root`, each once.
std::vector<std::shared_ptr<Node>> nodes_of(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> out, stack;
  std::unordered_set<const Node*> seen;
  if (root) stack.push_back(root);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = stack.back();
    stack.pop_back();
    if (!seen.insert(n.get()).second) continue;
    out.push_back(n);
    for (const auto& [next, nr] : n->next_functions())
      if (next) stack.push_back(next);
  }
  return out;
}

Tensor input_of(const std::vector<int64_t>& shape, const optable::Domain& d, int seed) {
  Generator g(static_cast<uint64_t>(seed));
  Tensor u = rand(shape, kFloat64, &g);
  return (u * (d.hi - d.lo) + d.lo).detach().requires_grad_();
}

}  // namespace

TEST(Rules, EveryNodeOfEveryOpTableGraphHasARuleRow) {
  std::map<std::string, std::set<std::string>> missing;  // grad_fn -> the entries that recorded it
  int nodes = 0;
  for (const optable::OpInfo& op : optable::op_table()) {
    if (op.order < 1) continue;
    for (std::size_t s = 0; s < op.samples.size(); ++s) {
      std::vector<Tensor> x;
      for (std::size_t i = 0; i < op.samples[s].shapes.size(); ++i)
        x.push_back(input_of(op.samples[s].shapes[i], op.domain, static_cast<int>(s * 10 + i)));
      Tensor y;
      try {
        y = op.fn(x);
      } catch (const std::exception&) {
        continue;  // a sample the table expects to throw
      }
      if (!y.grad_fn()) continue;
      std::vector<std::shared_ptr<Node>> all = nodes_of(y.grad_fn());
      if (op.order >= 2 && y.numel() > 0) {
        const std::vector<Tensor> g = ag::grad({y.sum()}, x, {}, true, true, true);
        for (const Tensor& gi : g)
          if (gi.defined() && gi.grad_fn())
            for (const auto& n : nodes_of(gi.grad_fn())) all.push_back(n);
      }
      for (const auto& n : all) {
        ++nodes;
        if (n->name() == "AccumulateGrad") continue;
        if (n->rule().op.empty()) missing[n->name()].insert(op.name);
      }
    }
  }
  for (const auto& [name, ops] : missing) {
    std::string list;
    for (const std::string& o : ops) list += " " + o;
    ADD_FAILURE() << name << " has no row in docs/derivatives.md (recorded by:" << list << ")";
  }
  EXPECT_GT(nodes, 1000);
}

// Nodes that print another op's name (PyTorch's, as the tutorials show it) name the rule they
// run: the fused attention node, mse_loss's mean, matmul's squeeze, stack's cat.
TEST(Rules, ANodeNamedForAnotherOpNamesTheRuleItRuns) {
  Tensor q = randn({2, 3, 4}).requires_grad_(), k = randn({2, 3, 4}).requires_grad_(), v = randn({2, 3, 4}).requires_grad_();
  Tensor out = causal_attention(q, k, v, 2.0).out;
  EXPECT_EQ(out.grad_fn()->name(), "UnsafeViewBackward0");
  EXPECT_EQ(rule_op_name(out.grad_fn()->rule().op), "causal_attention");
  EXPECT_NE(out.grad_fn()->rule().backward.find("causal_softmax_backward"), std::string::npos);
  Tensor mm = causal_matmul(tril(ones({3, 3})).requires_grad_(), randn({3, 2}));
  EXPECT_EQ(mm.grad_fn()->name(), "MmBackward0");
  EXPECT_EQ(rule_op_name(mm.grad_fn()->rule().op), "causal_matmul");
  EXPECT_EQ(rule_op_name(matmul(randn({3, 3}).requires_grad_(), randn({3, 2})).grad_fn()->rule().op), "matmul");

  Tensor mse = mse_loss(q, v);
  EXPECT_EQ(mse.grad_fn()->name(), "MseLossBackward0");
  EXPECT_EQ(rule_op_name(mse.grad_fn()->rule().op), "mean");
  Tensor sq = matmul(randn({3}).requires_grad_(), randn({3, 2}));
  EXPECT_EQ(sq.grad_fn()->name(), "SqueezeBackward4");
  EXPECT_EQ(rule_op_name(sq.grad_fn()->rule().op), "squeeze");
  Tensor st = stack({q, k});
  EXPECT_EQ(st.grad_fn()->name(), "StackBackward0");
  EXPECT_EQ(rule_op_name(st.grad_fn()->rule().op), "cat");

  // DOT shows it under the name; a node that is what its name says shows no note
  const std::string dot = to_dot(out.sum());
  EXPECT_NE(dot.find("UnsafeViewBackward0\\n(rule: causal_attention)"), std::string::npos) << dot;
  EXPECT_EQ(dot.find("SumBackward0\\n(rule"), std::string::npos) << dot;
  // anomaly mode's message says the rule
  DetectAnomalyGuard anomaly;
  Tensor bad = causal_attention(q, k, v, 2.0).out;
  try {
    (bad * std::nan("")).sum().backward();
    FAIL() << "anomaly mode let a NaN gradient through";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Its rule (docs/derivatives.md): `mul(a, b)`"), std::string::npos) << e.what();
  }
}
