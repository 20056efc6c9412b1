// The reverse-mode engine. An op's forward recorded a node for its output (record.cpp): the
// rule that maps the output's gradient to its inputs' gradients, and an edge per input to the
// node that made it, or to the leaf. loss.backward() then runs the graph backwards:
//   1. seed: the root's gradient (1 for a one-element loss);
//   2. count dependencies: a walk from the root counts, for each node, the edges pointing at it
//      (its consumers);
//   3. run ready nodes: a node is ready once all its consumers have handed it their gradients
//      (summed: a tensor used twice gets both). Its rule gives one gradient per input, each
//      handed to the node behind that edge (Kahn's algorithm);
//   4. accumulate: a gradient that reaches a leaf is added into its .grad.
// The state of the pass is one GraphTask (engine_task.h). The extensions hook in at named points,
// each in its own file: "a node's gradients arrived" and "a leaf's gradient arrived" (hooks and
// retain_grad, engine_hooks.cpp), ag::grad's choice of nodes and its returned gradients
// (engine_grad.cpp), "a node ran" (anomaly mode, the tape explorer: engine_observe.cpp), and
// callbacks after the pass (engine_callbacks.cpp). docs/autograd.md walks through this file.
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/engine_task.h"
#include "autograd/ops.h"

namespace ag {

using detail::GraphTask;

namespace {
std::vector<Tensor> detached(const std::vector<Tensor>& given, bool create_graph);
std::vector<std::shared_ptr<Node>> seed_and_count(GraphTask& task, const std::vector<Tensor>& roots,
                                                  const std::vector<Tensor>& grads);
void run_node(GraphTask& task, const std::shared_ptr<Node>& node, std::vector<Tensor>& grad_outputs,
              std::vector<std::shared_ptr<Node>>& ready);
void drop_recorded_pending(GraphTask& task);
}  // namespace

std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& given, bool retain_graph,
                                 bool create_graph, const std::vector<Tensor>& inputs) {
  GradModeGuard mode(create_graph);  // with create_graph, the rules' ops record the backward's own graph
  GraphTask task(retain_graph, create_graph, inputs);
  const detail::CallbackScope callbacks(task);
  const std::vector<Tensor> grads = detached(given, create_graph);
  try {
    std::vector<std::shared_ptr<Node>> ready = seed_and_count(task, roots, grads);  // steps 1 and 2
    std::vector<Tensor> grad_outputs;
    while (!ready.empty()) {  // step 3
      std::shared_ptr<Node> node = std::move(ready.back());
      ready.pop_back();
      run_node(task, node, grad_outputs, ready);
    }
    detail::finish_hooked_leaves(task);
    drop_recorded_pending(task);
  } catch (...) {
    drop_recorded_pending(task);
    detail::abandon_hooked_leaves(task);
    throw;
  }
  detail::run_callbacks(task);
  return std::move(task.targets.captured);
}

namespace {

// Without create_graph nothing the pass leaves behind may hold a history: a given gradient that
// has one (y.backward(y)) is used detached, or x.grad would keep y's graph alive, and that graph
// x: a reference cycle, never freed. A view is detached too, as its base holds a history.
std::vector<Tensor> detached(const std::vector<Tensor>& given, bool create_graph) {
  std::vector<Tensor> grads = given;
  for (Tensor& g : grads)
    if (!create_graph && g.defined() && (g.requires_grad() || g.impl()->view_base)) g = detail::detach_keeping_tangent(g);
  return grads;
}

// Claims a node's slots for this pass the first time the pass meets it; false if already met.
bool first_visit(GraphTask& task, const std::shared_ptr<Node>& n) {
  Node::PassSlots& s = n->slots;
  if (s.pass == task.pass) return false;
  s.pass = task.pass;
  s.pending_consumers = 0;
  s.pending_grad = Tensor();
  if (n->num_outputs > 1) n->meta->pending_more.assign(n->num_outputs - 1, Tensor());
  s.needed = task.accumulate ? 1 : -1;
  if (task.create_graph) task.recording.push_back(n);
  return true;
}

// Where the gradient of a node's output `k` is summed until the node runs.
Tensor& pending_slot(Node& n, uint32_t k) { return k == 0 ? n.slots.pending_grad : n.meta->pending_more[k - 1]; }

// Steps 1 and 2: hands each root its seed and counts every node's consumers with an iterative
// depth-first walk (an explicit stack, so a 100,000-op chain is fine). Returns the roots that are
// ready at once.
std::vector<std::shared_ptr<Node>> seed_and_count(GraphTask& task, const std::vector<Tensor>& roots,
                                                  const std::vector<Tensor>& grads) {
  std::vector<Node*> root_nodes;
  for (std::size_t r = 0; r < roots.size(); ++r) {
    const std::shared_ptr<Node>& n = roots[r].grad_fn();
    if (!n) {  // backward on a leaf: its gradient is the seed itself
      detail::leaf_grad_arrived(task, roots[r].impl_ptr(), grads[r]);
      continue;
    }
    if (first_visit(task, n)) root_nodes.push_back(n.get());
  }
  std::vector<Node*> stack(root_nodes);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (e.leaf) detail::count_leaf_edge(task, e.leaf);
      if (!e.fn) continue;
      if (first_visit(task, e.fn)) stack.push_back(e.fn.get());
      ++e.fn->slots.pending_consumers;
    }
  }
  if (!task.accumulate) detail::mark_needed(task, root_nodes);  // ag::grad runs only what leads to an input

  for (std::size_t r = 0; r < roots.size(); ++r) {
    if (Node* n = roots[r].grad_fn().get()) {
      Tensor& slot = pending_slot(*n, roots[r].impl()->output_nr);
      slot = detail::sum_grads(slot, grads[r]);
    }
  }
  std::vector<std::shared_ptr<Node>> ready;
  for (const Tensor& root : roots) {
    const std::shared_ptr<Node>& n = root.grad_fn();
    if (n && n->slots.needed > 0 && n->slots.pending_consumers == 0) {
      n->slots.pending_consumers = -1;  // queued (a root listed twice is queued once)
      ready.push_back(n);
    }
  }
  return ready;
}

void check_grad(const Node& node, std::size_t i, const Edge& e, const Tensor& g) {
  if (g.shape() != e.shape) {
    throw std::logic_error("[autograd] " + node.name() + " returned a gradient of shape " + g.shape().str() +
                           " for input " + std::to_string(i) + " of shape " + e.shape.str());
  }
}

// Step 3 for one ready node: the gradients of its outputs, its rule, and each input's gradient
// handed on: to the node behind the edge (ready once its last consumer has handed over) or to the
// leaf (step 4).
void run_node(GraphTask& task, const std::shared_ptr<Node>& node, std::vector<Tensor>& grad_outputs,
              std::vector<std::shared_ptr<Node>>& ready) {
  grad_outputs.assign(1, std::move(node->slots.pending_grad));  // one per output: several only for a custom Function
  node->slots.pending_grad = Tensor();
  if (node->meta) {
    for (Tensor& m : node->meta->pending_more) grad_outputs.push_back(std::move(m));
    node->meta->pending_more.clear();
    detail::node_grads_arrived(*node, grad_outputs.data());  // hooks on its outputs, retain_grad
  }
  if (!task.accumulate) {  // ag::grad: the gradient of an input that is not a leaf is what reached its node
    detail::capture_node_grads(task, *node, grad_outputs);
    if (!detail::leads_to_target(task, *node)) return;  // nothing past it is wanted
  }
  if (node->released) throw std::runtime_error(detail::second_time_message(node.get()));

  Grads grads;  // one per input
  bool any = false;
  for (const Tensor& g : grad_outputs) any = any || g.defined();
  if (any) {
    const detail::RunningNode running(node);
    grads = node->meta && node->meta->backward_multi ? node->meta->backward_multi(grad_outputs)
                                                     : node->backward(grad_outputs[0]);
    if (grads.size() != node->next.size()) {
      throw std::logic_error("[autograd] " + node->name() + " returned " + std::to_string(grads.size()) +
                             " gradients for " + std::to_string(node->next.size()) + " inputs");
    }
    if (detail::anomaly_mode_on() || task.observer) detail::node_ran(task, *node, grad_outputs, grads);
  }
  // Without retain_graph, a node that saved tensors frees them (its rule) and its edges as it goes.
  const bool release = !task.retain_graph && node->saves_tensors;
  if (release) {
    node->backward = nullptr;
    node->released = true;
    if (node->meta) node->meta->backward_multi = nullptr;
  }
  if (!task.retain_graph && node->meta) node->meta->hooks.clear();  // a hook may hold its own tensor: a cycle
  const auto& edges = node->next;
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const Edge& e = edges[i];
    const bool has = i < grads.size() && grads[i].defined() && e.active();
    if (has) check_grad(*node, i, e, grads[i]);
    if (e.moved_leaf && i < grads.size() && grads[i].defined())
      throw std::runtime_error("[backward] leaf variable has been moved into the graph interior (" + node->name() +
                               "'s input " + std::to_string(i) + " was a leaf that an in-place op gave a history)");
    if (e.leaf) {  // step 4, through the leaf's hooks if it has any
      if (e.leaf->leaf_hooks) detail::leaf_grad_arrived(task, e.leaf, has ? grads[i] : Tensor());
      else if (has) detail::accumulate(task, e.leaf, grads[i]);
    }
    if (!e.fn || e.fn->slots.needed <= 0) continue;
    Node* next = e.fn.get();
    if (has) {
      Tensor& slot = pending_slot(*next, e.input_nr);
      slot = detail::sum_grads(slot, grads[i]);
    }
    if (--next->slots.pending_consumers == 0) ready.push_back(e.fn);
  }
  if (release) node->next.clear();
}

// While recording, a pending gradient can have a history that leads back to its own node (a
// root given itself as its gradient); those left when the pass ends (a rule threw, or the node
// was not needed: ag::grad of an input elsewhere) are dropped, or the nodes would keep each
// other alive.
void drop_recorded_pending(GraphTask& task) {
  for (const std::shared_ptr<Node>& n : task.recording) {
    n->slots.pending_grad = Tensor();
    if (n->meta) n->meta->pending_more.clear();
  }
}

}  // namespace

detail::GraphTask::GraphTask(bool retain, bool create, const std::vector<Tensor>& inputs)
    : pass([] {
        static std::atomic<uint64_t> counter{0};
        return ++counter;
      }()),
      retain_graph(retain),
      create_graph(create),
      accumulate(inputs.empty()),
      targets(inputs),
      observer(backward_observer()) {}

// Step 4: a leaf's gradient (after its hooks) goes into its .grad, or, for ag::grad, is returned.
void detail::accumulate(GraphTask& task, const std::shared_ptr<TensorImpl>& leaf, const Tensor& g) {
  if (!task.accumulate) return capture_leaf_grad(task, leaf.get(), g);
  accumulate_grad(leaf.get(), g);
}

// Adds g into a leaf's .grad. Without a graph being recorded the first gradient is copied (so
// .grad never aliases graph data) and later ones are added in place; while recording
// (create_graph) the sum is out of place, so .grad carries the history of every gradient in it.
void detail::accumulate_grad(TensorImpl* leaf, const Tensor& g) {
  Tensor gc = g.dtype() == leaf->dtype ? g : g.to(leaf->dtype);
  if (!leaf->grad) {
    leaf->grad = clone(gc, MemoryFormat::Contiguous).impl_ptr();  // contiguous whatever g's layout, as PyTorch's
  } else if (grad_enabled()) {
    leaf->grad = add(Tensor(leaf->grad), gc).impl_ptr();
  } else {
    Tensor(leaf->grad).add_(gc);
  }
}

Tensor detail::sum_grads(const Tensor& a, const Tensor& b) { return a.defined() ? add(a, b) : b; }

std::string detail::second_time_message(const Node* node) {
  return "[backward] Trying to backward through the graph a second time (or directly access saved tensors after they "
         "have already been freed): " + std::string(node->name_) + "'s saved tensors were freed. Saved intermediate "
         "values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=true on the "
         "first backward call if you need to backward through the graph a second time";
}

void zero_grads(const std::vector<Tensor>& params, bool set_to_none) {
  NoGradGuard g;
  for (const Tensor& p : params) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
      continue;
    }
    // a gradient recorded with create_graph loses its history first, as PyTorch's zero_grad
    // detaches it (its graph refers back to p: keeping it would keep that graph alive)
    if (p.grad().grad_fn()) p.set_grad(p.grad().detach());
    p.grad().zero_();
  }
}

// The seed of each root: the given gradient (shape checked, in the root's dtype) or, for a
// one-element root, 1.
static std::vector<Tensor> seeds(const char* op, const std::vector<Tensor>& roots, const std::vector<Tensor>& given) {
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    if (!r.defined()) throw std::invalid_argument(std::string("[") + op + "] output " + std::to_string(i) + " is undefined");
    if (!r.requires_grad()) {
      throw std::runtime_error(std::string("[") + op + "] element " + std::to_string(i) +
                               " of tensors does not require grad and does not have a grad_fn");
    }
    const Tensor g = i < given.size() ? given[i] : Tensor();
    if (!g.defined()) {
      if (r.numel() != 1) {
        throw std::runtime_error(std::string("[") + op + "] grad can be implicitly created only for scalar outputs; got shape " +
                                 r.shape().str());
      }
      out.push_back(ones_like(r));
    } else if (g.shape() != r.shape()) {
      throw std::invalid_argument(std::string("[") + op + "] gradient of shape " + g.shape().str() +
                                  " does not match the shape " + r.shape().str() + " of output " + std::to_string(i));
    } else {
      // PyTorch casts a given gradient to its root's dtype (a float64 or even an int64 gradient
      // for a float32 output): every rule below may assume its gradient has its output's dtype
      out.push_back(g.dtype() == r.dtype() ? g : g.to(r.dtype()));
    }
  }
  return out;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  if (!defined()) detail::undefined_tensor("backward");
  const std::vector<Tensor> roots{*this};
  run_backward(roots, seeds("backward", roots, {gradient}), retain_graph.value_or(create_graph), create_graph);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                         bool allow_unused) {
  if (outputs.empty()) throw std::invalid_argument("[grad] expected at least one output");
  if (inputs.empty()) throw std::invalid_argument("[grad] expected at least one input");
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size()) {
    throw std::invalid_argument("[grad] got " + std::to_string(grad_outputs.size()) + " grad_outputs for " +
                                std::to_string(outputs.size()) + " outputs; give one per output (or none)");
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) throw std::invalid_argument("[grad] input " + std::to_string(i) + " is undefined");
    if (!inputs[i].requires_grad()) {
      throw std::runtime_error("[grad] One of the differentiated Tensors does not require grad (input " +
                               std::to_string(i) + ", shape " + inputs[i].shape().str() + ")");
    }
  }
  std::vector<Tensor> out =
      run_backward(outputs, seeds("grad", outputs, grad_outputs), retain_graph.value_or(create_graph), create_graph, inputs);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined() && !allow_unused) {
      throw std::runtime_error("[grad] One of the differentiated Tensors appears to not have been used in the graph. "
                               "Set allow_unused=True if this is the desired behavior. (input " + std::to_string(i) +
                               ", shape " + inputs[i].shape().str() + ")");
    }
  }
  return out;
}

}  // namespace ag
