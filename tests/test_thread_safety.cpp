// Threads sharing ag's process-wide state: the random generator (each op's draws are one atomic
// call, as PyTorch's locked CPU generator makes them), the small-block pool (a thread that frees
// what others made caches a bounded amount), and fork() (the child gets working locks and a
// thread pool of its own).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/kernels/parallel.h"
#include "autograd/pool.h"

using namespace ag;

namespace {

using Draw = std::function<std::vector<double>()>;

// Starts n threads running f(i) together (each waits for all to exist, so they overlap) and
// joins them.
void run_together(int n, const std::function<void(int)>& f) {
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) {
    ts.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();
      f(i);
    });
  }
  for (std::thread& t : ts) t.join();
}

// How many of `got` are not matched one for one by an element of `want` (multisets).
int64_t unmatched(const std::vector<std::vector<double>>& want, const std::vector<std::vector<double>>& got) {
  std::map<std::vector<double>, int64_t> count;
  for (const auto& v : want) ++count[v];
  int64_t bad = 0;
  for (const auto& v : got)
    if (--count[v] < 0) ++bad;
  return bad;
}

// `threads` threads make `calls` calls of draw each after reseeding; every result must be one
// call's result in the single-threaded sequence of threads * calls calls (each result once): the
// calls were serialized by the generator's lock, in whatever order.
void expect_each_call_is_atomic(const Draw& draw, Generator& g, int threads = 4, int calls = 1500) {
  const int total = threads * calls;
  g.manual_seed(2024);
  std::vector<std::vector<double>> serial;
  for (int i = 0; i < total; ++i) serial.push_back(draw());
  g.manual_seed(2024);
  std::vector<std::vector<std::vector<double>>> per_thread(static_cast<std::size_t>(threads));
  run_together(threads, [&](int t) {
    auto& mine = per_thread[static_cast<std::size_t>(t)];
    for (int i = 0; i < calls; ++i) mine.push_back(draw());
  });
  std::vector<std::vector<double>> threaded;
  for (auto& v : per_thread) threaded.insert(threaded.end(), v.begin(), v.end());
  EXPECT_EQ(unmatched(serial, threaded), 0) << "calls whose numbers are not one call's of the serial stream";
  // and the generator is where the serial run left it
  const std::vector<double> next = draw();
  g.manual_seed(2024);
  for (int i = 0; i < total; ++i) draw();
  EXPECT_EQ(next, draw());
}

}  // namespace

TEST(ThreadSafety, EachRandomCallOnTheDefaultGeneratorIsAtomic) {
  Generator& g = default_generator();
  const Tensor ones200 = ones({200});
  const std::vector<std::pair<const char*, Draw>> draws = {
      {"randn block path", [] { return randn({256}).to_vector<double>(); }},
      // below 16 elements: scalar Box-Muller, whose cached second value is part of the state
      {"randn scalar path", [] { return randn({5}).to_vector<double>(); }},
      {"randn float64", [] { return randn({40}, kFloat64).to_vector<double>(); }},
      {"rand", [] { return rand({100}).to_vector<double>(); }},
      {"randint", [] { return randint(0, 1000, {100}).to_vector<double>(); }},
      {"randperm", [] { return randperm(100).to_vector<double>(); }},
      {"dropout", [&] { return dropout(ones200, 0.5).to_vector<double>(); }},
      {"normal_", [] {
         Tensor t = empty({7, 9}).t();  // strided: the memory-order path
         return normal_(t, 1.0, 2.0).to_vector<double>();
       }},
      {"uniform_", [] {
         Tensor t = empty({100});
         return uniform_(t, -1.0, 1.0).to_vector<double>();
       }},
      {"bernoulli_", [] {
         Tensor t = empty({100});
         return bernoulli_(t, 0.3).to_vector<double>();
       }},
  };
  for (const auto& [name, draw] : draws) {
    SCOPED_TRACE(name);
    expect_each_call_is_atomic(draw, g);
  }
}

TEST(ThreadSafety, EachRandomCallOnASharedExplicitGeneratorIsAtomic) {
  Generator g(1);
  expect_each_call_is_atomic([&] { return randn({64}, {}, &g).to_vector<double>(); }, g);
  expect_each_call_is_atomic([&] { return randint(0, 1 << 20, {33}, kInt64, &g).to_vector<double>(); }, g);
}

// manual_seed and snapshots (a Generator copy: get_rng_state) and restores (assignment:
// set_rng_state) racing with draws: each lands between two calls.
TEST(ThreadSafety, SeedingSnapshotsAndRestoresLandBetweenDrawCalls) {
  Generator& g = default_generator();
  constexpr int kCalls = 8000;
  auto draw = [](Generator* gen) { return randn({256}, {}, gen).to_vector<float>(); };
  g.manual_seed(11);
  std::set<std::vector<float>> serial;  // the results of the first kCalls + 1 calls after seeding
  for (int i = 0; i <= kCalls; ++i) serial.insert(draw(nullptr));
  const Generator seeded = (g.manual_seed(11), g);

  std::vector<std::vector<float>> drawn, from_snapshots;
  std::atomic<bool> drawing{true};
  int resets = 0;
  run_together(2, [&](int t) {
    if (t == 0) {
      for (int i = 0; i < kCalls; ++i) drawn.push_back(draw(nullptr));
      drawing.store(false);
      return;
    }
    for (int i = 0; drawing.load() || i < 300; ++i) {
      switch (i % 3) {
        case 0: g.manual_seed(11), ++resets; break;
        case 1: g = seeded, ++resets; break;
        default: {
          Generator snap = g;
          from_snapshots.push_back(draw(&snap));
        }
      }
    }
  });
  // a reseed or restore only restarts the serial sequence, so every call (in the drawing thread
  // or on a snapshot) gives one of its results
  auto not_serial = [&](const std::vector<std::vector<float>>& got) {
    int64_t bad = 0;
    for (const auto& v : got) bad += serial.count(v) == 0;
    return bad;
  };
  EXPECT_EQ(not_serial(drawn), 0) << "of " << drawn.size() << " calls, with " << resets << " reseeds and restores";
  EXPECT_EQ(not_serial(from_snapshots), 0) << "of " << from_snapshots.size() << " snapshots";
}

// A producer makes small tensors and a consumer drops them: every block the consumer frees goes
// to its own lists, which must stay bounded (they grew by the whole stream before).
TEST(ThreadSafety, AThreadThatFreesWhatAnotherMadeCachesABoundedAmount) {
  if (!detail::pool_enabled()) GTEST_SKIP() << "the pool is off under AddressSanitizer";
  constexpr int kTensors = 200000, kBatch = 100;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<Tensor>> queue;
  bool done = false;
  std::size_t consumer_max = 0, consumer_end = 0;

  std::thread consumer([&] {
    for (;;) {
      std::vector<Tensor> batch;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return !queue.empty() || done; });
        if (queue.empty()) break;
        batch = std::move(queue.front());
        queue.pop_front();
      }
      cv.notify_all();
      batch.clear();  // impls, storages and their buffers, made on the producer's thread
      consumer_max = std::max(consumer_max, detail::pool_cached_bytes());
    }
    consumer_end = detail::pool_cached_bytes();
  });
  std::thread producer([&] {
    for (int i = 0; i < kTensors; i += kBatch) {
      std::vector<Tensor> batch;
      for (int j = 0; j < kBatch; ++j) batch.push_back(full({(i + j) % 64 + 1}, 1.5));
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return queue.size() < 8; });
      queue.push_back(std::move(batch));
      cv.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  });
  producer.join();
  consumer.join();
  EXPECT_LE(consumer_max, detail::kPoolThreadCacheBytes);
  EXPECT_GT(consumer_end, detail::kPoolThreadCacheBytes / 2);  // it still caches, up to the bound
}

namespace {

// Waits up to `seconds` for the child; kills it if it has not exited by then. Returns its exit
// code, or -1 if it hung (or died of a signal).
int wait_child(pid_t pid, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r < 0) return -2;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// A parallel loop that must be split over the pool's threads: 1000 items, each chunk waiting (up
// to 5 s) for the other chunks to start, so a pool whose workers never come shows as one thread.
// Exit-code style result: 0 fine, 10 an index not covered once, 11 run on a single thread.
int split_loop_check() {
  constexpr int64_t kN = 1000;
  const int threads = get_num_threads();
  std::vector<std::atomic<int>> hits(kN);
  std::atomic<int> started{0};
  std::mutex mu;
  std::set<std::thread::id> ids;
  detail::parallel_for(kN, detail::kMinParallelFlops, [&](int64_t b, int64_t e) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    }
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (started.load() < threads && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    for (int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
  });
  for (const auto& h : hits)
    if (h.load() != 1) return 10;
  if (threads > 1 && ids.size() < 2) return 11;
  return 0;
}

// Sets the thread count for a test and restores it.
struct ThreadCount {
  explicit ThreadCount(int n) : before(get_num_threads()) { set_num_threads(n); }
  ~ThreadCount() { set_num_threads(before); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;
  int before;
};

}  // namespace

TEST(ThreadSafety, AForkedChildStartsAThreadPoolOfItsOwn) {
  ThreadCount count(2);
  ASSERT_EQ(split_loop_check(), 0) << "the parent's pool";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(split_loop_check());
  EXPECT_EQ(wait_child(pid, 30), 0) << "10: indices not covered once, 11: one thread, -1: hung";
  EXPECT_EQ(split_loop_check(), 0) << "the parent's pool after the fork";
}

// Forks while other threads draw, allocate large blocks and run parallel loops (so they may hold
// the generator's, the block cache's or the pool's locks at the fork): the child draws, allocates
// and runs a split loop, and must not hang.
TEST(ThreadSafety, ForkingWhileOtherThreadsDrawAllocateAndLoopNeverHangsTheChild) {
  // GCC 12's AddressSanitizer runtime does not lock its own allocator for a fork: a child forked
  // while another thread is inside malloc hangs in its first malloc of that size (seen with gdb:
  // the child's new worker waits in SizeClassAllocator64::GetFromAllocator), whatever ag does.
  if (!detail::pool_enabled()) GTEST_SKIP() << "AddressSanitizer's allocator is not fork-safe (see above)";
  ThreadCount count(2);
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  busy.emplace_back([&] {
    while (!stop.load()) (void)randn({512});
  });
  busy.emplace_back([&] {
    while (!stop.load()) (void)full({8192}, 2.0);  // 32 KiB: the block cache
  });
  busy.emplace_back([&] {
    std::atomic<int64_t> sink{0};
    while (!stop.load()) detail::parallel_for(64, detail::kMinParallelFlops, [&](int64_t b, int64_t e) { sink += e - b; });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (int round = 0; round < 30; ++round) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      manual_seed(5);
      const std::vector<float> a = randn({100}).to_vector<float>();
      manual_seed(5);
      if (randn({100}).to_vector<float>() != a) _exit(20);
      if (full({8192}, 3.0).sum().item() != 3.0 * 8192) _exit(21);
      _exit(split_loop_check());
    }
    const int code = wait_child(pid, 15);
    if (code != 0) {
      ADD_FAILURE() << "round " << round << ": child exit " << code << " (-1: hung; 10, 11: loop; 20, 21: draw, alloc)";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  stop.store(true);
  for (std::thread& t : busy) t.join();
}
