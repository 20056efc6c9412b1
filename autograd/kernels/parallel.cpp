// parallel_for and set_num_threads (autograd/threads.h, kernels/parallel.h): ag's own pool of
// threads, started once and reused (once per process: a forked child starts its own). OpenBLAS
// runs every call on the thread that makes it: its own worker threads, once woken, spin for a
// while after each GEMM and took the second core from ag's threads (medium step at 2 threads:
// 71-73 ms with them, 58 ms without).
#include "autograd/kernels/parallel.h"

#include <cblas.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "autograd/threads.h"

namespace ag {

namespace {

// ag's thread count; 0 until first used, then OpenBLAS's count at that time (OPENBLAS_NUM_THREADS,
// OMP_NUM_THREADS or the cores), after which OpenBLAS itself is kept at one thread.
std::atomic<int> g_threads{0};

int threads_now() {
  int n = g_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  static std::once_flag once;
  std::call_once(once, [] {
    const int n = std::max(1, openblas_get_num_threads());
    openblas_set_num_threads(1);  // before any thread can see a count and start a GEMM
    int expected = 0;
    g_threads.compare_exchange_strong(expected, n);
  });
  return g_threads.load(std::memory_order_relaxed);
}

}  // namespace

void set_num_threads(int n) {
  if (n < 1) throw std::invalid_argument("set_num_threads: expected a positive number of threads, got " + std::to_string(n));
  threads_now();  // (OpenBLAS to one thread, once)
  g_threads.store(n, std::memory_order_relaxed);
}

int get_num_threads() { return threads_now(); }

}  // namespace ag

namespace ag::detail {

namespace {

thread_local bool t_in_parallel = false;  // this thread runs a chunk of a parallel_for

// How long a worker that finished a job keeps looking for the next before it sleeps.
constexpr std::chrono::microseconds kLookout{50};

inline void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Workers that sleep on a condition variable between jobs (an idle worker costs no CPU once it
// has looked out for the next job for kLookout). A job is chunks [0, chunks) of f, taken from the
// job's own counter by the workers and the caller alike, so a slow wake-up only means the caller
// does more of them. A worker touches a job only after registering as its user under the lock,
// and the caller returns (and the job, on its stack, ends) only when every chunk is done and no
// worker holds the job. One job at a time: a parallel_for from another thread while one runs goes
// serial.
class Pool {
 public:
  // Runs chunk(t) for t in [0, chunks) on up to chunks threads; false if the pool is busy.
  bool run(int64_t chunks, const std::function<void(int64_t)>& chunk) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    grow(chunks - 1);
    Job job{&chunk, chunks};
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &job;
      ++generation_;
      published_.store(generation_, std::memory_order_release);
    }
    wake_.notify_all();
    take(job);
    std::unique_lock<std::mutex> lock(mu_);
    job_ = nullptr;  // no worker registers for it from here on
    finished_.wait(lock, [&] { return job.done == job.chunks && job.users == 0; });
    return true;
  }

 private:
  struct Job {
    const std::function<void(int64_t)>* f;
    int64_t chunks;
    std::atomic<int64_t> next{0};
    int64_t done = 0;  // chunks finished (under mu_)
    int users = 0;     // workers holding this job (under mu_)
  };

  // Takes the job's chunks until none are left.
  void take(Job& job) {
    for (int64_t t = job.next.fetch_add(1); t < job.chunks; t = job.next.fetch_add(1)) {
      (*job.f)(t);
      std::lock_guard<std::mutex> lock(mu_);
      if (++job.done == job.chunks) finished_.notify_all();
    }
  }

  void grow(int64_t n) {
    while (static_cast<int64_t>(workers_.size()) < n) {
      try {
        workers_.emplace_back([this] { loop(); });
      } catch (const std::system_error&) {  // no more threads to be had: fewer helpers
        return;
      }
    }
  }

  void loop() {
    t_in_parallel = true;
    uint64_t seen = 0;
    for (;;) {
      // A while on the lookout first: a training step's parallel loops come a few microseconds
      // apart, and a worker woken through the condition variable joins tens of microseconds
      // late, leaving its half of the loop to the caller's second turn.
      const auto until = std::chrono::steady_clock::now() + kLookout;
      while (published_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until)
        for (int i = 0; i < 16; ++i) pause();
      Job* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        job = job_;
        if (!job) continue;
        ++job->users;
      }
      take(*job);
      std::lock_guard<std::mutex> lock(mu_);
      if (--job->users == 0) finished_.notify_all();
    }
  }

  std::mutex busy_;  // held by the caller for the whole job
  std::mutex mu_;
  std::condition_variable wake_, finished_;
  std::vector<std::thread> workers_;  // never joined: they sleep until the process ends
  Job* job_ = nullptr;                // the running job, while workers may still join it
  uint64_t generation_ = 0;
  std::atomic<uint64_t> published_{0};  // generation_, for the workers' lookout outside the lock
};

// The pool, made by the first parallel loop to need one. Never destroyed: workers may still wait
// on it at exit.
std::atomic<Pool*> g_pool{nullptr};

Pool& pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p) return *p;
  auto* fresh = new Pool;
  if (g_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;  // another thread made one first (this one has no workers yet)
  return *p;
}

// fork() copies only the forking thread: the child's copy of the pool lists workers that do not
// exist there, and its locks may be held by them for good. The child drops it (leaked: its
// threads' handles cannot be destroyed) and its first parallel loop makes a pool of its own
// workers. Nothing in the child touches the old pool, so the parent need not lock it for the
// fork. (A fork from inside a chunk of a parallel loop would leave that loop waiting in the child
// for chunks the vanished workers were running; don't.)
void drop_pool_in_child() { g_pool.store(nullptr, std::memory_order_relaxed); }
// Registered while the program starts, before any thread of its own can fork.
[[maybe_unused]] const bool g_fork_handler = (pthread_atfork(nullptr, nullptr, drop_pool_in_child), true);

}  // namespace

bool in_parallel_region() { return t_in_parallel; }

void parallel_for(int64_t n, double flops_per_item, const std::function<void(int64_t, int64_t)>& f) {
  const bool small = static_cast<double>(n) * flops_per_item < kMinParallelFlops;
  const int64_t threads = small || t_in_parallel ? 1 : std::min<int64_t>(get_num_threads(), n);
  if (threads <= 1) {
    if (n > 0) f(0, n);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
  const std::function<void(int64_t)> chunk = [&](int64_t t) {
    const bool outer = t_in_parallel;
    t_in_parallel = true;
    try {
      f(n * t / threads, n * (t + 1) / threads);
    } catch (...) {
      errors[static_cast<std::size_t>(t)] = std::current_exception();
    }
    t_in_parallel = outer;
  };
  if (!pool().run(threads, chunk))
    for (int64_t t = 0; t < threads; ++t) chunk(t);
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ag::detail
