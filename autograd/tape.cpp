// Recording one backward pass for the tape explorer: the graph from a root (nodes, leaves, where
// each input comes from, what each node saved, the values kept under KeepValuesGuard), its layout by layer, and the
// engine's run of it, step by step, seen through detail::BackwardObserver. The page itself is
// written by tape_html.cpp.
#include "autograd/tape.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

KeepValuesGuard::KeepValuesGuard() : prev_(detail::keep_values_on()) { detail::set_keep_values(true); }
KeepValuesGuard::~KeepValuesGuard() { detail::set_keep_values(prev_); }

namespace {

// The graph below `root`, breadth-first (the order in which backward hands out gradients).
struct Graph {
  std::vector<const Node*> nodes;
  std::vector<std::shared_ptr<TensorImpl>> leaves;
  std::map<const Node*, int> node_index;
  std::map<const TensorImpl*, int> leaf_index;
};

Graph walk(const Node* root, const char* op) {
  Graph g;
  g.nodes.push_back(root);
  g.node_index[root] = 0;
  for (std::size_t qi = 0; qi < g.nodes.size(); ++qi) {
    const Node* n = g.nodes[qi];
    if (n->released) {
      throw std::runtime_error(std::string("[") + op + "] the graph was already freed by backward (" + n->name() +
                               "); record it before backward or run backward with retain_graph");
    }
    for (const Edge& e : n->next) {
      if (e.fn && g.node_index.emplace(e.fn.get(), static_cast<int>(g.nodes.size())).second) g.nodes.push_back(e.fn.get());
      if (e.leaf && g.leaf_index.emplace(e.leaf.get(), static_cast<int>(g.leaves.size())).second) g.leaves.push_back(e.leaf);
    }
  }
  return g;
}

// Layers: a node sits one row below the lowest of its consumers (the root is row 0), so every
// edge points up from an input to its consumer; a leaf sits one row below its lowest consumer.
// Within a row, items are ordered by the mean position of their consumers (one sweep down),
// which keeps most edges short.
void lay_out(const Graph& g, BackwardTape& t) {
  const std::size_t N = g.nodes.size();
  std::vector<int> consumers(N, 0);
  for (const Node* n : g.nodes)
    for (const Edge& e : n->next)
      if (e.fn) ++consumers[static_cast<std::size_t>(g.node_index.at(e.fn.get()))];
  std::vector<int> ready{0};
  while (!ready.empty()) {  // Kahn's algorithm from the root: a node's layer is final once all its consumers are placed
    const int i = ready.back();
    ready.pop_back();
    for (const BackwardTape::Source& s : t.nodes[static_cast<std::size_t>(i)].inputs) {
      if (s.node >= 0) {
        auto& in = t.nodes[static_cast<std::size_t>(s.node)];
        in.layer = std::max(in.layer, t.nodes[static_cast<std::size_t>(i)].layer + 1);
        if (--consumers[static_cast<std::size_t>(s.node)] == 0) ready.push_back(s.node);
      } else if (s.leaf >= 0) {
        auto& leaf = t.leaves[static_cast<std::size_t>(s.leaf)];
        leaf.layer = std::max(leaf.layer, t.nodes[static_cast<std::size_t>(i)].layer + 1);
      }
    }
  }
  // Rows of (is_leaf, index), in discovery order, then sorted by the consumers' mean x.
  int rows = 0;
  for (const auto& n : t.nodes) rows = std::max(rows, n.layer + 1);
  for (const auto& l : t.leaves) rows = std::max(rows, l.layer + 1);
  std::vector<std::vector<std::pair<bool, int>>> row(static_cast<std::size_t>(rows));
  for (std::size_t i = 0; i < t.nodes.size(); ++i) row[static_cast<std::size_t>(t.nodes[i].layer)].emplace_back(false, static_cast<int>(i));
  for (std::size_t i = 0; i < t.leaves.size(); ++i) row[static_cast<std::size_t>(t.leaves[i].layer)].emplace_back(true, static_cast<int>(i));
  std::vector<double> node_x(N, 0.0);  // centred positions of the rows placed so far
  std::vector<std::vector<double>> wanted_node(N), wanted_leaf(t.leaves.size());
  for (auto& items : row) {
    auto mean = [&](const std::pair<bool, int>& it) {
      const auto& w = it.first ? wanted_leaf[static_cast<std::size_t>(it.second)] : wanted_node[static_cast<std::size_t>(it.second)];
      double s = 0;
      for (double x : w) s += x;
      return w.empty() ? 0.0 : s / static_cast<double>(w.size());
    };
    std::stable_sort(items.begin(), items.end(), [&](const auto& a, const auto& b) { return mean(a) < mean(b); });
    for (std::size_t k = 0; k < items.size(); ++k) {
      const double x = static_cast<double>(k) - static_cast<double>(items.size() - 1) / 2.0;
      const auto [is_leaf, i] = items[k];
      if (is_leaf) {
        t.leaves[static_cast<std::size_t>(i)].order = static_cast<int>(k);
        continue;
      }
      t.nodes[static_cast<std::size_t>(i)].order = static_cast<int>(k);
      node_x[static_cast<std::size_t>(i)] = x;
      for (const BackwardTape::Source& s : t.nodes[static_cast<std::size_t>(i)].inputs) {
        if (s.node >= 0) wanted_node[static_cast<std::size_t>(s.node)].push_back(x);
        if (s.leaf >= 0) wanted_leaf[static_cast<std::size_t>(s.leaf)].push_back(x);
      }
    }
  }
}

// Records each node the engine runs, with the leaves' .grad as backward() would sum it: the
// first gradient copied, later ones added, in the leaf's dtype (as the engine's accumulate_leaf).
class Recorder : public detail::BackwardObserver {
 public:
  Recorder(const Graph& g, BackwardTape& t) : g_(g), t_(t), sums_(g.leaves.size()) {}
  void node_ran(const Node& node, const std::vector<Tensor>& grad_outputs, const Grads& grad_inputs) override {
    auto it = g_.node_index.find(&node);
    if (it == g_.node_index.end()) return;  // not below the root (cannot happen: the pass starts there)
    BackwardTape::Step s;
    s.node = it->second;
    for (const Tensor& go : grad_outputs) s.grad_outputs.push_back(go.defined() ? go.detach().clone() : Tensor());
    for (const Tensor& gi : grad_inputs) s.grad_inputs.push_back(gi.defined() ? gi.detach().clone() : Tensor());
    for (std::size_t i = 0; i < node.next.size() && i < s.grad_inputs.size(); ++i) {
      const Tensor& gi = s.grad_inputs[i];
      if (!node.next[i].leaf || !gi.defined()) continue;
      const int leaf = g_.leaf_index.at(node.next[i].leaf.get());
      Tensor& sum = sums_[static_cast<std::size_t>(leaf)];
      const Tensor gc = gi.to(node.next[i].leaf->dtype);
      sum = sum.defined() ? add(sum, gc) : gc.clone();
      s.leaf_grads.emplace_back(leaf, sum);
    }
    t_.steps.push_back(std::move(s));
  }
  std::vector<Tensor> sums() const { return sums_; }

 private:
  const Graph& g_;
  BackwardTape& t_;
  std::vector<Tensor> sums_;
};

// Installs an observer (and turns KeepValuesGuard off) for one pass; on the way out, puts back
// the previous observer and the .grad of every tensor that retains its gradient.
class PassScope {
 public:
  PassScope(detail::BackwardObserver* o, const Graph& g) : prev_(detail::backward_observer()), keep_(detail::keep_values_on()) {
    for (const Node* n : g.nodes) {
      if (!n->meta) continue;
      for (const auto& [k, weak] : n->meta->retained) {
        if (std::shared_ptr<TensorImpl> t = weak.lock()) {
          retained_.emplace_back(t, t->grad);
          t->grad = nullptr;  // the pass accumulates into a fresh one, dropped below
        }
      }
    }
    detail::set_keep_values(false);
    detail::set_backward_observer(o);
  }
  ~PassScope() {
    detail::set_backward_observer(prev_);
    detail::set_keep_values(keep_);
    for (auto& [t, grad] : retained_) t->grad = std::move(grad);
  }
  PassScope(const PassScope&) = delete;
  PassScope& operator=(const PassScope&) = delete;

 private:
  detail::BackwardObserver* prev_;
  bool keep_;
  std::vector<std::pair<std::shared_ptr<TensorImpl>, std::shared_ptr<TensorImpl>>> retained_;
};

}  // namespace

BackwardTape record_backward(const Tensor& root, const std::vector<std::pair<std::string, Tensor>>& names) {
  const char* op = "record_backward";
  if (!root.defined()) throw std::invalid_argument(std::string("[") + op + "] the tensor is undefined");
  if (!root.grad_fn()) {
    throw std::invalid_argument(std::string("[") + op + "] the tensor of shape " + root.shape().str() +
                                " has no autograd history (no grad_fn): nothing to step through");
  }
  if (root.numel() != 1) {
    throw std::invalid_argument(std::string("[") + op + "] expected a one-element tensor (a loss), got shape " +
                                root.shape().str());
  }
  const Graph g = walk(root.grad_fn().get(), op);
  std::map<const TensorImpl*, std::string> leaf_names;
  for (const auto& [n, t] : names)
    if (t.defined()) leaf_names.emplace(t.impl(), n);

  BackwardTape t;
  t.root = root.detach();
  for (const Node* n : g.nodes) {
    BackwardTape::NodeInfo info;
    info.name = n->name();
    info.rule = n->rule();
    info.shape = n->shape;
    info.dtype = n->dtype;
    for (const Edge& e : n->next) {
      BackwardTape::Source s;
      if (e.fn) {
        s.node = g.node_index.at(e.fn.get());
        s.output = static_cast<int>(e.input_nr);
      } else if (e.leaf) {
        s.leaf = g.leaf_index.at(e.leaf.get());
      }
      info.inputs.push_back(s);
      info.input_shapes.push_back(e.shape);
    }
    if (n->meta && !n->meta->kept_outputs.empty()) {
      info.kept = true;
      info.input_values = n->meta->kept_inputs;
      info.output_values = n->meta->kept_outputs;
      info.saved = n->meta->kept_saved;
      info.saved_from = n->meta->kept_saved_from;
      // an input that needs no gradient has an edge without a shape: its kept value has one
      for (std::size_t i = 0; i < n->next.size() && i < info.input_values.size(); ++i)
        if (!n->next[i].active() && info.input_values[i].defined()) info.input_shapes[i] = info.input_values[i].shape();
    }
    t.nodes.push_back(std::move(info));
  }
  for (std::size_t i = 0; i < g.leaves.size(); ++i) {
    BackwardTape::LeafInfo leaf;
    auto it = leaf_names.find(g.leaves[i].get());
    leaf.name = it != leaf_names.end() ? it->second : "leaf " + std::to_string(i);
    leaf.value = Tensor(g.leaves[i]);
    t.leaves.push_back(std::move(leaf));
  }
  lay_out(g, t);

  // What each node saves, before the pass (which retains the graph, so it holds the same after)
  std::vector<std::vector<detail::SavedOfNode>> saved;
  for (const Node* n : g.nodes) saved.push_back(detail::saved_of(*n));

  // The pass: ag::grad's mode (inputs = the leaves) touches no .grad, and the graph is retained.
  std::vector<Tensor> inputs;
  for (const auto& l : g.leaves) inputs.emplace_back(l);
  Recorder rec(g, t);
  if (!inputs.empty()) {
    PassScope scope(&rec, g);
    run_backward({root}, {ones_like(root)}, /*retain_graph=*/true, /*create_graph=*/false, inputs);
  }
  t.leaf_grads = rec.sums();
  // each storage's bytes go to the first node in the pass's order that holds it (then the nodes
  // the pass did not reach, in graph order)
  std::vector<int> order;
  std::vector<bool> ran(g.nodes.size(), false);
  for (const BackwardTape::Step& s : t.steps) {
    if (!ran[static_cast<std::size_t>(s.node)]) order.push_back(s.node);
    ran[static_cast<std::size_t>(s.node)] = true;
  }
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    if (!ran[i]) order.push_back(static_cast<int>(i));
  std::set<const Storage*> counted;
  for (int i : order) {
    for (detail::SavedOfNode& s : saved[static_cast<std::size_t>(i)]) {
      if (!s.storage || !counted.insert(s.storage).second) s.info.bytes = 0;
      t.nodes[static_cast<std::size_t>(i)].saved_tensors.push_back(std::move(s.info));
    }
  }
  return t;
}

}  // namespace ag
