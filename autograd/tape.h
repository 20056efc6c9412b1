// The tape explorer: one backward pass, recorded node by node, and a web page that replays it.
//
//   {
//     ag::KeepValuesGuard keep;  // nodes recorded in this scope keep copies of their values
//     loss = model(x, y);
//   }
//   ag::to_html(loss, "tape.html", model.named_parameters());  // open it in a browser
//
// A node normally keeps only what its backward rule needs; under KeepValuesGuard it also keeps
// detached copies of its inputs, its outputs and the tensors it saved, taken when it was
// recorded (so later in-place writes do not change them). Without the guard the page still
// shows the graph and every gradient, and says where values were not recorded.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "node.h"
#include "saved.h"
#include "tensor.h"

namespace ag {

// RAII: the nodes recorded on this thread in its scope keep copies of their values
// (NodeMeta::kept_*), as the tape explorer shows them. Off (the default) it costs one flag test
// per recorded node. Scopes nest; the previous state is restored at the end of each.
class KeepValuesGuard {
 public:
  KeepValuesGuard();
  ~KeepValuesGuard();
  KeepValuesGuard(const KeepValuesGuard&) = delete;
  KeepValuesGuard& operator=(const KeepValuesGuard&) = delete;

 private:
  bool prev_;
};

// DerivativeRule (one row of docs/derivatives.md): node.h, as Node::rule() returns one.
// The op column's first name: "`causal_attention(q, k, v, d)` = ..." -> "causal_attention".
std::string rule_op_name(const std::string& op_cell);
// The rows whose grad_fn column names `grad_fn` ("SumBackward0/1" names SumBackward0 and 1).
std::vector<DerivativeRule> derivative_rules(const std::string& grad_fn);

// One backward pass from a one-element tensor, step by step, in the engine's order.
struct BackwardTape {
  // Where input i of a node comes from: output `output` of node `node`, the leaf `leaf`, or
  // nothing (an input that needs no gradient).
  struct Source {
    int node = -1, output = 0, leaf = -1;
  };
  struct NodeInfo {
    std::string name;              // grad_fn name
    DerivativeRule rule;           // Node::rule(): the row of the rule it runs (empty op: none)
    Size shape;                    // of its (first) output
    DType dtype = kFloat32;
    int layer = 0, order = 0;      // its row in the drawing (0: the root) and place in the row
    std::vector<Source> inputs;
    std::vector<Size> input_shapes;
    bool kept = false;             // recorded under KeepValuesGuard: the three below are filled
    std::vector<Tensor> input_values, output_values, saved;
    std::vector<int> saved_from;   // per saved tensor: the input it is, -1 an output, -2 another
    // What it keeps for backward, recorded with or without KeepValuesGuard: ag::saved_tensors'
    // rows for this node, each storage's bytes counted at the first node the pass ran that holds
    // it (so the nodes' bytes, summed in step order, are a running total of the graph's).
    std::vector<SavedTensorInfo> saved_tensors;
  };
  struct LeafInfo {
    std::string name;              // from `names`, else "leaf 0", "leaf 1", ...
    Tensor value;                  // the leaf itself
    int layer = 0, order = 0;
  };
  struct Step {
    int node = 0;
    std::vector<Tensor> grad_outputs;  // arriving, one per output (after hooks), undefined if none
    std::vector<Tensor> grad_inputs;   // leaving, one per input, undefined if none
    std::vector<std::pair<int, Tensor>> leaf_grads;  // (leaf, its .grad so far) for each leaf reached
  };
  std::vector<NodeInfo> nodes;  // nodes[0] is the root's grad_fn
  std::vector<LeafInfo> leaves;
  std::vector<Step> steps;      // in the order the engine ran the nodes
  std::vector<Tensor> leaf_grads;  // what backward() leaves in each leaf's .grad (undefined if none)
  Tensor root;                  // the one-element tensor backward started from
};

// Runs one backward pass from `root` (a one-element tensor with a grad_fn) and records it. The
// graph is retained and no .grad is touched: the pass runs as ag::grad with the leaves as inputs,
// and the .grad each leaf would get from root.backward() (from none) is summed here. Hooks run as
// in any backward. `names` labels leaves (e.g. a module's named_parameters()).
BackwardTape record_backward(const Tensor& root, const std::vector<std::pair<std::string, Tensor>>& names = {});

// Writes the tape explorer of record_backward(root, names): one self-contained HTML file (its
// script and style inline, nothing fetched) with the graph laid out by layer and controls to step
// the backward pass node by node: each step's op and shapes, inputs, saved tensors, arriving
// gradient, rule (from docs/derivatives.md), what the node saved (shapes and bytes, with the
// running total of the nodes run so far), leaving gradients and the leaves' .grad so far.
void to_html(const Tensor& root, const std::string& path, const std::vector<std::pair<std::string, Tensor>>& names = {});

}  // namespace ag
