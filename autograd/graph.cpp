#include "autograd/graph.h"

#include <map>
#include <sstream>
#include <stdexcept>

#include "autograd/node.h"

namespace ag {

std::string to_dot(const Tensor& root, const std::vector<std::pair<std::string, Tensor>>& names) {
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
  // Breadth-first from the root: the order in which backward hands out gradients.
  std::vector<const Node*> queue{root.grad_fn().get()};
  bool fresh = false;
  const std::string root_id = id_of(queue[0], fresh);
  nodes << "  " << root_id << " [label=\"" << queue[0]->name_ << "\\n" << queue[0]->shape.str()
        << "\", shape=box, style=filled, fillcolor=\"#dbe8fb\"];\n";
  for (std::size_t qi = 0; qi < queue.size(); ++qi) {
    const Node* n = queue[qi];
    if (n->released) throw std::runtime_error("[to_dot] the graph was already freed by backward; draw it before backward or with retain_graph");
    const std::string me = ids.at(n);
    for (const Edge& e : n->next) {
      if (e.fn) {
        const std::string in = id_of(e.fn.get(), fresh);
        if (fresh) {
          nodes << "  " << in << " [label=\"" << e.fn->name_ << "\\n" << e.fn->shape.str() << "\", shape=box];\n";
          queue.push_back(e.fn.get());
        }
        edges << "  " << in << " -> " << me << ";\n";
      } else if (e.leaf) {
        const std::string in = id_of(e.leaf.get(), fresh);
        if (fresh) {
          auto it = leaf_names.find(e.leaf.get());
          const std::string label = it != leaf_names.end() ? it->second : std::string("leaf");
          nodes << "  " << in << " [label=\"" << label << "\\n" << e.leaf->shape.str()
                << "\", shape=ellipse, style=filled, fillcolor=\"#e4f5dc\"];\n";
        }
        edges << "  " << in << " -> " << me << ";\n";
      }
    }
  }
  return "digraph autograd {\n  rankdir=BT;\n  node [fontname=\"Helvetica\", fontsize=10];\n" + nodes.str() + edges.str() + "}\n";
}

}  // namespace ag
