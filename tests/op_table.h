// The op table: one entry per op (or per variant of an op), PyTorch's OpInfo idea. Every check of
// the ops runs from it (tests/test_op_table.cpp), on every sample of every entry: forward values
// and gradients against PyTorch 1.13 (tests/golden/op_table.txt, made by
// tools/golden/make_op_golden.py from this very table), float32 against the float64 golden,
// strided against contiguous inputs, gradcheck (also with an input reused on a second path),
// gradgradcheck, the fast backward kernels against the rules, ops without a gradient, and int64
// inputs (refused, or computed with PyTorch's dtype); and the random-graph fuzzer
// (test_fuzz_gradcheck.cpp) draws its ops from the entries' fuzz steps.
//
// A new op is one entry, in the group file of its kind:
//   op_table_core.cpp         the ops of the first round (arithmetic, views, softmax, matmul, ...)
//   op_table_elementwise.cpp  unary and binary elementwise ops, creation, in-place
//   op_table_reduce_index.cpp reductions, indexing and gathers, reshaping
//   op_table_loss.cpp         losses and normalization
// then the golden data is regenerated (the script stops naming any sample PyTorch rejects):
//   cmake --build build --target op_table_dump
//   /usr/bin/python3 tools/golden/make_op_golden.py build/tests/op_table_dump
// and ./build/tests/ag_tests --gtest_filter='OpTable.*:FuzzGradcheck.*' checks it. An entry:
//   {.name = "tanh",
//    .torch = "x[0].tanh()",
//    .fn = [](auto& x) { return ag::tanh(x[0]); },
//    .samples = {{{{2, 3}}}, {{{}}}, {{{0, 4}}}},  // one input: (2, 3); 0-dim; empty
//    .floating_only = false,                       // PyTorch computes int64 inputs (to float32)
//    .fuzz = elementwise_fuzz([](const Tensor& a) { return ag::tanh(a); }, "tanh")},
// A sample of two inputs that broadcast: {{{2, 1, 3}, {4, 1}}}. An op smooth on (0.5, 2) only:
// .domain = {0.5, 2.0} and elementwise_fuzz(..., "log", Domain{0.5, 2.0}). Designated
// initializers go in the order of the fields below.
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
// (`b` is ignored by one-input steps), and a line of text for failure reports ("sin(a)").
struct FuzzStep {
  std::function<Tensor(const Tensor& a, const Tensor& b)> apply;
  std::string text;  // written over `a` and `b`, e.g. "softmax(a, 1)"; the fuzzer says which pool tensors they are
  // The op needs inputs without ties (max): the fuzzer applies it to its random leaves only, as
  // copies, fills and zeros made by other steps create ties.
  bool needs_leaf = false;
};
// Given the fuzzer's generator and the shapes of two pool tensors a and b, a step on them, or
// nullopt when the op does not apply to such shapes. Inputs are any real values: a step maps them
// into the op's domain itself (e.g. log(into(a, {0.5, 2}))). Constants a step needs (weights,
// indices, masks) are drawn here, from rng, and captured. The fuzzer learns the output shape by
// running the step.
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
  // True when PyTorch refuses integer inputs (softmax, mean, gelu, ...): the table checks ag throws
  // for int64 inputs. False when integer inputs are computed (add, abs, ...; also sin, exp, sqrt,
  // which PyTorch computes to float32): the table checks ag gives PyTorch's dtype and values. The
  // golden script stops on false where PyTorch refuses, and notes true where it computes.
  bool floating_only = true;
  // Finite differences cannot check the op (e.g. it rounds through float32): golden gradients only.
  bool fd_unusable = false;
  Fuzz fuzz;  // empty: the fuzzer does not draw this op
  // float32 rounding swamps the op on its samples (e.g. logits + 1e8 in float32 are all equal):
  // the float32 check only checks the dtype.
  bool float32_unusable = false;
  // A known difference from PyTorch for int64 inputs, to be fixed in the op, saying what ag does
  // (e.g. "ag refuses int64; PyTorch computes int64"): the int64 check then checks the difference
  // is still there, so the note goes when the op is fixed.
  std::string int64_gap;
};

// ---- helpers for fuzz steps (op_table.cpp) ----

int fuzz_int(std::mt19937_64& rng, int lo, int hi);  // uniform in [lo, hi]
// A fresh float64 constant (a weight, a target), uniform in [-1.5, 1.5) like the fuzzer's leaves.
Tensor fuzz_values(std::mt19937_64& rng, const Size& shape);
// A shape that broadcasts to s: each dim kept or set to 1, maybe fewer leading dims.
Size fuzz_broadcastable(std::mt19937_64& rng, const Size& s);
// lo + (hi - lo) * sigmoid(a): any real value mapped smoothly into the open interval.
Tensor into(const Tensor& a, Domain d);
// A unary elementwise op on any pool tensor (0-dim too). With `domain`, the input is mapped into
// it first (into(a, *domain)); text "name(a)" or "name(into(a, [lo, hi]))".
Fuzz elementwise_fuzz(std::function<Tensor(const Tensor&)> f, std::string name,
                      std::optional<Domain> domain = std::nullopt);
// A binary elementwise op: f(a, b) when a and b broadcast together, else f(a, c) with a fresh
// constant c of a shape broadcasting to a's. With `b_domain`, b (or c) is mapped into it first.
Fuzz binary_fuzz(std::function<Tensor(const Tensor&, const Tensor&)> f, std::string name,
                 std::optional<Domain> b_domain = std::nullopt);
// An op taking one dim: f(a, d) for a random dim d of a; for tensors of at least `min_dim`
// (>= 1) dims. Text "name(a, d)".
Fuzz dim_fuzz(std::function<Tensor(const Tensor&, int64_t)> f, std::string name, int64_t min_dim = 1);

// The groups; each lives in the file named after it.
std::vector<OpInfo> core_ops();
std::vector<OpInfo> elementwise_ops();
std::vector<OpInfo> reduce_index_ops();
std::vector<OpInfo> loss_ops();

// Every entry of every group, in that order (names are unique across groups).
const std::vector<OpInfo>& op_table();

}  // namespace optable
