// The small-object pool behind tensor impls, storages, nodes and backward closures: alignment,
// reuse within a size class, and blocks that cross threads or outlive their thread's lists. And
// the large storages' huge pages.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
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

// Whether the mapping of /proc/self/smaps that holds address p says THPeligible: 1 (-1: no such
// mapping or no such line, as on a kernel without transparent huge pages).
int thp_eligible(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's first line: "lo-hi perms ..."
      inside = lo <= a && a < hi;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) return std::atoi(line.c_str() + 12);
  }
  return -1;
}

// Storages of 4 MiB and more (the medium step's activations and their gradients) start on a 2 MiB
// boundary and are advised to use transparent huge pages, which the kernel then may grant
// (THPeligible in /proc/self/smaps says it will, unless THP is off on this machine); smaller ones
// are ordinary 64-byte aligned blocks.
TEST(Storage, LargeBlocksStartOn2MiBBoundariesInHugePages) {
  const Tensor big = zeros({1024, 1024}), odd = zeros({1024 * 1024 + 5}), small = zeros({1000, 1000});
  for (const Tensor& t : {big, odd}) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data_ptr<float>()) % (2u << 20), 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data_ptr<float>()) % 64, 0u);
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(mode, modes);
  if (modes.empty() || modes.find("[never]") != std::string::npos)
    GTEST_SKIP() << "transparent huge pages are off on this machine (" << modes << ")";
  EXPECT_EQ(thp_eligible(big.data_ptr<float>()), 1) << modes;
  EXPECT_EQ(thp_eligible(odd.data_ptr<float>()), 1) << modes;
}
