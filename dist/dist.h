// Data parallelism over MPI, in PyTorch's terms (torch.distributed): one process per rank, each
// with the whole model; collectives on tensors; DistributedDataParallel averages gradients.
//
//   int main(int argc, char** argv) {
//     ag::dist::InitGuard dist(&argc, &argv);       // MPI_Init, and MPI_Finalize at scope exit
//     Model model;
//     ag::dist::DistributedDataParallel ddp(model);  // rank 0's parameters everywhere
//     ... loss(ddp.forward(my_share_of_batch)).backward();  // .grad: the mean over ranks
//   }
//
// Run it with `mpirun -np 2 ./program`. Only dist/mpi_backend.cpp includes <mpi.h>; without MPI
// (configure -DAG_MPI=OFF, or libopenmpi-dev missing) the library builds, is_available() is
// false and init() throws.
//
// Errors never hang and never abort the process behind your back: every MPI call is checked (the
// error handler is MPI_ERRORS_RETURN) and a collective that waits longer than the timeout throws.
// After an error the ranks disagree about what was sent, so the only way on is ag::dist::abort,
// which ends every rank of the job (train_text does this and prints one line naming the rank).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../autograd/tensor.h"
#include "../nn/module.h"

namespace ag::dist {

// What all_reduce combines with (torch.distributed.ReduceOp). AVG divides the sum by
// world_size() (floating tensors only).
enum class ReduceOp { SUM, AVG, PRODUCT, MIN, MAX };

// Whether ag was built with MPI.
bool is_available();

// Starts MPI (MPI_Init) once per process; the default timeout of every collective is `timeout`
// (PyTorch's init_process_group default is 30 minutes; ours is 5: a toy model's step is short).
// Calls finalize() at exit if the program has not. Throws if MPI is not available or was
// already finalized.
void init(int* argc = nullptr, char*** argv = nullptr, std::chrono::milliseconds timeout = std::chrono::minutes(5));
// Ends MPI (MPI_Finalize) after a barrier without timeout (the other ranks may still be busy on
// their own: rank 0 sampling, saving); a no-op if not initialized or already finalized.
void finalize();
bool is_initialized();
// RAII: init() in the constructor, finalize() in the destructor, or abort(1) if the destructor
// runs while an exception unwinds (the other ranks may be waiting in a collective for this one).
class InitGuard {
 public:
  explicit InitGuard(int* argc = nullptr, char*** argv = nullptr,
                     std::chrono::milliseconds timeout = std::chrono::minutes(5));
  ~InitGuard();
  InitGuard(const InitGuard&) = delete;
  InitGuard& operator=(const InitGuard&) = delete;
};

int rank();        // this process's rank, 0 .. world_size() - 1
int world_size();  // the number of processes
// Ends every process of the job with `code` (MPI_Abort). Never returns.
[[noreturn]] void abort(int code = 1);
// The timeout of collectives from now on.
void set_timeout(std::chrono::milliseconds timeout);
std::chrono::milliseconds timeout();

// ---- collectives: every rank calls them in the same order with tensors of the same shape and
// dtype (float32, float64, int64, int32, bool for broadcast). They work in place on any tensor,
// a non-contiguous view included (the view's elements change), and record no history.

// Every rank's `tensor` becomes rank `root`'s.
void broadcast(Tensor& tensor, int root = 0);
// Every rank's `tensor` becomes the element-wise combination of all ranks' tensors.
void all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::SUM);
// Waits until every rank got here.
void barrier();

// A collective running in the background (all_reduce_async); wait() throws what the collective
// would have thrown. Destroying a Work that did not finish waits for it.
class Work {
 public:
  struct State;
  explicit Work(std::shared_ptr<State> s) : s_(std::move(s)) {}
  Work() = default;
  bool is_completed();  // tests once, without blocking
  void wait();          // blocks until done (or the timeout)
  std::chrono::nanoseconds waited() const;  // the time wait() and is_completed() spent in MPI

 private:
  std::shared_ptr<State> s_;
};
// Starts an all_reduce of a contiguous float32/float64/int64 tensor in place; `tensor` must stay
// alive and untouched until wait() returns (async_op=True in PyTorch).
Work all_reduce_async(Tensor& tensor, ReduceOp op = ReduceOp::SUM);

// ---- DistributedDataParallel ---------------------------------------------------------------
struct DDPOptions {
  // Gradients are packed into buckets of about this many bytes, in the reverse order of the
  // parameters (the order backward produces them); a gradient may span two buckets.
  double bucket_cap_mb = 1.0;
  // Broadcast rank 0's buffers (BatchNorm's running statistics) before each forward.
  bool broadcast_buffers = true;
  // Start each bucket's all_reduce as soon as backward has filled it (false: all of them when
  // backward has finished; for measuring what the overlap gains).
  bool overlap = true;
};

// Wraps a module (not owned: it must outlive the wrapper). At construction it checks that every
// rank has the same parameters and buffers (names, shapes, dtypes) and refuses a mismatch on
// every rank, then broadcasts rank 0's parameters and buffers. After each backward() through
// the module, every parameter's .grad is the mean of the ranks' gradients: a bucket's
// all_reduce starts as soon as backward has produced its gradients, overlapping the rest of
// backward, and backward returns once all have finished. A parameter that got no gradient on a
// rank counts as zero there. Each rank gives the model its 1/N share of the global batch, so N
// processes take the same step as one process with the whole batch (up to the order of sums).
class DistributedDataParallel : public nn::Module {
 public:
  explicit DistributedDataParallel(nn::Module& module, DDPOptions options = {});
  ~DistributedDataParallel() override;
  Tensor forward(const Tensor& x) override;
  nn::Module& module() { return module_; }
  // Time spent in the last backward waiting for all_reduce to finish (after backward's own
  // work), and the bytes all-reduced per backward.
  std::chrono::nanoseconds last_wait_time() const;
  int64_t bucket_count() const;
  int64_t bytes_per_step() const;
  // Broadcasts rank 0's buffers now (forward does it when broadcast_buffers).
  void sync_buffers();

  struct Impl;

 private:
  nn::Module& module_;
  std::shared_ptr<Impl> impl_;
};

}  // namespace ag::dist

namespace ag::nn {
using DistributedDataParallel = ag::dist::DistributedDataParallel;  // torch.nn.parallel's name
}
