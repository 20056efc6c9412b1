// The op table: one entry per op (or per variant of an op), PyTorch's OpInfo idea. Every check of
// the ops runs from it (tests/test_op_table.cpp): forward values and gradients against PyTorch
// 1.13 (tests/golden/op_table.txt, made by tools/golden/make_op_golden.py from this very table),
// float32 against float64, strided against contiguous inputs, gradcheck, gradgradcheck, dtype
// errors, empty and 0-dim inputs; and the random-graph fuzzer (test_fuzz_gradcheck.cpp) draws its
// ops from it. A new op is one entry, in the group file of its kind:
//   op_table_core.cpp         the ops of the first round (arithmetic, views, softmax, matmul, ...)
//   op_table_elementwise.cpp  unary and binary elementwise ops, creation, in-place
//   op_table_reduce_index.cpp reductions, indexing and gathers, reshaping
//   op_table_loss.cpp         losses and normalization
#pragma once

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autograd/autograd.h"

namespace optable {

using ag::Size;
using ag::Tensor;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// The interval the floating inputs are drawn from (uniformly, by the golden script), chosen so the
// op is smooth on it: no kink, pole, tie or branch cut within finite-difference reach.
struct Domain {
  double lo = -2.0, hi = 2.0;
};

// One call of the op: the shapes of its floating inputs. The op's other arguments (dims, index
// tensors, masks, scalars) are fixed inside `fn` and `torch`.
struct Sample {
  std::vector<std::vector<int64_t>> shapes;
};

// One random-graph step the fuzzer may take: the op applied to one or two tensors of its pool
// (`b` is ignored by one-input steps), and a line of text for failure reports ("sin(t3)").
struct FuzzStep {
  std::function<Tensor(const Tensor& a, const Tensor& b)> apply;
  std::string text;
};
// Given the fuzzer's generator and the shapes of two pool tensors a and b, a step on them, or
// nullopt when the op does not apply to such shapes. Inputs are any real values: a step maps them
// into the op's domain itself (e.g. log(a * a + 1)). The fuzzer learns the output shape by running
// the step.
using Fuzz = std::function<std::optional<FuzzStep>(std::mt19937_64& rng, const Size& a, const Size& b)>;

struct OpInfo {
  std::string name;   // unique: the golden file's key, e.g. "sin" or "clamp_min_scalar"
  std::string torch;  // the same call in PyTorch: a Python expression over the list x of inputs,
                      // e.g. "torch.sin(x[0])" or "torch.gather(x[0], 1, torch.tensor([[0, 0], [1, 0]]))"
  Fn fn;              // the op in ag over the same inputs, e.g. [](auto& x) { return ag::sin(x[0]); }
  std::vector<Sample> samples;  // cover size-1 and broadcast dims, 0-dim and empty tensors where the op takes them
  Domain domain{};
  // The highest order of derivative that exists and is checked: 0 for ops without a gradient
  // (sign, comparisons, argmax), 1 when only first-order gradients are checked, 2 when
  // gradgradcheck runs too.
  int order = 2;
  // True when PyTorch refuses integer inputs (the floating ops: sin, softmax, mean, ...): the table
  // checks ag throws for int64 inputs. False when integer inputs are computed (add, abs, ...).
  bool floating_only = true;
  // Finite differences cannot check the op (e.g. it rounds through float32): golden gradients only.
  bool fd_unusable = false;
  Fuzz fuzz;  // empty: the fuzzer does not draw this op
};

// The groups; each lives in the file named after it.
std::vector<OpInfo> core_ops();
std::vector<OpInfo> elementwise_ops();
std::vector<OpInfo> reduce_index_ops();
std::vector<OpInfo> loss_ops();

// Every entry of every group, in that order (names are unique across groups).
const std::vector<OpInfo>& op_table();

}  // namespace optable
