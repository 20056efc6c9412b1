// Engine extension: ag::grad(outputs, inputs). After the counting walk it marks which nodes lead
// to an input and runs only those; nothing touches any .grad, and the gradient of each input is
// returned: for a leaf, the sum of what reached it; for a non-leaf, what reached its node.
#include <stdexcept>
#include <utility>

#include "autograd/engine_task.h"

namespace ag::detail {

GradTargets::GradTargets(const std::vector<Tensor>& inputs) : captured(inputs.size()) {
  for (const Tensor& in : inputs) {
    leaves.push_back(in.grad_fn() ? nullptr : in.impl());
    nodes.push_back(in.grad_fn().get());
    output_nrs.push_back(in.impl()->output_nr);
  }
}

bool GradTargets::is_leaf_target(const TensorImpl* t) const {
  for (const TensorImpl* l : leaves)
    if (l == t) return true;
  return false;
}

bool GradTargets::is_node_target(const Node* n) const {
  for (const Node* m : nodes)
    if (m == n) return true;
  return false;
}

// A post-order walk over the nodes this pass met. A node freed by an earlier backward has lost
// its edges, so whether it leads to a target is not known: ag::grad meeting one (other than a
// target itself, whose edges are not needed) cannot tell whether an input lies past it, and rather
// than return a gradient that may be missing that path, it says the graph was freed.
void mark_needed(GraphTask& task, const std::vector<Node*>& roots) {
  const GradTargets& t = task.targets;
  const Node* freed = nullptr;
  std::vector<std::pair<Node*, std::size_t>> stack;
  for (Node* r : roots) {
    if (r->slots.needed >= 0) continue;
    stack.emplace_back(r, 0);
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      if (i == 0) n->slots.needed = t.is_node_target(n) ? 1 : 0;
      if (i == 0 && n->released && !freed && !t.is_node_target(n)) freed = n;
      if (i < n->next.size()) {
        const Edge& e = n->next[i++];
        if (e.leaf && t.is_leaf_target(e.leaf.get())) n->slots.needed = 1;
        if (e.fn && e.fn->slots.pass == task.pass) {
          if (e.fn->slots.needed < 0) stack.emplace_back(e.fn.get(), 0);
          else if (e.fn->slots.needed > 0) n->slots.needed = 1;
        }
        continue;
      }
      const int8_t mine = n->slots.needed;
      stack.pop_back();
      if (!stack.empty() && mine > 0) stack.back().first->slots.needed = 1;
    }
  }
  if (freed) throw std::runtime_error(second_time_message(freed));
}

bool leads_to_target(const GraphTask& task, const Node& node) {
  for (const Edge& e : node.next)
    if ((e.leaf && task.targets.is_leaf_target(e.leaf.get())) || (e.fn && e.fn->slots.needed > 0)) return true;
  return false;
}

void capture_node_grads(GraphTask& task, const Node& node, const std::vector<Tensor>& grads) {
  GradTargets& t = task.targets;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    if (t.nodes[i] != &node) continue;
    const Tensor& g = grads[t.output_nrs[i]];
    if (g.defined()) t.captured[i] = sum_grads(t.captured[i], g);
  }
}

void capture_leaf_grad(GraphTask& task, const TensorImpl* leaf, const Tensor& g) {
  GradTargets& t = task.targets;
  for (std::size_t i = 0; i < t.leaves.size(); ++i)
    if (t.leaves[i] == leaf) t.captured[i] = sum_grads(t.captured[i], g);
}

}  // namespace ag::detail
