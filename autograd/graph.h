// Drawing the autograd graph: Graphviz DOT of everything backward would visit from a tensor,
// like micrograd's draw_dot. Render with `dot -Tsvg graph.dot -o graph.svg`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensor.h"

namespace ag {

struct DotOptions {
  // Each box also shows a few values and the gradient, like micrograd's data | grad boxes: a
  // leaf's values and its .grad (after backward), an op node's output as kept under
  // KeepValuesGuard (tape.h) and, if that output retains its gradient, its .grad. Rows with
  // nothing to show are left out. Drawing after backward needs backward(..., retain_graph=true).
  bool values = false;
  int64_t max_values = 4;  // values shown per row, then "..."
};

// Op nodes are labelled with their grad_fn name and output shape, leaves with their name in
// `names` (e.g. a module's named_parameters()) and shape. Nodes and edges are listed in the order
// backward reaches them (a node before the nodes it sends gradients to); arrows point the way
// data flows in the forward pass, from inputs to the op that consumed them.
std::string to_dot(const Tensor& root, const std::vector<std::pair<std::string, Tensor>>& names = {},
                   const DotOptions& options = {});

}  // namespace ag
