// Tensor layout, views over shared storage, creation functions, dtypes and their errors.
#include <gtest/gtest.h>

#include "autograd/autograd.h"
#include "test_util.h"

using namespace ag;

using testutil::error_of;

namespace {

std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }

}  // namespace

TEST(Creation, ZerosOnesFullArangeAndLikes) {
  EXPECT_EQ(vals(zeros({2, 2})), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(vals(ones({3})), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(vals(full({2}, 2.5)), (std::vector<float>{2.5, 2.5}));
  EXPECT_EQ(arange(5).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(arange(1, 2, 0.25, kFloat32).to_vector<float>(), (std::vector<float>{1, 1.25, 1.5, 1.75}));
  Tensor d = ones({2, 3}, kFloat64);
  EXPECT_EQ(zeros_like(d).dtype(), kFloat64);
  EXPECT_EQ(ones_like(d).shape(), (Size{2, 3}));
  EXPECT_EQ(empty({4, 0}).numel(), 0);
  EXPECT_TRUE(zeros({2}, Options().dtype(kFloat64).requires_grad()).requires_grad());
}

TEST(Creation, NestedListsAndDtypes) {
  // dtype inferred like torch.tensor: floats -> float32, integers -> int64, bools -> bool
  Tensor t = tensor({{1.5, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(t.shape(), (Size{2, 3}));
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_EQ(tensor({{{1, 2}}, {{3, 4}}}).shape(), (Size{2, 1, 2}));
  Tensor ids = tensor({0, 4, 5, 2, 1, 3});
  EXPECT_EQ(ids.dtype(), kInt64);
  EXPECT_EQ(repr(ids), "tensor([0, 4, 5, 2, 1, 3])");
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor({1, 2}, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(tensor({{0.5}, {1.5}}).shape(), (Size{2, 1}));
  Tensor s = tensor(3.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item(), 3.5);
  EXPECT_EQ(tensor({}).shape(), (Size{0}));
  EXPECT_EQ(error_of([] { tensor({{1, 2}, {3}}); }),
            "[tensor] nested lists are not rectangular: sub-lists at depth 1 have different lengths or depths");
  EXPECT_EQ(error_of([] { tensor({{1, 2}, 3}); }),
            "[tensor] nested lists are not rectangular: sub-lists at depth 1 have different lengths or depths");
}

TEST(Creation, TriuTrilWithDiagonal) {
  Tensor m = ones({3, 3});
  EXPECT_EQ(vals(triu(m, 1)), (std::vector<float>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(vals(tril(m)), (std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  EXPECT_EQ(vals(tril(m, -1)), (std::vector<float>{0, 0, 0, 1, 0, 0, 1, 1, 0}));
  EXPECT_EQ(error_of([] { triu(ones({3})); }), "[triu] expects a tensor with at least 2 dims, got shape [3]");
}

TEST(Dtype, ToConvertsAndBoolMasks) {
  Tensor x = tensor({0.0, 1.5, -2.0});
  Tensor d = x.to(kFloat64);
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{0, 1.5, -2}));
  EXPECT_EQ(x.bool_().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(x.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, -2}));
  Tensor same = x.to(kFloat32);
  EXPECT_TRUE(same.shares_storage(x));  // no-op conversion returns the tensor itself
}

TEST(Dtype, MixedFloatTypesPromoteToFloat64AndGradsKeepTheirOwnDtype) {
  Tensor a = ones({2}).requires_grad_();
  Tensor b = ones({2}, kFloat64).requires_grad_();
  Tensor c = a * b;
  EXPECT_EQ(c.dtype(), kFloat64);
  sum(c).backward();
  EXPECT_EQ(a.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat64);
}

TEST(Dtype, IntegerTensorsCannotRequireGrad) {
  EXPECT_THROW(arange(3).requires_grad_(), std::invalid_argument);
}

TEST(Views, ShareStorageAndSeeWrites) {
  Tensor x = arange(6, kFloat32).view({2, 3});
  Tensor t = x.t();
  EXPECT_TRUE(t.shares_storage(x));
  EXPECT_EQ(t.shape(), (Size{3, 2}));
  EXPECT_EQ(t.strides(), (Strides{1, 3}));
  EXPECT_FALSE(t.is_contiguous());
  x.masked_fill_(eq(x, 4.0), 40.0);
  EXPECT_EQ(vals(t), (std::vector<float>{0, 3, 1, 40, 2, 5}));
}

TEST(Views, ContiguousCopiesOnlyWhenNeeded) {
  Tensor x = ones({2, 3});
  EXPECT_TRUE(x.contiguous().shares_storage(x));
  Tensor t = x.t().contiguous();
  EXPECT_FALSE(t.shares_storage(x));
  EXPECT_TRUE(t.is_contiguous());
}

TEST(Views, ViewReshapePermuteSqueezeExpand) {
  Tensor x = arange(24, kFloat32);
  Tensor v = x.view({2, -1, 4});
  EXPECT_EQ(v.shape(), (Size{2, 3, 4}));
  Tensor p = v.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Size{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Strides{1, 12, 4}));
  // view of a permuted tensor is impossible; reshape copies
  EXPECT_THROW(p.view({-1}), std::invalid_argument);
  Tensor r = p.reshape({-1});
  EXPECT_EQ(r.to_vector<float>()[1], 4.0f);
  // splitting a dim of a transposed tensor is still a view
  Tensor tv = v.transpose(1, 2).view({2, 2, 2, 3});
  EXPECT_TRUE(tv.shares_storage(x));
  EXPECT_EQ(v.unsqueeze(0).shape(), (Size{1, 2, 3, 4}));
  EXPECT_EQ(v.unsqueeze(-1).shape(), (Size{2, 3, 4, 1}));
  EXPECT_EQ(ones({1, 3, 1}).squeeze().shape(), (Size{3}));
  EXPECT_EQ(ones({1, 3, 1}).squeeze(0).shape(), (Size{3, 1}));
  EXPECT_EQ(ones({1, 3, 1}).squeeze(1).shape(), (Size{1, 3, 1}));
  Tensor e = tensor({1, 2, 3}).unsqueeze(0).expand({4, -1});
  EXPECT_EQ(e.shape(), (Size{4, 3}));
  EXPECT_EQ(e.strides(), (Strides{0, 1}));
  EXPECT_EQ(vals(e.sum({0})), (std::vector<float>{4, 8, 12}));
}

TEST(Views, SliceSelectNarrowLikePythonIndexing) {
  Tensor x = arange(12, kFloat32).view({3, 4});
  EXPECT_EQ(vals(x[1]), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(vals(x[-1]), (std::vector<float>{8, 9, 10, 11}));
  EXPECT_EQ(vals(x.slice(1, 1, 3)), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(vals(x.slice(0, -2, std::nullopt)), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(vals(x.slice(1, std::nullopt, std::nullopt, 2)), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(vals(x.slice(1, 2, 100)), (std::vector<float>{2, 3, 6, 7, 10, 11}));
  EXPECT_EQ(vals(x.narrow(0, 1, 1)), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(x.select(1, 2).shape(), (Size{3}));
}

TEST(Views, ErrorsNameTheOpAndTheShapes) {
  Tensor x = ones({2, 3});
  EXPECT_EQ(error_of([&] { x.view({4, 2}); }), "[view] shape [4, 2] is invalid for input of shape [2, 3]");
  EXPECT_EQ(error_of([&] { x.view({-1, -1}); }), "[view] only one dimension can be inferred in shape [-1, -1]");
  EXPECT_EQ(error_of([&] { x.transpose(0, 2); }),
            "[transpose] dim 2 out of range for a tensor of shape [2, 3] (expected in [-2, 1])");
  EXPECT_EQ(error_of([&] { x.expand({3, 3}); }),
            "[expand] the expanded size 3 must match the existing size 2 at non-singleton dimension 0: cannot expand "
            "shape [2, 3] to [3, 3]");
  EXPECT_EQ(error_of([&] { x.permute({0}); }), "[permute] number of dims [0] doesn't match the tensor's shape [2, 3]");
  EXPECT_EQ(error_of([&] { x[5]; }), "[select] index 5 is out of bounds for dimension 0 with size 2 (shape [2, 3])");
  EXPECT_EQ(error_of([&] { x.narrow(1, 2, 2); }), "[narrow] start (2) + length (2) exceeds dimension size (3) of shape [2, 3]");
  EXPECT_EQ(error_of([&] { x.item(); }), "[item] a Tensor with 6 elements cannot be converted to a scalar (shape [2, 3])");
}

TEST(Broadcasting, ShapesCombineAndMismatchesAreErrors) {
  EXPECT_EQ((ones({2, 1, 3}) + ones({4, 1})).shape(), (Size{2, 4, 3}));
  EXPECT_EQ((ones({}) * ones({5})).shape(), (Size{5}));
  EXPECT_EQ(error_of([] { ones({2, 3}) + ones({4}); }),
            "[add] shapes [2, 3] and [4] cannot be broadcast together (dim 1: 3 vs 4)");
  EXPECT_EQ(error_of([] { ones({2, 3}) * ones({2}); }),
            "[mul] shapes [2, 3] and [2] cannot be broadcast together (dim 1: 3 vs 2)");
}

TEST(Ops, ErrorsNameTheOpAndBothShapes) {
  EXPECT_EQ(error_of([] { matmul(ones({6, 3}), ones({4, 3})); }),
            "[matmul] shapes [6, 3] and [4, 3] cannot be multiplied (3 != 4)");
  EXPECT_EQ(error_of([] { matmul(ones({2, 3}), ones({3, 2}, kFloat64)); }),
            "[matmul] expected two tensors of one dtype, floating point or int64, got torch.float32 and torch.float64 "
            "(shapes [2, 3] and [3, 2])");
  EXPECT_EQ(error_of([] { masked_fill(ones({2, 3}), ones({3, 3}).bool_(), 0.0); }),
            "[masked_fill] shapes [2, 3] and [3, 3] cannot be broadcast together (dim 0: 2 vs 3)");
  // out of place, a mask that broadcasts the input up gives the broadcast shape, as PyTorch's;
  // in place, it would change self's shape: PyTorch's words
  EXPECT_EQ(masked_fill(ones({3}), ones({2, 3}).bool_(), 0.0).shape(), Size({2, 3}));
  EXPECT_EQ(error_of([] { ones({3}).masked_fill_(ones({2, 3}).bool_(), 0.0); }),
            "[masked_fill_] output with shape [3] doesn't match the broadcast shape [2, 3] (a mask of shape [2, 3] would "
            "change self's shape; the out-of-place masked_fill broadcasts)");
  EXPECT_EQ(error_of([] { masked_fill(ones({3}), ones({3}), 0.0); }),
            "[masked_fill] expected a bool mask, got torch.float32 (use mask.bool_())");
  EXPECT_EQ(error_of([] { cat({ones({2, 3}), ones({2, 4})}, 0); }),
            "[cat] tensors must have the same dtype and shape except in dim 0: tensor 0 has shape [2, 3] "
            "(torch.float32), tensor 1 has shape [2, 4] (torch.float32)");
  EXPECT_EQ(error_of([] { stack({ones({2}), ones({3})}); }),
            "[stack] expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1");
  EXPECT_EQ(error_of([] { embedding(ones({5, 3}), tensor({1, 5})); }),
            "[embedding] index out of range in self: index 5 for dim 0 of size 5 (shape [5, 3])");
  EXPECT_EQ(error_of([] { cross_entropy(ones({2, 3}), tensor({0, 3})); }),
            "[nll_loss] target 3 is out of bounds for 3 classes (input shape [2, 3])");
  EXPECT_EQ(error_of([] { cross_entropy(ones({2, 3}), tensor({0, 1, 2})); }),
            "[nll_loss] expected input (N, C) with target (N), or input (C) with target (), got input [2, 3] and "
            "target [3]");
  EXPECT_EQ(error_of([] { layer_norm(ones({2, 3}), {4}); }),
            "[layer_norm] normalized_shape [4] does not match the trailing dims of input shape [2, 3]");
  EXPECT_EQ(error_of([] { softmax(ones({2, 3}), 2); }),
            "[softmax] dim 2 out of range for a tensor of shape [2, 3] (expected in [-2, 1])");
  EXPECT_EQ(error_of([] { dropout(ones({2}), 1.5); }), "[dropout] dropout probability has to be between 0 and 1, but got 1.5");
  EXPECT_EQ(error_of([] { sum(ones({2, 3}), {1, -1}); }), "[sum] dim -1 appears multiple times in the list of dims");
}

TEST(Reductions, ArgmaxOverALeadingDimOfA3dTensor) {
  // the layout bug the random-graph fuzzer found: rows along dim 0 must come out in (d1, d2) order
  Tensor x = tensor({{{1, 9}, {5, 2}}, {{7, 3}, {0, 8}}});  // (2, 2, 2)
  EXPECT_EQ(argmax(x, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(max(x, 0).first.to_vector<int64_t>(), (std::vector<int64_t>{7, 9, 5, 8}));
}
