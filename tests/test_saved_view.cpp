// The saved-tensor view (ag::saved_tensors, print_saved_tensors; autograd/saved.h): every tensor
// the graph keeps for backward, with its node, rule, shape, dtype and bytes (each storage once),
// checked on a small graph by hand and on next_word's graph against two independent counts: what
// saved-tensor hooks see packed, and how many bytes destroying the graph frees.
#include <gtest/gtest.h>

#include <algorithm>
#include <any>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "next_word/model.h"

using namespace ag;

TEST(SavedTensorsView, ListsWhatEachNodeKeepsNodeByNode) {
  const Tensor x = ones({3, 4}).requires_grad_();
  const Tensor w = ones({4, 2}, kFloat64).requires_grad_();
  const Tensor y = matmul((x * x).exp().to(kFloat64), w).sum();
  const std::vector<SavedTensorInfo> s = saved_tensors(y);
  // sum saves nothing; mm saves both operands; to() nothing; exp its output; mul x twice
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].node, "MmBackward0");
  EXPECT_EQ(s[0].shape, Size({3, 4}));
  EXPECT_EQ(s[0].dtype, kFloat64);
  EXPECT_EQ(s[0].bytes, 3 * 4 * 8);
  EXPECT_FALSE(s[0].is_output);
  EXPECT_EQ(s[1].node, "MmBackward0");
  EXPECT_EQ(s[1].bytes, 4 * 2 * 8);
  EXPECT_NE(s[1].rule.find("matmul"), std::string::npos) << s[1].rule;
  EXPECT_EQ(s[2].node, "ExpBackward0");
  EXPECT_TRUE(s[2].is_output);
  EXPECT_EQ(s[2].bytes, 3 * 4 * 4);
  EXPECT_EQ(s[2].rule, "`g * y`");
  EXPECT_EQ(s[3].node, "MulBackward0");
  EXPECT_EQ(s[3].bytes, 3 * 4 * 4);
  EXPECT_EQ(s[4].node, "MulBackward0");
  EXPECT_EQ(s[4].bytes, 0) << "x's storage is counted once";
  std::ostringstream os;
  print_saved_tensors(y, os);
  EXPECT_NE(os.str().find("5 saved tensors, 256 bytes"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("ExpBackward0"), std::string::npos);
  // after backward the nodes hold nothing
  y.backward();
  EXPECT_TRUE(saved_tensors(y).empty());
}

TEST(SavedTensorsView, NextWordsTotalIsWhatTheGraphHolds) {
  const int64_t V = 32, T = 8, D = 16, H = 2, B = 3;
  manual_seed(0);
  next_word::TinyCausalLM model(V, T, D, H, 0.1);
  const Tensor idx = randint(0, V, {B, T}), targets = randint(0, V, {B, T});
  auto loss_of = [&] { return cross_entropy(model.forward(idx).view({B * T, V}), targets.view({B * T})); };
  std::set<const Storage*> outside{idx.impl()->storage.get(), targets.impl()->storage.get()};
  for (const Tensor& p : model.parameters()) outside.insert(p.impl()->storage.get());

  // the view, and what destroying the graph frees
  manual_seed(1);
  const int64_t before = detail::thread_storage_bytes();
  Tensor loss = loss_of();
  const std::vector<SavedTensorInfo> view = saved_tensors(loss);
  int64_t total = 0;
  std::multiset<std::string> shapes;
  for (const SavedTensorInfo& s : view) {
    total += s.bytes;
    shapes.insert(s.shape.str() + " " + dtype_name(s.dtype));
  }
  const int64_t held = detail::thread_storage_bytes();
  const int64_t loss_bytes = static_cast<int64_t>(loss.impl()->storage->nbytes);
  loss = Tensor();
  const int64_t freed = held - detail::thread_storage_bytes();
  EXPECT_GT(held, before);

  // the same forward with hooks that see every saved tensor packed (another path through
  // SavedTensor), counting each storage once
  manual_seed(1);
  std::map<const Storage*, int64_t> packed;  // storage -> bytes
  std::multiset<std::string> packed_shapes;
  Tensor loss2;
  {
    SavedTensorsHooks log(
        [&](const Tensor& t) -> std::any {
          packed.emplace(t.impl()->storage.get(), static_cast<int64_t>(t.impl()->storage->nbytes));
          packed_shapes.insert(t.shape().str() + " " + dtype_name(t.dtype()));
          return t;
        },
        [](const std::any& a) { return std::any_cast<Tensor>(a); });
    loss2 = loss_of();
  }
  int64_t packed_total = 0, packed_graph_only = 0;
  for (const auto& [storage, bytes] : packed) {
    packed_total += bytes;
    if (!outside.count(storage)) packed_graph_only += bytes;
  }
  EXPECT_EQ(view.size(), packed_shapes.size());
  EXPECT_EQ(shapes, packed_shapes);
  EXPECT_EQ(total, packed_total) << "the view's bytes, each storage once, against the hooks' count";
  // destroying the graph frees the saved storages that nothing outside holds, and the loss
  EXPECT_EQ(freed, packed_graph_only + loss_bytes) << "a node holds a tensor the view does not list";
  EXPECT_GT(view.size(), 10u);
}
