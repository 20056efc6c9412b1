// Recording: what an op does after its forward so that backward can run. record() gives the
// output a node with one edge per input (to the input's node, or to the leaf itself) and the
// op's rule; SavedTensor keeps what the rule needs, checked against in-place writes. Also grad
// mode (whether ops record at all) and the copies the tape explorer keeps (KeepValuesGuard).
#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "autograd/engine_task.h"
#include "autograd/inplace.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "autograd/pool.h"
#include "autograd/saved.h"

namespace ag {

namespace {
thread_local bool g_grad_enabled = true;

// The live-node count (live_nodes(), for leak tests) without a locked instruction per node: each
// thread adds to its own counter (a plain add; another thread only reads it), and live_nodes()
// sums the counters of the threads alive and what exited threads left (a node made on one thread
// and freed on another counts +1 on the first, -1 on the second).
struct NodeCounters {
  std::mutex m;
  std::vector<const std::atomic<int64_t>*> alive;
  std::atomic<int64_t> exited{0};  // counts of exited threads, and of nodes freed as a thread exits
};
NodeCounters& node_counters() {
  static NodeCounters* c = new NodeCounters;  // never destroyed: nodes may die after static destructors
  return *c;
}
thread_local bool t_counter_gone = false;  // trivially destructible: readable while the thread exits
struct ThreadNodeCount {
  std::atomic<int64_t> n{0};
  ThreadNodeCount() {
    std::lock_guard<std::mutex> lock(node_counters().m);
    node_counters().alive.push_back(&n);
  }
  ~ThreadNodeCount() {
    NodeCounters& c = node_counters();
    std::lock_guard<std::mutex> lock(c.m);
    c.exited += n.load(std::memory_order_relaxed);
    c.alive.erase(std::find(c.alive.begin(), c.alive.end(), &n));
    t_counter_gone = true;
  }
};
void count_node(int64_t delta) {
  if (t_counter_gone) {
    node_counters().exited += delta;
    return;
  }
  thread_local ThreadNodeCount count;
  count.n.store(count.n.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}
}  // namespace

Node::Node() { count_node(1); }
// Destroying the last handle to a long chain would recurse once per node; instead, a dying node
// takes over the edges of every input node it is the last owner of, so the chain unwinds in a loop.
Node::~Node() {
  count_node(-1);
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
int64_t live_nodes() {
  NodeCounters& c = node_counters();
  std::lock_guard<std::mutex> lock(c.m);
  int64_t n = c.exited.load();
  for (const std::atomic<int64_t>* t : c.alive) n += t->load(std::memory_order_relaxed);
  return n;
}

bool grad_enabled() { return g_grad_enabled; }
GradModeGuard::GradModeGuard(bool on) : prev_(g_grad_enabled) { g_grad_enabled = on; }
GradModeGuard::~GradModeGuard() { g_grad_enabled = prev_; }

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
// What SavedTensor's constructor saw since the last node was recorded: the node being recorded
// takes them (Node::saved, for saved_tensors()).
thread_local SmallVec<Node::SavedRef, 4> g_pending_refs;
void take_pending_refs(Node& node) {
  for (Node::SavedRef& r : g_pending_refs) node.saved.push_back(std::move(r));
  g_pending_refs.clear();
}
// With a dual level alive: the op's own output saved for backward (as an alias, before the op
// has computed its tangent), so record() can give that alias the tangent too.
thread_local std::vector<std::pair<const TensorImpl*, std::shared_ptr<TensorImpl>>> g_saved_outputs;

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
void detail::adopt_saved(const std::shared_ptr<Node>& node) {
  take_saved_flag();
  if (node) take_pending_refs(*node);
  g_pending_refs.clear();
}
void detail::set_keep_values(bool on) {
  g_keep_values = on;
  g_pending_saved.clear();
}

namespace {
// The node whose backward the engine is running on this thread: the grad_fn a saved output gets
// back when it is unpacked while a graph is recorded.
thread_local const std::shared_ptr<Node>* g_running = nullptr;
}  // namespace
detail::RunningNode::RunningNode(const std::shared_ptr<Node>& n) : prev_(g_running) { g_running = &n; }
detail::RunningNode::~RunningNode() { g_running = prev_; }

// ---- saved-tensor hooks (saved.h) ----

struct detail::PackedSaved {
  std::any data;                                   // what pack_hook returned
  std::function<Tensor(const std::any&)> unpack;   // the unpack_hook of the same guard
  Size shape;
  DType dtype = kFloat32;
  std::weak_ptr<Storage> storage;                  // the original's, for the version check
  std::shared_ptr<Node> grad_fn;                   // a non-leaf's history
  Tensor tangent;                                  // forward mode: the saved tensor's tangent
  // forward mode, the op's own output: the alias record() gives the output's tangent to once the
  // op has computed it (this one case holds the data: the tangent is not known yet)
  std::shared_ptr<TensorImpl> output_alias;
};

namespace {
struct HookPair {
  std::function<std::any(const Tensor&)> pack;
  std::function<Tensor(const std::any&)> unpack;
};
thread_local std::vector<HookPair> g_saved_hooks;
// With a dual level alive, whether the op now running pushes tangents but makes no node (its
// inputs carry tangents, none requires grad): what it saves is then not given to pack_hook, as
// in PyTorch, where such an op saves nothing. Set by needs_grad(), cleared by record().
thread_local bool g_tangent_only = false;

// The hooks run with grad mode off and no hooks of their own (their ops record nothing).
class InsideHook {
 public:
  InsideHook() : no_grad_(), hooks_(std::move(g_saved_hooks)) { g_saved_hooks.clear(); }
  ~InsideHook() { g_saved_hooks = std::move(hooks_); }
  InsideHook(const InsideHook&) = delete;
  InsideHook& operator=(const InsideHook&) = delete;

 private:
  NoGradGuard no_grad_;
  std::vector<HookPair> hooks_;
};

// Makes t output `nr` of node `fn`: how a saved tensor gets its history back.
void give_history(TensorImpl& t, std::shared_ptr<Node> fn, uint32_t nr) {
  t.grad_fn = std::move(fn);
  t.output_nr = nr;
  t.requires_grad = true;
}

std::string tensor_type(DType dt) {
  return dt == kFloat32 ? "FloatTensor" : dt == kFloat64 ? "DoubleTensor" : dt == kInt64 ? "LongTensor" : "BoolTensor";
}

[[noreturn]] void modified_inplace(DType dt, const Size& shape, uint64_t now, uint64_t expected) {
  throw std::runtime_error(
      std::string("[autograd] one of the variables needed for gradient computation has been modified by an "
                  "inplace operation: [torch.") + tensor_type(dt) + " " + shape.str() + "] is at version " +
      std::to_string(now) + "; expected version " + std::to_string(expected) + " instead");
}
}  // namespace

SavedTensorsHooks::SavedTensorsHooks(std::function<std::any(const Tensor&)> pack_hook,
                                     std::function<Tensor(const std::any&)> unpack_hook) {
  if (!pack_hook || !unpack_hook) throw std::invalid_argument("[saved_tensors_hooks] pack_hook and unpack_hook must both be set");
  g_saved_hooks.push_back({std::move(pack_hook), std::move(unpack_hook)});
}
SavedTensorsHooks::~SavedTensorsHooks() {
  if (!g_saved_hooks.empty()) g_saved_hooks.pop_back();
}

namespace detail {
std::vector<SavedOfNode> saved_of(const Node& n) {
  std::vector<SavedOfNode> out;
  if (n.saved.empty()) return out;
  const std::string rule = n.rule().backward;
  for (const Node::SavedRef& r : n.saved) {
    const std::shared_ptr<const void> holder = r.holder.lock();
    if (!holder) continue;  // freed by a backward pass
    SavedOfNode s{{n.name(), rule, {}, kFloat32, 0, r.is_output}, nullptr};
    if (!r.packed) {
      const auto& impl = *static_cast<const TensorImpl*>(holder.get());
      s.info.shape = impl.shape;
      s.info.dtype = impl.dtype;
      s.storage = impl.storage.get();
    } else {
      const auto& p = *static_cast<const detail::PackedSaved*>(holder.get());
      s.info.shape = p.shape;
      s.info.dtype = p.dtype;
      if (const Tensor* t = std::any_cast<Tensor>(&p.data); t && t->defined()) s.storage = t->impl()->storage.get();
    }
    if (s.storage) s.info.bytes = static_cast<int64_t>(s.storage->nbytes);
    out.push_back(std::move(s));
  }
  return out;
}
}  // namespace detail

std::vector<SavedTensorInfo> saved_tensors(const Tensor& root) {
  std::vector<SavedTensorInfo> out;
  if (!root.defined() || !root.grad_fn()) return out;
  std::unordered_set<const Storage*> counted;
  std::unordered_set<const Node*> seen{root.grad_fn().get()};
  std::vector<const Node*> queue{root.grad_fn().get()};  // breadth-first: the order backward reaches them
  for (std::size_t qi = 0; qi < queue.size(); ++qi) {
    for (detail::SavedOfNode& s : detail::saved_of(*queue[qi])) {
      if (!s.storage || !counted.insert(s.storage).second) s.info.bytes = 0;
      out.push_back(std::move(s.info));
    }
    for (const Edge& e : queue[qi]->next)
      if (e.fn && seen.insert(e.fn.get()).second) queue.push_back(e.fn.get());
  }
  return out;
}

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;  // "nothing saved": ops pass an undefined tensor when a grad is not needed
  ++g_saved_count;
  if (g_keep_values) g_pending_saved.push_back({value_copy(t), t.impl()});
  // Nothing is kept that an in-place op on t later could turn into a reference cycle (t's new
  // grad_fn leading back to this node, which would hold t): the data is a new alias, and its
  // history is the one t has now (PyTorch's SavedVariable keeps data and grad_fn apart too).
  t_ = t.detach();
  // a saved tensor keeps its tangent, so a backward rule run with a dual level alive pushes it
  // (forward-over-reverse), as PyTorch's SavedVariable keeps the forward grad
  if (const Tensor tangent = detail::tangent_of(t); tangent.defined()) detail::set_tangent(t_, tangent);
  if (is_output && detail::forward_ad_on()) g_saved_outputs.emplace_back(t.impl(), t_.impl_ptr());
  if (is_output || !t.requires_grad()) {
  } else if (!t.impl()->grad_fn) {
    leaf_ = t.impl_ptr();  // a leaf that requires grad: gradients through it must reach its .grad
  } else {
    give_history(*t_.impl(), t.impl()->grad_fn, t.impl()->output_nr);
  }
  version_ = t.impl()->storage->version;
  output_nr_ = t.impl()->output_nr;
  // no grad, or an op that only pushes tangents: no node will keep it
  if (g_saved_hooks.empty() || !g_grad_enabled || (g_tangent_only && detail::forward_ad_on())) {
    g_pending_refs.push_back({t_.impl_ptr(), false, is_output});
    return;
  }
  // packed: the node keeps what pack_hook returns, and what unpacking needs besides, not the data
  auto p = std::make_shared<detail::PackedSaved>();
  p->unpack = g_saved_hooks.back().unpack;
  p->shape = t_.shape();
  p->dtype = t_.dtype();
  p->storage = t_.impl()->storage;
  p->grad_fn = t_.impl()->grad_fn;
  if (t_.impl()->fw_grad) p->tangent = Tensor(t_.impl()->fw_grad);
  if (is_output && detail::forward_ad_on()) p->output_alias = t_.impl_ptr();
  const std::function<std::any(const Tensor&)> pack = g_saved_hooks.back().pack;
  {
    InsideHook inside;
    p->data = pack(t_.detach());
  }
  g_pending_refs.push_back({p, true, is_output});
  packed_ = std::move(p);
  t_ = Tensor();
}

Tensor SavedTensor::unpack() const {
  const detail::PackedSaved& p = *packed_;
  if (const std::shared_ptr<Storage> st = p.storage.lock(); st && st->version != version_)
    modified_inplace(p.dtype, p.shape, st->version, version_);
  Tensor u;
  {
    InsideHook inside;
    u = p.unpack(p.data);
  }
  if (!u.defined() || u.shape() != p.shape || u.dtype() != p.dtype) {
    throw std::runtime_error("[saved_tensors_hooks] unpack_hook must return a tensor of the saved tensor's shape and dtype: it "
                             "returned " + (u.defined() ? std::string(dtype_name(u.dtype())) + " " + u.shape().str() : "an undefined tensor") +
                             " for a saved " + dtype_name(p.dtype) + " " + p.shape.str());
  }
  Tensor out = u.detach();
  if (is_output_ && g_grad_enabled && g_running) {  // as get() gives a saved output its history
    give_history(*out.impl(), *g_running, output_nr_);
  } else if (std::shared_ptr<TensorImpl> leaf = leaf_.lock(); leaf && g_grad_enabled) {
    return Tensor(std::move(leaf));  // a graph being recorded must reach the leaf's .grad
  } else if (p.grad_fn && !is_output_) {
    give_history(*out.impl(), p.grad_fn, output_nr_);
  }
  if (!detail::forward_ad_on()) return out;
  if (p.tangent.defined()) detail::set_tangent(out, p.tangent);
  else if (p.output_alias && p.output_alias->fw_grad) detail::set_tangent(out, Tensor(p.output_alias->fw_grad));
  return out;
}

Tensor SavedTensor::get() const {
  if (packed_) return unpack();
  if (!t_.defined()) return t_;
  uint64_t now = t_.impl()->storage->version;
  if (now != version_) modified_inplace(t_.dtype(), t_.shape(), now, version_);
  if (is_output_ && g_grad_enabled && g_running) {  // the output, with its history: its own node
    Tensor out = t_.detach();
    give_history(*out.impl(), *g_running, output_nr_);
    if (t_.impl()->fw_grad) detail::set_tangent(out, Tensor(t_.impl()->fw_grad));
    return out;
  }
  if (std::shared_ptr<TensorImpl> leaf = leaf_.lock()) return Tensor(std::move(leaf));
  return t_;
}

static bool tracks_grad(const Tensor* t) { return t->defined() && t->requires_grad(); }
// (a view without one of its own whose root base has one reads that: detail::tangent_of)
static bool carries_tangent(const Tensor* t) {
  if (!t->defined()) return false;
  const TensorImpl& i = *t->impl();
  return i.fw_grad || (i.view_base && i.view_base->fw_grad && !i.no_fw_view);
}

template <class It>
static bool needs_grad_of(It begin, It end) {
  bool grad = false;
  if (g_grad_enabled)
    for (It it = begin; it != end && !grad; ++it) grad = tracks_grad(&*it);
  if (!detail::forward_ad_on()) return grad;
  bool tangent = false;
  for (It it = begin; it != end && !tangent && !grad; ++it) tangent = carries_tangent(&*it);
  g_tangent_only = tangent;
  return grad || tangent;
}

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  struct Deref {  // iterates the pointers as tensors
    const Tensor* const* p;
    const Tensor& operator*() const { return **p; }
    Deref& operator++() { ++p; return *this; }
    bool operator!=(const Deref& o) const { return p != o.p; }
  };
  return needs_grad_of(Deref{inputs.begin()}, Deref{inputs.end()});
}

bool needs_grad(const std::vector<Tensor>& inputs) { return needs_grad_of(inputs.begin(), inputs.end()); }

bool detail::tangent_kernel_applies(std::initializer_list<const Tensor*> tangents, std::initializer_list<const Tensor*> primals) {
  const Tensor& first = **primals.begin();
  if (!first.is_floating_point()) return false;
  for (const Tensor* d : tangents)
    if (d->defined() && d->dtype() != first.dtype()) return false;
  if (!g_grad_enabled) return true;
  for (const Tensor* t : tangents)
    if (tracks_grad(t)) return false;
  for (const Tensor* t : primals)
    if (tracks_grad(t)) return false;
  return true;
}

// Whether an op over these inputs makes a node (needs_grad() is also true for tangents alone).
static bool makes_node(const Tensor* inputs, std::size_t n) {
  if (!g_grad_enabled) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (tracks_grad(&inputs[i])) return true;
  return false;
}

std::string detail::op_of_node_name(std::string_view name) {
  if (const std::size_t b = name.rfind("Backward"); b != std::string_view::npos) name = name.substr(0, b);
  std::string op;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c >= 'A' && c <= 'Z') {
      if (i > 0 && !(name[i - 1] >= 'A' && name[i - 1] <= 'Z')) op += '_';
      op += static_cast<char>(c - 'A' + 'a');
    } else {
      op += c;
    }
  }
  return op;
}

void detail::push_tangent(Tensor& out, const char* name, const Tensor* inputs, std::size_t n, const JvpFn& jvp) {
  Tangents tangents;
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    Tensor t = tangent_of(inputs[i]);
    any = any || t.defined();
    tangents.push_back(std::move(t));
  }
  if (!any) return;
  if (!jvp) {
    const std::string op = op_of_node_name(name);
    throw std::runtime_error("[" + op + "] Trying to use forward AD with " + op +
                             " that does not support it because it has not been implemented yet (" + name +
                             " has no jvp rule; output shape " + out.shape().str() + ")");
  }
  Tensor t;
  {
    // the rule's own ops push no tangent (tangents carry none); reverse mode records as usual, so
    // a tangent computed from tensors that require grad has a history (reverse-over-forward)
    JvpPause pause;
    t = jvp(tangents);
  }
  if (!t.defined()) return;
  if (!jvp.is_view())
    for (const Tensor& in : tangents)
      if (in.defined() && in.shares_storage(t)) {
        t = clone(t);
        break;
      }
  if (t.shape() != out.shape()) {
    throw std::logic_error(std::string("[") + name + "] the jvp rule gave a tangent of shape " + t.shape().str() +
                           " for an output of shape " + out.shape().str());
  }
  set_tangent(out, t);
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
        // its base changed in place: a view of the base as it is now. That records a node of its
        // own, which must not take what the op being recorded saved.
        std::vector<PendingSaved> pending;
        pending.swap(g_pending_saved);
        SmallVec<Node::SavedRef, 4> refs = std::move(g_pending_refs);
        g_pending_refs.clear();
        detail::refresh_view(in);
        g_pending_saved.swap(pending);
        g_pending_refs = std::move(refs);
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

void detail::name_node(const Tensor& out, const char* name, const char* op) {
  const std::shared_ptr<Node>& n = out.grad_fn();
  if (!n) return;
  if (name) {
    if (n->rule_grad_fn_.empty()) n->rule_grad_fn_ = n->name_;
    n->name_ = name;
  }
  if (op) n->rule_op_ = op;
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

static inline __attribute__((always_inline)) void attach_node(Tensor& out, const char* name, const Tensor* inputs, std::size_t n,
                                                             BackwardFn&& fn) {
  const bool saved = take_saved_flag();
  auto node = make_node(name, inputs, n);
  if (saved) take_pending_refs(*node);
  node->saves_tensors = saved;
  node->backward = std::move(fn);
  node->shape = out.shape();
  node->dtype = out.dtype();
  if (detail::anomaly_mode_on()) detail::anomaly_record(*node, {out});
  if (g_keep_values) keep_values(*node, inputs, n, &out, 1);
  out.impl()->grad_fn = std::move(node);
  out.impl()->output_nr = 0;
  out.impl()->requires_grad = true;
}

static void record_n(Tensor& out, const char* name, const Tensor* inputs, std::size_t n, BackwardFn fn, const JvpFn& jvp) {
  if (!detail::forward_ad_on()) return attach_node(out, name, inputs, n, std::move(fn));
  g_tangent_only = false;
  if (makes_node(inputs, n)) {
    attach_node(out, name, inputs, n, std::move(fn));
  } else {  // tangents only: no node, and nothing saved is kept
    take_saved_flag();
    g_pending_saved.clear();
    g_pending_refs.clear();
  }
  const auto saved_outputs = std::move(g_saved_outputs);
  g_saved_outputs.clear();
  detail::push_tangent(out, name, inputs, n, jvp);
  if (const Tensor t = detail::tangent_of(out); t.defined())
    for (const auto& [from, alias] : saved_outputs)
      if (from == out.impl()) detail::set_tangent(Tensor(alias), t);
}

void record(Tensor& out, const char* name, std::initializer_list<Tensor> inputs, BackwardFn fn, JvpFn jvp) {
  record_n(out, name, inputs.begin(), inputs.size(), std::move(fn), jvp);
}

void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, BackwardFn fn, JvpFn jvp) {
  record_n(out, name, inputs.data(), inputs.size(), std::move(fn), jvp);
}

void record_multi(std::vector<Tensor>& outs, const std::vector<bool>& differentiable, const char* name,
                  const std::vector<Tensor>& inputs, MultiBackwardFn fn) {
  if (outs.empty()) throw std::logic_error(std::string("[") + name + "] a node needs at least one output");
  auto node = make_node(name, inputs.data(), inputs.size());
  take_saved_flag();
  g_tangent_only = false;  // a custom Function saves after this: its node exists
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

}  // namespace ag
