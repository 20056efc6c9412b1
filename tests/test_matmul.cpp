// matmul through BLAS against the naive reference kernel, over layouts BLAS reads directly
// (transposed views) and layouts it cannot (copied first).
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/autograd.h"

using namespace ag;

namespace {

// Deterministic, non-trivial values.
Tensor values(const std::vector<int64_t>& shape, DType dt, double phase = 0.0) {
  std::vector<double> v(static_cast<std::size_t>(Size(shape).numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.7 * static_cast<double>(i) + phase) + 0.1;
  return from_vector(v, shape, dt);
}

double max_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

}  // namespace

TEST(Matmul, MatchesReferenceKernelForEveryOperandLayout) {
  for (DType dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat32 ? 1e-4 : 1e-12;
    Tensor a = values({5, 7}, dt), b = values({7, 3}, dt, 1.0);
    Tensor at = values({7, 5}, dt).t(), bt = values({3, 7}, dt, 1.0).t();   // transposed views
    Tensor as = values({5, 14}, dt).slice(1, std::nullopt, std::nullopt, 2);  // column stride 2: copied
    Tensor bs = values({7, 6}, dt, 1.0).slice(1, 1, 4);                      // row stride 6: leading dim
    for (const Tensor& x : {a, at, as})
      for (const Tensor& y : {b, bt, bs}) {
        double d = max_diff(matmul(x, y), matmul_reference(x, y));
        EXPECT_LT(d, tol) << "strides " << Size(x.strides()).str() << " @ " << Size(y.strides()).str()
                          << " max diff " << d;
      }
  }
}

TEST(Matmul, BatchedWithBroadcastBatchDimsMatchesPerBatchReference) {
  Tensor a = values({2, 1, 3, 4}, kFloat64), b = values({5, 4, 2}, kFloat64, 0.5);
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.shape(), (Size{2, 5, 3, 2}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j) EXPECT_LT(max_diff(c[i][j], matmul_reference(a[i][0], b[j])), 1e-12);
}

TEST(Matmul, TransposedBatchedOperandsNeedNoCopy) {
  // q @ k.transpose(-2, -1) as in attention: k's view goes to BLAS as a transpose flag.
  Tensor q = values({2, 3, 4}, kFloat64), k = values({2, 3, 4}, kFloat64, 2.0);
  Tensor s = matmul(q, k.transpose(-2, -1));
  for (int64_t i = 0; i < 2; ++i) EXPECT_LT(max_diff(s[i], matmul_reference(q[i], k[i].t())), 1e-12);
}

TEST(Matmul, VectorCasesAndShapes) {
  Tensor v = values({4}, kFloat64), m = values({4, 3}, kFloat64);
  EXPECT_EQ(matmul(v, m).shape(), (Size{3}));
  EXPECT_EQ(matmul(m.t(), v).shape(), (Size{3}));
  EXPECT_EQ(matmul(v, v).shape(), (Size{}));
  EXPECT_NEAR(matmul(v, v).item(), sum(v * v).item(), 1e-12);
  EXPECT_EQ(matmul(values({2, 5, 4}, kFloat64), v).shape(), (Size{2, 5}));
}

TEST(Matmul, EmptyInnerDimGivesZeros) {
  Tensor c = matmul(zeros({3, 0}), zeros({0, 2}));
  EXPECT_EQ(c.to_vector<float>(), std::vector<float>(6, 0.0f));
}

TEST(Matmul, GradientsMatchFiniteDifferencesOnTransposedAndBroadcastInputs) {
  Tensor a = values({3, 4}, kFloat64).t().detach().requires_grad_();  // (4, 3) transposed leaf
  Tensor b = values({2, 3, 2}, kFloat64, 1.0).requires_grad_();
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); }, {a, b}));
}

TEST(Matmul, BatchedInputTimesMatrixRunsAsOneGemmAndMatchesThePerBatchReference) {
  // (2, 3, 5, 4) @ (4, 2): contiguous input folds into one (30, 4) GEMM; the transposed-view
  // weight goes as a flag; a non-contiguous input takes the per-batch path
  Tensor a = values({2, 3, 5, 4}, kFloat64), w = values({2, 4}, kFloat64, 1.0).t();
  Tensor an = values({2, 3, 4, 5}, kFloat64).transpose(-1, -2);
  for (const Tensor& x : {a, an}) {
    Tensor c = matmul(x, w);
    ASSERT_EQ(c.shape(), (Size{2, 3, 5, 2}));
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) EXPECT_LT(max_diff(c[i][j], matmul_reference(x[i][j], w)), 1e-12);
  }
}

TEST(MatmulGrad, BatchedInputTimesSharedMatrixMatchesFiniteDifferences) {
  // the folded path: da and db (one GEMM over all rows for db), with the input contiguous or not
  Tensor a = values({2, 3, 4}, kFloat64).requires_grad_(), b = values({4, 2}, kFloat64, 1.0).requires_grad_();
  auto f = [](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); };
  EXPECT_TRUE(gradcheck(f, {a, b}));
  Tensor at = values({2, 4, 3}, kFloat64).transpose(1, 2).detach().requires_grad_();
  EXPECT_TRUE(gradcheck(f, {at, b}));
  // only the matrix requires grad, and the product feeds a second path
  Tensor ac = values({3, 2, 4}, kFloat64);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { Tensor y = matmul(ac, x[0]); return y * y.sum(); }, {b}));
}

TEST(Linear, FusedAddmmMatchesReferenceKernelPlusBiasForEveryLayout) {
  // x (5, 4), weight (3, 4), bias (3): contiguous, transposed-view weight, strided input
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor x = values({5, 4}, dt), w = values({3, 4}, dt, 1.0), b = values({3}, dt, 2.0);
    Tensor want = matmul_reference(x, w.t()) + b;
    const double tol = dt == kFloat32 ? 1e-5 : 1e-12;
    EXPECT_LT(max_diff(linear(x, w, b), want), tol);
    Tensor wt = values({4, 3}, dt, 1.0).t();  // (3, 4) as a transposed view
    EXPECT_LT(max_diff(linear(x, wt, b), matmul_reference(x, wt.t()) + b), tol);
    Tensor xs = values({4, 5}, dt).t();  // (5, 4) strided
    EXPECT_LT(max_diff(linear(xs, w, b), matmul_reference(xs, w.t()) + b), tol);
    EXPECT_EQ(linear(x, w).grad_fn(), nullptr);
    // a weight whose transpose BLAS cannot read (found by the graph fuzzer): (5, 1) sliced from (5, 2)
    Tensor ws = values({5, 2}, dt, 1.0).slice(1, 1, std::nullopt), xs1 = values({3, 1}, dt), b5 = values({5}, dt, 2.0);
    EXPECT_LT(max_diff(linear(xs1, ws, b5), matmul_reference(xs1, ws.t()) + b5), tol);
  }
}

TEST(LinearGrad, MatchesFiniteDifferencesForInputWeightAndBias) {
  Tensor x = values({4, 3}, kFloat64).requires_grad_(), w = values({2, 3}, kFloat64, 1.0).requires_grad_();
  Tensor b = values({2}, kFloat64, 2.0).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  EXPECT_NO_THROW(gradcheck(f, {x, w, b}));
  EXPECT_EQ(f({x, w, b}).grad_fn()->name(), "AddmmBackward0");
  // strided input and a transposed-view weight, and x reused on a second path
  Tensor xs = values({3, 4}, kFloat64).t().detach().requires_grad_();
  Tensor wt = values({3, 2}, kFloat64, 1.0).t().detach().requires_grad_();
  EXPECT_NO_THROW(gradcheck([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]) * in[0].sum(); }, {xs, wt, b}));
  // only the bias requires grad
  Tensor xc = values({4, 3}, kFloat64), wc = values({2, 3}, kFloat64, 1.0);
  EXPECT_NO_THROW(gradcheck([&](const std::vector<Tensor>& in) { return linear(xc, wc, in[0]); }, {b}));
}

TEST(Linear, ShapeAndDtypeErrorsNameTheOpAndShapes) {
  try {
    linear(ones({5, 4}), ones({3, 5}), ones({3}));
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[linear] expects input (*, in), weight (out, in) and bias (out), got [5, 4], [3, 5] and [3]");
  }
  EXPECT_THROW(linear(ones({5, 4}), ones({3, 4}), ones({4})), std::invalid_argument);
  EXPECT_THROW(linear(ones({5, 4}), ones({3, 4}, kFloat64), ones({3})), std::invalid_argument);
}
