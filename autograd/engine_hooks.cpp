// Engine extension: tensor hooks and retain_grad. Hooks on a non-leaf tensor live on the node
// that made it (NodeMeta::hooks) and run when that node's gradients arrive; hooks on a leaf run
// once per pass on the sum of all its gradients (PyTorch runs them as pre-hooks of the leaf's
// AccumulateGrad node), so the pass counts a hooked leaf's edges and holds the sum until the
// last one delivered. Registering them: hooks.cpp.
#include <stdexcept>
#include <string>

#include "autograd/engine_task.h"

namespace ag::detail {

namespace {

// Runs the hooks registered on a gradient, in order: each may replace it (same shape) or, by
// returning an undefined tensor, leave it.
Tensor run_hooks(const char* what, const std::vector<HookEntry>& hooks, Tensor g) {
  for (const HookEntry& h : hooks) {
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

bool has_hooks(const LeafHooks* lh) { return lh && (!lh->hooks.empty() || !lh->post_accumulate.empty()); }

// The leaf's whole gradient of this pass: its hooks, then accumulation, then the hooks that run
// after .grad is updated (backward only).
void finish_leaf(GraphTask& task, const std::shared_ptr<TensorImpl>& leaf, Tensor g) {
  LeafHooks* lh = leaf->leaf_hooks.get();
  if (lh) g = run_hooks("a leaf", lh->hooks, std::move(g));
  accumulate(task, leaf, g);
  if (task.accumulate && lh && !lh->post_accumulate.empty()) {
    const Tensor self(leaf);
    for (const PostAccumulateGradHook& h : lh->post_accumulate) h(self);
  }
}

}  // namespace

void count_leaf_edge(GraphTask& task, const std::shared_ptr<TensorImpl>& leaf) {
  LeafHooks* lh = leaf->leaf_hooks.get();
  if (!has_hooks(lh)) return;
  if (lh->pass != task.pass) {
    lh->pass = task.pass;
    lh->pending = 0;
    lh->sum = Tensor();
    task.hooked.push_back(leaf);
  }
  ++lh->pending;
}

void leaf_grad_arrived(GraphTask& task, const std::shared_ptr<TensorImpl>& leaf, const Tensor& g) {
  LeafHooks* lh = leaf->leaf_hooks.get();
  if (lh && lh->pass == task.pass && lh->pending > 0) {
    if (g.defined()) lh->sum = sum_grads(lh->sum, g);
    if (--lh->pending > 0) return;
    Tensor s = std::move(lh->sum);
    lh->sum = Tensor();
    if (s.defined()) finish_leaf(task, leaf, std::move(s));
    return;
  }
  if (g.defined()) finish_leaf(task, leaf, g);  // not counted: a root, or a leaf without hooks
}

void finish_hooked_leaves(GraphTask& task) {
  for (const std::shared_ptr<TensorImpl>& leaf : task.hooked) {
    LeafHooks* lh = leaf->leaf_hooks.get();
    Tensor s = std::move(lh->sum);
    lh->sum = Tensor();
    lh->pending = 0;
    if (s.defined()) finish_leaf(task, leaf, std::move(s));
  }
}

void abandon_hooked_leaves(GraphTask& task) {
  for (const std::shared_ptr<TensorImpl>& leaf : task.hooked) {
    leaf->leaf_hooks->sum = Tensor();
    leaf->leaf_hooks->pending = 0;
  }
}

// The hooks on a node's outputs (registered on the non-leaf tensors it made), then the outputs
// that retain their gradient: as in PyTorch 2.x (1.13 depended on the order of retain_grad and
// register_hook), a retained gradient is the one after all hooks.
void node_grads_arrived(const Node& n, Tensor* grads) {
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
    if (t && grads[k].defined()) accumulate_grad(t.get(), grads[k]);
  }
}

}  // namespace ag::detail
