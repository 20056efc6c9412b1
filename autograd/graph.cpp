#include "autograd/graph.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "autograd/node.h"
#include "autograd/tape.h"

namespace ag {

namespace {

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// The first `max` values with 4 decimals (as PyTorch prints them): "1.7755" for a 0-d tensor,
// "[0.1000, -2.0000, ...]" otherwise.
std::string preview(const Tensor& t, int64_t max) {
  const std::vector<double> v = t.to_vector<double>();
  const bool whole = t.dtype() == kInt64 || t.dtype() == kBool;
  auto num = [&](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, whole ? "%.0f" : "%.4f", x);
    return std::string(buf);
  };
  if (t.dim() == 0) return num(v[0]);
  std::string s = "[";
  const std::size_t shown = std::min(v.size(), static_cast<std::size_t>(std::max<int64_t>(max, 1)));
  for (std::size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + num(v[i]);
  if (shown < v.size()) s += ", ...";
  return s + "]";
}

// A box with its title (name and shape) and data | grad rows, as a Graphviz HTML-like label.
std::string table_label(const std::string& title, const std::string& colour, const Tensor& data, const Tensor& grad,
                        int64_t max) {
  std::string s = "<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"3\"><tr><td colspan=\"2\" bgcolor=\"" +
                  colour + "\">" + title + "</td></tr>";
  if (data.defined()) s += "<tr><td>data</td><td align=\"left\">" + preview(data, max) + "</td></tr>";
  if (grad.defined()) s += "<tr><td>grad</td><td align=\"left\">" + preview(grad, max) + "</td></tr>";
  return s + "</table>>";
}

// The .grad of the tensor that retains its gradient among `n`'s first output, if any.
Tensor retained_grad(const Node& n) {
  if (!n.meta) return Tensor();
  for (const auto& [k, weak] : n.meta->retained) {
    std::shared_ptr<TensorImpl> t = weak.lock();
    if (k == 0 && t && t->grad) return Tensor(t->grad);
  }
  return Tensor();
}

}  // namespace

std::string to_dot(const Tensor& root, const std::vector<std::pair<std::string, Tensor>>& names, const DotOptions& options) {
  if (!root.defined() || !root.grad_fn()) {
    throw std::invalid_argument("[to_dot] the tensor has no autograd history (no grad_fn) to draw");
  }
  std::map<const TensorImpl*, std::string> leaf_names;
  for (const auto& [n, t] : names) leaf_names[t.impl()] = n;

  std::ostringstream nodes, edges;
  std::map<const void*, std::string> ids;
  auto id_of = [&](const void* p, bool& fresh) {
    auto it = ids.find(p);
    fresh = it == ids.end();
    if (fresh) {
      std::string id = "n";
      id += std::to_string(ids.size());
      it = ids.emplace(p, std::move(id)).first;
    }
    return it->second;
  };
  auto op_node = [&](const std::string& id, const Node* n, bool is_root) {
    // a node named as PyTorch names another op's says whose rule it runs
    const std::string rule = n->rule_grad_fn_.empty() && n->rule_op_.empty() ? "" : rule_op_name(n->rule().op);
    if (options.values) {
      const Tensor data = n->meta && !n->meta->kept_outputs.empty() ? n->meta->kept_outputs[0] : Tensor();
      nodes << "  " << id << " [shape=plaintext, label="
            << table_label("<b>" + html_escape(n->name()) + "</b> " + (rule.empty() ? "" : "(rule: " + rule + ") ") +
                               n->shape.str(),
                           is_root ? "#dbe8fb" : "#f4f6fa", data, retained_grad(*n), options.max_values)
            << "];\n";
      return;
    }
    nodes << "  " << id << " [label=\"" << n->name_ << (rule.empty() ? "" : "\\n(rule: " + rule + ")") << "\\n"
          << n->shape.str() << "\", shape=box"
          << (is_root ? ", style=filled, fillcolor=\"#dbe8fb\"" : "") << "];\n";
  };
  auto leaf_node = [&](const std::string& id, const std::shared_ptr<TensorImpl>& leaf) {
    auto it = leaf_names.find(leaf.get());
    const std::string label = it != leaf_names.end() ? it->second : std::string("leaf");
    if (options.values) {
      const Tensor t(leaf);
      nodes << "  " << id << " [shape=plaintext, label="
            << table_label("<b>" + html_escape(label) + "</b> " + leaf->shape.str(), "#e4f5dc", t, t.grad(), options.max_values)
            << "];\n";
      return;
    }
    nodes << "  " << id << " [label=\"" << label << "\\n" << leaf->shape.str()
          << "\", shape=ellipse, style=filled, fillcolor=\"#e4f5dc\"];\n";
  };
  // Breadth-first from the root: the order in which backward hands out gradients.
  std::vector<const Node*> queue{root.grad_fn().get()};
  bool fresh = false;
  op_node(id_of(queue[0], fresh), queue[0], true);
  for (std::size_t qi = 0; qi < queue.size(); ++qi) {
    const Node* n = queue[qi];
    if (n->released) throw std::runtime_error("[to_dot] the graph was already freed by backward; draw it before backward or with retain_graph");
    const std::string me = ids.at(n);
    for (const Edge& e : n->next) {
      if (e.fn) {
        const std::string in = id_of(e.fn.get(), fresh);
        if (fresh) {
          op_node(in, e.fn.get(), false);
          queue.push_back(e.fn.get());
        }
        edges << "  " << in << " -> " << me << ";\n";
      } else if (e.leaf) {
        const std::string in = id_of(e.leaf.get(), fresh);
        if (fresh) leaf_node(in, e.leaf);
        edges << "  " << in << " -> " << me << ";\n";
      }
    }
  }
  return "digraph autograd {\n  rankdir=BT;\n  node [fontname=\"Helvetica\", fontsize=10];\n" + nodes.str() + edges.str() + "}\n";
}

}  // namespace ag
