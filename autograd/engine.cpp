// The reverse-mode engine: recording nodes, the iterative topological sort, gradient routing
// and leaf accumulation.
#include <atomic>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "autograd/functional.h"
#include "autograd/inplace.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "autograd/pool.h"

namespace ag {

namespace {
thread_local bool g_grad_enabled = true;
std::atomic<int64_t> g_live_nodes{0};
}  // namespace

Node::Node() { ++g_live_nodes; }
// Destroying the last handle to a long chain would recurse once per node; instead, a dying node
// takes over the edges of every input node it is the last owner of, so the chain unwinds in a loop.
Node::~Node() {
  --g_live_nodes;
  std::vector<std::shared_ptr<Node>> stack;
  for (Edge& e : next)
    if (e.fn) stack.push_back(std::move(e.fn));
  next.clear();
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    if (n.use_count() == 1) {
      for (Edge& e : n->next)
        if (e.fn) stack.push_back(std::move(e.fn));
      n->next.clear();
    }
  }
}
int64_t live_nodes() { return g_live_nodes.load(); }

bool grad_enabled() { return g_grad_enabled; }
GradModeGuard::GradModeGuard(bool on) : prev_(g_grad_enabled) { g_grad_enabled = on; }
GradModeGuard::~GradModeGuard() { g_grad_enabled = prev_; }

namespace {
thread_local detail::BackwardObserver* g_observer = nullptr;
}  // namespace
detail::BackwardObserver* detail::backward_observer() { return g_observer; }
void detail::set_backward_observer(BackwardObserver* o) { g_observer = o; }

// The callbacks queued by the backward pass running on this thread (null outside one).
thread_local std::vector<std::function<void()>>* g_callbacks = nullptr;
void detail::queue_callback(std::function<void()> fn) {
  if (!g_callbacks) throw std::logic_error("[queue_callback] no backward pass is running on this thread");
  g_callbacks->push_back(std::move(fn));
}
namespace {
struct CallbackScope {  // a nested backward (inside a hook) has its own callbacks
  explicit CallbackScope(std::vector<std::function<void()>>* mine) : prev(g_callbacks) { g_callbacks = mine; }
  ~CallbackScope() { g_callbacks = prev; }
  std::vector<std::function<void()>>* prev;
};
}  // namespace

namespace {
// KeepValuesGuard (tape.h): whether the nodes recorded on this thread keep copies of their values,
// and the copies of what the op being recorded saved for backward, with the tensor each was taken
// from (SavedTensor's constructor adds them; record() hands them to the node and clears the list).
struct PendingSaved {
  Tensor copy;
  const TensorImpl* from;
};
thread_local bool g_keep_values = false;
// Tensors saved for backward on this thread so far, and the count when the last node was
// recorded: a node saved tensors iff the count moved since (ops save right before they record).
// A node that saved none keeps its backward and edges after a backward pass, so a second pass
// runs it, as PyTorch runs a node whose saved variables were not needed.
thread_local uint64_t g_saved_count = 0;
thread_local uint64_t g_saved_at_record = 0;
bool take_saved_flag() {
  const bool saved = g_saved_count != g_saved_at_record;
  g_saved_at_record = g_saved_count;
  return saved;
}
thread_local std::vector<PendingSaved> g_pending_saved;

Tensor value_copy(const Tensor& t) { return t.defined() ? t.detach().clone() : Tensor(); }

// The node keeps copies of its inputs, its outputs and the tensors saved for it.
void keep_values(Node& node, const Tensor* inputs, std::size_t n, const Tensor* outs, std::size_t m) {
  if (!node.meta) node.meta = std::make_unique<NodeMeta>();
  NodeMeta& k = *node.meta;
  for (std::size_t i = 0; i < n; ++i) k.kept_inputs.push_back(value_copy(inputs[i]));
  for (std::size_t j = 0; j < m; ++j) k.kept_outputs.push_back(value_copy(outs[j]));
  for (PendingSaved& s : g_pending_saved) {
    int from = -2;
    for (std::size_t j = 0; j < m; ++j)
      if (outs[j].impl() == s.from) from = -1;
    for (std::size_t i = n; i-- > 0;)
      if (inputs[i].impl() == s.from) from = static_cast<int>(i);
    k.kept_saved.push_back(std::move(s.copy));
    k.kept_saved_from.push_back(from);
  }
  g_pending_saved.clear();
}
}  // namespace
bool detail::keep_values_on() { return g_keep_values; }
void detail::set_keep_values(bool on) {
  g_keep_values = on;
  g_pending_saved.clear();
}

namespace {
// The node whose backward the engine is running on this thread: the grad_fn a saved output gets
// back when it is unpacked while a graph is recorded.
thread_local const std::shared_ptr<Node>* g_running = nullptr;

class RunningNode {
 public:
  explicit RunningNode(const std::shared_ptr<Node>& n) : prev_(g_running) { g_running = &n; }
  ~RunningNode() { g_running = prev_; }
  RunningNode(const RunningNode&) = delete;
  RunningNode& operator=(const RunningNode&) = delete;

 private:
  const std::shared_ptr<Node>* prev_;
};
}  // namespace

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;  // "nothing saved": ops pass an undefined tensor when a grad is not needed
  ++g_saved_count;
  if (g_keep_values) g_pending_saved.push_back({value_copy(t), t.impl()});
  // Nothing is kept that an in-place op on t later could turn into a reference cycle (t's new
  // grad_fn leading back to this node, which would hold t): the data is a new alias, and its
  // history is the one t has now (PyTorch's SavedVariable keeps data and grad_fn apart too).
  t_ = t.detach();
  if (is_output || !t.requires_grad()) {
  } else if (!t.impl()->grad_fn) {
    leaf_ = t.impl_ptr();  // a leaf that requires grad: gradients through it must reach its .grad
  } else {
    TensorImpl& a = *t_.impl();
    a.requires_grad = true;
    a.grad_fn = t.impl()->grad_fn;
    a.output_nr = t.impl()->output_nr;
  }
  version_ = t.impl()->storage->version;
  output_nr_ = t.impl()->output_nr;
}

Tensor SavedTensor::get() const {
  if (!t_.defined()) return t_;
  uint64_t now = t_.impl()->storage->version;
  if (now != version_) {
    static const char* const kTypes[] = {"FloatTensor", "DoubleTensor", "LongTensor", "BoolTensor"};
    const DType dt = t_.dtype();
    const char* type = dt == kFloat32 ? kTypes[0] : dt == kFloat64 ? kTypes[1] : dt == kInt64 ? kTypes[2] : kTypes[3];
    throw std::runtime_error(
        std::string("[autograd] one of the variables needed for gradient computation has been modified by an "
                    "inplace operation: [torch.") + type + " " + t_.shape().str() + "] is at version " +
        std::to_string(now) + "; expected version " + std::to_string(version_) + " instead");
  }
  if (is_output_ && g_grad_enabled && g_running) {  // the output, with its history: its own node
    Tensor out = t_.detach();
    out.impl()->grad_fn = *g_running;
    out.impl()->output_nr = output_nr_;
    out.impl()->requires_grad = true;
    return out;
  }
  if (std::shared_ptr<TensorImpl> leaf = leaf_.lock()) return Tensor(std::move(leaf));
  return t_;
}

static bool tracks_grad(const Tensor* t) { return t->defined() && t->requires_grad(); }

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (tracks_grad(t)) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (tracks_grad(&t)) return true;
  return false;
}

// The node of an op over `inputs`, with one edge per input (to its grad_fn or to the leaf).
static std::shared_ptr<Node> make_node(const char* name, const Tensor* inputs, std::size_t n) {
  auto node = detail::make_pooled<Node>();
  node->name_ = name;
  node->next.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Tensor& in = inputs[i];
    Edge e;
    if (tracks_grad(&in)) {
      TensorImpl* impl = in.impl();
      if (impl->is_view && impl->grad_fn && impl->view_version != impl->storage->version) {
        if (!impl->view_base) {
          throw std::runtime_error(std::string("[") + name + "] an input of shape " + in.shape().str() +
                                   " is a view whose base was modified in place after the view was "
                                   "taken; its gradient would be wrong. Take the view again after the "
                                   "in-place op");
        }
        detail::refresh_view(in);  // its base changed in place: a view of the base as it is now
      }
      e.shape = in.shape();
      if (impl->grad_fn) {
        e.fn = impl->grad_fn;
        e.input_nr = impl->output_nr;
      } else {
        e.leaf = in.impl_ptr();
        impl->leaf_in_graph = true;
      }
    }
    node->next.push_back(std::move(e));
  }
  return node;
}

void detail::drop_leaf_edges(const std::shared_ptr<Node>& from, const TensorImpl* leaf) {
  if (!from) return;
  std::vector<Node*> stack{from.get()};
  std::unordered_set<Node*> seen{from.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (Edge& e : n->next) {
      if (e.leaf.get() == leaf) {
        e.leaf = nullptr;
        e.moved_leaf = true;
      }
      if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
}

static void record_n(Tensor& out, const char* name, const Tensor* inputs, std::size_t n, BackwardFn fn) {
  auto node = make_node(name, inputs, n);
  node->saves_tensors = take_saved_flag();
  node->backward = std::move(fn);
  node->shape = out.shape();
  node->dtype = out.dtype();
  if (detail::anomaly_mode_on()) detail::anomaly_record(*node, {out});
  if (g_keep_values) keep_values(*node, inputs, n, &out, 1);
  out.impl()->grad_fn = std::move(node);
  out.impl()->output_nr = 0;
  out.impl()->requires_grad = true;
}

void record(Tensor& out, const char* name, std::initializer_list<Tensor> inputs, BackwardFn fn) {
  record_n(out, name, inputs.begin(), inputs.size(), std::move(fn));
}

void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, BackwardFn fn) {
  record_n(out, name, inputs.data(), inputs.size(), std::move(fn));
}

void record_multi(std::vector<Tensor>& outs, const std::vector<bool>& differentiable, const char* name,
                  const std::vector<Tensor>& inputs, MultiBackwardFn fn) {
  if (outs.empty()) throw std::logic_error(std::string("[") + name + "] a node needs at least one output");
  auto node = make_node(name, inputs.data(), inputs.size());
  take_saved_flag();
  node->saves_tensors = true;  // a custom Function's ctx may hold anything: freed after backward
  node->meta = std::make_unique<NodeMeta>();
  node->meta->backward_multi = std::move(fn);
  node->num_outputs = static_cast<uint32_t>(outs.size());
  node->shape = outs[0].shape();
  node->dtype = outs[0].dtype();
  if (detail::anomaly_mode_on()) detail::anomaly_record(*node, outs);
  if (g_keep_values) keep_values(*node, inputs.data(), inputs.size(), outs.data(), outs.size());
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (k < differentiable.size() && !differentiable[k]) continue;
    outs[k].impl()->grad_fn = node;
    outs[k].impl()->output_nr = static_cast<uint32_t>(k);
    outs[k].impl()->requires_grad = true;
  }
}

// Adds g into a leaf's .grad. Without a graph being recorded the first gradient is copied (so
// .grad never aliases graph data) and later ones are added in place; while recording
// (create_graph) the sum is out of place, so .grad carries the history of every gradient in it.
static void accumulate_leaf(TensorImpl* leaf, const Tensor& g) {
  Tensor gc = g.dtype() == leaf->dtype ? g : g.to(leaf->dtype);
  if (!leaf->grad) {
    leaf->grad = clone(gc, MemoryFormat::Contiguous).impl_ptr();  // contiguous whatever g's layout, as PyTorch's
  } else if (g_grad_enabled) {
    leaf->grad = add(Tensor(leaf->grad), gc).impl_ptr();
  } else {
    Tensor(leaf->grad).add_(gc);
  }
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

static void check_grad(std::string_view name, std::size_t i, const Edge& e, const Tensor& g) {
  if (g.shape() != e.shape) {
    throw std::logic_error("[autograd] " + std::string(name) + " returned a gradient of shape " + g.shape().str() +
                           " for input " + std::to_string(i) + " of shape " + e.shape.str());
  }
}

static std::string second_time_message(const Node* node) {
  return "[backward] Trying to backward through the graph a second time (or directly access saved tensors after they "
         "have already been freed): " + std::string(node->name_) + "'s saved tensors were freed. Saved intermediate "
         "values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=true on the "
         "first backward call if you need to backward through the graph a second time";
}

static Tensor sum_grads(const Tensor& a, const Tensor& b) { return a.defined() ? add(a, b) : b; }

namespace {

// What ag::grad asked for: the leaves and the nodes whose gradients are returned, by index.
struct Targets {
  std::vector<const TensorImpl*> leaves;  // per input: its impl if it is a leaf
  std::vector<const Node*> nodes;         // per input: its grad_fn if it is not
  bool empty() const { return leaves.empty(); }
  bool is_leaf_target(const TensorImpl* t) const {
    for (const TensorImpl* l : leaves)
      if (l == t) return true;
    return false;
  }
  bool is_node_target(const Node* n) const {
    for (const Node* m : nodes)
      if (m == n) return true;
    return false;
  }
};

// Marks which nodes lead to a target (ag::grad runs only those): post-order over the graph.
// A node freed by an earlier backward has lost its edges, so whether it leads to a target is not
// known: the first such node met (other than a target itself, whose edges are not needed) is
// reported in `freed`.
void mark_needed(const std::vector<Node*>& roots, const Targets& t, uint64_t pass, const Node** freed) {
  std::vector<std::pair<Node*, std::size_t>> stack;
  for (Node* r : roots) {
    if (r->needed >= 0) continue;
    stack.emplace_back(r, 0);
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      if (i == 0) n->needed = t.is_node_target(n) ? 1 : 0;
      if (i == 0 && n->released && !*freed && !t.is_node_target(n)) *freed = n;
      if (i < n->next.size()) {
        const Edge& e = n->next[i++];
        if (e.leaf && t.is_leaf_target(e.leaf.get())) n->needed = 1;
        if (e.fn && e.fn->visited_in == pass) {
          if (e.fn->needed < 0) stack.emplace_back(e.fn.get(), 0);
          else if (e.fn->needed > 0) n->needed = 1;
        }
        continue;
      }
      const int8_t mine = n->needed;
      stack.pop_back();
      if (!stack.empty() && mine > 0) stack.back().first->needed = 1;
    }
  }
}

}  // namespace

// Runs the hooks registered on a gradient, in order: each may replace it (same shape) or, by
// returning an undefined tensor, leave it.
static Tensor run_hooks(const char* what, const std::vector<detail::HookEntry>& hooks, Tensor g) {
  for (const detail::HookEntry& h : hooks) {
    if (!h.fn) continue;  // removed
    Tensor r = h.fn(g);
    if (!r.defined()) continue;
    if (r.shape() != g.shape()) {
      throw std::runtime_error(std::string("[hook] a hook on ") + what + " returned a gradient of shape " +
                               r.shape().str() + " for a gradient of shape " + g.shape().str());
    }
    g = std::move(r);
  }
  return g;
}

// The hooks on a node's outputs (registered on the non-leaf tensors it made), then the outputs
// that retain their gradient: as in PyTorch 2.x (1.13 depended on the order of retain_grad and
// register_hook), a retained gradient is the one after all hooks.
static void run_output_hooks(const Node& n, Tensor* grads) {
  for (const NodeMeta::OutputHook& h : n.meta->hooks) {
    Tensor& g = grads[h.output_nr];
    if (!h.fn || !g.defined()) continue;
    Tensor r = h.fn(g);
    if (!r.defined()) continue;
    if (r.shape() != g.shape()) {
      throw std::runtime_error("[hook] a hook on an output of " + n.name() + " returned a gradient of shape " +
                               r.shape().str() + " for a gradient of shape " + g.shape().str());
    }
    g = std::move(r);
  }
  for (const auto& [k, weak] : n.meta->retained) {
    std::shared_ptr<TensorImpl> t = weak.lock();
    if (t && grads[k].defined()) accumulate_leaf(t.get(), grads[k]);
  }
}

std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& given, bool retain_graph,
                                 bool create_graph, const std::vector<Tensor>& inputs) {
  GradModeGuard mode(create_graph);
  // Without create_graph nothing the pass leaves behind may hold a history: a given gradient that
  // has one (y.backward(y)) is used detached, or x.grad would keep y's graph alive, and that graph
  // x: a reference cycle, never freed. A view is detached too, as its base holds a history.
  std::vector<Tensor> grads = given;
  for (Tensor& g : grads)
    if (!create_graph && g.defined() && (g.requires_grad() || g.impl()->view_base)) g = g.detach();
  const bool accumulate = inputs.empty();
  Targets targets;
  for (const Tensor& in : inputs) {
    targets.leaves.push_back(in.grad_fn() ? nullptr : in.impl());
    targets.nodes.push_back(in.grad_fn().get());
  }
  std::vector<Tensor> captured(inputs.size());
  std::vector<std::function<void()>> callbacks;
  const CallbackScope callback_scope(&callbacks);
  auto capture_leaf = [&](const TensorImpl* leaf, const Tensor& g) {
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (targets.leaves[i] == leaf) captured[i] = sum_grads(captured[i], g);
  };

  // 1. Iterative DFS over the graph: count, for each node, how many edges point at it.
  static std::atomic<uint64_t> pass_counter{0};
  const uint64_t pass = ++pass_counter;
  std::vector<Node*> root_nodes;
  // While recording, a pending gradient can have a history that leads back to its own node (a
  // root given itself as its gradient); those left when the pass ends (a rule threw, or the node
  // was not needed: ag::grad of an input elsewhere) are dropped, or the nodes would keep each
  // other alive.
  std::vector<std::shared_ptr<Node>> recording;
  auto drop_recorded_pending = [&recording] {
    for (const std::shared_ptr<Node>& n : recording) {
      n->pending_grad = Tensor();
      if (n->meta) n->meta->pending_more.clear();
    }
  };
  // Resets a node's scratch state the first time this pass meets it; false if already met.
  auto first_visit = [&](const std::shared_ptr<Node>& n) {
    if (n->visited_in == pass) return false;
    n->visited_in = pass;
    n->pending_consumers = 0;
    n->pending_grad = Tensor();
    if (n->num_outputs > 1) n->meta->pending_more.assign(n->num_outputs - 1, Tensor());
    n->needed = accumulate ? 1 : -1;
    if (create_graph) recording.push_back(n);
    return true;
  };
  // A leaf with hooks gets the sum of its gradients once: the pass counts the edges that lead to
  // it and holds the sum until the last one delivered (or the pass ends).
  std::vector<std::shared_ptr<TensorImpl>> hooked;  // held: a leaf stays alive until its hooks ran
  auto count_leaf = [&](const std::shared_ptr<TensorImpl>& leaf) {
    detail::LeafHooks* lh = leaf->leaf_hooks.get();
    if (!lh || (lh->hooks.empty() && lh->post_accumulate.empty())) return;
    if (lh->pass != pass) {
      lh->pass = pass;
      lh->pending = 0;
      lh->sum = Tensor();
      hooked.push_back(leaf);
    }
    ++lh->pending;
  };
  auto finish_leaf = [&](const std::shared_ptr<TensorImpl>& leaf_ptr, Tensor g) {
    TensorImpl* leaf = leaf_ptr.get();
    detail::LeafHooks* lh = leaf->leaf_hooks.get();
    if (lh) g = run_hooks("a leaf", lh->hooks, std::move(g));
    if (!accumulate) return capture_leaf(leaf, g);
    accumulate_leaf(leaf, g);
    if (lh && !lh->post_accumulate.empty()) {
      const Tensor self(leaf_ptr);
      for (const PostAccumulateGradHook& h : lh->post_accumulate) h(self);
    }
  };
  auto deliver_leaf = [&](const std::shared_ptr<TensorImpl>& leaf, const Tensor& g) {
    detail::LeafHooks* lh = leaf->leaf_hooks.get();
    if (lh && lh->pass == pass && lh->pending > 0) {
      if (g.defined()) lh->sum = sum_grads(lh->sum, g);
      if (--lh->pending > 0) return;
      Tensor s = std::move(lh->sum);
      lh->sum = Tensor();
      if (s.defined()) finish_leaf(leaf, std::move(s));
      return;
    }
    if (g.defined()) finish_leaf(leaf, g);
  };
  try {
    for (std::size_t r = 0; r < roots.size(); ++r) {
      Node* n = roots[r].grad_fn().get();
      if (!n) {  // backward on a leaf: its gradient is the seed itself
        finish_leaf(roots[r].impl_ptr(), grads[r]);
        continue;
      }
      if (first_visit(roots[r].grad_fn())) root_nodes.push_back(n);
    }
    std::vector<Node*> stack(root_nodes);
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next) {
        if (e.leaf) count_leaf(e.leaf);
        if (!e.fn) continue;
        if (first_visit(e.fn)) stack.push_back(e.fn.get());
        ++e.fn->pending_consumers;
      }
    }
    if (!accumulate) {
      // ag::grad meeting a freed node cannot tell whether an input lies past it: rather than
      // return a gradient that may be missing that path, it says the graph was freed
      const Node* freed = nullptr;
      mark_needed(root_nodes, targets, pass, &freed);
      if (freed) throw std::runtime_error(second_time_message(freed));
    }

    // 2. Kahn's algorithm: a node runs once all its consumers have handed it their gradients,
    //    which are summed (a tensor used on two paths gets both contributions).
    for (std::size_t r = 0; r < roots.size(); ++r) {
      Node* n = roots[r].grad_fn().get();
      if (!n) continue;
      const uint32_t k = roots[r].impl()->output_nr;
      Tensor& slot = k == 0 ? n->pending_grad : n->meta->pending_more[k - 1];
      slot = sum_grads(slot, grads[r]);
    }
    std::vector<std::shared_ptr<Node>> ready;
    for (std::size_t r = 0; r < roots.size(); ++r) {
      const std::shared_ptr<Node>& n = roots[r].grad_fn();
      if (n && n->needed > 0 && n->pending_consumers == 0) {
        n->pending_consumers = -1;  // queued (a root listed twice is queued once)
        ready.push_back(n);
      }
    }
    detail::BackwardObserver* observer = detail::backward_observer();
    std::vector<Tensor> outs;  // the gradients of a node's outputs, when it has several, hooks or an observer
    while (!ready.empty()) {
      std::shared_ptr<Node> node = std::move(ready.back());
      ready.pop_back();
      Tensor g = std::move(node->pending_grad);
      node->pending_grad = Tensor();
      const bool several = node->meta || observer;
      if (several) {
        outs.assign(1, std::move(g));
        if (node->meta) {
          for (Tensor& m : node->meta->pending_more) outs.push_back(std::move(m));
          node->meta->pending_more.clear();
          run_output_hooks(*node, outs.data());
        }
        g = outs[0];
      }
      if (!accumulate) {  // an input that is not a leaf: its gradient is what reached its node
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          if (targets.nodes[i] != node.get()) continue;
          const Tensor& gi = several ? outs[inputs[i].impl()->output_nr] : g;
          if (gi.defined()) captured[i] = sum_grads(captured[i], gi);
        }
      }
      // Whether anything past this node is wanted (always, for backward; for ag::grad, an input
      // below it)
      bool run = accumulate;
      for (const Edge& e : node->next) {
        if (run) break;
        run = (e.leaf && targets.is_leaf_target(e.leaf.get())) || (e.fn && e.fn->needed > 0);
      }
      if (!run) continue;
      if (node->released) throw std::runtime_error(second_time_message(node.get()));

      Grads node_grads;
      bool any = g.defined();
      if (several)
        for (const Tensor& o : outs) any = any || o.defined();
      if (any) {
        RunningNode running(node);
        node_grads = node->meta && node->meta->backward_multi ? node->meta->backward_multi(outs) : node->backward(g);
        if (node_grads.size() != node->next.size()) {
          throw std::logic_error("[autograd] " + node->name() + " returned " + std::to_string(node_grads.size()) +
                                 " gradients for " + std::to_string(node->next.size()) + " inputs");
        }
        if (detail::anomaly_mode_on()) detail::anomaly_check(*node, node_grads);
        if (observer) observer->node_ran(*node, outs, node_grads);
      }
      const bool release = !retain_graph && node->saves_tensors;
      if (!retain_graph) {  // free saved tensors (and, below, the edges) as we go
        if (release) {
          node->backward = nullptr;
          node->released = true;
        }
        if (node->meta) {
          if (release) node->meta->backward_multi = nullptr;
          node->meta->hooks.clear();  // a hook may hold its own tensor: a cycle through the node
        }
      }
      const auto& edges = node->next;
      for (std::size_t i = 0; i < edges.size(); ++i) {
        const Edge& e = edges[i];
        const bool has = i < node_grads.size() && node_grads[i].defined() && e.active();
        if (has) check_grad(node->name_, i, e, node_grads[i]);
        if (e.moved_leaf && i < node_grads.size() && node_grads[i].defined())
          throw std::runtime_error("[backward] leaf variable has been moved into the graph interior (" + node->name() +
                                   "'s input " + std::to_string(i) + " was a leaf that an in-place op gave a history)");
        if (e.leaf) deliver_leaf(e.leaf, has ? node_grads[i] : Tensor());
        if (!e.fn || e.fn->needed <= 0) continue;
        Node* m = e.fn.get();
        if (has) {
          Tensor& slot = e.input_nr == 0 ? m->pending_grad : m->meta->pending_more[e.input_nr - 1];
          slot = sum_grads(slot, node_grads[i]);
        }
        if (--m->pending_consumers == 0) ready.push_back(e.fn);
      }
      if (release) node->next.clear();
    }
    // leaves whose hooks still wait for a gradient that never came (a path that did not run)
    for (const std::shared_ptr<TensorImpl>& leaf : hooked) {
      detail::LeafHooks* lh = leaf->leaf_hooks.get();
      Tensor s = std::move(lh->sum);
      lh->sum = Tensor();
      lh->pending = 0;
      if (s.defined()) finish_leaf(leaf, std::move(s));
    }
    drop_recorded_pending();
  } catch (...) {
    drop_recorded_pending();
    for (const std::shared_ptr<TensorImpl>& leaf : hooked) {
      leaf->leaf_hooks->sum = Tensor();
      leaf->leaf_hooks->pending = 0;
    }
    throw;
  }
  for (std::size_t i = 0; i < callbacks.size(); ++i) {  // a callback may queue another
    const std::function<void()> fn = std::move(callbacks[i]);
    fn();
  }
  return captured;
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
