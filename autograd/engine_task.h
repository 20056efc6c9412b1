// Inside the engine: the state of one backward pass, kept apart from the graph (libtorch's
// GraphTask), and the named points where the engine's extensions hook in. engine.cpp is the
// algorithm; each extension is a file of its own:
//   engine_hooks.cpp      tensor hooks on outputs and leaves, retain_grad
//   engine_grad.cpp       ag::grad: which nodes to run, and the gradients it returns
//   engine_observe.cpp    anomaly mode's check and the tape explorer's observer
//   engine_callbacks.cpp  queue_callback
// Not part of the public API: only those files and record.cpp include it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/node.h"

namespace ag::detail {

// What ag::grad asked for (engine_grad.cpp): per input, its impl if it is a leaf, else its node,
// and the gradient that reached it so far.
struct GradTargets {
  explicit GradTargets(const std::vector<Tensor>& inputs);
  std::vector<const TensorImpl*> leaves;
  std::vector<const Node*> nodes;
  std::vector<uint32_t> output_nrs;  // which output of its node each non-leaf input is
  std::vector<Tensor> captured;
  bool is_leaf_target(const TensorImpl* t) const;
  bool is_node_target(const Node* n) const;
};

// One backward pass.
struct GraphTask {
  GraphTask(bool retain_graph, bool create_graph, const std::vector<Tensor>& inputs);

  const uint64_t pass;  // a number no other pass has: a node's slots are this pass's if slots.pass == pass
  const bool retain_graph, create_graph;
  const bool accumulate;  // Tensor::backward: gradients go into .grad; ag::grad: they are returned
  GradTargets targets;    // ag::grad's inputs
  // Leaves with hooks this pass met (held, so each lives until its hooks ran): engine_hooks.cpp
  std::vector<std::shared_ptr<TensorImpl>> hooked;
  // With create_graph, every node met: a pending gradient can hold a history leading back to its
  // own node, so those left at the end are dropped (or the nodes would keep each other alive).
  std::vector<std::shared_ptr<Node>> recording;
  std::vector<std::function<void()>> callbacks;  // queue_callback, run after the pass
  BackwardObserver* observer;                    // the tape explorer's, or null
};

// ---- the extension points engine.cpp calls ----

// engine_hooks.cpp. The counting walk met an edge to `leaf`: a leaf with hooks gets the sum of
// its gradients once, so the pass counts the edges that lead to it.
void count_leaf_edge(GraphTask& task, const std::shared_ptr<TensorImpl>& leaf);
// "A node's gradients arrived" (grads: one per output, before its rule runs): the hooks on its
// outputs may replace them, then outputs that retain their gradient get it. Only for a node with meta.
void node_grads_arrived(const Node& node, Tensor* grads);
// "A leaf's gradient arrived" (for a leaf with hooks; undefined: an edge that carried none). It is
// summed until the leaf's last edge delivered, then the hooks run and the sum is accumulated.
void leaf_grad_arrived(GraphTask& task, const std::shared_ptr<TensorImpl>& leaf, const Tensor& g);
// The pass ended: leaves whose hooks still wait for an edge that never ran get what they have.
void finish_hooked_leaves(GraphTask& task);
// The pass threw: forget the sums.
void abandon_hooked_leaves(GraphTask& task);

// engine_grad.cpp. After the counting walk: which nodes lead to an input (sets slots.needed).
// Throws "backward through the graph a second time" if a freed node hides whether one does.
void mark_needed(GraphTask& task, const std::vector<Node*>& roots);
// Whether anything past `node` is wanted by ag::grad (an input below it).
bool leads_to_target(const GraphTask& task, const Node& node);
// The node of a non-leaf input ran: its gradient is what reached it (grads: one per output).
void capture_node_grads(GraphTask& task, const Node& node, const std::vector<Tensor>& grads);
// A gradient reached a leaf that is an input.
void capture_leaf_grad(GraphTask& task, const TensorImpl* leaf, const Tensor& g);

// engine_observe.cpp. "A node ran" (only called with anomaly mode on or an observer set).
void node_ran(GraphTask& task, const Node& node, const std::vector<Tensor>& grad_outputs, const Grads& grad_inputs);

// engine_callbacks.cpp. Makes queue_callback add to task.callbacks while the pass runs on this
// thread (a nested backward, inside a hook, has its own).
class CallbackScope {
 public:
  explicit CallbackScope(GraphTask& task);
  ~CallbackScope();
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;

 private:
  std::vector<std::function<void()>>* prev_;
};
void run_callbacks(GraphTask& task);

// engine.cpp. Step 4: `g` reached `leaf` (after its hooks): into its .grad, or to ag::grad.
void accumulate(GraphTask& task, const std::shared_ptr<TensorImpl>& leaf, const Tensor& g);
// Adds g into a leaf's (or a retained tensor's) .grad.
void accumulate_grad(TensorImpl* leaf, const Tensor& g);
// a + b, where an undefined a is no gradient yet.
Tensor sum_grads(const Tensor& a, const Tensor& b);
// PyTorch's "Trying to backward through the graph a second time" for a node already released.
std::string second_time_message(const Node* node);

// record.cpp. While the engine runs a node's rule on this thread, a saved output unpacked with
// grad mode on gets that node as its grad_fn (SavedTensor::get).
class RunningNode {
 public:
  explicit RunningNode(const std::shared_ptr<Node>& n);
  ~RunningNode();
  RunningNode(const RunningNode&) = delete;
  RunningNode& operator=(const RunningNode&) = delete;

 private:
  const std::shared_ptr<Node>* prev_;
};

// A given gradient without its history (detach), keeping the tangent it carries at the live dual
// level: forward-over-reverse through a backward pass that records no graph (forward_ad.cpp).
Tensor detach_keeping_tangent(const Tensor& g);

}  // namespace ag::detail
