// ag's own threads (autograd/threads.h, kernels/parallel.cpp): parallel_for over a pool that is
// started once and reused, and GEMMs split into slabs of C over it (OpenBLAS runs every call on
// the thread that makes it). A slab can take other OpenBLAS kernels than the whole GEMM, so split
// GEMMs agree with one thread to rounding; a slab in the wrong place is off by far more.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/kernels/parallel.h"
#include "test_util.h"

using namespace ag;
using testutil::bit_mismatches;

namespace {

// Runs f with n threads and restores the count.
template <class F>
auto with_threads(int n, F f) {
  const int before = get_num_threads();
  set_num_threads(n);
  auto r = f();
  set_num_threads(before);
  return r;
}

template <class T>
int64_t mismatches(const Tensor& a, const Tensor& b) {
  return std::is_same_v<T, float> ? testutil::close_mismatches<T>(a, b, 1e-5, 2e-4) : testutil::close_mismatches<T>(a, b, 1e-12, 1e-11);
}

}  // namespace

TEST(Threads, GemmsSplitOverThreadsAgreeWithOneThread) {
  manual_seed(30);
  struct Case {
    const char* what;
    Tensor a, b;
  };
  // above kMinParallelFlops (2^24) each: rows split (m >= n) and columns split (n > m), transposed
  // operands (both slab offsets), uneven splits (odd m and n), float64
  const std::vector<Case> cases = {
      {"rows", randn({1001, 256}), randn({256, 160})},
      {"columns", randn({96, 300}), randn({300, 1203})},
      {"rows, a and b transposed", randn({256, 999}).t(), randn({161, 256}).t()},
      {"columns, a and b transposed", randn({300, 97}).t(), randn({1201, 300}).t()},
      {"float64", randn({515, 200}, kFloat64), randn({200, 190}, kFloat64)},
      {"batched", randn({2, 600, 256}), randn({2, 256, 200})},  // 61 MFLOP per matrix: split
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Tensor one = with_threads(1, [&] { return matmul(c.a, c.b); });
    // the reference sum in float64, to rounding
    const Tensor ref = matmul(c.a.to(kFloat64), c.b.to(kFloat64));
    EXPECT_EQ(testutil::close_mismatches<double>(one.to(kFloat64), ref, 1e-4, 1e-4), 0);
    for (int threads : {2, 3, 16}) {
      const Tensor many = with_threads(threads, [&] { return matmul(c.a, c.b); });
      EXPECT_EQ(c.a.dtype() == kFloat32 ? mismatches<float>(one, many) : mismatches<double>(one, many), 0) << threads << " threads";
    }
  }
  // addmm's beta = 1 (the bias in the GEMM's output), forward and backward
  const Tensor x = randn({2048, 256}), w = randn({512, 256}), bias = randn({512}), up = randn({2048, 512});
  auto step = [&] {
    Tensor xl = x.detach().requires_grad_(), wl = w.detach().requires_grad_(), bl = bias.detach().requires_grad_();
    Tensor y = linear(xl, wl, bl);
    (y * up).sum().backward();
    return std::vector<Tensor>{y, xl.grad(), wl.grad(), bl.grad()};
  };
  const std::vector<Tensor> one = with_threads(1, step);
  for (int threads : {2, 16}) {  // 16: a grid of 2 x 8 blocks of the 2048 x 512 output (the bias in its tiles)
    const std::vector<Tensor> many = with_threads(threads, step);
    for (std::size_t i = 0; i < one.size(); ++i) EXPECT_EQ(mismatches<float>(one[i], many[i]), 0) << "linear result " << i << ", " << threads;
  }
}

TEST(Threads, ParallelForCoversEveryIndexOnceAndRethrows) {
  with_threads(3, [] {
    // enough work to be split: each index is visited exactly once
    std::vector<std::atomic<int>> seen(1000);
    detail::parallel_for(1000, detail::kMinParallelFlops, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) seen[static_cast<std::size_t>(i)]++;
    });
    int64_t wrong = 0;
    for (const auto& s : seen) wrong += s.load() != 1;
    EXPECT_EQ(wrong, 0);
    // a chunk's exception reaches the caller, after every chunk has finished
    std::atomic<int> chunks{0};
    EXPECT_THROW(detail::parallel_for(3, detail::kMinParallelFlops,
                                      [&](int64_t b, int64_t) {
                                        if (b == 2) throw std::runtime_error("chunk 2");
                                        std::this_thread::sleep_for(std::chrono::milliseconds(2));
                                        chunks++;
                                      }),
                 std::runtime_error);
    EXPECT_EQ(chunks.load(), 2);  // the others had finished when it was rethrown
    // inside a chunk, a nested loop runs on that thread
    std::atomic<int> nested_serial{0};
    detail::parallel_for(2, detail::kMinParallelFlops, [&](int64_t, int64_t) {
      EXPECT_TRUE(detail::in_parallel_region());
      detail::parallel_for(4, detail::kMinParallelFlops, [&](int64_t b, int64_t e) { nested_serial += b == 0 && e == 4; });
    });
    EXPECT_EQ(nested_serial.load(), 2);
    EXPECT_FALSE(detail::in_parallel_region());
    return 0;
  });
}

TEST(Threads, ManyShortLoopsInARowRunEachChunkOnce) {
  // back-to-back jobs, so workers that wake late for one meet the next: every chunk of every job
  // still runs exactly once
  // (jobs of 2 and 3 chunks in turn, each chunk a few microseconds long, so that they do)
  with_threads(3, [] {
    std::vector<std::atomic<int>> runs(3);
    int64_t wrong = 0;
    for (int job = 0; job < 3000; ++job) {
      const int64_t chunks = 2 + job % 2;
      for (auto& r : runs) r = 0;
      detail::parallel_for(chunks, detail::kMinParallelFlops, [&](int64_t b, int64_t e) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
        while (std::chrono::steady_clock::now() < until) {
        }
        for (int64_t i = b; i < e; ++i) runs[static_cast<std::size_t>(i)]++;
      });
      for (int64_t i = 0; i < 3; ++i) wrong += runs[static_cast<std::size_t>(i)].load() != (i < chunks ? 1 : 0);
    }
    EXPECT_EQ(wrong, 0);
    return 0;
  });
}

TEST(Threads, TwoCallersAtOnceGetTheirOwnResults) {
  // the pool runs one loop at a time; a second caller meanwhile runs its loop itself
  manual_seed(31);
  const Tensor a = randn({800, 256}), b = randn({256, 256});
  const Tensor expected = with_threads(1, [&] { return matmul(a, b); });
  with_threads(2, [&] {
    std::vector<Tensor> got(4);
    std::vector<std::thread> callers;
    for (std::size_t i = 0; i < got.size(); ++i)
      callers.emplace_back([&, i] {
        for (int r = 0; r < 20; ++r) got[i] = matmul(a, b);
      });
    for (auto& t : callers) t.join();
    for (const Tensor& g : got) EXPECT_EQ(mismatches<float>(g, expected), 0);
    return 0;
  });
}

TEST(Threads, CrossEntropySplitByRowsGivesTheSameBits) {
  // enough rows to be split: each row's log-sum and gradient are computed whole on one thread, so
  // the loss (summed in row order afterwards) and the gradient are the same bits for any count,
  // and equal to nll_loss(log_softmax(x)) as with one thread
  manual_seed(32);
  const Tensor logits = randn({4099, 512}) * 3.0;
  Tensor targets = randint(0, 512, {4099});
  auto run = [&] {
    Tensor x = logits.detach().requires_grad_();
    Tensor loss = cross_entropy(x, targets);
    loss.backward();
    return std::vector<Tensor>{loss, x.grad()};
  };
  const std::vector<Tensor> one = with_threads(1, run);
  Tensor x2 = logits.detach().requires_grad_();
  Tensor composed = nll_loss(log_softmax(x2, -1), targets);
  composed.backward();
  EXPECT_EQ(bit_mismatches<float>(one[0], composed), 0);
  EXPECT_EQ(bit_mismatches<float>(one[1], x2.grad()), 0);
  for (int threads : {2, 3, 16}) {
    const std::vector<Tensor> many = with_threads(threads, run);
    EXPECT_EQ(bit_mismatches<float>(one[0], many[0]), 0) << threads << " threads, loss";
    EXPECT_EQ(bit_mismatches<float>(one[1], many[1]), 0) << threads << " threads, gradient";
  }
}

TEST(Threads, ElementwiseOpsSplitFromKMinParallelElementsGiveTheSameBits) {
  // contiguous elementwise ops of at least 2^18 elements split over the threads: the same bits as
  // one thread (odd length: an uneven split), float32, float64, int64 and bool results
  manual_seed(33);
  const int64_t n = (int64_t{1} << 18) + 12345;
  const Tensor a = randn({n}), b = randn({n}), a64 = randn({n}, kFloat64), i = randint(-50, 50, {n});
  const Tensor mask = gt(randn({n}), 0.0);
  auto run = [&] {
    return std::vector<Tensor>{a + b, a * b, a64 / (a64 + 3.0), exp(a), tanh(a64), i * i, gt(a, b), masked_fill(a, mask, 2.5),
                               maximum(a, b)};
  };
  const std::vector<Tensor> one = with_threads(1, run);
  for (int threads : {2, 3}) {
    const std::vector<Tensor> many = with_threads(threads, run);
    for (std::size_t k = 0; k < one.size(); ++k) {
      const DType dt = one[k].dtype();
      const int64_t bad = dt == kFloat32   ? bit_mismatches<float>(one[k], many[k])
                          : dt == kFloat64 ? bit_mismatches<double>(one[k], many[k])
                                           : testutil::close_mismatches<double>(one[k].to(kFloat64), many[k].to(kFloat64), 0, 0);
      EXPECT_EQ(bad, 0) << "result " << k << ", " << threads << " threads";
    }
  }
  // and each agrees with a plain loop over the elements (a misplaced chunk would not)
  const std::vector<float> va = a.to_vector<float>(), vb = b.to_vector<float>(), sum = one[0].to_vector<float>();
  int64_t wrong = 0;
  for (int64_t k = 0; k < n; ++k) wrong += sum[static_cast<std::size_t>(k)] != va[static_cast<std::size_t>(k)] + vb[static_cast<std::size_t>(k)];
  EXPECT_EQ(wrong, 0);
  const std::vector<float> many_sum = with_threads(2, [&] { return a + b; }).to_vector<float>();
  for (int64_t k = 0; k < n; ++k) wrong += many_sum[static_cast<std::size_t>(k)] != va[static_cast<std::size_t>(k)] + vb[static_cast<std::size_t>(k)];
  EXPECT_EQ(wrong, 0);
}

TEST(Threads, SumsOverLeadingDimsCopiesAndGradientAccumulationSplitGiveTheSameBits) {
  // from 2^18 elements: a contiguous tensor summed over its leading dims (a bias's or a position
  // embedding's gradient: columns split), a large contiguous copy (first dim split) and add_ into a
  // gradient (elements split), each the same bits on any thread count, and each the serial loop's
  manual_seed(34);
  const Tensor wide = randn({4, 301, 260}), wide64 = randn({1031, 303}, kFloat64);
  const Tensor xs = wide.slice(2, 0, 257), xs64 = wide64.slice(1, 0, 300);  // strided: summed by the walk
  const Tensor x = xs.contiguous(), x64 = xs64.contiguous(), i = randint(-9, 9, {700, 401});
  const Tensor xt = randn({257, 1210}).t();  // a transposed view, made contiguous below
  const Tensor g = randn({1210, 257});
  auto run = [&] {
    Tensor acc = g.clone();
    acc.add_(xt.contiguous());
    return std::vector<Tensor>{sum(x, {0, 1}), sum(x, {0}), sum(x64, {0}), sum(i, {0}).to(kFloat64), xt.contiguous(), acc};
  };
  const std::vector<Tensor> one = with_threads(1, run);
  for (int threads : {2, 3}) {
    const std::vector<Tensor> many = with_threads(threads, run);
    EXPECT_EQ(bit_mismatches<float>(one[0], many[0]), 0) << threads;
    EXPECT_EQ(bit_mismatches<float>(one[1], many[1]), 0) << threads;
    EXPECT_EQ(bit_mismatches<double>(one[2], many[2]), 0) << threads;
    EXPECT_EQ(bit_mismatches<double>(one[3], many[3]), 0) << threads;
    EXPECT_EQ(bit_mismatches<float>(one[4], many[4]), 0) << threads;
    EXPECT_EQ(bit_mismatches<float>(one[5], many[5]), 0) << threads;
  }
  // against the serial loops: the walk over the same values in the same order, a strided copy
  EXPECT_EQ(bit_mismatches<float>(one[0], sum(xs, {0, 1})), 0);
  EXPECT_EQ(bit_mismatches<float>(one[1], sum(xs, {0})), 0);
  EXPECT_EQ(bit_mismatches<double>(one[2], sum(xs64, {0})), 0);
  EXPECT_EQ(bit_mismatches<float>(one[4], xt.clone()), 0);
  EXPECT_EQ(bit_mismatches<float>(one[5], g + xt), 0);
}

TEST(Threads, ACopyIntoAColumnBlockSplitsByItsFirstDimAndWritesNothingElse) {
  // heads (B, h, T, e) copied into their column block of (B * T, 3 * h * e) rows, as
  // causal_self_attention's backward writes its gradients: the block's first-dim slices lie apart
  // in memory, so the copy splits over them (from 2^18 elements); the other columns stay as they were
  manual_seed(35);
  const Tensor heads = randn({16, 8, 64, 32});
  auto run = [&] {
    Tensor rows = full({16 * 64, 3 * 256}, -7.0);
    rows.view({16, 64, 3, 8, 32}).select(2, 1).transpose(1, 2).copy_(heads);
    return std::vector<Tensor>{rows};
  };
  const Tensor one = with_threads(1, run)[0];
  for (int threads : {2, 3}) EXPECT_EQ(bit_mismatches<float>(one, with_threads(threads, run)[0]), 0) << threads;
  const Tensor block = one.view({16, 64, 3, 8, 32}).select(2, 1).transpose(1, 2);
  EXPECT_EQ(bit_mismatches<float>(block, heads), 0);
  for (int64_t other : {0, 2}) EXPECT_EQ(bit_mismatches<float>(one.view({16, 64, 3, 256}).select(2, other), full({16, 64, 256}, -7.0)), 0);
}
