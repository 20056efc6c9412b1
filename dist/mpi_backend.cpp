// The collectives of dist.h on MPI: the only file of ag that includes <mpi.h>.
//
// Every call is checked (MPI_ERRORS_RETURN on the communicator) and every collective is started
// non-blocking and polled against a deadline, so a rank that died, hangs or called another
// collective gives an exception on the others instead of a hang.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dist/dist.h"

namespace ag::dist {

namespace {

bool g_we_initialized = false;
std::chrono::milliseconds g_timeout = std::chrono::minutes(5);

int world_rank_or_minus_one() {
  int inited = 0, finalized = 0, r = -1;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (inited && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw std::runtime_error(std::string("[dist::") + op + "] rank " + std::to_string(world_rank_or_minus_one()) + ": " + what);
}

void check(int rc, const char* op) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fail(op, "MPI error: " + std::string(msg, static_cast<std::size_t>(len)));
}

void require_initialized(const char* op) {
  if (!is_initialized()) {
    fail(op, "the process group is not initialized: call ag::dist::init (or make an ag::dist::InitGuard) first");
  }
}

MPI_Datatype mpi_type(DType t, const char* op) {
  switch (t) {
    case kFloat32: return MPI_FLOAT;
    case kFloat64: return MPI_DOUBLE;
    case kInt64: return MPI_INT64_T;
    case kBool: return MPI_C_BOOL;
  }
  fail(op, "unsupported dtype");
}

// Polls `req` until it completes or the timeout passes (then throws naming the collective).
// Returns the time spent.
std::chrono::nanoseconds wait_for(MPI_Request& req, const char* op) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + g_timeout;
  for (;;) {
    int done = 0;
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), op);
    if (done) return std::chrono::steady_clock::now() - t0;
    if (std::chrono::steady_clock::now() > deadline) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", static_cast<double>(g_timeout.count()) / 1000.0);
      fail(op, std::string("no answer from the other ranks after ") + secs +
                   " s (a rank died, hangs, or called another collective)");
    }
    std::this_thread::yield();
  }
}

// wait_for, but if it throws, `buffer` stays allocated until the process ends (the job is over
// but MPI may still write into it).
std::chrono::nanoseconds wait_keeping(MPI_Request& req, const char* op, const Tensor& buffer) {
  try {
    return wait_for(req, op);
  } catch (...) {
    static std::vector<Tensor> graveyard;
    graveyard.push_back(buffer);
    throw;
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return MPI_SUM;
    case ReduceOp::PRODUCT: return MPI_PROD;
    case ReduceOp::MIN: return MPI_MIN;
    case ReduceOp::MAX: return MPI_MAX;
  }
  return MPI_SUM;
}

void* raw(const Tensor& t) {
  return static_cast<char*>(t.impl()->storage->data) + t.storage_offset() * static_cast<int64_t>(element_size(t.dtype()));
}

int count_of(const Tensor& t, const char* op) {
  if (t.numel() > INT32_MAX) fail(op, "tensors over 2^31 - 1 elements are not supported; got shape " + t.shape().str());
  return static_cast<int>(t.numel());
}

void check_reducible(const Tensor& t, ReduceOp op, const char* name) {
  if (!t.defined()) detail::undefined_tensor(name);
  if (t.dtype() == kBool) fail(name, "bool tensors cannot be reduced; got shape " + t.shape().str());
  if (op == ReduceOp::AVG && !t.is_floating_point()) {
    fail(name, "ReduceOp::AVG needs a floating tensor; got " + dtype_name(t.dtype()) + " of shape " + t.shape().str());
  }
}

// Runs `body` on a contiguous tensor holding t's elements and writes the result back into t
// (a view's elements change, as PyTorch's in-place collectives).
template <class F>
void in_place(Tensor& t, F&& body) {
  const bool direct = t.is_contiguous();
  Tensor buf = direct ? t : t.contiguous();
  body(buf);
  if (direct) {
    ++t.impl()->storage->version;
  } else {
    NoGradGuard g;
    t.copy_(buf);
  }
}

}  // namespace

bool is_available() { return true; }

bool is_initialized() {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  return inited && !finalized;
}

void init(int* argc, char*** argv, std::chrono::milliseconds timeout) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw std::runtime_error("[dist::init] MPI was already finalized in this process; it cannot start again");
  g_timeout = timeout;
  if (is_initialized()) return;
  if (MPI_Init(argc, argv) != MPI_SUCCESS) throw std::runtime_error("[dist::init] MPI_Init failed");
  g_we_initialized = true;
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "init");
  std::atexit([] {
    if (g_we_initialized && is_initialized()) MPI_Finalize();
  });
}

void finalize() {
  if (!is_initialized()) return;
  // no timeout here: a rank may still be busy alone (rank 0 sampling, saving) for a long time,
  // and a rank that died ends the job through mpirun anyway
  check(MPI_Barrier(MPI_COMM_WORLD), "finalize");
  MPI_Finalize();
}

InitGuard::InitGuard(int* argc, char*** argv, std::chrono::milliseconds timeout) { init(argc, argv, timeout); }

InitGuard::~InitGuard() {
  if (std::uncaught_exceptions() > 0 && is_initialized() && world_size() > 1) abort(1);
  try {
    finalize();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    abort(1);
  }
}

int rank() {
  require_initialized("rank");
  int r = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &r), "rank");
  return r;
}

int world_size() {
  require_initialized("world_size");
  int n = 0;
  check(MPI_Comm_size(MPI_COMM_WORLD, &n), "world_size");
  return n;
}

void abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (is_initialized()) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void set_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) throw std::invalid_argument("[dist::set_timeout] the timeout must be positive");
  g_timeout = timeout;
}
std::chrono::milliseconds timeout() { return g_timeout; }

void broadcast(Tensor& tensor, int root) {
  require_initialized("broadcast");
  if (!tensor.defined()) detail::undefined_tensor("dist::broadcast");
  if (root < 0 || root >= world_size()) {
    fail("broadcast", "root " + std::to_string(root) + " is not a rank (world size " + std::to_string(world_size()) + ")");
  }
  in_place(tensor, [&](Tensor& buf) {
    MPI_Request req;
    check(MPI_Ibcast(raw(buf), count_of(buf, "broadcast"), mpi_type(buf.dtype(), "broadcast"), root, MPI_COMM_WORLD, &req),
          "broadcast");
    wait_keeping(req, "broadcast", buf);
  });
}

void all_reduce(Tensor& tensor, ReduceOp op) {
  require_initialized("all_reduce");
  check_reducible(tensor, op, "all_reduce");
  in_place(tensor, [&](Tensor& buf) { all_reduce_async(buf, op).wait(); });
}

void barrier() {
  require_initialized("barrier");
  MPI_Request req;
  check(MPI_Ibarrier(MPI_COMM_WORLD, &req), "barrier");
  wait_for(req, "barrier");
}

struct Work::State {
  MPI_Request req = MPI_REQUEST_NULL;
  Tensor tensor;  // kept alive while MPI writes into it
  ReduceOp op = ReduceOp::SUM;
  bool done = false;
  bool abandoned = false;  // timed out: the job is over, nobody waits for it again
  std::chrono::nanoseconds waited{0};
  void finish() {
    done = true;
    if (op == ReduceOp::AVG) {
      NoGradGuard g;
      tensor.div_(static_cast<double>(world_size()));
    }
    ++tensor.impl()->storage->version;
  }
  ~State() {
    if (done || abandoned || req == MPI_REQUEST_NULL || !is_initialized()) return;
    try {
      wait_for(req, "all_reduce");
    } catch (const std::exception& e) {  // a destructor cannot throw: the job cannot go on
      std::fprintf(stderr, "%s\n", e.what());
      abort(1);
    }
  }
};

Work all_reduce_async(Tensor& tensor, ReduceOp op) {
  require_initialized("all_reduce");
  check_reducible(tensor, op, "all_reduce");
  if (!tensor.is_contiguous()) fail("all_reduce", "all_reduce_async needs a contiguous tensor; got a non-contiguous one of shape " + tensor.shape().str());
  auto s = std::make_shared<Work::State>();
  s->tensor = tensor;
  s->op = op;
  check(MPI_Iallreduce(MPI_IN_PLACE, raw(tensor), count_of(tensor, "all_reduce"), mpi_type(tensor.dtype(), "all_reduce"),
                       mpi_op(op), MPI_COMM_WORLD, &s->req),
        "all_reduce");
  return Work(std::move(s));
}

bool Work::is_completed() {
  if (!s_ || s_->done) return true;
  const auto t0 = std::chrono::steady_clock::now();
  int flag = 0;
  check(MPI_Test(&s_->req, &flag, MPI_STATUS_IGNORE), "all_reduce");
  s_->waited += std::chrono::steady_clock::now() - t0;
  if (flag) s_->finish();
  return flag != 0;
}

void Work::wait() {
  if (!s_ || s_->done || s_->abandoned) return;
  s_->abandoned = true;  // unless it finishes
  s_->waited += wait_keeping(s_->req, "all_reduce", s_->tensor);
  s_->abandoned = false;
  s_->finish();
}

std::chrono::nanoseconds Work::waited() const { return s_ ? s_->waited : std::chrono::nanoseconds(0); }

}  // namespace ag::dist
