// Looking inside a graph: retain_grad, gradient hooks, and next_functions with leaves shown as
// AccumulateGrad nodes. The engine (engine.cpp) runs the hooks; this file only registers them.
#include <stdexcept>
#include <string>

#include "autograd/node.h"

namespace ag {

static NodeMeta& meta_of(Node& n) {
  if (!n.meta) n.meta = std::make_unique<NodeMeta>();
  return *n.meta;
}

void Tensor::retain_grad() const {
  const TensorImpl& i = checked("retain_grad");
  if (!i.requires_grad) throw std::runtime_error("[retain_grad] can't retain_grad on Tensor that has requires_grad=False");
  if (!i.grad_fn || i.retains_grad) return;  // a leaf keeps its .grad anyway
  meta_of(*i.grad_fn).retained.emplace_back(i.output_nr, impl_);
  impl_->retains_grad = true;
}

void detail::rebase_retained(const Tensor& self, const std::shared_ptr<Node>& old_fn, uint32_t old_nr) {
  TensorImpl* i = self.impl();
  if (!i->retains_grad || !old_fn || !old_fn->meta || old_fn == i->grad_fn) return;
  auto& r = old_fn->meta->retained;
  for (auto it = r.begin(); it != r.end(); ++it) {
    if (it->first == old_nr && it->second.lock().get() == i) {
      r.erase(it);
      break;
    }
  }
  meta_of(*i->grad_fn).retained.emplace_back(i->output_nr, self.impl_ptr());
}

bool Tensor::retains_grad() const { return checked("retains_grad").retains_grad; }

// As libtorch, a hook's id is its position among the hooks of this tensor.
unsigned Tensor::register_hook(GradHook hook) const {
  const TensorImpl& i = checked("register_hook");
  if (!i.requires_grad) throw std::runtime_error("[register_hook] cannot register a hook on a tensor that doesn't require gradient");
  if (!hook) throw std::invalid_argument("[register_hook] the hook is empty");
  if (!i.grad_fn) {
    if (!impl_->leaf_hooks) impl_->leaf_hooks = std::make_shared<detail::LeafHooks>();
    auto& hooks = impl_->leaf_hooks->hooks;
    const auto id = static_cast<unsigned>(hooks.size());
    hooks.push_back({id, std::move(hook)});
    return id;
  }
  auto& hooks = meta_of(*i.grad_fn).hooks;
  unsigned id = 0;
  for (const NodeMeta::OutputHook& h : hooks) id += h.output_nr == i.output_nr;
  hooks.push_back({id, i.output_nr, std::move(hook)});
  return id;
}

void Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHook hook) const {
  const TensorImpl& i = checked("register_post_accumulate_grad_hook");
  if (!i.requires_grad) {
    throw std::runtime_error("[register_post_accumulate_grad_hook] cannot register a hook on a tensor that doesn't require gradient");
  }
  if (i.grad_fn) {
    throw std::runtime_error("[register_post_accumulate_grad_hook] post accumulate grad hooks cannot be registered on non-leaf tensors");
  }
  if (!hook) throw std::invalid_argument("[register_post_accumulate_grad_hook] the hook is empty");
  if (!impl_->leaf_hooks) impl_->leaf_hooks = std::make_shared<detail::LeafHooks>();
  impl_->leaf_hooks->post_accumulate.push_back(std::move(hook));
}

void Tensor::remove_hook(unsigned id) const {
  const TensorImpl& i = checked("remove_hook");
  auto invalid = [id] {
    throw std::invalid_argument("[remove_hook] Invalid index, no hook at position " + std::to_string(id));
  };
  if (!i.grad_fn) {
    if (!i.leaf_hooks || id >= i.leaf_hooks->hooks.size() || !i.leaf_hooks->hooks[id].fn) invalid();
    i.leaf_hooks->hooks[id].fn = nullptr;
    return;
  }
  if (i.grad_fn->released) return;  // backward freed the graph and its hooks already
  if (i.grad_fn->meta) {
    for (NodeMeta::OutputHook& h : i.grad_fn->meta->hooks) {
      if (h.output_nr == i.output_nr && h.id == id && h.fn) {
        h.fn = nullptr;
        return;
      }
    }
  }
  invalid();
}

// A leaf's AccumulateGrad node: made on demand and kept by the leaf only weakly, so the same node
// comes back while anyone holds it (PyTorch's grad accumulator), and none is kept otherwise.
static std::shared_ptr<Node> grad_accumulator(const std::shared_ptr<TensorImpl>& leaf) {
  if (!leaf->leaf_hooks) leaf->leaf_hooks = std::make_shared<detail::LeafHooks>();
  std::shared_ptr<Node> n = leaf->leaf_hooks->grad_accumulator.lock();
  if (n) return n;
  n = std::make_shared<Node>();
  n->name_ = "AccumulateGrad";
  n->shape = leaf->shape;
  n->dtype = leaf->dtype;
  meta_of(*n).variable = leaf;
  leaf->leaf_hooks->grad_accumulator = n;
  return n;
}

std::vector<std::pair<std::shared_ptr<Node>, int64_t>> Node::next_functions() const {
  std::vector<std::pair<std::shared_ptr<Node>, int64_t>> out;
  out.reserve(next.size());
  for (const Edge& e : next) {
    if (e.fn) out.emplace_back(e.fn, e.input_nr);
    else if (e.leaf) out.emplace_back(grad_accumulator(e.leaf), 0);
    else out.emplace_back(nullptr, 0);
  }
  return out;
}

Tensor Node::variable() const { return meta && meta->variable ? Tensor(meta->variable) : Tensor(); }

}  // namespace ag
