// dist.h without MPI (ag configured with -DAG_MPI=OFF or without libopenmpi-dev): is_available()
// is false, and whatever needs a process group says how to get one.
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "dist/dist.h"

namespace ag::dist {

[[noreturn]] static void unavailable(const char* op) {
  throw std::runtime_error(std::string("[dist::") + op +
                           "] ag was built without MPI: install libopenmpi-dev and openmpi-bin, then reconfigure "
                           "(cmake -DAG_MPI=ON)");
}

bool is_available() { return false; }
bool is_initialized() { return false; }
void init(int*, char***, std::chrono::milliseconds) { unavailable("init"); }
void finalize() {}
InitGuard::InitGuard(int* argc, char*** argv, std::chrono::milliseconds timeout) { init(argc, argv, timeout); }
InitGuard::~InitGuard() = default;
int rank() { unavailable("rank"); }
int world_size() { unavailable("world_size"); }
void abort(int code) { std::_Exit(code); }
void set_timeout(std::chrono::milliseconds) { unavailable("set_timeout"); }
std::chrono::milliseconds timeout() { unavailable("timeout"); }
void broadcast(Tensor&, int) { unavailable("broadcast"); }
void all_reduce(Tensor&, ReduceOp) { unavailable("all_reduce"); }
void barrier() { unavailable("barrier"); }
Work all_reduce_async(Tensor&, ReduceOp) { unavailable("all_reduce"); }
struct Work::State {};
bool Work::is_completed() { return true; }
void Work::wait() {}
std::chrono::nanoseconds Work::waited() const { return std::chrono::nanoseconds(0); }

}  // namespace ag::dist
