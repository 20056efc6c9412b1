// Activation checkpointing (saved.h) on the saved-tensor hooks (record.cpp): the forward packs a
// slot for each tensor fn's ops save, and the first unpack that finds its slot empty runs fn again
// and fills every live slot from what that run saves, in the same order.
#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "autograd/generator.h"
#include "autograd/node.h"
#include "autograd/saved.h"

namespace ag {

namespace {

// What a node keeps for one tensor saved under checkpoint: the value once a recompute has filled
// it (freed with the node, as the tensor would have been). Its place in the forward's order is its
// place in Frame::slots.
struct Slot {
  Tensor value;
};

// The default generator set to `state` for its scope, the live state given back after (also when
// the scope ends by an exception); no state: nothing changes.
class RandomStateAs {
 public:
  explicit RandomStateAs(const std::optional<Generator>& state) {
    if (!state) return;
    live_.emplace(default_generator());
    default_generator() = *state;
  }
  ~RandomStateAs() {
    if (live_) default_generator() = *live_;
  }
  RandomStateAs(const RandomStateAs&) = delete;
  RandomStateAs& operator=(const RandomStateAs&) = delete;

 private:
  std::optional<Generator> live_;
};

struct Frame {
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn;
  std::vector<Tensor> inputs;
  std::vector<uint64_t> versions;      // of the inputs, at the forward
  std::optional<Generator> rng;        // the random state the forward started from
  std::vector<std::weak_ptr<Slot>> slots;  // in the order the forward saved them

  void recompute() {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].defined() && inputs[i].impl()->storage->version != versions[i]) {
        throw std::runtime_error("[checkpoint] input " + std::to_string(i) + " of the checkpointed function (shape " +
                                 inputs[i].shape().str() + ") has been modified by an inplace operation since the forward: "
                                 "it is at version " + std::to_string(inputs[i].impl()->storage->version) + "; expected version " +
                                 std::to_string(versions[i]) + ". The recompute would differ from the forward");
      }
    }
    std::size_t next = 0;
    auto fill = [this, &next](const Tensor& t) -> std::any {
      if (next < slots.size())
        if (const std::shared_ptr<Slot> s = slots[next].lock(); s && !s->value.defined()) s->value = t;
      ++next;
      return {};
    };
    auto never = [](const std::any&) -> Tensor {
      throw std::logic_error("[checkpoint] a tensor saved by the recompute itself was unpacked");
    };
    {
      RandomStateAs forward_state(rng);
      EnableGradGuard grad;
      SavedTensorsHooks hooks(fill, never);
      fn(inputs);
    }
    if (next != slots.size()) {
      throw std::runtime_error("[checkpoint] the recompute saved " + std::to_string(next) + " tensors for backward where the forward saved " +
                               std::to_string(slots.size()) + ": the checkpointed function must run the same ops each time");
    }
  }
};

}  // namespace

void print_saved_tensors(const Tensor& root, std::ostream& os) {
  const std::vector<SavedTensorInfo> all = saved_tensors(root);
  std::size_t wn = 4, ws = 5, wd = 5;
  for (const SavedTensorInfo& s : all) {
    wn = std::max(wn, s.node.size());
    ws = std::max(ws, s.shape.str().size());
    wd = std::max(wd, dtype_name(s.dtype).size());
  }
  auto pad = [](std::string s, std::size_t w) { return s.size() < w ? s + std::string(w - s.size(), ' ') : s; };
  auto lpad = [](std::string s, std::size_t w) { return s.size() < w ? std::string(w - s.size(), ' ') + s : s; };
  os << pad("node", wn) << "  " << pad("shape", ws) << "  " << pad("dtype", wd) << "  " << lpad("bytes", 10) << "  "
     << pad("saved", 6) << "  rule\n";
  int64_t total = 0;
  for (const SavedTensorInfo& s : all) {
    std::string rule = s.rule;
    std::erase(rule, '`');
    os << pad(s.node, wn) << "  " << pad(s.shape.str(), ws) << "  " << pad(dtype_name(s.dtype), wd) << "  "
       << lpad(std::to_string(s.bytes), 10) << "  " << pad(s.is_output ? "output" : "input", 6) << "  " << rule << "\n";
    total += s.bytes;
  }
  os << all.size() << " saved tensors, " << total << " bytes\n";
}

std::vector<Tensor> checkpoint(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                               const std::vector<Tensor>& inputs, bool preserve_rng_state) {
  if (!fn) throw std::invalid_argument("[checkpoint] fn is empty");
  if (!grad_enabled()) return fn(inputs);  // nothing is saved: nothing to recompute
  auto frame = std::make_shared<Frame>();
  frame->fn = fn;
  frame->inputs = inputs;
  for (const Tensor& t : inputs) frame->versions.push_back(t.defined() ? t.impl()->storage->version : 0);
  if (preserve_rng_state) frame->rng.emplace(default_generator());
  std::vector<Tensor> outs;
  {
    // the frame is held by the slots' unpack hook (so by the nodes), not by the slots themselves
    std::weak_ptr<Frame> weak = frame;
    auto pack = [weak](const Tensor&) -> std::any {
      const std::shared_ptr<Frame> f = weak.lock();
      auto slot = std::make_shared<Slot>();
      f->slots.push_back(slot);
      return slot;
    };
    auto unpack = [frame](const std::any& packed) -> Tensor {
      const std::shared_ptr<Slot>& slot = std::any_cast<const std::shared_ptr<Slot>&>(packed);
      if (!slot->value.defined()) frame->recompute();
      return slot->value;
    };
    SavedTensorsHooks hooks(pack, unpack);
    outs = fn(inputs);
  }
  bool any = false;
  for (const Tensor& t : outs) any = any || (t.defined() && t.requires_grad());
  if (!any) {
    throw std::invalid_argument("[checkpoint] none of the outputs of the checkpointed function requires grad: there is "
                                "nothing to recompute for (give an input requires_grad, or call fn without checkpoint)");
  }
  return outs;
}

}  // namespace ag
