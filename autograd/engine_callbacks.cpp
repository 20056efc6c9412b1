// Engine extension: queue_callback (PyTorch's Variable._execution_engine.queue_callback), a
// function run once when the backward pass running on this thread has finished.
#include <stdexcept>

#include "autograd/engine_task.h"

namespace ag {

namespace {
// The callbacks of the backward pass running on this thread (null outside one).
thread_local std::vector<std::function<void()>>* g_callbacks = nullptr;
}  // namespace

void detail::queue_callback(std::function<void()> fn) {
  if (!g_callbacks) throw std::logic_error("[queue_callback] no backward pass is running on this thread");
  g_callbacks->push_back(std::move(fn));
}

detail::CallbackScope::CallbackScope(GraphTask& task) : prev_(g_callbacks) { g_callbacks = &task.callbacks; }
detail::CallbackScope::~CallbackScope() { g_callbacks = prev_; }

void detail::run_callbacks(GraphTask& task) {
  for (std::size_t i = 0; i < task.callbacks.size(); ++i) {  // a callback may queue another
    const std::function<void()> fn = std::move(task.callbacks[i]);
    fn();
  }
}

}  // namespace ag
