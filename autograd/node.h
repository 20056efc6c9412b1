// Graph nodes: what an op records so that backward can run. A node owns edges to the nodes of
// its inputs (or to the leaf tensors themselves) and a closure that maps the gradient of the
// op's output to the gradients of its inputs. The closure captures inputs and saved values,
// never the output tensor itself, so the graph has no reference cycles.
//
// Read in this order: Edge and Node (the graph), then record() at the end (how an op adds a node)
// and run_backward (the engine, engine.cpp). backward_fn.h has the closure's type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <atomic>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <string_view>
#include <vector>

#include "backward_fn.h"
#include "small_vec.h"
#include "tensor.h"

namespace ag {

struct Node;
namespace detail {
struct PackedSaved;  // what a saved-tensor pack hook returned, with what unpacking needs (record.cpp)
}
struct NodeMeta;

// One row of docs/derivatives.md's tables (embedded in the library when it is built): the op,
// its grad_fn name(s) and the backward rule, in the table's markdown (`code` in backticks).
struct DerivativeRule {
  std::string section;  // "Elementwise", "Reductions", ...
  std::string op, grad_fn, backward, fast_kernel;
};

// Where the gradient for one input goes: into another node, into a leaf's .grad, or nowhere.
struct Edge {
  std::shared_ptr<Node> fn;
  std::shared_ptr<TensorImpl> leaf;
  Size shape;             // the input's shape: the engine checks every gradient against it
  uint32_t input_nr = 0;  // which output of `fn` the input is (0 but for multi-output nodes)
  bool moved_leaf = false;  // went to a leaf that an in-place op has since given a history
  bool active() const { return fn || leaf; }
};

struct Node {
  Node();
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // PyTorch's grad_fn name, e.g. "MmBackward0": name_ is a string literal (or a custom
  // Function's static name), never built per node, so a node costs no string allocation.
  std::string name() const { return std::string(name_); }
  // PyTorch's grad_fn.next_functions: per input, the node its gradient goes to and which output
  // of that node the input is. A leaf that requires grad shows as its AccumulateGrad node (the
  // same node each time while one is held, as in PyTorch); an input that needs no gradient as
  // {nullptr, 0}.
  std::vector<std::pair<std::shared_ptr<Node>, int64_t>> next_functions() const;
  // For an AccumulateGrad node: the leaf it accumulates into (PyTorch's .variable); else undefined.
  Tensor variable() const;
  // The rule this node runs: its row of docs/derivatives.md, whose op column names the op that
  // recorded it. Found by rule_ where the op set it, else by the grad_fn name. A grad_fn name can
  // be PyTorch's name for something else (the fused attention node prints as
  // UnsafeViewBackward0, mse_loss's mean as MseLossBackward0): rule() still names the rule that
  // runs. Empty fields if no row has it (the test Rules.* keeps every op's nodes covered).
  DerivativeRule rule() const;

  std::string_view name_;
  // Where rule() finds the row (set by detail::name_node): the grad_fn name the rule goes by when
  // name_ is another op's (empty: name_), and the op column's first name where several rows share
  // that grad_fn ("causal_attention"; empty: the first row).
  std::string_view rule_grad_fn_, rule_op_;
  SmallVec<Edge, 2> next;
  BackwardFn backward;
  Size shape;  // of the (first) output this node produced
  DType dtype = kFloat32;
  uint32_t num_outputs = 1;
  bool released = false;  // set once backward ran without retain_graph (and freed what it saved)
  bool saves_tensors = true;  // whether its backward holds saved tensors (else it is never released)
  std::unique_ptr<NodeMeta> meta;  // null for almost every node
  // What its backward holds, for saved_tensors() (saved.h): per tensor a SavedTensor keeps for
  // it, a weak handle on what holds the values (the detached alias, or the hooks' packed record)
  // and whether it is the node's own output. Both expire when backward frees the node's rule.
  struct SavedRef {
    std::weak_ptr<const void> holder;  // a TensorImpl, or (packed) a detail::PackedSaved
    bool packed = false;
    bool is_output = false;
  };
  SmallVec<SavedRef, 2> saved;

  // The slots of the backward pass now running (its GraphTask, engine_task.h), kept in the node
  // rather than in a hash map from node to state: graph data above, per-pass scratch here.
  struct PassSlots {
    uint64_t pass = 0;          // the pass these slots belong to (older values are stale)
    int pending_consumers = 0;  // consumers that have not handed over their gradient yet
    Tensor pending_grad;        // the sum of the gradients handed over so far
    int8_t needed = -1;         // ag::grad: whether the node leads to an input (-1: not known yet)
  } slots;
};

// What only some nodes carry: the backward of a node with several outputs, hooks on their
// outputs, outputs that retain their gradient, the leaf of an AccumulateGrad node, and the
// anomaly-mode record of where the node was made.
struct NodeMeta {
  struct OutputHook {
    unsigned id;
    uint32_t output_nr;
    GradHook fn;
  };
  std::vector<OutputHook> hooks;
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retained;  // (output, tensor) pairs
  std::shared_ptr<TensorImpl> variable;                                 // AccumulateGrad: its leaf
  std::string created;  // anomaly mode: "node #17 (made under the label ... at file:line)"
  MultiBackwardFn backward_multi;     // set instead of Node::backward by a node with several outputs
  std::vector<Tensor> pending_more;  // scratch of a backward pass: gradients of outputs 1..
  // KeepValuesGuard (tape.h): detached copies, taken when the node was recorded, of its inputs
  // (undefined where an input was), its outputs and the tensors it saved for backward;
  // kept_saved_from[k] is the input saved tensor k is (-1: an output, -2: another tensor).
  std::vector<Tensor> kept_inputs, kept_outputs, kept_saved;
  std::vector<int> kept_saved_from;
};

namespace detail {
struct HookEntry {
  unsigned id;
  GradHook fn;
};
// A leaf's gradient hooks and its AccumulateGrad node while one is held (next_functions). In a
// backward pass the gradients reaching the leaf are summed first and the hooks see the sum once
// (PyTorch runs them as pre-hooks of the AccumulateGrad node).
struct LeafHooks {
  std::vector<HookEntry> hooks;
  std::vector<PostAccumulateGradHook> post_accumulate;  // after .grad is updated (backward only)
  std::weak_ptr<Node> grad_accumulator;
  uint64_t pass = 0;  // scratch of the pass that last met the leaf:
  int pending = 0;    // edges still to deliver,
  Tensor sum;         // the sum so far
};
}  // namespace detail

// A tensor kept for backward, as PyTorch's SavedVariable keeps it, with the storage version at
// the time it was saved: get() throws if the storage was modified in place since.
//  - An input (or any tensor that is not the op's own output) is kept with the history it has
//    now, so a backward pass that records its graph (create_graph) differentiates through it: a
//    non-leaf as a new alias holding that grad_fn, a leaf that requires grad by a weak reference
//    (get() gives the leaf itself while it lives). Holding the tensor itself would let an
//    in-place op on it later make a reference cycle (its new grad_fn leading back to this node).
//  - The op's own output is kept as a detached alias: keeping it with its grad_fn would be a
//    reference cycle (node -> saved output -> node). get() gives it back its history only while
//    a graph is being recorded: it is only ever unpacked by its own node's backward, which the
//    engine is running, so that node is its grad_fn (PyTorch's unpack(saved_for) does the same).
//  - Under a SavedTensorsHooks guard (saved.h) the data goes through the pack hook instead and
//    is not held: get() calls the unpack hook, checks what it returns, and gives it the history
//    above.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t, bool is_output = false);
  Tensor get() const;

 private:
  Tensor unpack() const;

  Tensor t_;                          // the data, detached (with its grad_fn for a non-leaf)
  std::weak_ptr<TensorImpl> leaf_;    // a leaf that requires grad, while it lives
  std::shared_ptr<const detail::PackedSaved> packed_;  // set (and t_ not) when hooks packed it
  uint64_t version_ = 0;
  bool is_output_ = false;
  uint32_t output_nr_ = 0;
};

namespace detail {
// Anomaly mode (anomaly.h): a flag read by every record() and backward step, so it costs one
// load when off.
extern bool g_anomaly_enabled;
inline bool anomaly_mode_on() { return g_anomaly_enabled; }
// Notes where `node` was made, and whether its outputs hold a NaN or Inf (the first such op).
void anomaly_record(Node& node, const std::vector<Tensor>& outs);
// Throws if a gradient `node` returned holds a NaN or Inf, naming the node and where it was made.
void anomaly_check(const Node& node, const Grads& grads);

// Sees each node the engine runs on this thread (the tape explorer records a backward pass with
// it): the gradients of its outputs (after hooks) and the gradients it returned per input.
struct BackwardObserver {
  virtual ~BackwardObserver() = default;
  virtual void node_ran(const Node& node, const std::vector<Tensor>& grad_outputs, const Grads& grad_inputs) = 0;
};
BackwardObserver* backward_observer();

// After an in-place op gave `self` a new grad_fn (it was output `old_nr` of `old_fn`): a retained
// gradient follows the tensor to its new node, as in PyTorch. Hooks stay where they were.
void rebase_retained(const Tensor& self, const std::shared_ptr<Node>& old_fn, uint32_t old_nr);
void set_backward_observer(BackwardObserver* o);  // null: none

// Names the node that made `out` as PyTorch prints it where that is another op's name (a mean
// inside mse_loss shows as MseLossBackward0), keeping the rule it runs findable (Node::rule()):
// the first rename remembers the name the rule goes by. `op` picks the row among those of that
// grad_fn (causal_attention's node goes by MmBackward0 / UnsafeViewBackward0): the op column's
// first name. Either may be null (left as it is); both string literals. No grad_fn: nothing.
void name_node(const Tensor& out, const char* name, const char* op);

// After an in-place op gave the leaf `leaf` a history starting at `from`: every edge into `leaf`
// in the graph below `from` lets go of it (kept, the edges would hold it in a reference cycle
// through its own history) and is marked moved_leaf: a gradient arriving there is PyTorch's
// error "leaf variable has been moved into the graph interior".
void drop_leaf_edges(const std::shared_ptr<Node>& from, const TensorImpl* leaf);

// Runs `fn` once when the backward pass now running on this thread has finished (after every
// gradient reached its .grad), as PyTorch's Variable._execution_engine.queue_callback. Outside a
// backward pass it throws std::logic_error. If the pass throws, queued callbacks are dropped.
void queue_callback(std::function<void()> fn);

// KeepValuesGuard (tape.h) sets this thread's flag; record() tests it once.
bool keep_values_on();
void set_keep_values(bool on);  // either way, drops the saved copies not yet given to a node
}  // namespace detail

// Grad mode: ops record history only when it is enabled (the default).
bool grad_enabled();

// RAII: sets grad mode in its scope and restores it after (torch.set_grad_enabled(on)).
class GradModeGuard {
 public:
  explicit GradModeGuard(bool on);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};

// RAII: disables history recording in its scope, like torch.no_grad().
class NoGradGuard : public GradModeGuard {
 public:
  NoGradGuard() : GradModeGuard(false) {}
};

// RAII: enables history recording in its scope, like torch.enable_grad() (e.g. inside a
// NoGradGuard, to build a graph that will be differentiated).
class EnableGradGuard : public GradModeGuard {
 public:
  EnableGradGuard() : GradModeGuard(true) {}
};

// True if an op over these inputs must record a node, or push a tangent (an input carries one at
// the live dual level, forward_ad.h). A backward rule asks the same of its gradient and saved
// tensors to choose between its composed formula (which records the backward's own graph, and
// pushes tangents: forward-over-reverse) and a fast kernel (nothing to record, and one that would
// drop a tangent).
bool needs_grad(std::initializer_list<const Tensor*> inputs);
inline bool needs_grad(const Tensor& a) { return needs_grad({&a}); }
inline bool needs_grad(const Tensor& a, const Tensor& b) { return needs_grad({&a, &b}); }
bool needs_grad(const std::vector<Tensor>& inputs);

// ---- forward mode (forward_ad.h): what an op needs to push tangents ----

// The tangents of an op's inputs, in the order of its inputs; undefined where an input has none
// (a zero that is never materialised: a rule skips its term).
using Tangents = SmallVec<Tensor, 3>;

// An op's jvp rule: the tangents of its inputs -> the tangent of its output (undefined: zero).
// It does not own the lambda it refers to, which lives as long as the record() call that runs it,
// so passing one costs two pointers and nothing is allocated when no dual tensor is alive.
class JvpFn {
 public:
  JvpFn() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, JvpFn>>>
  JvpFn(const F& f)  // NOLINT: implicit, so ops pass their lambda directly
      : obj_(&f), call_([](const void* o, const Tangents& t) -> Tensor { return (*static_cast<const F*>(o))(t); }) {}
  // The jvp of a view op: the same view of the input's tangent, sharing its memory (so an
  // in-place op through the view updates the base's tangent). Any other op's tangent is its own:
  // one that shares an input tangent's memory (dy = dx) is copied.
  template <class F>
  static JvpFn view(const F& f) {
    JvpFn j(f);
    j.view_ = true;
    return j;
  }
  explicit operator bool() const { return call_ != nullptr; }
  bool is_view() const { return view_; }
  Tensor operator()(const Tangents& t) const { return call_(obj_, t); }

 private:
  const void* obj_ = nullptr;
  Tensor (*call_)(const void*, const Tangents&) = nullptr;
  bool view_ = false;
};

namespace detail {
// Whether tangents propagate: a dual level is alive (forward_ad.h) and no jvp rule is running on
// this thread (a rule's own ops push no tangent: tangents never carry tangents). With no level
// alive it is one relaxed load, read once per op.
extern std::atomic<bool> g_dual_level_alive;
extern thread_local bool g_jvp_running;
inline bool forward_ad_on() { return g_dual_level_alive.load(std::memory_order_relaxed) && !g_jvp_running; }
// RAII: no tangent is pushed on this thread in its scope (a jvp rule runs so).
class JvpPause {
 public:
  JvpPause() : prev_(g_jvp_running) { g_jvp_running = true; }
  ~JvpPause() { g_jvp_running = prev_; }
  JvpPause(const JvpPause&) = delete;
  JvpPause& operator=(const JvpPause&) = delete;

 private:
  bool prev_;
};
// View v's tangent when v has none of its own but its root base has one (not for a view marked
// no_fw_view): the same view of the base's tangent, which v keeps from then on; else undefined.
Tensor view_tangent_of_base(const Tensor& v);
// t's tangent at the live level, or undefined (no level, or none: zero).
// A view without a tangent of its own whose root base has one (given in place after the view was
// taken) reads the same view of the base's tangent, as PyTorch does.
inline Tensor tangent_of(const Tensor& t) {
  if (!forward_ad_on() || !t.defined()) return Tensor();
  if (t.impl()->fw_grad) return Tensor(t.impl()->fw_grad);
  return t.impl()->view_base ? view_tangent_of_base(t) : Tensor();
}
// A custom Function saves after its node is made: the node takes what was saved since (for
// saved_tensors()); null: it is dropped.
void adopt_saved(const std::shared_ptr<Node>& node);
// Gives t the tangent `tangent` (t's shape) at the live level; leaving the level drops it.
void set_tangent(const Tensor& t, const Tensor& tangent);
// Whether a rule may compute tangents by its kernel instead of its composed ag ops: no primal and
// no tangent would record a node (grad mode off, or none requires grad: nobody differentiates the
// tangent, as reverse-over-forward would), the primals are floating point and every defined
// tangent has the first primal's dtype (the kernels take one dtype). For a jvp rule's tangents,
// and for a backward rule whose gradient and saved tensors carry tangents (forward-over-reverse).
bool tangent_kernel_applies(std::initializer_list<const Tensor*> tangents, std::initializer_list<const Tensor*> primals);
// Runs `jvp` on the tangents of `inputs` and gives `out` the result, or throws PyTorch's error
// ("Trying to use forward AD with <op> that does not support it") if an input has a tangent and
// the op has no rule. record() calls it; an op that records no node calls it itself.
void push_tangent(Tensor& out, const char* name, const Tensor* inputs, std::size_t n, const JvpFn& jvp);
// The op name in that error, from a grad_fn name: "LogSoftmaxBackward0" -> "log_softmax".
std::string op_of_node_name(std::string_view name);
}  // namespace detail

// Gives `out` a grad_fn named `name` whose edges lead to `inputs`. Call only if needs_grad().
// `name` must outlive the node (a string literal). With a dual level alive it also gives `out`
// its tangent by `jvp` (the op's forward rule, beside its backward rule `fn`), and throws if an
// input carries a tangent and the op has no jvp rule yet. needs_grad() is true when an input
// carries a tangent, so an op calls record() then; no node is made unless an input requires grad
// and grad mode is on (NoGradGuard turns reverse mode off, not forward mode).
void record(Tensor& out, const char* name, std::initializer_list<Tensor> inputs, BackwardFn fn, JvpFn jvp = {});
void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, BackwardFn fn, JvpFn jvp = {});
// One node for several outputs (a custom Function): outs[k] becomes output k of the node, except
// where differentiable[k] is false (it keeps no history, as PyTorch's non-differentiable outputs).
void record_multi(std::vector<Tensor>& outs, const std::vector<bool>& differentiable, const char* name,
                  const std::vector<Tensor>& inputs, MultiBackwardFn fn);

// zero_grad of Module and the optimizers: each defined .grad set to none, or zeroed in place; a
// .grad recorded with create_graph is detached first, as PyTorch's zero_grad does.
void zero_grads(const std::vector<Tensor>& params, bool set_to_none);

// Number of nodes alive right now (for tests that prove graphs are freed).
int64_t live_nodes();

// The engine. Runs backward from `roots`, seeded with `grads` (one per root, already checked).
// With `inputs` empty, gradients of leaves accumulate into their .grad (Tensor::backward) and
// nothing is returned; otherwise only the nodes that lead to an input run, nothing touches any
// .grad, and the gradient of each input is returned (undefined if none reached it): ag::grad.
// With create_graph the backward rules run with grad mode on, so the pass records its own graph.
std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph,
                                 bool create_graph, const std::vector<Tensor>& inputs = {});

}  // namespace ag
