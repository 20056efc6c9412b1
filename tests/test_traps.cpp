// Regression tests of the traps a translator of PyTorch tutorials fell into (issue 13): inputs
// where ag used to give a silently different result from PyTorch 1.13. The expected values are
// PyTorch's (printed by torch 1.13 for the same calls; exact decimals).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "autograd/autograd.h"
#include "nn/layers.h"
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
  EXPECT_EQ(t.grad_fn()->name(), "TransposeBackward0");
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
  EXPECT_EQ(error_of([&] { u.item(); }), "[item" + tail);
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

// ---- grad_fn names and output shapes against PyTorch (tests/golden/traps.json, made by
// tools/golden/make_traps_golden.py): each case is the same call as the script's of that name.

namespace {

const nlohmann::json& traps_golden() {
  static const nlohmann::json j = [] {
    std::ifstream f(std::string(AG_GOLDEN_DIR) + "/traps.json");
    if (!f) throw std::runtime_error("cannot open tests/golden/traps.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

Tensor leaf(const DimVector& shape) { return randn(shape, kFloat64).requires_grad_(); }

DimVector shape_of(const std::string& dims) {  // "2x3x4" -> {2, 3, 4}
  DimVector s;
  std::istringstream is(dims);
  for (std::string d; std::getline(is, d, 'x');) s.push_back(std::stoll(d));
  return s;
}

// Checks one case: the grad_fn name and the output shape equal PyTorch's.
void expect_like_torch(const std::string& name, const Tensor& y) {
  SCOPED_TRACE(name);
  const auto& want = traps_golden().at(name);
  ASSERT_TRUE(y.grad_fn()) << "no grad_fn";
  EXPECT_EQ(y.grad_fn()->name(), want.at("grad_fn").get<std::string>());
  EXPECT_EQ(y.shape().vec(), want.at("shape").get<std::vector<int64_t>>());
}

std::vector<int64_t> strides_of(const Tensor& t) { return std::vector<int64_t>(t.strides().begin(), t.strides().end()); }

// Checks one layout case: shape, strides, whether .view(-1) works and (where PyTorch recorded one)
// the grad_fn name equal PyTorch's.
void expect_layout_like_torch(const std::string& name, const Tensor& y) {
  SCOPED_TRACE(name);
  const auto& want = traps_golden().at(name);
  EXPECT_EQ(y.shape().vec(), want.at("shape").get<std::vector<int64_t>>());
  EXPECT_EQ(strides_of(y), want.at("strides").get<std::vector<int64_t>>());
  EXPECT_EQ(error_of([&] { y.view({-1}); }) == "(no exception)", want.at("view_ok").get<bool>());
  if (want.contains("grad_fn") && !want.at("grad_fn").is_null()) {
    ASSERT_TRUE(y.grad_fn()) << "no grad_fn";
    EXPECT_EQ(y.grad_fn()->name(), want.at("grad_fn").get<std::string>());
  }
}

}  // namespace

TEST(Traps, MatmulNamesItsNodeAsPyTorchForEveryPairOfRanks) {
  // batched @ 1-D was a squeeze node (PyTorch: UnsafeViewBackward0), 2-D @ batched
  // UnsafeViewBackward0 (CloneBackward0). 1-D @ 2-D stays SqueezeBackward4, the name the seed
  // notebooks print (tests/test_seeds.cpp; they were run with PyTorch 2, 1.13 names it SqueezeBackward3).
  int checked = 0;
  for (const auto& [name, want] : traps_golden().items()) {
    if (name.rfind("matmul_", 0) != 0 || name == "matmul_4_4x5") continue;
    const std::size_t cut = name.find('_', 7);
    expect_like_torch(name, matmul(leaf(shape_of(name.substr(7, cut - 7))), randn(shape_of(name.substr(cut + 1)), kFloat64)));
    ++checked;
  }
  EXPECT_EQ(checked, 9);
  EXPECT_EQ(traps_golden().at("matmul_4_4x5").at("grad_fn"), "SqueezeBackward3");
  EXPECT_EQ(matmul(leaf({4}), randn({4, 5}, kFloat64)).grad_fn()->name(), "SqueezeBackward4");
}

TEST(Traps, LinearTakesAnyLeadingDimsAsPyTorch) {
  // linear used to refuse anything but 2-D input; F.linear takes (*, in)
  const Tensor w = randn({5, 4}, kFloat64), b = randn({5}, kFloat64);
  for (const char* dims : {"4", "3x4", "2x3x4", "2x0x4", "1x2x3x4"}) {
    const Tensor x = leaf(shape_of(dims));
    expect_like_torch(std::string("linear_bias_") + dims, linear(x, w, b));
    expect_like_torch(std::string("linear_nobias_") + dims, linear(x, w));  // 1-D: SqueezeBackward3, as PyTorch 1.13
    // the same numbers as the 2-D rows
    const Tensor rows = linear(x.detach().reshape({-1, 4}), w, b);
    EXPECT_EQ(testutil::close_mismatches<double>(linear(x, w, b).detach().reshape({-1, 5}), rows, 1e-12, 1e-12), 0) << dims;
  }
  expect_like_torch("linear_bias_transposed_3x2x4", linear(leaf({2, 3, 4}).transpose(0, 1), w, b));
  // nn::Linear is F.linear
  nn::Linear layer(4, 5);
  EXPECT_EQ(layer(ones({2, 3, 4})).shape(), Size({2, 3, 5}));
  EXPECT_EQ(layer(ones({4})).shape(), Size({5}));
  EXPECT_EQ(error_of([&] { linear(ones({3, 5}, kFloat64), w); }),
            "[linear] expects input (*, in), weight (out, in) and bias (out), got [3, 5], [5, 4] and none");
  EXPECT_THROW(linear(tensor(1.0), w), std::invalid_argument);
}

TEST(Traps, LossesTakeAReductionAndCrossEntropyTakesSpatialDims) {
  // mse_loss had no reduction; cross_entropy refused (N, C, d1, ...) logits
  const Tensor t3 = tensor({1, 0, 3});
  for (const std::string red : {"mean", "sum", "none"}) {
    expect_like_torch("mse_loss_" + red, mse_loss(leaf({3, 4}), randn({3, 4}, kFloat64), red));
    expect_like_torch("nll_loss_" + red, nll_loss(leaf({3, 4}), t3, -100, red));
    expect_like_torch("cross_entropy_" + red, cross_entropy(leaf({3, 4}), t3, -100, red));
    expect_like_torch("cross_entropy_1d_" + red, cross_entropy(leaf({4}), tensor(2), -100, red));
    expect_like_torch("cross_entropy_3d_" + red, cross_entropy(leaf({2, 3, 4}), tensor({{0, 1, 2, 1}, {2, 2, 0, 1}}), -100, red));
    expect_like_torch("cross_entropy_4d_" + red,
                      cross_entropy(leaf({2, 3, 2, 2}), tensor({{{0, 1}, {2, 1}}, {{2, 2}, {0, 1}}}), -100, red));
    expect_like_torch("cross_entropy_probs_" + red, cross_entropy(leaf({3, 4}), softmax(randn({3, 4}, kFloat64), 1), -100, red));
    expect_like_torch("cross_entropy_smoothing_" + red, cross_entropy(leaf({3, 4}), t3, -100, red, 0.1));
  }
  EXPECT_EQ(error_of([&] { mse_loss(ones({2}), ones({2}), "avg"); }),
            "[mse_loss] avg is not a valid value for reduction (expected \"mean\", \"sum\" or \"none\")");
  EXPECT_EQ(error_of([&] { cross_entropy(ones({2, 3}), tensor({0, 1}), -100, "mean", 1.5); }),
            "[cross_entropy] label_smoothing must be between 0.0 and 1.0. Got: 1.5");
  EXPECT_EQ(error_of([&] { cross_entropy(ones({2, 3, 4}), zeros({2, 5}, kInt64)); }),
            "[nll_loss] expected target size [2, 4] for input [2, 3, 4], got [2, 5]");
  // a (N) target against an (N, 1) input: PyTorch warns and broadcasts to (N, N); ag refuses
  EXPECT_THROW(mse_loss(ones({3, 1}), ones({3})), std::invalid_argument);
}

TEST(Traps, CrossEntropyOverSpatialDimsEqualsTheRowsItFlattensTo) {
  // (N, C, d) logits are the (N d) rows of (C) classes, in the target's order
  const Tensor x = randn({2, 3, 4}, kFloat64), t = tensor({{0, 1, 2, -100}, {2, 2, 0, 1}});
  const Tensor rows = x.permute({0, 2, 1}).reshape({-1, 3});
  for (const std::string red : {"mean", "sum", "none"}) {
    const Tensor want = cross_entropy(rows, t.reshape({-1}), -100, red);
    EXPECT_EQ(testutil::close_mismatches<double>(cross_entropy(x, t, -100, red), red == "none" ? want.reshape({2, 4}) : want, 1e-14, 1e-14), 0) << red;
  }
}

TEST(Traps, OpsThatReturnedTheirInputRecordPyTorchsNode) {
  // t() of 0-D/1-D, transpose of 0-D and max(s, dim) of 0-D returned the input itself (no node);
  // a reshape that copies was ViewBackward0
  expect_like_torch("t_0d", leaf({}).t());
  expect_like_torch("t_1d", leaf({3}).t());
  expect_like_torch("t_2d", leaf({2, 3}).t());
  expect_like_torch("transpose_0d", leaf({}).transpose(0, -1));
  expect_like_torch("max_dim_0d", max(leaf({}), 0).first);
  expect_like_torch("max_dim_0d_keepdim", max(leaf({}), 0, true).first);
  expect_like_torch("reshape_view", leaf({2, 3}).reshape({6}));
  expect_like_torch("reshape_copy", leaf({2, 3}).t().reshape({6}));
  // the gradient still flows through the new nodes
  Tensor s = leaf({});
  (max(s, 0).first * 3.0 + s.t() * 2.0).backward();
  EXPECT_EQ(s.grad().item(), 5.0);
}

TEST(Traps, AnEmptyTensorIsContiguousWhateverItsStrides) {
  // contiguous() of an empty strided view copied it (a CloneBackward0 node); PyTorch returns it
  const Tensor x = leaf({4, 3});
  const Tensor v = x.slice(1, 0, 0);
  EXPECT_EQ(v.is_contiguous(), traps_golden().at("contiguous_empty_view").at("is_contiguous").get<bool>());
  const Tensor c = v.contiguous();
  expect_like_torch("contiguous_empty_view", c);
  EXPECT_EQ(c.grad_fn(), v.grad_fn());  // the same tensor, no copy
  EXPECT_TRUE(leaf({2, 0, 4}).is_contiguous());
}

TEST(Traps, ElementwiseResultsTakePyTorchsLayout) {
  // results used to be contiguous whatever the inputs, so .view(-1) of exp(x.t()) worked where
  // PyTorch raises; now they are laid out as TensorIterator lays them out
  const Tensor a34 = randn({3, 4}, kFloat64), b34 = randn({3, 4}, kFloat64);
  const Tensor a43t = randn({4, 3}, kFloat64).t(), b43t = randn({4, 3}, kFloat64).t();
  const Tensor p234 = randn({4, 2, 3}, kFloat64).permute({1, 2, 0});
  const std::vector<std::pair<std::string, Tensor>> cases = {
      {"layout_exp_transposed", exp(a43t)},
      {"layout_scalar_mul_transposed", a43t * 2.0},
      {"layout_transposed_plus_transposed", a43t + b43t},
      {"layout_transposed_plus_contiguous", a43t + b34},
      {"layout_contiguous_plus_transposed", a34 + b43t},
      {"layout_transposed_plus_row", a43t + randn({4}, kFloat64)},
      {"layout_transposed_times_0d", a43t * tensor(2.0, kFloat64)},
      {"layout_permuted_neg", -p234},
      {"layout_permuted_plus_broadcast", p234 + randn({3, 1}, kFloat64)},
      {"layout_sliced_plus_one", randn({3, 8}, kFloat64).slice(1, std::nullopt, std::nullopt, 2) + 1.0},
      {"layout_transposed_gt", a43t > 0.0},
      {"layout_expanded_times_transposed", randn({3, 1}, kFloat64).expand({3, 4}) * a43t},
  };
  for (const auto& [name, y] : cases) expect_layout_like_torch(name, y);
  // the values are those of the contiguous computation
  EXPECT_EQ(testutil::bit_mismatches<double>(exp(a43t), exp(a43t.contiguous())), 0);
  EXPECT_EQ(testutil::bit_mismatches<double>(a43t + b34, a43t.contiguous() + b34), 0);
}

TEST(Traps, IntegerDtypeRulesAsPyTorch) {
  // relu of int64 gave float32, an integer power float32, gelu computed integers
  const Tensor i = tensor({-2, 0, 3});
  EXPECT_EQ(relu(i).dtype(), kInt64);
  EXPECT_EQ(relu(i).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 3}));
  const Tensor p = pow(tensor({2, -3, 5}), tensor({3, 2, 0}));
  EXPECT_EQ(p.dtype(), kInt64);
  EXPECT_EQ(p.to_vector<int64_t>(), (std::vector<int64_t>{8, 9, 1}));
  EXPECT_EQ(error_of([&] { pow(tensor({2}), tensor({-1})); }), "[pow] Integers to negative integer powers are not allowed.");
  EXPECT_EQ(pow(tensor({2}), tensor({0.5})).dtype(), kFloat32);
  EXPECT_EQ(pow(tensor({2, 3}), 2.0).to_vector<int64_t>(), (std::vector<int64_t>{4, 9}));  // torch: t.pow(2)
  EXPECT_EQ(pow(tensor({true, false}), 2.0).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_THROW(pow(tensor({2}), -1.0), std::invalid_argument);
  EXPECT_EQ(pow(tensor({2}), 0.5).dtype(), kFloat32);
  EXPECT_THROW(gelu(i), std::invalid_argument);
  EXPECT_EQ(div(i, tensor({2})).dtype(), kFloat32);  // true division
}

TEST(Traps, AZeroDimTensorDoesNotPromoteADimensionedOne) {
  // float32 x * tensor(2.0, float64) was float64; PyTorch keeps float32 (a 0-dim tensor decides
  // only when its category is higher: int64 x + tensor(1.5) is float32)
  const Tensor f32 = ones({2}), f64s = tensor(2.0, kFloat64), i = tensor({1, 2});
  EXPECT_EQ((f32 * f64s).dtype(), kFloat32);
  EXPECT_EQ((f64s * f32).dtype(), kFloat32);
  EXPECT_EQ((i + f64s).dtype(), kFloat64);
  EXPECT_EQ((i + tensor(1.5)).dtype(), kFloat32);
  EXPECT_EQ((f32 + tensor(3)).dtype(), kFloat32);
  EXPECT_EQ((ones({2}, kFloat64) + tensor(1.0)).dtype(), kFloat64);
  EXPECT_EQ((tensor({true}) + tensor(3)).dtype(), kInt64);
  EXPECT_EQ((f64s * tensor(2.0)).dtype(), kFloat64);  // both 0-dim: ordinary promotion
  EXPECT_EQ(maximum(f32, f64s).dtype(), kFloat32);
  EXPECT_EQ(where(tensor({true, false}), f32, f64s).dtype(), kFloat32);
  EXPECT_EQ(result_type(f32, f64s), kFloat32);
  // the gradient reaches the 0-dim float64 operand in its own dtype
  Tensor s = tensor(2.0, kFloat64).requires_grad_();
  sum(f32 * s).backward();
  EXPECT_EQ(s.grad().dtype(), kFloat64);
  EXPECT_EQ(s.grad().item(), 2.0);
}

// ---- found by reviewing this round's changes against PyTorch 1.13 ----

namespace {

// A golden list of numbers, "inf" / "-inf" / "nan" written as text.
std::vector<double> numbers(const nlohmann::json& j) {
  std::vector<double> v;
  for (const auto& e : j) v.push_back(e.is_string() ? std::stod(e.get<std::string>()) : e.get<double>());
  return v;
}

void expect_numbers(const Tensor& got, const nlohmann::json& want, double rtol) {
  const std::vector<double> g = got.to_vector<double>(), w = numbers(want);
  ASSERT_EQ(g.size(), w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!std::isfinite(w[i])) EXPECT_EQ(g[i], w[i]) << "element " << i;
    else EXPECT_NEAR(g[i], w[i], rtol * std::abs(w[i]) + 1e-7) << "element " << i;
  }
}

}  // namespace

TEST(Traps, BinaryCrossEntropyHasAFiniteGradientAtZeroAndOne) {
  // a saturated sigmoid (exactly 1.0 in float32) gave NaN gradients: the composed rule was 0/0
  Tensor z = tensor({20.0, -1.0}).requires_grad_();
  binary_cross_entropy(sigmoid(z), tensor({1.0, 1.0})).backward();
  expect_numbers(z.grad(), traps_golden().at("bce_saturated").at("dz"), 1e-6);
  Tensor x = tensor({0.0, 1.0, 0.0, 1.0}, kFloat64).requires_grad_();
  binary_cross_entropy(x, tensor({0.0, 1.0, 1.0, 0.0}, kFloat64), {}, "sum").backward();
  expect_numbers(x.grad(), traps_golden().at("bce_extremes").at("dx"), 1e-12);
  // a weight may broadcast to the input's shape, never beyond it
  EXPECT_THROW(binary_cross_entropy(full({3}, 0.5), full({3}, 0.5), ones({2, 3})), std::invalid_argument);
  EXPECT_THROW(binary_cross_entropy_with_logits(ones({3}), ones({3}), {}, "mean", ones({2, 3})), std::invalid_argument);
  EXPECT_THROW(binary_cross_entropy(full({2}, 0.5), tensor({1, 0})), std::invalid_argument);  // int64 target
  EXPECT_THROW(cross_entropy(ones({2, 3}), full({2, 3}, 0.3), 0), std::invalid_argument);  // ignore_index, probabilities
}

TEST(Traps, PowOfTensorsHasPyTorchsGradientAtZero) {
  // 0^0 and 0^2 gave NaN / -inf gradients; PyTorch masks them to 0
  Tensor a = tensor({0.0, 0.0, 2.0, 0.0}, kFloat64).requires_grad_();
  Tensor b = tensor({0.0, 2.0, 0.0, -1.0}, kFloat64).requires_grad_();
  sum(pow(a, b)).backward();
  expect_numbers(a.grad(), traps_golden().at("pow_grad_at_zero").at("da"), 1e-12);
  expect_numbers(b.grad(), traps_golden().at("pow_grad_at_zero").at("db"), 1e-12);
}

TEST(Traps, InfiniteOrHugeScalarsAreFloats) {
  // a whole double (inf, 1e30) turned an int64 tensor's scalar into int64: undefined behaviour
  const auto& want = traps_golden().at("huge_scalars");
  const Tensor t = tensor({1, 2});
  std::vector<int64_t> gt_want;
  for (bool b : want.at("gt").get<std::vector<bool>>()) gt_want.push_back(b);
  EXPECT_EQ(gt(t, 1e30).to(kInt64).to_vector<int64_t>(), gt_want);
  expect_numbers(t * INFINITY, want.at("times_inf"), 0);
  EXPECT_EQ(dtype_name((t + 1e30).dtype()), want.at("plus_huge_dtype").get<std::string>());
  expect_numbers(clamp(t, std::nullopt, 1e30), want.at("clamp_huge"), 0);
}

TEST(Traps, InPlaceOpsOnOverlappingMemory) {
  // x.add_(x.t()) read elements it had already written; an expanded tensor written in place
  // wrote one element several times. The first now reads a copy (PyTorch refuses it), the second
  // is PyTorch's error.
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}});
  const Tensor want = x + x.t();
  x.add_(x.t());
  EXPECT_EQ(testutil::bit_mismatches<float>(x, want), 0);
  Tensor y = tensor({{1.0, 2.0}, {3.0, 4.0}});
  const Tensor want_mul = y * y.select(0, 0);
  y.mul_(y.select(0, 0));
  EXPECT_EQ(testutil::bit_mismatches<float>(y, want_mul), 0);
  Tensor base = ones({1, 3});
  Tensor e = base.expand({2, 3});
  EXPECT_NE(error_of([&] { e.mul_(2.0); }).find("more than one element of the written-to tensor refers to a single memory location"),
            std::string::npos);
  EXPECT_THROW(e.add_(1.0), std::runtime_error);
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(Traps, BoolArithmeticAsPyTorch) {
  const Tensor m = tensor({true, false, true}), n = tensor({true, true, false});
  EXPECT_EQ((m + n).dtype(), kBool);
  EXPECT_EQ((m + n).to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ((m * n).to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ((m + 1.0).dtype(), kInt64);
  EXPECT_NE(error_of([&] { m - n; }).find("Subtraction, the `-` operator, with a bool tensor is not supported"), std::string::npos);
  EXPECT_THROW(1.0 - m, std::invalid_argument);
  EXPECT_NE(error_of([&] { -m; }).find("Negation, the `-` operator, on a bool tensor is not supported"), std::string::npos);
}

TEST(Traps, LinearAndMatmulEdgeCases) {
  // in_features 0 on a 3-D input could not infer its rows; masked_fill's result is contiguous as
  // PyTorch's (it followed the input's transposed layout)
  EXPECT_EQ(linear(zeros({2, 3, 0}), zeros({4, 0}), ones({4})).to_vector<float>(), std::vector<float>(24, 1.0f));
  EXPECT_EQ(causal_qk_softmax(zeros({1, 1, 0}).expand({1, 3, 0}), zeros({1, 3, 0})).shape(), Size({1, 3, 3}));
  const Tensor mf = masked_fill(randn({4, 3}).t(), tensor({true, false, true, false}), 0.0);
  const auto& want = traps_golden().at("layout_masked_fill_transposed");
  EXPECT_EQ(strides_of(mf), want.at("strides").get<std::vector<int64_t>>());
}

// ---- layout where an op copies or converts first (PyTorch's preserve_format) ----

TEST(Traps, ToAndCloneKeepTheLayoutAsPyTorchsPreserveFormat) {
  // to(dtype) and clone() made contiguous copies; PyTorch keeps a dense input's strides and gives
  // any other input dense strides in the order of its own. contiguous() stays row-major.
  const Tensor f43t = randn({4, 3}).requires_grad_().t();
  const Tensor sliced = randn({3, 8}, kFloat64).slice(1, std::nullopt, std::nullopt, 2);
  const Tensor perm_sliced = randn({4, 2, 6}, kFloat64).permute({1, 2, 0}).slice(1, std::nullopt, std::nullopt, 2);
  const Tensor expanded = randn({3, 1}, kFloat64).expand({3, 4});
  const Tensor p234 = randn({4, 2, 3}, kFloat64).permute({1, 2, 0});
  const std::vector<std::pair<std::string, Tensor>> cases = {
      {"layout_to_transposed", f43t.to(kFloat64)},
      {"layout_to_sliced", sliced.to(kFloat32)},
      {"layout_to_permuted_sliced", perm_sliced.to(kFloat32)},
      {"layout_to_expanded", expanded.to(kFloat32)},
      {"layout_to_permuted", p234.to(kFloat32)},
      {"layout_clone_transposed", f43t.clone()},
      {"layout_clone_sliced", sliced.clone()},
      {"layout_clone_permuted_sliced", perm_sliced.clone()},
      {"layout_clone_expanded", expanded.clone()},
      {"layout_clone_permuted", p234.clone()},
      {"layout_contiguous_transposed", f43t.contiguous()},
      {"layout_contiguous_permuted_sliced", perm_sliced.contiguous()},
      {"layout_reshape_copy_transposed", randn({4, 3}, kFloat64).t().reshape({2, 6})},
  };
  for (const auto& [name, y] : cases) expect_layout_like_torch(name, y);
  // the copies hold the input's values, whatever their layout
  for (const Tensor& x : {f43t.detach(), sliced, perm_sliced, expanded, p234}) {
    EXPECT_EQ(testutil::bit_mismatches<double>(x.to(kFloat64).clone().contiguous(), x.to(kFloat64).contiguous()), 0);
    EXPECT_EQ(x.to(kFloat32).to_vector<float>(), x.contiguous().to(kFloat32).to_vector<float>());
    EXPECT_EQ(x.clone().to_vector<double>(), x.to_vector<double>());
    EXPECT_TRUE(clone(x, MemoryFormat::Contiguous).is_contiguous());
    EXPECT_FALSE(clone(x, MemoryFormat::Contiguous).shares_storage(x));
  }
  // contiguous() of a contiguous tensor is the tensor itself; to() of its own dtype too
  const Tensor c = randn({3, 4});
  EXPECT_EQ(c.contiguous().impl(), c.impl());
  EXPECT_EQ(c.to(kFloat32).impl(), c.impl());
  // the gradient flows back through the copies in the input's layout
  Tensor w = randn({4, 3}, kFloat64).requires_grad_();
  sum(w.t().clone() * 2.0 + w.t().to(kFloat32).to(kFloat64) * 3.0).backward();
  EXPECT_EQ(w.grad().to_vector<double>(), std::vector<double>(12, 5.0));
}

TEST(Traps, OpsThatConvertDtypeFirstKeepPyTorchsLayout) {
  // int -> float unary ops, mixed-dtype binaries, where and flip gave contiguous results where
  // PyTorch keeps the (transposed, permuted) layout of the input
  const Tensor a34 = randn({3, 4}, kFloat64), b34 = randn({3, 4}, kFloat64);
  const Tensor a43t = randn({4, 3}, kFloat64).t(), b43t = randn({4, 3}, kFloat64).t();
  const Tensor p234 = randn({4, 2, 3}, kFloat64).permute({1, 2, 0});
  const Tensor sliced = randn({3, 8}, kFloat64).slice(1, std::nullopt, std::nullopt, 2);
  const Tensor i43t = arange(12).view({4, 3}).t();
  const Tensor cond43t = gt(randn({4, 3}), 0.0).t();
  const std::vector<std::pair<std::string, Tensor>> cases = {
      {"layout_exp_int_transposed", exp(i43t)},
      {"layout_int_div_scalar_transposed", i43t / 2.0},
      {"layout_int_times_fraction_transposed", i43t * 2.5},
      {"layout_int_neg_transposed", -i43t},
      {"layout_int_pow_half_transposed", pow(i43t, 0.5)},
      {"layout_int_clamp_fraction_transposed", clamp(i43t, 0.5)},
      {"layout_f32t_plus_f64t", a43t.to(kFloat32) + b43t},
      {"layout_f32t_plus_f64", a43t.to(kFloat32) + b34},
      {"layout_f32_plus_f64t", a34.to(kFloat32) + b43t},
      {"layout_int_plus_f64t", i43t + b43t},
      {"layout_minimum_f32t_f64t", minimum(a43t.to(kFloat32), b43t)},
      {"layout_gt_f32t_f64t", gt(a43t.to(kFloat32), b43t)},
      {"layout_where_transposed", where(cond43t, a43t.to(kFloat32), b43t)},
      {"layout_where_scalar", where(cond43t, a43t, 0.0)},
      {"layout_where_contiguous_cond", where(gt(randn({3, 4}), 0.0), a43t, b43t)},
      {"layout_where_int_float", where(cond43t, i43t, a43t.to(kFloat32))},
      {"layout_flip0_transposed", a43t.flip({0})},
      {"layout_flip01_transposed", a43t.flip({0, 1})},
      {"layout_flip_permuted", p234.flip({1})},
      {"layout_flip_sliced", sliced.flip({1})},
      {"layout_roll_transposed", a43t.roll({0}, {0})},
      {"layout_repeat_transposed", a43t.repeat({1, 1})},
  };
  for (const auto& [name, y] : cases) expect_layout_like_torch(name, y);
  // the values are those of the contiguous computation
  EXPECT_EQ(testutil::bit_mismatches<float>(exp(i43t), exp(i43t.contiguous())), 0);
  EXPECT_EQ(testutil::bit_mismatches<double>(a43t.to(kFloat32) + b43t, a43t.contiguous().to(kFloat32) + b43t.contiguous()), 0);
  EXPECT_EQ(testutil::bit_mismatches<double>(where(cond43t, a43t, b43t), where(cond43t.contiguous(), a43t.contiguous(), b43t.contiguous())), 0);
  EXPECT_EQ(testutil::bit_mismatches<double>(p234.flip({1, 2}), p234.contiguous().flip({1, 2})), 0);
  EXPECT_EQ(testutil::bit_mismatches<double>(sliced.flip({0}), sliced.contiguous().flip({0})), 0);
}

TEST(Traps, AContiguousLeafGetsAContiguousGradient) {
  // with clone() keeping layouts, a gradient reaching a leaf as a transposed view must still be
  // accumulated in the leaf's layout, as PyTorch's AccumulateGrad does (optimizers need it)
  Tensor w = randn({4, 3}).requires_grad_();
  sum(w.t() * randn({3, 4})).backward();
  EXPECT_EQ(strides_of(w.grad()), traps_golden().at("leaf_grad_through_t").at("strides").get<std::vector<int64_t>>());
}

// ---- values PyTorch 1.13 gives where a review found ag differed ----

TEST(Traps, KlDivAtNonPositiveTargetsIsPyTorchsXlogy) {
  // ag gave -0.5 or 1 where PyTorch's xlogy(t, t) gives NaN (t < 0) and 0 (t = 0); the gradients too
  const auto& want = traps_golden().at("kl_div_nonpositive_target");
  Tensor x = tensor({-1.0, -0.5, 0.3, 0.2, -0.7}, kFloat64).requires_grad_();
  Tensor t = tensor({-0.5, 0.0, 0.5, 1.0, 0.25}, kFloat64).requires_grad_();
  const Tensor loss = kl_div(x, t, "none");
  sum(loss * tensor({1.0, 2.0, 3.0, 4.0, 5.0}, kFloat64)).backward();
  auto same = [](const Tensor& got, const nlohmann::json& w) {  // NaN where PyTorch has NaN, else close
    const std::vector<double> g = got.to_vector<double>(), e = numbers(w);
    ASSERT_EQ(g.size(), e.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(e[i])) EXPECT_TRUE(std::isnan(g[i])) << "element " << i << ": " << g[i];
      else EXPECT_NEAR(g[i], e[i], 1e-12) << "element " << i;
    }
  };
  same(loss, want.at("loss"));
  same(x.grad(), want.at("dx"));
  same(t.grad(), want.at("dt"));
  EXPECT_EQ(loss.grad_fn()->name(), want.at("grad_fn").get<std::string>());
  // where the target is positive, first and second derivatives are those of the formula
  const Tensor tp = tensor({0.2, 0.5, 0.3}, kFloat64).requires_grad_(), xp = tensor({-1.0, -0.4, -2.0}, kFloat64).requires_grad_();
  auto f = [](const std::vector<Tensor>& v) { return kl_div(v[0], v[1], "sum"); };
  EXPECT_TRUE(gradcheck(f, {xp, tp}));
  EXPECT_TRUE(gradgradcheck(f, {xp, tp}));
}

TEST(Traps, BatchNorm1dRefusesMixedDtypesAsPyTorch) {
  // float64 input with float32 parameters (or statistics) computed in float64; PyTorch raises
  const auto& want = traps_golden().at("batchnorm_mixed_dtype_raises");
  struct Case {
    std::string name;
    std::function<nn::BatchNorm1d()> make;
    DType input;
  };
  const std::vector<Case> cases = {
      {"f64_input_f32_module", [] { return nn::BatchNorm1d(3); }, kFloat64},
      {"f32_input_f64_module", [] { nn::BatchNorm1d bn(3); bn.to(kFloat64); return bn; }, kFloat32},
      {"f64_input_no_affine", [] { return nn::BatchNorm1d(3, 1e-5, 0.1, false); }, kFloat64},
      {"f64_input_untracked", [] { return nn::BatchNorm1d(3, 1e-5, 0.1, true, false); }, kFloat64},
      {"int64_input", [] { return nn::BatchNorm1d(3, 1e-5, 0.1, false, false); }, kInt64},
  };
  int checked = 0;
  for (const Case& c : cases) {
    for (const std::string mode : {"train", "eval"}) {
      SCOPED_TRACE(c.name + "_" + mode);
      nn::BatchNorm1d bn = c.make();
      bn.train(mode == "train");
      const bool raised = error_of([&] { bn(ones({4, 3}, c.input)); }) != "(no exception)";
      EXPECT_EQ(raised, want.at(c.name + "_" + mode).get<bool>());
      ++checked;
    }
  }
  nn::BatchNorm1d stateless(3, 1e-5, 0.1, false, false);
  EXPECT_EQ(stateless(ones({4, 3}, kFloat64)).dtype(), kFloat64);
  EXPECT_FALSE(want.at("f64_input_stateless").get<bool>());
  EXPECT_EQ(checked + 1, static_cast<int>(want.size()));
  nn::BatchNorm1d bn(3);
  EXPECT_EQ(error_of([&] { bn(ones({4, 3}, kFloat64)); }),
            "[BatchNorm1d] mixed dtype: input is torch.float64 but weight is torch.float32; convert the module (.to) or the "
            "input to one dtype");
  EXPECT_THROW(bn(ones({4, 3}, kFloat64)), std::invalid_argument);
}

TEST(Traps, LinearTakesABiasOfShapeOneOrZeroDims) {
  // linear refused a (1) or () bias; F.linear broadcasts it over the out features
  const Tensor x0 = arange(12, kFloat64).view({3, 4}) / 10.0 - 0.5;
  const Tensor w0 = arange(20, kFloat64).view({5, 4}) / 20.0 - 0.3;
  int checked = 0;
  for (const auto& [key, b0] : {std::pair{std::string("1"), tensor({0.7}, kFloat64)}, std::pair{std::string("0d"), tensor(0.7, kFloat64)}}) {
    for (const std::string xkey : {"2d", "1d", "3d"}) {
      const std::string name = "linear_bias_" + key + "_" + xkey;
      SCOPED_TRACE(name);
      const auto& want = traps_golden().at(name);
      Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
      const Tensor xin = xkey == "2d" ? x : xkey == "1d" ? x[1] : x.view({1, 3, 4});
      const Tensor y = linear(xin, w, b);
      sum(y * y).backward();
      EXPECT_EQ(y.shape().vec(), want.at("shape").get<std::vector<int64_t>>());
      EXPECT_EQ(y.grad_fn()->name(), want.at("grad_fn").get<std::string>());
      expect_numbers(y.reshape({-1}), want.at("y"), 1e-12);
      expect_numbers(x.grad().reshape({-1}), want.at("dx"), 1e-12);
      expect_numbers(w.grad().reshape({-1}), want.at("dw"), 1e-12);
      const auto& db = want.at("db");  // a list for the (1) bias, a number for the 0-dim one
      expect_numbers(b.grad().reshape({-1}), db.is_array() ? db : nlohmann::json::array({db}), 1e-12);
      EXPECT_EQ(b.grad().shape(), b.shape());
      auto f = [&](const std::vector<Tensor>& v) {
        return linear(xkey == "2d" ? v[0] : xkey == "1d" ? v[0][1] : v[0].view({1, 3, 4}), v[1], v[2]);
      };
      EXPECT_TRUE(gradcheck(f, {x0.clone().requires_grad_(), w0.clone().requires_grad_(), b0.clone().requires_grad_()}));
      EXPECT_TRUE(gradgradcheck(f, {x0.clone().requires_grad_(), w0.clone().requires_grad_(), b0.clone().requires_grad_()}));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6);
  // a bias of another length is still refused
  EXPECT_THROW(linear(x0, w0, ones({2}, kFloat64)), std::invalid_argument);
  EXPECT_THROW(linear(x0, w0, ones({1, 5}, kFloat64)), std::invalid_argument);  // PyTorch broadcasts a 2-D bias; ag refuses it
}

TEST(Traps, IndexAddTakesZeroDimIndexInputAndSource) {
  // a 0-dim index acts as one index; a 0-dim input counts as 1-D of size 1, and so does a 0-dim
  // source of a 1-D input
  {
    const auto& want = traps_golden().at("index_add_0d_index");
    Tensor t = arange(6, kFloat64).view({3, 2}).requires_grad_();
    Tensor s = tensor({{10.0, 20.0}}, kFloat64).requires_grad_();
    const Tensor y = index_add(t, 0, tensor(1), s, 2.0);
    sum(y * arange(1.0, 7.0, 1.0, kFloat64).view({3, 2})).backward();
    expect_numbers(y.reshape({-1}), want.at("y"), 1e-12);
    expect_numbers(t.grad().reshape({-1}), want.at("dt"), 1e-12);
    expect_numbers(s.grad().reshape({-1}), want.at("ds"), 1e-12);
    EXPECT_EQ(y.grad_fn()->name(), want.at("grad_fn").get<std::string>());
  }
  {
    const auto& want = traps_golden().at("index_add_0d_source");
    Tensor t = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
    Tensor s = tensor(5.0, kFloat64).requires_grad_();
    const Tensor y = index_add(t, 0, tensor(2), s, 3.0);
    sum(y * tensor({1.0, 2.0, 3.0}, kFloat64)).backward();
    expect_numbers(y, want.at("y"), 1e-12);
    expect_numbers(t.grad(), want.at("dt"), 1e-12);
    EXPECT_EQ(s.grad().shape().vec(), want.at("ds_shape").get<std::vector<int64_t>>());
    EXPECT_NEAR(s.grad().item(), want.at("ds").get<double>(), 1e-12);
  }
  {
    const auto& want = traps_golden().at("index_add_0d_input");
    Tensor t = tensor(1.5, kFloat64).requires_grad_();
    Tensor s = tensor(5.0, kFloat64).requires_grad_();
    const Tensor y = index_add(t, 0, tensor(0), s);
    (y * 3.0).backward();
    EXPECT_EQ(y.shape().vec(), want.at("shape").get<std::vector<int64_t>>());
    EXPECT_NEAR(y.item(), want.at("y").get<double>(), 1e-12);
    EXPECT_NEAR(t.grad().item(), want.at("dt").get<double>(), 1e-12);
    EXPECT_NEAR(s.grad().item(), want.at("ds").get<double>(), 1e-12);
  }
  // first and second derivatives of each form
  auto check = [](const char* what, const GradcheckFn& f, std::vector<Tensor> in) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(gradcheck(f, in));
    EXPECT_TRUE(gradgradcheck(f, in));
  };
  check("0-dim index", [](const std::vector<Tensor>& v) { return index_add(v[0], 1, tensor(0), v[1], 1.5) * v[0]; },
        {randn({3, 2}, kFloat64).requires_grad_(), randn({3, 1}, kFloat64).requires_grad_()});
  check("0-dim source", [](const std::vector<Tensor>& v) { return index_add(v[0], 0, tensor({1}), v[1]) * v[0]; },
        {randn({3}, kFloat64).requires_grad_(), randn({}, kFloat64).requires_grad_()});
  check("0-dim input", [](const std::vector<Tensor>& v) { return index_add(v[0], -1, tensor(0), v[1] * v[1], 2.0); },
        {randn({}, kFloat64).requires_grad_(), randn({1}, kFloat64).requires_grad_()});
  // a 0-dim source of a 2-D input stays an error (PyTorch: "select() cannot be applied to a 0-dim tensor")
  EXPECT_THROW(index_add(zeros({3, 2}), 0, tensor(1), tensor(5.0f)), std::invalid_argument);
  EXPECT_THROW(index_add(zeros({}), 0, tensor(1), tensor(5.0f)), std::out_of_range);
}

TEST(Traps, PowOfTwoBoolTensorsIsPyTorchsError) {
  // it computed; PyTorch has no bool pow kernel (a bool to an integer power is int64, as before)
  const auto& want = traps_golden().at("pow_bool");
  const std::string msg = error_of([] { pow(tensor({true, false}), tensor({true, true})); });
  EXPECT_NE(msg.find(want.at("error").get<std::string>()), std::string::npos) << msg;
  EXPECT_EQ(msg, "[pow] \"pow\" not implemented for 'Bool' (shapes [2] and [2])");
  EXPECT_THROW(pow(tensor(true), tensor({true})), std::invalid_argument);
  const Tensor p = pow(tensor({true, false}), 2.0);
  EXPECT_EQ(dtype_name(p.dtype()), want.at("bool_int_power_dtype").get<std::string>());
  EXPECT_EQ(p.to_vector<int64_t>(), want.at("bool_int_power").get<std::vector<int64_t>>());
}

TEST(Traps, AnUndefinedTensorNamesTheOpNotTheAccessor) {
  // these named "[dim]", "[shape]" or "[dtype]", the accessor the op happened to call first
  const Tensor u, x = ones({3, 2}), i = tensor({0});
  const std::string tail = "] called on an undefined tensor (a default-constructed Tensor, or .grad() before any backward)";
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"index_select", [&] { index_select(u, 0, i); }},
      {"index_select", [&] { index_select(x, 0, u); }},
      {"gather", [&] { gather(x, 0, u); }},
      {"scatter_add", [&] { scatter_add(x, 0, u, x); }},
      {"embedding", [&] { embedding(u, i); }},
      {"embedding", [&] { embedding(x, u); }},
      {"index_add", [&] { index_add(u, 0, i, ones({1, 2})); }},
      {"index_add", [&] { index_add(x, 0, u, ones({1, 2})); }},
      {"index_add", [&] { index_add(x, 0, i, u); }},
      {"t", [&] { t(u); }},
      {"t", [&] { u.t(); }},
      {"view", [&] { u.view({2}); }},
      {"reshape", [&] { u.reshape({2}); }},
      {"transpose", [&] { u.transpose(0, 1); }},
      {"permute", [&] { u.permute({0}); }},
      {"unsqueeze", [&] { u.unsqueeze(0); }},
      {"squeeze", [&] { u.squeeze(); }},
      {"squeeze", [&] { u.squeeze(0); }},
      {"expand", [&] { u.expand({2}); }},
      {"slice", [&] { u.slice(0, 0, 1); }},
      {"narrow", [&] { u.narrow(0, 0, 1); }},
      {"select", [&] { u[0]; }},
      {"logical_not", [&] { logical_not(u); }},
      {"to", [&] { u.to(kFloat64); }},
      {"clone", [&] { u.clone(); }},
      {"contiguous", [&] { u.contiguous(); }},
      {"BatchNorm1d", [&] { nn::BatchNorm1d bn(2); bn(u); }},
      {"load_state_dict", [&] { nn::BatchNorm1d bn(2); bn.load_state_dict({{"weight", u}, {"bias", ones({2})}}, false); }},
  };
  for (const auto& [op, f] : cases) {
    SCOPED_TRACE(op);
    EXPECT_EQ(error_of(f), "[" + op + tail);
    EXPECT_THROW(f(), std::logic_error);
  }
}
