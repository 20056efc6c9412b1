// What backward keeps. Every node saves the tensors its rule needs (SavedTensor, node.h); for a
// transformer those saved activations are most of training's memory. Saved-tensor hooks, as
// torch.autograd.graph.saved_tensors_hooks: while a guard lives, every tensor a node saves goes
// through `pack_hook` (which may copy it elsewhere, compress it, or keep it as it is), and
// backward calls `unpack_hook` on what it returned when the rule needs the tensor.
#pragma once

#include <any>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "tensor.h"

namespace ag {

// RAII, Python's `with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):`.
// - While it lives, on this thread, every tensor a node saves (a rule's saved inputs and outputs,
//   a custom Function's save_for_backward, a fused op's saved output) is passed to `pack_hook`,
//   and the node keeps what it returns instead of the tensor.
// - Backward calls `unpack_hook` on it each time the rule reads the tensor (once per backward
//   pass), which must return a tensor of the saved tensor's shape and dtype (else an error naming
//   both). The unpacked tensor gets the saved tensor's history back, so create_graph works.
// - The guards nest; the innermost applies. The hooks run with grad mode off and no hooks of
//   their own, so the ops inside them record nothing.
// - The version check still applies to the original tensor: modifying it in place before
//   backward is PyTorch's "modified by an inplace operation" error, for as long as it lives.
// - pack_hook receives a detached alias of the saved tensor (its values, no history).
class SavedTensorsHooks {
 public:
  SavedTensorsHooks(std::function<std::any(const Tensor&)> pack_hook, std::function<Tensor(const std::any&)> unpack_hook);
  ~SavedTensorsHooks();
  SavedTensorsHooks(const SavedTensorsHooks&) = delete;
  SavedTensorsHooks& operator=(const SavedTensorsHooks&) = delete;
};

// One tensor a node of the graph keeps for its backward (saved_tensors below).
struct SavedTensorInfo {
  std::string node;  // the node's grad_fn name, e.g. "MulBackward0"
  std::string rule;  // its backward rule (Node::rule(): docs/derivatives.md's row), e.g. "da = sum_to(g * b), ..."
  Size shape;
  DType dtype = kFloat32;
  int64_t bytes = 0;  // of its storage, counted at the first tensor that holds it (0 after)
  bool is_output = false;  // the node's own output (else an input or another tensor)
};

// Every tensor saved in the graph behind `root` (what backward will read), node by node in the
// order backward reaches them, as JAX's print_saved_residuals shows them. A storage several
// saved tensors share (a tensor saved by two nodes, views of one buffer) is counted once, so the
// bytes add up to what the graph holds. A tensor packed by saved-tensor hooks counts the bytes of
// what pack_hook returned if that is a Tensor, else 0 (the hook holds it: a checkpoint's slot
// holds nothing until the recompute). Nodes whose backward has run (without retain_graph) hold
// nothing any more.
std::vector<SavedTensorInfo> saved_tensors(const Tensor& root);
namespace detail {
// What one node keeps (saved_tensors' rows for it), each with the storage it holds (null if
// none: a checkpoint's empty slot, a pack_hook that returned no tensor) and `bytes` the whole
// storage's: the tape explorer counts each storage once in its own order.
struct SavedOfNode {
  SavedTensorInfo info;
  const Storage* storage;
};
std::vector<SavedOfNode> saved_of(const Node& n);
}  // namespace detail

// The same as a table: one row per saved tensor (node, shape, dtype, bytes, input or output,
// rule), then the total.
void print_saved_tensors(const Tensor& root, std::ostream& os = std::cout);

// Activation checkpointing, PyTorch's torch.utils.checkpoint.checkpoint(fn, *inputs,
// use_reentrant=False), built on the hooks above: fn runs as usual, but the tensors its ops save
// are not kept, only a slot for each; the first time backward needs one, fn runs again from the
// same inputs (under the random state it had, so dropout draws the same masks) and the slots are
// filled from that run. The forward keeps the inputs and fn's outputs; the saved activations live
// from the recompute until their node's backward has used them.
// - Works with ag::grad, create_graph (the unpacked tensors carry the first forward's history,
//   so second derivatives go through), retain_graph, and checkpoints nested inside fn.
// - preserve_rng_state = false: the recompute draws from the random stream as it is then.
// - Errors: with grad mode on, fn's outputs must include one that requires grad; an input changed
//   in place between the forward and the recompute (PyTorch 1.13 would silently recompute from
//   the changed value); a recompute that saves another number of tensors than the forward did.
// fn must compute the same thing each time it is called with the same inputs and random state.
std::vector<Tensor> checkpoint(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                               const std::vector<Tensor>& inputs, bool preserve_rng_state = true);

}  // namespace ag
