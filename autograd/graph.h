// Drawing the autograd graph: Graphviz DOT of everything backward would visit from a tensor,
// like micrograd's draw_dot. Render with `dot -Tsvg graph.dot -o graph.svg`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tensor.h"

namespace ag {

// Op nodes are labelled with their grad_fn name and output shape, leaves with their name in
// `names` (e.g. a module's named_parameters()) and shape. Nodes and edges are listed in the order
// backward reaches them (a node before the nodes it sends gradients to); arrows point the way
// data flows in the forward pass, from inputs to the op that consumed them.
std::string to_dot(const Tensor& root, const std::vector<std::pair<std::string, Tensor>>& names = {});

}  // namespace ag
