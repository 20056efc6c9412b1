// causal_softmax, the fused kernel of the causal attention weights, against its reference: the
// composed softmax(masked_fill(scores, triu(ones), -inf) / divisor, -1). Forward values and
// gradients must be the same bits, and the fused backward must pass gradcheck on its own.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "test_util.h"

using namespace ag;

namespace {

using testutil::bit_mismatches;

Tensor composed(const Tensor& scores, double divisor) {
  const int64_t tq = scores.size(-2), tk = scores.size(-1);
  Tensor mask = triu(ones({tq, tk}), 1).bool_();
  return softmax(masked_fill(scores, mask, -INFINITY) / divisor, -1);
}

// Forward and backward of both versions on the same scores and upstream gradient.
template <class T>
void expect_bit_identical(const Tensor& scores0, double divisor) {
  manual_seed(7);
  const Tensor upstream = randn(scores0.shape().vec(), scores0.dtype());
  Tensor s1 = scores0.detach().clone().requires_grad_(), s2 = scores0.detach().clone().requires_grad_();
  Tensor y1 = causal_softmax(s1, divisor), y2 = composed(s2, divisor);
  EXPECT_EQ(bit_mismatches<T>(y1, y2), 0) << "forward, shape " << scores0.shape().str();
  (y1 * upstream).sum().backward();
  (y2 * upstream).sum().backward();
  EXPECT_EQ(bit_mismatches<T>(s1.grad(), s2.grad()), 0) << "backward, shape " << scores0.shape().str();
}

}  // namespace

TEST(CausalSoftmax, SameBitsAsTheComposedOpsInFloat32AndFloat64) {
  manual_seed(0);
  // square (attention over a whole sequence), fewer queries than keys, more queries than keys,
  // a row length that is not a multiple of 8 (the sums' tails), one query
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 8, 8}, {4, 5, 5}, {3, 7}, {6, 4}, {2, 2, 17, 17}, {1, 9}, {64, 64}};
  for (const auto& shape : shapes) {
    expect_bit_identical<float>(randn(shape) * 3.0, std::sqrt(32.0));
    expect_bit_identical<double>(randn(shape, kFloat64) * 3.0, 1.0);
  }
}

TEST(CausalSoftmax, SameBitsOnStridedScoresAndWithInfAndNaN) {
  manual_seed(1);
  // transposed scores (the kernel makes them contiguous first)
  expect_bit_identical<float>(randn({2, 6, 6}).transpose(1, 2), 4.0);
  // -inf inside the kept part, +inf, and a NaN that must turn its row into NaN
  Tensor s = randn({5, 5});
  s.data_ptr<float>()[5 * 3 + 1] = -INFINITY;
  s.data_ptr<float>()[5 * 4 + 2] = INFINITY;
  s.data_ptr<float>()[5 * 2 + 0] = std::numeric_limits<float>::quiet_NaN();
  Tensor y = causal_softmax(s, 2.0);
  const std::vector<float> v = y.to_vector<float>();
  for (int j = 0; j < 5; ++j) EXPECT_TRUE(std::isnan(v[5 * 2 + j])) << j;
  EXPECT_EQ(bit_mismatches<float>(y, composed(s, 2.0)), 0);
}

TEST(CausalSoftmax, SameBitsWithAWholeRowMaskedAndAnInfiniteGradientAboveTheDiagonal) {
  // row 0 keeps one score: -inf there leaves nothing (sum 0, the row NaN, masked entries too);
  // rows past 16 have a tail beyond the sums' 8 lanes
  Tensor s = randn({19, 19}, kFloat64);
  s.data_ptr<double>()[0] = -INFINITY;
  Tensor s1 = s.clone().requires_grad_(), s2 = s.clone().requires_grad_();
  const Tensor y1 = causal_softmax(s1, 3.0), y2 = composed(s2, 3.0);
  EXPECT_EQ(bit_mismatches<double>(y1, y2), 0);
  EXPECT_TRUE(std::isnan(y1.to_vector<double>()[1])) << "a masked entry of the empty row";
  // an infinite upstream gradient where y is 0 (above the diagonal) makes g * y NaN, so its row's
  // sum and gradient are NaN, in both
  Tensor up = randn({19, 19}, kFloat64);
  up.data_ptr<double>()[19 * 5 + 12] = INFINITY;
  (y1 * up).sum().backward();
  (y2 * up).sum().backward();
  EXPECT_EQ(bit_mismatches<double>(s1.grad(), s2.grad()), 0);
  EXPECT_TRUE(std::isnan(s1.grad().to_vector<double>()[19 * 5]));
}

TEST(CausalSoftmax, WeightsAreZeroAboveTheDiagonalAndRowsSumToOne) {
  manual_seed(2);
  Tensor y = causal_softmax(randn({3, 6, 6}), 1.5);
  const std::vector<float> v = y.to_vector<float>();
  for (int b = 0; b < 3; ++b)
    for (int i = 0; i < 6; ++i) {
      double row = 0;
      for (int j = 0; j < 6; ++j) {
        const float w = v[static_cast<std::size_t>((b * 6 + i) * 6 + j)];
        if (j > i) EXPECT_EQ(w, 0.0f) << b << "," << i << "," << j;
        row += w;
      }
      EXPECT_NEAR(row, 1.0, 1e-6);
    }
}

TEST(CausalSoftmaxGrad, MatchesFiniteDifferencesOnContiguousAndStridedInput) {
  manual_seed(3);
  Tensor x = randn({2, 4, 4}, kFloat64).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return causal_softmax(in[0], 1.7) * in[0]; };
  EXPECT_NO_THROW(gradcheck(f, {x}));
  EXPECT_NO_THROW(gradcheck(f, {testutil::strided_leaf(x.detach())}));
  Tensor r = randn({3, 5}, kFloat64).requires_grad_();  // more keys than queries
  EXPECT_NO_THROW(gradcheck([](const std::vector<Tensor>& in) { return causal_softmax(in[0]); }, {r}));
}

TEST(CausalSoftmax, RejectsScoresThatAreNotAFloatMatrix) {
  try {
    causal_softmax(ones({4}));
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[causal_softmax] expects a floating point tensor of at least 2 dims"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("[4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(causal_softmax(zeros({2, 2}, kInt64)), std::invalid_argument);
}

// The float rows run an AVX-512F build where the CPU has it (16 floats a vector, masked at a row's
// end, the sums in the same 8 lanes) and an AVX2 or plain one otherwise: each forced here, with
// the same bits as the composed ops on rows of every length around the vectors' (8, 16) and the
// sums' lanes, and with inf, -inf and NaN inside the kept part. Cross-entropy's rows too.
TEST(CausalSoftmax, SameBitsUnderEveryRowKernelTheCpuRuns) {
  testutil::for_each_row_kernel([](const std::string& rows) {
    SCOPED_TRACE(rows);
    manual_seed(5);
    for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 24, 31, 33, 40, 47, 64, 100, 256}) {
      expect_bit_identical<float>(randn({2, n, n}) * 4.0, std::sqrt(32.0));
      expect_bit_identical<float>(randn({n + 3, n}) * 4.0, 3.0);  // more queries than keys
    }
    Tensor s = randn({40, 40}) * 2.0;
    float* p = s.data_ptr<float>();
    p[40 * 20 + 3] = -INFINITY;
    p[40 * 30 + 17] = INFINITY;
    p[40 * 35 + 34] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(bit_mismatches<float>(causal_softmax(s, 2.0), composed(s, 2.0)), 0);
    // an infinite upstream gradient above the diagonal (y is 0 there): that row's sum and gradient NaN
    Tensor s1 = (randn({40, 40}) * 2.0).requires_grad_(), s2 = s1.detach().clone().requires_grad_();
    Tensor up = randn({40, 40});
    up.data_ptr<float>()[40 * 9 + 30] = INFINITY;
    (causal_softmax(s1, 2.0) * up).sum().backward();
    (composed(s2, 2.0) * up).sum().backward();
    EXPECT_EQ(bit_mismatches<float>(s1.grad(), s2.grad()), 0);
    EXPECT_TRUE(std::isnan(s1.grad().to_vector<float>()[40 * 9]));
    // cross-entropy (its rows: the log-softmax statistics and the backward) against log_softmax + nll
    Tensor x1 = (randn({37, 70}) * 3.0).requires_grad_(), x2 = x1.detach().clone().requires_grad_();
    const Tensor target = randint(0, 70, {37});
    Tensor l1 = cross_entropy(x1, target), l2 = nll_loss(log_softmax(x2, -1), target);
    EXPECT_EQ(bit_mismatches<float>(l1, l2), 0);
    l1.backward();
    l2.backward();
    EXPECT_EQ(bit_mismatches<float>(x1.grad(), x2.grad()), 0);
  });
  if (!__builtin_cpu_supports("avx512f")) EXPECT_THROW(kernels::set_rows_avx512(true), std::invalid_argument);
}

// The float rows' exp in 16-float vectors (AVX-512F) against the same polynomial one float at a
// time, bit for bit: on every 251st bit pattern of the 2^32 (all signs, exponents, NaNs and
// denormals), and on every float near the clamps (the range's ends, where exp underflows to 0 and
// overflows to inf) and around the multiples of ln 2 where the power of 2 changes.
TEST(ExpRows, SameBitsAsTheScalarExp) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "the AVX-512F exp: this CPU lacks AVX-512F";
  std::vector<float> x;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 251) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
  auto all_between = [&](float lo, float hi) {
    for (float f = lo; f < hi; f = std::nextafter(f, INFINITY)) x.push_back(f);
  };
  all_between(-90.0f, -86.0f);
  all_between(86.0f, 90.0f);
  for (int n = -126; n <= 128; ++n)
    if (n != 0) all_between(n * 0.6931472f - 1e-4f, n * 0.6931472f + 1e-4f);
  const bool had = kernels::rows_avx512();
  std::vector<float> one(x.size()), vec(x.size());
  kernels::set_rows_avx512(false);
  kernels::exp_rows(x.data(), one.data(), static_cast<int64_t>(x.size()));
  kernels::set_rows_avx512(true);
  kernels::exp_rows(x.data(), vec.data(), static_cast<int64_t>(x.size()));
  kernels::set_rows_avx512(had);
  int64_t mismatches = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::bit_cast<uint32_t>(one[i]) != std::bit_cast<uint32_t>(vec[i]) && ++mismatches <= 5)
      ADD_FAILURE() << "exp(" << x[i] << ") (bits " << std::hex << std::bit_cast<uint32_t>(x[i]) << "): one by one "
                    << one[i] << ", vectors " << vec[i];
  EXPECT_EQ(mismatches, 0) << "of " << x.size();
  // what the polynomial is: exp to about 1 ulp, 0 below the range, inf past it
  const std::vector<float> probe = {0.0f, 1.0f, -1.0f, -87.0f, -100.0f, -INFINITY, 89.0f};
  std::vector<float> e(probe.size());
  kernels::exp_rows(probe.data(), e.data(), static_cast<int64_t>(probe.size()));
  EXPECT_EQ(e[0], 1.0f);
  EXPECT_NEAR(e[1], std::exp(1.0f), 2e-7f * std::exp(1.0f));
  EXPECT_NEAR(e[2], std::exp(-1.0f), 2e-7f * std::exp(-1.0f));
  EXPECT_NEAR(e[3], std::exp(-87.0f), 1e-6f * std::exp(-87.0f));
  EXPECT_EQ(e[4], 0.0f);
  EXPECT_EQ(e[5], 0.0f);
  EXPECT_EQ(e[6], INFINITY);
}
