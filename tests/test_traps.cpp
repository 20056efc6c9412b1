// Regression tests of the traps a translator of PyTorch tutorials fell into (issue 13): inputs
// where ag used to give a silently different result from PyTorch 1.13. The expected values are
// PyTorch's (printed by torch 1.13 for the same calls; exact decimals).
#include <gtest/gtest.h>

#include <string>

#include "autograd/autograd.h"
#include "test_util.h"

using namespace ag;

using testutil::error_of;

TEST(Traps, ArangeInfersFloat32FromANonIntegralArgument) {
  // torch.arange(-3.0, 3.0, 0.5): float32 [-3.0, -2.5, ..., 2.5]; it was int64 [-3, -2, -2, ...]
  Tensor a = arange(-3.0, 3.0, 0.5);
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(a.to_vector<double>(),
            (std::vector<double>{-3.0, -2.5, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5}));
  Tensor b = arange(0.0, 1.0, 0.25);  // was [0, 0, 0, 0]
  EXPECT_EQ(b.dtype(), kFloat32);
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{0.0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(arange(4.5).dtype(), kFloat32);
  EXPECT_EQ(arange(4.5).numel(), 5);
  // all integral: int64, as before
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(arange(0, 5, 2).to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 4}));
  // a given dtype wins, with or without other options
  EXPECT_EQ(arange(3, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(arange(0.0, 1.0, 0.5, Options().dtype(kInt64)).to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  Tensor r = arange(0.0, 1.0, 0.5, Options().requires_grad(true));
  EXPECT_EQ(r.dtype(), kFloat32);
  EXPECT_TRUE(r.requires_grad());
}

TEST(Traps, NegativeIndicesAreOutOfRangeInEveryGather) {
  // PyTorch: IndexError "index out of range in self"; ag used to wrap -1 to the last row (and
  // backward wrote there)
  const Tensor w = ones({3, 2});
  EXPECT_EQ(error_of([&] { embedding(w, tensor({-1})); }),
            "[embedding] index out of range in self: index -1 for dim 0 of size 3 (shape [3, 2])");
  EXPECT_EQ(error_of([&] { index_select(w, 0, tensor({0, -1})); }),
            "[index_select] index out of range in self: index -1 for dim 0 of size 3 (shape [3, 2])");
  EXPECT_EQ(error_of([&] { index_select(w, 1, tensor({2})); }),
            "[index_select] index out of range in self: index 2 for dim 1 of size 2 (shape [3, 2])");
  EXPECT_EQ(error_of([&] { index_add(zeros({3, 2}), 0, tensor({-1}), ones({1, 2})); }),
            "[index_add] index out of range in self: index -1 for dim 0 of size 3 (shape [3, 2])");
  EXPECT_THROW(embedding(w, tensor({-1})), std::out_of_range);
  // in range: unchanged
  EXPECT_EQ(index_select(arange(6, kFloat32).view({3, 2}), 0, tensor({2, 0})).to_vector<float>(),
            (std::vector<float>{4, 5, 0, 1}));
}

TEST(Traps, SoftmaxRefusesIntegerInputAsPyTorchDoes) {
  // PyTorch: "softmax_lastdim_kernel_impl" not implemented for 'Long'; ag used to return floats
  EXPECT_EQ(error_of([] { softmax(tensor({1, 2}), 0); }),
            "[softmax] not implemented for integer or bool input: expected a floating point tensor, got torch.int64 of "
            "shape [2]");
  EXPECT_EQ(error_of([] { log_softmax(tensor({{1, 2}}), -1); }),
            "[log_softmax] not implemented for integer or bool input: expected a floating point tensor, got torch.int64 of "
            "shape [1, 2]");
  EXPECT_THROW(cross_entropy(tensor({{1, 2}}), tensor({0})), std::invalid_argument);
  EXPECT_THROW(softmax(tensor({true, false}), 0), std::invalid_argument);
  EXPECT_EQ(softmax(tensor({0.0, 0.0}), 0).to_vector<float>(), (std::vector<float>{0.5f, 0.5f}));
}

TEST(Traps, AZeroDimTensorTakesOnlyDimsMinusOneAndZero) {
  // PyTorch: "Dimension out of range (expected to be in range of [-1, 0], but got 1)"; ag used to
  // return the tensor for any dim
  const Tensor s = tensor(0.5).requires_grad_();
  EXPECT_EQ(error_of([&] { transpose(s, 0, 1); }), "[transpose] dim 1 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { squeeze(s, 2); }), "[squeeze] dim 2 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { squeeze(s, -5); }), "[squeeze] dim -5 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { max(s, 1); }), "[max] dim 1 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_THROW(unsqueeze(s, 1), std::out_of_range);
  EXPECT_THROW(sum(s, {1}), std::out_of_range);
  EXPECT_THROW(softmax(s, 1), std::out_of_range);
  // dims -1 and 0 work, and transpose records its node as PyTorch does
  Tensor t = transpose(s, -1, 0);
  EXPECT_EQ(t.dim(), 0);
  ASSERT_TRUE(t.grad_fn());
  EXPECT_EQ(t.grad_fn()->name, "TransposeBackward0");
  EXPECT_EQ(squeeze(s, 0).dim(), 0);
  EXPECT_EQ(max(s, -1).first.item(), 0.5);
  (t * 3.0).backward();
  EXPECT_EQ(s.grad().item(), 3.0);
}

TEST(Traps, AnOpOnAnUndefinedTensorThrowsNamingTheOp) {
  // ag used to segfault; PyTorch raises. std::logic_error naming the op.
  const Tensor u;
  const Tensor x = ones({2});
  const std::string tail = "] called on an undefined tensor (a default-constructed Tensor, or .grad() before any backward)";
  EXPECT_EQ(error_of([&] { u + u; }), "[add" + tail);
  EXPECT_EQ(error_of([&] { x.grad() * 2.0; }), "[mul" + tail);  // .grad() before any backward
  EXPECT_EQ(error_of([&] { 2.0 - u; }), "[rsub" + tail);
  EXPECT_EQ(error_of([&] { u > 0.0; }), "[gt" + tail);
  EXPECT_EQ(error_of([&] { u.item(); }), "[numel" + tail);
  EXPECT_EQ(error_of([&] { u.shape(); }), "[shape" + tail);
  EXPECT_EQ(error_of([&] { u.dtype(); }), "[dtype" + tail);
  EXPECT_EQ(error_of([&] { u.stride(0); }), "[stride" + tail);
  EXPECT_EQ(error_of([&] { exp(u); }), "[exp" + tail);
  EXPECT_EQ(error_of([&] { matmul(x, u); }), "[matmul" + tail);
  EXPECT_EQ(error_of([&] { sum(u); }), "[sum" + tail);
  EXPECT_EQ(error_of([&] { mean(u, {0}); }), "[mean" + tail);
  EXPECT_EQ(error_of([&] { max(u); }), "[max" + tail);
  EXPECT_EQ(error_of([&] { softmax(u, 0); }), "[softmax" + tail);
  EXPECT_EQ(error_of([&] { u.detach(); }), "[detach" + tail);
  EXPECT_THROW(u.to_vector<float>(), std::logic_error);
  EXPECT_THROW(u.view({2}), std::logic_error);
  EXPECT_EQ(error_of([&] { u.backward(); }), "[backward" + tail);
  EXPECT_FALSE(u.defined());
}
