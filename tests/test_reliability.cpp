// Reliability: numerical edge cases, empty and 0-dim tensors, NaN propagation, the sanitizer
// canary, and memory that stays flat over 10,000 training steps (layouts and dtypes of every op:
// tests/test_op_table.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>
#include <fstream>
#include <unistd.h>

#include "test_util.h"

#if defined(AG_HAVE_NEXT_WORD)
#include "next_word/trainer.h"
#endif

using namespace ag;

namespace {

long rss_kib() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

}  // namespace

TEST(EdgeCases, CrossEntropyIsUnchangedByShiftingLogitsBy1e8) {
  Tensor logits = tensor({{2.0, -1.0, 0.5}, {0.1, 0.2, 0.3}}, kFloat64);
  Tensor target = tensor({0, 2});
  const double a = cross_entropy(logits, target).item(), b = cross_entropy(logits + 1e8, target).item();
  EXPECT_NEAR(a, b, 1e-7);
  EXPECT_TRUE(std::isfinite(cross_entropy(tensor({{1e8, 0.0}}), tensor({1})).item()));  // float32: 1e8, no overflow
}

TEST(EdgeCases, LogSoftmaxIsFiniteForLargeMagnitudes) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor x = tensor({{1e4, -1e4, 0.0}, {-1e4, -1e4, -1e4}}, dt).requires_grad_();
    Tensor y = log_softmax(x, 1);
    for (double v : y.to_vector<double>()) EXPECT_TRUE(std::isfinite(v)) << v;
    sum(y).backward();
    for (double v : x.grad().to_vector<double>()) EXPECT_TRUE(std::isfinite(v)) << v;
  }
}

TEST(EdgeCases, SoftmaxOfARowWithMinusInfinity) {
  Tensor x = tensor({-INFINITY, 0.0, 1.0}, kFloat64).requires_grad_();
  Tensor y = softmax(x, 0);
  const auto v = y.to_vector<double>();
  EXPECT_EQ(v[0], 0.0);
  EXPECT_NEAR(v[1] + v[2], 1.0, 1e-15);
  sum(y * tensor({1.0, 2.0, 3.0}, kFloat64)).backward();
  for (double g : x.grad().to_vector<double>()) EXPECT_TRUE(std::isfinite(g));
  EXPECT_EQ(x.grad().to_vector<double>()[0], 0.0);
}

TEST(EdgeCases, DropoutIdentityZeroAndEval) {
  manual_seed(0);
  Tensor x = randn({4, 5});
  EXPECT_EQ(dropout(x, 0.0).to_vector<float>(), x.to_vector<float>());
  for (float v : dropout(x, 1.0).to_vector<float>()) EXPECT_EQ(v, 0.0f);
  const auto eval = dropout(x, 0.7, /*training=*/false).to_vector<float>(), orig = x.to_vector<float>();
  EXPECT_EQ(0, std::memcmp(eval.data(), orig.data(), orig.size() * sizeof(float)));  // bit-identical
}

TEST(EdgeCases, EmptyAndZeroDimTensorsFlowThroughOps) {
  Tensor e = zeros({0, 3}, kFloat64).requires_grad_();
  Tensor s = tensor(1.5, kFloat64).requires_grad_();
  std::vector<std::pair<std::string, std::function<Tensor()>>> ops = {
      {"exp", [&] { return exp(e); }},           {"add", [&] { return e + e; }},
      {"mul scalar", [&] { return e * 2.0; }},   {"sum", [&] { return sum(e); }},
      {"sum dim", [&] { return sum(e, {0}); }},  {"softmax", [&] { return softmax(e, -1); }},
      {"log_softmax", [&] { return log_softmax(e, 0); }},
      {"matmul", [&] { return matmul(e, ones({3, 2}, kFloat64)); }},
      {"transpose", [&] { return e.t() * 1.0; }}, {"cat", [&] { return cat({e, e}, 0); }},
      {"layer_norm", [&] { return layer_norm(e, {3}); }},
      {"masked_fill", [&] { return masked_fill(e, tensor({true, false, true}), 0.0); }},
      {"0-d exp", [&] { return exp(s); }},        {"0-d mul", [&] { return s * s; }},
      {"0-d sum", [&] { return sum(s); }},        {"0-d softmax", [&] { return softmax(s, 0); }},
      {"0-d unsqueeze", [&] { return s.unsqueeze(0) * 2.0; }},
      {"0-d view", [&] { return s.view({1, 1}) * 1.0; }},
  };
  for (auto& [name, f] : ops) {
    SCOPED_TRACE(name);
    Tensor y = f();
    EXPECT_NO_THROW(sum(y).backward());
  }
  EXPECT_EQ(e.grad().shape(), (Size{0, 3}));
  EXPECT_TRUE(std::isfinite(s.grad().item()));
}

TEST(EdgeCases, NanInNanOut) {
  Tensor x = tensor({NAN, 1.0, -2.0});
  for (const Tensor& y : {exp(x), tanh(x), relu(x), sigmoid(x), gelu(x), x * 2.0, softmax(x, 0), log_softmax(x, 0),
                          layer_norm(x, {3}), matmul(x, x)}) {
    EXPECT_TRUE(std::isnan(y.to_vector<double>()[0])) << repr(y);
  }
  EXPECT_TRUE(std::isnan(max(x).item()));
  EXPECT_TRUE(std::isnan(sum(x).item()));
}

TEST(Sanitizers, CanaryProvesAddressSanitizerIsActive) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The index and the pointer are opaque to the compiler, so only ASan's shadow memory (not
  // UBSan's static object-size check) can see that the write lands one past the end.
  EXPECT_DEATH(
      {
        std::vector<int> v(4);
        int* volatile p = v.data();
        volatile std::size_t i = 4;
        p[i] = 1;
      },
      "AddressSanitizer: heap-buffer-overflow");
#else
  GTEST_SKIP() << "not a sanitizer build (configure with -DAG_SANITIZE=ON)";
#endif
}

#if defined(AG_HAVE_NEXT_WORD)
TEST(Memory, TenThousandTrainingStepsKeepMemoryFlatAndFreeEveryGraph) {
  next_word::Config c;
  c.epochs = 10000;
  long rss_warm = 0, rss_end = 0;
  int64_t nodes_warm = -1;
  bool nodes_flat = true;
  next_word::run(c, [&](int64_t epoch, double) {
    if (epoch == 1000) {
      rss_warm = rss_kib();
      nodes_warm = live_nodes();
    }
    if (epoch > 1000 && live_nodes() != nodes_warm) nodes_flat = false;
    if (epoch == 9999) rss_end = rss_kib();
  });
  std::printf("RSS after warm-up %ld KiB, after 10,000 steps %ld KiB (%+.2f%%); live nodes %lld\n", rss_warm, rss_end,
              100.0 * static_cast<double>(rss_end - rss_warm) / static_cast<double>(rss_warm), static_cast<long long>(nodes_warm));
  EXPECT_TRUE(nodes_flat) << "graph nodes accumulate across steps";
  // only the current loss's nodes above the first that saved tensors (they keep their edges, so a
  // second backward may run them, as in PyTorch) are alive between steps
  EXPECT_LE(nodes_warm, 16);
#if defined(__SANITIZE_ADDRESS__)
  std::printf("(RSS not checked: ASan keeps freed memory in quarantine; LeakSanitizer checks leaks)\n");
#else
  EXPECT_LT(static_cast<double>(rss_end), 1.05 * static_cast<double>(rss_warm));
#endif
}
#endif
