// The reverse-mode engine: recording nodes, the iterative topological sort, gradient routing
// and leaf accumulation.
#include <atomic>
#include <stdexcept>

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
NoGradGuard::NoGradGuard() : prev_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = prev_; }

SavedTensor::SavedTensor(const Tensor& t) {
  if (!t.defined()) return;  // "nothing saved": ops pass an undefined tensor when a grad is not needed
  t_ = t.detach();
  version_ = t.impl()->storage->version;
}

Tensor SavedTensor::get() const {
  if (!t_.defined()) return t_;
  uint64_t now = t_.impl()->storage->version;
  if (now != version_) {
    throw std::runtime_error(
        "[autograd] one of the tensors needed for gradient computation has been modified by an "
        "in-place operation: a tensor of shape " + t_.shape().str() + " is at version " +
        std::to_string(now) + "; expected version " + std::to_string(version_) + " instead");
  }
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

static void record_n(Tensor& out, const char* name, const Tensor* inputs, std::size_t n, BackwardFn fn) {
  auto node = detail::make_pooled<Node>();
  node->name = name;
  node->next.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Tensor& in = inputs[i];
    Edge e;
    if (tracks_grad(&in)) {
      TensorImpl* impl = in.impl();
      if (impl->is_view && impl->grad_fn && impl->view_version != impl->storage->version) {
        throw std::runtime_error(std::string("[") + name + "] an input of shape " + in.shape().str() +
                                 " is a view whose base was modified in place after the view was "
                                 "taken; its gradient would be wrong. Take the view again after the "
                                 "in-place op");
      }
      e.shape = in.shape();
      if (impl->grad_fn) e.fn = impl->grad_fn;
      else e.leaf = in.impl_ptr();
    }
    node->next.push_back(std::move(e));
  }
  node->backward = std::move(fn);
  node->shape = out.shape();
  node->dtype = out.dtype();
  out.impl()->grad_fn = std::move(node);
  out.impl()->requires_grad = true;
}

void record(Tensor& out, const char* name, std::initializer_list<Tensor> inputs, BackwardFn fn) {
  record_n(out, name, inputs.begin(), inputs.size(), std::move(fn));
}

void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, BackwardFn fn) {
  record_n(out, name, inputs.data(), inputs.size(), std::move(fn));
}

// Adds g into a leaf's .grad. The first gradient is copied so .grad never aliases graph data.
static void accumulate_leaf(TensorImpl* leaf, const Tensor& g) {
  Tensor gc = g.dtype() == leaf->dtype ? g : g.to(leaf->dtype);
  if (!leaf->grad) {
    leaf->grad = gc.clone().impl_ptr();
  } else {
    Tensor(leaf->grad).add_(gc);
  }
}

static void check_grad(std::string_view name, std::size_t i, const Edge& e, const Tensor& g) {
  if (g.shape() != e.shape) {
    throw std::logic_error("[autograd] " + std::string(name) + " returned a gradient of shape " + g.shape().str() +
                           " for input " + std::to_string(i) + " of shape " + e.shape.str());
  }
}

void run_backward(const Tensor& root, const Tensor& grad_in, bool retain_graph) {
  if (!root.requires_grad()) {
    throw std::runtime_error(
        "[backward] element 0 of tensors does not require grad and does not have a grad_fn");
  }
  Tensor grad = grad_in;
  if (!grad.defined()) {
    if (root.numel() != 1) {
      throw std::runtime_error("[backward] grad can be implicitly created only for scalar outputs; got shape " +
                               root.shape().str());
    }
    grad = ones_like(root);
  } else if (grad.shape() != root.shape()) {
    throw std::invalid_argument("[backward] gradient of shape " + grad.shape().str() +
                                " does not match the tensor's shape " + root.shape().str());
  }
  NoGradGuard no_grad;
  if (!root.grad_fn()) {  // backward on a leaf: its gradient is the seed itself
    accumulate_leaf(root.impl(), grad);
    return;
  }

  // 1. Iterative DFS over the graph: count, for each node, how many edges point at it.
  static uint64_t pass = 0;
  ++pass;
  Node* root_node = root.grad_fn().get();
  root_node->visited_in = pass;
  root_node->pending_consumers = 0;
  root_node->pending_grad = Tensor();
  std::vector<Node*> stack{root_node};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (!e.fn) continue;
      Node* m = e.fn.get();
      if (m->visited_in != pass) {
        m->visited_in = pass;
        m->pending_consumers = 0;
        m->pending_grad = Tensor();
        stack.push_back(m);
      }
      ++m->pending_consumers;
    }
  }

  // 2. Kahn's algorithm: a node runs once all its consumers have handed it their gradients,
  //    which are summed (a tensor used on two paths gets both contributions).
  root_node->pending_grad = grad;
  std::vector<std::shared_ptr<Node>> ready{root.grad_fn()};
  while (!ready.empty()) {
    std::shared_ptr<Node> node = std::move(ready.back());
    ready.pop_back();
    if (node->released) {
      throw std::runtime_error(
          "[backward] trying to backward through the graph a second time (" + std::string(node->name) +
          " was already freed). Specify retain_graph=true on the first backward call if you need to "
          "backward twice");
    }
    const Tensor g = std::move(node->pending_grad);
    node->pending_grad = Tensor();

    Grads grads;
    if (g.defined()) {
      grads = node->backward(g);
      if (grads.size() != node->next.size()) {
        throw std::logic_error("[autograd] " + std::string(node->name) + " returned " + std::to_string(grads.size()) +
                               " gradients for " + std::to_string(node->next.size()) + " inputs");
      }
    }
    if (!retain_graph) {  // free saved tensors (and, below, the edges) as we go
      node->backward = nullptr;
      node->released = true;
    }
    const auto& edges = node->next;
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      const bool has = i < grads.size() && grads[i].defined() && e.active();
      if (has) check_grad(node->name, i, e, grads[i]);
      if (e.leaf && has) accumulate_leaf(e.leaf.get(), grads[i]);
      if (!e.fn) continue;
      Node* m = e.fn.get();
      if (has) m->pending_grad = m->pending_grad.defined() ? add(m->pending_grad, grads[i]) : grads[i];
      if (--m->pending_consumers == 0) ready.push_back(e.fn);
    }
    if (!retain_graph) node->next.clear();
  }
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const { run_backward(*this, gradient, retain_graph); }

}  // namespace ag
