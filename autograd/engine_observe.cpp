// Engine extension at "a node ran": anomaly mode's check of the gradients a rule returned
// (anomaly.cpp) and the observer through which the tape explorer records a backward pass (tape.cpp).
#include "autograd/engine_task.h"

namespace ag {

namespace {
thread_local detail::BackwardObserver* g_observer = nullptr;
}  // namespace
detail::BackwardObserver* detail::backward_observer() { return g_observer; }
void detail::set_backward_observer(BackwardObserver* o) { g_observer = o; }

void detail::node_ran(GraphTask& task, const Node& node, const std::vector<Tensor>& grad_outputs,
                      const Grads& grad_inputs) {
  if (anomaly_mode_on()) anomaly_check(node, grad_inputs);
  if (task.observer) task.observer->node_ran(node, grad_outputs, grad_inputs);
}

}  // namespace ag
