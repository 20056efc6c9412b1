// gradcheck itself, and ops checked with broadcasting and size-1 dims (every op of the op table on
// strided inputs and with a node reused on two paths: tests/test_op_table.cpp).
#include <gtest/gtest.h>

#include "test_util.h"

using namespace ag;


TEST(Gradcheck, PassesOnACorrectBackwardAndReportsTheWorstError) {
  Tensor x = tensor({0.5, -1.0, 2.0}, kFloat64).requires_grad_();
  GradcheckResult r = gradcheck_result([](const std::vector<Tensor>& in) { return tanh(in[0]) * in[0]; }, {x});
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_LT(r.max_error, 1e-8);
}

TEST(Gradcheck, CatchesAWrongBackwardAndSaysWhere) {
  // y = x^2 with a deliberately wrong derivative (x instead of 2x)
  auto bad_square = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    Tensor y;
    {
      NoGradGuard g;
      y = x * x;
    }
    record(y, "BadSquareBackward", {x}, [s = SavedTensor(x)](const Tensor& g) -> Grads { return {g * s.get()}; });
    return y;
  };
  Tensor x = tensor({1.0, 3.0}, kFloat64).requires_grad_();
  GradcheckResult r = gradcheck_result(bad_square, {x});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("with respect to input 0 (shape [2]), element 0: numerical 2"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("analytical 1"), std::string::npos) << r.message;
  EXPECT_NEAR(r.max_error, 3.0, 1e-6);
  EXPECT_THROW(gradcheck(bad_square, {x}), std::runtime_error);
}

TEST(Gradcheck, RefusesFloat32InputsLikePyTorch) {
  Tensor x = ones({2}).requires_grad_();
  EXPECT_THROW(gradcheck_result([](const std::vector<Tensor>& in) { return in[0] * 2.0; }, {x}), std::invalid_argument);
}

TEST(Gradcheck, InputsThatDoNotRequireGradAreNotChecked) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor c = tensor({3.0, 4.0}, kFloat64);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return in[0] * in[1]; }, {x, c}));
}

TEST(OpsGradcheck, BinaryOpsBroadcastSizeOneDimsBothWays) {
  Tensor a = tensor({{0.5}, {1.5}, {-0.7}}, kFloat64).requires_grad_();                   // (3, 1)
  Tensor b = tensor({{{0.3, -1.2, 2.0, 0.9}}}, kFloat64).requires_grad_();               // (1, 1, 4)
  Tensor s = tensor({0.8}, kFloat64).requires_grad_();                                   // (1)
  Tensor p = tensor({{1.2, 0.6, 1.9, 0.7}}, kFloat64).requires_grad_();                  // (1, 4), positive
  std::vector<std::pair<std::string, GradcheckFn>> fns = {
      {"add", [](auto& x) { return x[0] + x[1] + x[2]; }},
      {"sub", [](auto& x) { return x[0] - x[1] - x[2]; }},
      {"mul", [](auto& x) { return x[0] * x[1] * x[2]; }},
      {"div", [](auto& x) { return x[0] / x[3] / (x[2] + 2.0); }},
      {"pow", [](auto& x) { return pow(x[3], x[0]); }},
      {"masked_fill", [](auto& x) { return masked_fill(x[0] * x[1], tensor({{1, 0, 0, 1}}, kBool), 0.0); }},
      {"matmul_bcast_batch", [](auto& x) { return matmul(x[0].unsqueeze(0).expand({2, 3, 1}), x[1].squeeze(0)); }},
  };
  for (auto& [name, fn] : fns) {
    SCOPED_TRACE(name);
    GradcheckResult r = gradcheck_result(fn, {a, b, s, p});
    EXPECT_TRUE(r.ok) << r.message;
  }
}

TEST(OpsGradcheck, ReductionsAndSoftmaxOverSizeOneDims) {
  Tensor x = tensor({{{0.3, -1.2, 2.0}}, {{0.9, 0.1, -0.4}}}, kFloat64).requires_grad_();  // (2, 1, 3)
  std::vector<GradcheckFn> fns = {
      [](auto& v) { return sum(v[0], {1}); },
      [](auto& v) { return mean(v[0], {0, 1}, true); },
      [](auto& v) { return softmax(v[0], 1); },
      [](auto& v) { return log_softmax(v[0], 0); },
      [](auto& v) { return max(v[0], 2).first; },
      [](auto& v) { return layer_norm(v[0], {1, 3}); },
  };
  for (std::size_t i = 0; i < fns.size(); ++i) {
    SCOPED_TRACE(i);
    GradcheckResult r = gradcheck_result(fns[i], {x});
    EXPECT_TRUE(r.ok) << r.message;
  }
}

TEST(OpsGradcheck, MaxSharesTheGradientAmongTiesLikePyTorch) {
  Tensor x = tensor({1.0, 3.0, 3.0}, kFloat64).requires_grad_();
  max(x).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0.5, 0.5}));
}

TEST(Dropout, GradcheckWithTheMaskHeldFixed) {
  Tensor x = tensor({{0.5, -1.0, 2.0}, {0.3, 0.7, -0.2}}, kFloat64).requires_grad_();
  Tensor mask = tensor({{1, 0, 1}, {0, 1, 1}}, kBool);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return dropout_with_mask(in[0], mask, 0.25); }, {x}));
  Tensor y = dropout_with_mask(x, mask, 0.25);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0.5 / 0.75, 0, 2.0 / 0.75, 0, 0.7 / 0.75, -0.2 / 0.75}));
}

TEST(Dropout, MaskFromTheGeneratorMatchesPyTorchForSeed123) {
  // torch-rng.md: manual_seed(123); Dropout(0.3)(ones(6, 6)) zeros flat indices 8, 10, 16, 26,
  // every other element is f32(1 / f32(0.7)) = 1.4285715
  manual_seed(123);
  const auto y = dropout(ones({6, 6}), 0.3).to_vector<float>();
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (i == 8 || i == 10 || i == 16 || i == 26) EXPECT_EQ(y[i], 0.0f) << i;
    else EXPECT_EQ(y[i], 1.0f / 0.7f) << i;
  }
}

TEST(Dropout, IdentityCasesAndAllDropped) {
  Tensor x = tensor({1.0, -2.0, 3.0});
  EXPECT_TRUE(dropout(x, 0.5, /*training=*/false).shares_storage(x));
  EXPECT_TRUE(dropout(x, 0.0).shares_storage(x));
  EXPECT_EQ(dropout(x, 1.0).to_vector<float>(), (std::vector<float>{0, -0.0f, 0}));
}

TEST(Rand, SeedGivesSeed000sWQuery) {
  manual_seed(123);
  Tensor w = rand({3, 3});
  EXPECT_EQ(repr(w), "tensor([[0.2961, 0.5166, 0.2517],\n        [0.6886, 0.0740, 0.8665],\n        [0.1366, 0.1025, 0.1841]])");
}
