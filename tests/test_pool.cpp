// The small-object pool behind tensor impls, storages, nodes and backward closures: alignment,
// reuse within a size class, and blocks that cross threads or outlive their thread's lists.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/pool.h"

using namespace ag;

TEST(Pool, BlocksAre64ByteAlignedAndWritableForEverySize) {
  for (std::size_t n : {1u, 8u, 63u, 64u, 65u, 500u, 4096u, 4097u, 100000u}) {
    void* p = detail::pool_alloc(n);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u) << n;
    std::memset(p, 0xab, n);
    detail::pool_free(p, n);
  }
}

TEST(Pool, AFreedBlockIsReusedByTheNextRequestOfItsSizeClass) {
  if (!detail::pool_enabled()) GTEST_SKIP() << "the pool is off under AddressSanitizer";
  void* a = detail::pool_alloc(200);
  detail::pool_free(a, 200);
  void* b = detail::pool_alloc(250);  // same 256-byte class
  EXPECT_EQ(a, b);
  void* c = detail::pool_alloc(300);  // the next class: a different block
  EXPECT_NE(b, c);
  detail::pool_free(b, 250);
  detail::pool_free(c, 300);
}

TEST(Pool, TensorsAndGraphsCrossThreadsAndOutliveTheirThread) {
  // made in a worker thread, used and freed in this one (the worker's lists are gone by then)
  Tensor w = ones({3, 4}).requires_grad_();
  Tensor made_there;
  std::thread t([&] { made_there = (w * 2.0).sum(); });
  t.join();
  made_there.backward();
  EXPECT_EQ(w.grad().to_vector<float>(), std::vector<float>(12, 2.0f));
  // made here, freed in a worker that then exits with blocks on its lists
  std::vector<Tensor> here;
  for (int i = 0; i < 100; ++i) here.push_back(ones({i % 7 + 1}) * static_cast<double>(i));
  std::thread u([v = std::move(here)]() mutable {
    v.clear();
    Tensor x = ones({4, 4}).requires_grad_();
    (x * x).sum().backward();
  });
  u.join();
  EXPECT_EQ((ones({2}) + 1.0).to_vector<float>(), std::vector<float>(2, 2.0f));
}
