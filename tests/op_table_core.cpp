// The op table's core group (see op_table.h): the ops of the first round -- arithmetic with
// broadcasting, the smooth unary ops, reductions, matmul, the softmax family, masking, joining,
// gathers, the losses, views and the fused attention ops -- with the fuzz steps the random-graph
// fuzzer draws (one or two per op; structural ops included).
#include <algorithm>
#include <cmath>

#include "op_table.h"

namespace optable {

namespace {

using namespace ag;

constexpr Domain kPositive{0.5, 2.0};  // log, sqrt, pow and division need positive inputs

using Pool = const Tensor&;

// A fuzz step over `a` only, for tensors of at least min_dim dims.
Fuzz unary_step(int64_t min_dim, std::function<std::optional<FuzzStep>(std::mt19937_64&, const Size&)> make) {
  return [min_dim, make = std::move(make)](std::mt19937_64& rng, const Size& sa, const Size&) -> std::optional<FuzzStep> {
    if (sa.size() < min_dim) return std::nullopt;
    return make(rng, sa);
  };
}

std::string str(int64_t v) { return std::to_string(v); }

std::vector<OpInfo> arithmetic() {
  return {
      {.name = "add_bcast",
       .torch = "x[0] + x[1]",
       .fn = [](auto& x) { return x[0] + x[1]; },
       .samples = {{{{2, 3}, {3}}}, {{{2, 1, 3}, {4, 1}}}, {{{}, {2, 3}}}, {{{0, 3}, {3}}}, {{{}, {}}}},
       .floating_only = false,
       .fuzz = binary_fuzz([](Pool a, Pool b) { return a + b; }, "add")},
      {.name = "sub_bcast",
       .torch = "x[0] - x[1]",
       .fn = [](auto& x) { return x[0] - x[1]; },
       .samples = {{{{2, 1, 3}, {4, 1}}}, {{{3}, {}}}, {{{0, 2}, {1, 2}}}},
       .floating_only = false,
       .fuzz = binary_fuzz([](Pool a, Pool b) { return a - b; }, "sub")},
      {.name = "mul_bcast",
       .torch = "x[0] * x[1]",
       .fn = [](auto& x) { return x[0] * x[1]; },
       .samples = {{{{2, 1, 3}, {4, 1}}}, {{{}, {3, 1}}}, {{{2, 0}, {2, 1}}}},
       .floating_only = false,
       .fuzz = binary_fuzz([](Pool a, Pool b) { return a * b; }, "mul")},
      {.name = "div_bcast",
       .torch = "x[0] / x[1]",
       .fn = [](auto& x) { return x[0] / x[1]; },
       .samples = {{{{3, 2}, {2}}}, {{{}, {2, 2}}}, {{{0}, {1}}}},
       .domain = kPositive,
       .floating_only = false,
       .fuzz = binary_fuzz([](Pool a, Pool b) { return a / b; }, "div", kPositive)},
      {.name = "scalar_ops",
       .torch = "(2.0 - x[0]) * 3.0 / 4.0 + 1.5 - 2.0 / (x[0] + 3.0)",
       .fn = [](auto& x) { return (2.0 - x[0]) * 3.0 / 4.0 + 1.5 - 2.0 / (x[0] + 3.0); },
       .samples = {{{{2, 3}}}, {{{}}}, {{{0, 4}}}},
       .domain = kPositive,
       .floating_only = false,
       .fuzz = elementwise_fuzz([](Pool a) { return (2.0 - a) * 3.0 / 4.0 + 1.5 - 2.0 / (a + 3.0); }, "scalar_ops", kPositive)},
      {.name = "pow_scalar",
       .torch = "x[0] ** 2.5",
       .fn = [](auto& x) { return pow(x[0], 2.5); },
       .samples = {{{{2, 3}}}, {{{}}}, {{{1, 0}}}},
       .domain = kPositive,
       .floating_only = false,
       .fuzz = elementwise_fuzz([](Pool a) { return pow(a, 2.5); }, "pow_2.5", kPositive)},
      {.name = "pow_square",  // the old fuzzer's pow(a, 2) on any real
       .torch = "x[0] ** 2",  // a whole double is a Python int to ag (C++ cannot tell 2.0 from 2)
       .fn = [](auto& x) { return pow(x[0], 2.0); },
       .samples = {{{{2, 3}}}, {{{}}}},
       .floating_only = false,
       .fuzz = elementwise_fuzz([](Pool a) { return pow(a, 2.0); }, "pow_2")},
      {.name = "pow_tensor",
       .torch = "x[0] ** x[1]",
       .fn = [](auto& x) { return pow(x[0], x[1]); },
       .samples = {{{{2, 3}, {2, 3}}}, {{{2, 1}, {3}}}, {{{}, {4}}}},
       .domain = kPositive,
       .floating_only = false,
       .fuzz = binary_fuzz([](Pool a, Pool b) { return pow(into(a, kPositive), b); }, "pow_tensor(into(a, [0.5, 2]), b)",
                           Domain{-2.0, 2.0})},
      {.name = "neg",
       .torch = "-x[0]",
       .fn = [](auto& x) { return -x[0]; },
       .samples = {{{{2, 3}}}, {{{}}}, {{{0}}}},
       .floating_only = false,
       .fuzz = elementwise_fuzz([](Pool a) { return -a; }, "neg")},
  };
}

// A smooth unary op on a 2-D, a 0-dim, a size-1 and an empty input; floating inputs drawn from
// `domain` (and the fuzzer's mapped into it), int64 inputs computed to float32 as in PyTorch.
OpInfo smooth_unary(std::string name, std::string torch, std::function<Tensor(const Tensor&)> f,
                    std::optional<Domain> domain = std::nullopt) {
  return {.name = name,
          .torch = std::move(torch),
          .fn = [f](auto& x) { return f(x[0]); },
          .samples = {{{{2, 3}}}, {{{}}}, {{{1, 1}}}, {{{4, 0, 2}}}},
          .domain = domain.value_or(Domain{}),
          .floating_only = false,
          .fuzz = elementwise_fuzz(f, name, domain)};
}

std::vector<OpInfo> unary() {
  return {
      smooth_unary("exp", "x[0].exp()", [](Pool a) { return exp(a); }, Domain{-2.0, 2.0}),
      smooth_unary("log", "x[0].log()", [](Pool a) { return log(a); }, kPositive),
      smooth_unary("sqrt", "x[0].sqrt()", [](Pool a) { return sqrt(a); }, kPositive),
      smooth_unary("tanh", "x[0].tanh()", [](Pool a) { return tanh(a); }),
      smooth_unary("sigmoid", "x[0].sigmoid()", [](Pool a) { return sigmoid(a); }),
      smooth_unary("erf", "x[0].erf()", [](Pool a) { return erf(a); }),
      // relu has a kink at 0, where the fuzzer's masked and triangular zeros sit: not fuzzed
      {.name = "relu",
       .torch = "x[0].relu()",
       .fn = [](auto& x) { return relu(x[0]); },
       .samples = {{{{3, 4}}}, {{{}}}, {{{0}}}},
       .floating_only = false},
      {.name = "gelu",
       .torch = "F.gelu(x[0])",
       .fn = [](auto& x) { return gelu(x[0]); },
       .samples = {{{{3, 4}}}, {{{}}}, {{{0, 2}}}},
       .fuzz = elementwise_fuzz([](Pool a) { return gelu(a); }, "gelu")},
      {.name = "gelu_tanh",
       .torch = "F.gelu(x[0], approximate='tanh')",
       .fn = [](auto& x) { return gelu(x[0], "tanh"); },
       .samples = {{{{3, 4}}}, {{{}}}},
       .fuzz = elementwise_fuzz([](Pool a) { return gelu(a, "tanh"); }, "gelu_tanh")},
  };
}

std::vector<OpInfo> reductions() {
  return {
      {.name = "sum_all",
       .torch = "x[0].sum()",
       .fn = [](auto& x) { return sum(x[0]); },
       .samples = {{{{3, 4}}}, {{{}}}, {{{0, 3}}}},
       .floating_only = false,
       .fuzz = elementwise_fuzz([](Pool a) { return sum(a); }, "sum")},
      {.name = "sum_dim",
       .torch = "x[0].sum(1)",
       .fn = [](auto& x) { return sum(x[0], {1}); },
       .samples = {{{{2, 3, 4}}}, {{{3, 1}}}, {{{2, 0}}}},
       .floating_only = false,
       .fuzz = unary_step(1,
                          [](std::mt19937_64& rng, const Size& sa) {
                            const int64_t d = fuzz_int(rng, 0, static_cast<int>(sa.size()) - 1);
                            const bool keep = fuzz_int(rng, 0, 1);
                            return FuzzStep{[d, keep](Pool a, Pool) { return sum(a, {d}, keep); },
                                            "sum(a, " + str(d) + (keep ? ", keepdim)" : ")")};
                          })},
      {.name = "sum_dims_keepdim",
       .torch = "x[0].sum((0, 2), keepdim=True)",
       .fn = [](auto& x) { return sum(x[0], {0, 2}, true); },
       .samples = {{{{2, 3, 4}}}, {{{1, 2, 1}}}, {{{0, 2, 3}}}},
       .floating_only = false},
      {.name = "mean_all",
       .torch = "x[0].mean()",
       .fn = [](auto& x) { return mean(x[0]); },
       .samples = {{{{3, 4}}}, {{{}}}, {{{0}}}},
       .fuzz = elementwise_fuzz([](Pool a) { return mean(a); }, "mean")},
      {.name = "mean_dim",
       .torch = "x[0].mean(-1)",
       .fn = [](auto& x) { return mean(x[0], {-1}); },
       .samples = {{{{2, 3, 4}}}, {{{3}}}, {{{2, 0}}}},
       .fuzz = dim_fuzz([](Pool a, int64_t d) { return mean(a, {d}, true); }, "mean_keepdim")},
      // max: random inputs have no ties; the fuzzer takes it on its random leaves only
      {.name = "max_all",
       .torch = "x[0].max()",
       .fn = [](auto& x) { return max(x[0]); },
       .samples = {{{{3, 4}}}, {{{}}}, {{{1}}}},
       .floating_only = false,
       .fuzz = [](std::mt19937_64&, const Size&, const Size&) {
         return std::optional<FuzzStep>(FuzzStep{[](Pool a, Pool) { return max(a); }, "max(a)", true});
       }},
      {.name = "max_dim",
       .torch = "x[0].max(1)[0]",
       .fn = [](auto& x) { return max(x[0], 1).first; },
       .samples = {{{{2, 5, 3}}}, {{{4, 1}}}, {{{2, 3, 0}}}},
       .floating_only = false,
       .fuzz = unary_step(1,
                          [](std::mt19937_64& rng, const Size& sa) {
                            const int64_t d = fuzz_int(rng, 0, static_cast<int>(sa.size()) - 1);
                            return FuzzStep{[d](Pool a, Pool) { return max(a, d).first; }, "max(a, " + str(d) + ")", true};
                          })},
      {.name = "max_dim_keepdim",
       .torch = "x[0].max(0, keepdim=True)[0]",
       .fn = [](auto& x) { return max(x[0], 0, true).first; },
       .samples = {{{{4, 3}}}, {{{1}}}, {{{}}}},
       .floating_only = false},
      // the indices max(dim) also returns: no gradient
      {.name = "argmax_keepdim",
       .torch = "x[0].argmax(-1, keepdim=True)",
       .fn = [](auto& x) { return argmax(x[0], -1, true); },
       .samples = {{{{2, 5, 3}}}, {{{4}}}},
       .order = 0,
       .floating_only = false},
      {.name = "max_dim_indices",
       .torch = "x[0].max(1)[1]",
       .fn = [](auto& x) { return max(x[0], 1).second; },
       .samples = {{{{2, 5, 3}}}, {{{4, 1}}}},
       .order = 0,
       .floating_only = false},
      // found by the random-graph fuzzer: max over a leading dim of a 3-D tensor
      {.name = "max_dim0_3d",
       .torch = "x[0].max(0)[0]",
       .fn = [](auto& x) { return max(x[0], 0).first; },
       .samples = {{{{3, 4, 2}}}},
       .floating_only = false},
      {.name = "reused_node",
       .torch = "(x[0] * x[0]).sum(0) + x[0].exp().sum(0)",
       .fn = [](auto& x) { return sum(x[0] * x[0], {0}) + sum(exp(x[0]), {0}); },
       .samples = {{{{3, 2}}}, {{{1}}}},
       .floating_only = false},
  };
}

// PyTorch multiplies int64 matrices; ag's matmul and linear take floating tensors only

std::vector<OpInfo> matmuls() {
  return {
      {.name = "matmul_2d",
       .torch = "x[0] @ x[1]",
       .fn = [](auto& x) { return matmul(x[0], x[1]); },
       .samples = {{{{3, 4}, {4, 2}}}, {{{1, 4}, {4, 1}}}, {{{3, 0}, {0, 2}}}, {{{0, 4}, {4, 2}}}},
       .floating_only = false,
       // with a fresh weight: (.., k) @ (k, n)
       .fuzz = unary_step(1,
                          [](std::mt19937_64& rng, const Size& sa) {
                            Tensor w = fuzz_values(rng, Size{sa[sa.size() - 1], fuzz_int(rng, 1, 3)});
                            return FuzzStep{[w](Pool a, Pool) { return matmul(a, w); }, "matmul(a, W " + w.shape().str() + ")"};
                          })},
      {.name = "matmul_1d_2d",
       .torch = "x[0] @ x[1]",
       .fn = [](auto& x) { return matmul(x[0], x[1]); },
       .samples = {{{{4}, {4, 3}}}, {{{1}, {1, 2}}}},
       .floating_only = false},
      {.name = "matmul_2d_1d",
       .torch = "x[0] @ x[1]",
       .fn = [](auto& x) { return matmul(x[0], x[1]); },
       .samples = {{{{3, 4}, {4}}}, {{{0, 2}, {2}}}},
       .floating_only = false},
      {.name = "matmul_1d_1d",
       .torch = "x[0] @ x[1]",
       .fn = [](auto& x) { return matmul(x[0], x[1]); },
       .samples = {{{{4}, {4}}}, {{{0}, {0}}}},
       .floating_only = false},
      {.name = "matmul_batched",
       .torch = "x[0] @ x[1]",
       .fn = [](auto& x) { return matmul(x[0], x[1]); },
       .samples = {{{{2, 3, 4}, {2, 4, 5}}}, {{{1, 2, 3}, {1, 3, 1}}}},
       .floating_only = false},
      {.name = "matmul_bcast",
       .torch = "x[0] @ x[1]",
       .fn = [](auto& x) { return matmul(x[0], x[1]); },
       .samples = {{{{2, 1, 3, 4}, {5, 4, 2}}}, {{{3, 4}, {2, 4, 2}}}, {{{2, 3, 4}, {4}}}},
       .floating_only = false},
      {.name = "matmul_transposed",
       .torch = "x[0].t() @ x[1].transpose(0, 1)",
       .fn = [](auto& x) { return matmul(x[0].t(), x[1].transpose(0, 1)); },
       .samples = {{{{4, 3}, {2, 4}}}},
       .floating_only = false,
       // a @ a^T over the last two dims: one tensor on both sides
       .fuzz = unary_step(2,
                          [](std::mt19937_64&, const Size&) {
                            return FuzzStep{[](Pool a, Pool) { return matmul(a, a.transpose(-1, -2)); }, "matmul(a, a^T)"};
                          })},
      {.name = "linear",
       .torch = "F.linear(x[0], x[1], x[2])",
       .fn = [](auto& x) { return linear(x[0], x[1], x[2]); },
       .samples = {{{{3, 4}, {2, 4}, {2}}}, {{{1, 1}, {3, 1}, {3}}}, {{{0, 2}, {3, 2}, {3}}}, {{{4}, {2, 4}, {2}}},
                   {{{2, 3, 4}, {2, 4}, {2}}}, {{{1, 2, 3, 4}, {2, 4}, {2}}}},
       .floating_only = false,
       // the pool tensor as the input (fresh weight and bias) or as the weight (fresh input)
       .fuzz = unary_step(2,
                          [](std::mt19937_64& rng, const Size& sa) -> std::optional<FuzzStep> {
                            if (sa.size() != 2) return std::nullopt;
                            if (fuzz_int(rng, 0, 1)) {
                              const int64_t n = fuzz_int(rng, 1, 3);
                              Tensor w = fuzz_values(rng, Size{n, sa[1]}), b = fuzz_values(rng, Size{n});
                              return FuzzStep{[w, b](Pool a, Pool) { return linear(a, w, b); }, "linear(a, W " + w.shape().str() + ", b)"};
                            }
                            Tensor x = fuzz_values(rng, Size{3, sa[1]}), b = fuzz_values(rng, Size{sa[0]});
                            return FuzzStep{[x, b](Pool a, Pool) { return linear(x, a, b); }, "linear(X " + x.shape().str() + ", a, b)"};
                          })},
      {.name = "linear_no_bias",
       .torch = "F.linear(x[0], x[1])",
       .fn = [](auto& x) { return linear(x[0], x[1]); },
       .samples = {{{{3, 4}, {2, 4}}}, {{{4}, {2, 4}}}, {{{2, 3, 4}, {2, 4}}}},
       .floating_only = false},
  };
}

std::vector<OpInfo> softmaxes() {
  return {
      {.name = "softmax_last",
       .torch = "x[0].softmax(-1)",
       .fn = [](auto& x) { return softmax(x[0], -1); },
       .samples = {{{{3, 5}}}, {{{4}}}, {{{}}}, {{{2, 0}}}, {{{0, 3}}}},
       .fuzz = dim_fuzz([](Pool a, int64_t d) { return softmax(a, d); }, "softmax")},
      {.name = "softmax_dim0",
       .torch = "x[0].softmax(0)",
       .fn = [](auto& x) { return softmax(x[0], 0); },
       .samples = {{{{3, 5}}}, {{{1, 3}}}}},
      {.name = "log_softmax_last",
       .torch = "x[0].log_softmax(-1)",
       .fn = [](auto& x) { return log_softmax(x[0], -1); },
       .samples = {{{{3, 5}}}, {{{4}}}, {{{}}}, {{{0, 3}}}},
       .fuzz = dim_fuzz([](Pool a, int64_t d) { return log_softmax(a, d); }, "log_softmax")},
      {.name = "log_softmax_dim1",
       .torch = "x[0].log_softmax(1)",
       .fn = [](auto& x) { return log_softmax(x[0], 1); },
       .samples = {{{{2, 3, 4}}}, {{{2, 1}}}}},
      {.name = "masked_softmax_causal",
       .torch = "x[0].masked_fill(torch.triu(torch.ones(4, 4), diagonal=1).bool(), -math.inf).softmax(-1)",
       .fn = [](auto& x) { return softmax(masked_fill(x[0], triu(ones({4, 4}), 1).bool_(), -INFINITY), -1); },
       .samples = {{{{4, 4}}}, {{{2, 4, 4}}}}},
      // the fused causal ops against the compositions they stand for
      {.name = "causal_softmax",
       .torch = "(x[0].masked_fill(torch.ones(x[0].shape[-2:]).triu(1).bool(), -math.inf) / 1.5).softmax(-1)",
       .fn = [](auto& x) { return causal_softmax(x[0], 1.5); },
       .samples = {{{{4, 4}}}, {{{2, 3, 5}}}, {{{1, 1}}}, {{{3, 2}}}},
       .fuzz = unary_step(2,
                          [](std::mt19937_64&, const Size&) {
                            return FuzzStep{[](Pool a, Pool) { return causal_softmax(a, 1.5); }, "causal_softmax(a, 1.5)"};
                          })},
      {.name = "causal_qk_softmax",
       .torch = "((x[0] @ x[1].transpose(-2, -1)).masked_fill(torch.ones(x[0].shape[-2], x[1].shape[-2]).triu(1).bool(), "
                "-math.inf) / 1.3).softmax(-1)",
       .fn = [](auto& x) { return causal_qk_softmax(x[0], x[1], 1.3); },
       .samples = {{{{3, 2}, {3, 2}}}, {{{2, 4, 3}, {2, 5, 3}}}, {{{1, 2}, {1, 2}}}},
       // the pool tensor as queries and keys, or with fresh keys
       .fuzz = unary_step(2,
                          [](std::mt19937_64& rng, const Size& sa) {
                            const int64_t nd = sa.size();
                            if (fuzz_int(rng, 0, 1))
                              return FuzzStep{[](Pool a, Pool) { return causal_qk_softmax(a, a, 1.5); }, "causal_qk_softmax(a, a, 1.5)"};
                            Size ks = sa;
                            ks[nd - 2] = fuzz_int(rng, 1, 4);
                            Tensor k = fuzz_values(rng, ks);
                            return FuzzStep{[k](Pool a, Pool) { return causal_qk_softmax(a, k, 1.5); },
                                            "causal_qk_softmax(a, K " + ks.str() + ", 1.5)"};
                          })},
      {.name = "causal_matmul",
       .torch = "x[0].tril() @ x[1]",
       .fn = [](auto& x) { return causal_matmul(x[0], x[1]); },
       .samples = {{{{3, 3}, {3, 2}}}, {{{2, 4, 3}, {2, 3, 2}}}, {{{1, 1}, {1, 1}}}},
       // the pool tensor as the weights or as the values
       .fuzz = unary_step(2,
                          [](std::mt19937_64& rng, const Size& sa) {
                            const int64_t nd = sa.size();
                            Size other = sa;
                            if (fuzz_int(rng, 0, 1)) {
                              other[nd - 2] = sa[nd - 1];
                              other[nd - 1] = fuzz_int(rng, 1, 3);
                              Tensor v = fuzz_values(rng, other);
                              return FuzzStep{[v](Pool a, Pool) { return causal_matmul(a, v); }, "causal_matmul(a, V " + other.str() + ")"};
                            }
                            other[nd - 1] = sa[nd - 2];
                            other[nd - 2] = fuzz_int(rng, 1, 4);
                            Tensor w = fuzz_values(rng, other);
                            return FuzzStep{[w](Pool a, Pool) { return causal_matmul(w, a); }, "causal_matmul(W " + other.str() + ", a)"};
                          })},
      {.name = "causal_attention",
       .torch = "((x[0] @ x[1].transpose(-2, -1)).masked_fill(torch.ones(x[0].shape[-2], x[1].shape[-2]).triu(1).bool(), "
                "-math.inf) / 1.3).softmax(-1) @ x[2]",
       .fn = [](auto& x) { return causal_attention(x[0], x[1], x[2], 1.3).out; },
       .samples = {{{{3, 2}, {3, 2}, {3, 4}}}, {{{2, 4, 3}, {2, 5, 3}, {2, 5, 2}}}, {{{1, 2}, {1, 2}, {1, 1}}}},
       // the pool tensor as queries and keys, with fresh values
       .fuzz = unary_step(2,
                          [](std::mt19937_64& rng, const Size& sa) {
                            Size vs = sa;
                            vs[sa.size() - 1] = fuzz_int(rng, 1, 3);
                            Tensor v = fuzz_values(rng, vs);
                            return FuzzStep{[v](Pool a, Pool) { return causal_attention(a, a, v, 1.5).out; },
                                            "causal_attention(a, a, V " + vs.str() + ", 1.5).out"};
                          })},
  };
}

std::vector<OpInfo> masking_joining_gathering() {
  return {
      {.name = "masked_fill",
       .torch = "x[0].masked_fill(torch.tensor([[True, False, True], [False, False, True]]), -1e9)",
       .fn = [](auto& x) { return masked_fill(x[0], tensor({{true, false, true}, {false, false, true}}), -1e9); },
       .samples = {{{{2, 3}}}, {{{4, 2, 3}}}},
       .floating_only = false},
      {.name = "masked_fill_bcast",
       .torch = "x[0].masked_fill(torch.tensor([True, False, True]), 0.5)",
       .fn = [](auto& x) { return masked_fill(x[0], tensor({true, false, true}), 0.5); },
       .samples = {{{{2, 3}}}, {{{3}}}, {{{0, 3}}}},
       .floating_only = false,
       // with a random mask of a shape broadcasting to a's
       .fuzz = [](std::mt19937_64& rng, const Size& sa, const Size&) {
         const Size ms = fuzz_broadcastable(rng, sa);
         std::vector<double> mv(static_cast<std::size_t>(ms.numel()));
         for (double& m : mv) m = fuzz_int(rng, 0, 2) == 0;
         Tensor mask = from_vector(mv, ms.vec(), kBool);
         return std::optional<FuzzStep>(
             FuzzStep{[mask](Pool a, Pool) { return masked_fill(a, mask, 0.25); }, "masked_fill(a, mask " + ms.str() + ", 0.25)"});
       }},
      {.name = "dropout_with_mask",
       .torch = "x[0] * torch.tensor([[True, False, True], [True, True, False]]) / 0.75",
       .fn = [](auto& x) { return dropout_with_mask(x[0], tensor({{true, false, true}, {true, true, false}}), 0.25); },
       .samples = {{{{2, 3}}}},
       // with a random keep-mask held fixed
       .fuzz = [](std::mt19937_64& rng, const Size& sa, const Size&) {
         std::vector<double> mv(static_cast<std::size_t>(sa.numel()));
         for (double& m : mv) m = fuzz_int(rng, 0, 3) != 0;
         Tensor mask = from_vector(mv, sa.vec(), kBool);
         return std::optional<FuzzStep>(
             FuzzStep{[mask](Pool a, Pool) { return dropout_with_mask(a, mask, 0.25); }, "dropout_with_mask(a, fixed mask, 0.25)"});
       }},
      {.name = "cat_dim1",
       .torch = "torch.cat([x[0], x[1]], 1)",
       .fn = [](auto& x) { return cat({x[0], x[1]}, 1); },
       .samples = {{{{2, 3}, {2, 2}}}, {{{2, 0}, {2, 3}}}, {{{1, 1}, {1, 2}}}},
       .floating_only = false,
       .fuzz = dim_fuzz([](Pool a, int64_t d) { return cat({a, a * 2.0}, d); }, "cat_with_2a")},
      {.name = "stack_dim0",
       .torch = "torch.stack([x[0], x[1]], 0)",
       .fn = [](auto& x) { return stack({x[0], x[1]}, 0); },
       .samples = {{{{2, 3}, {2, 3}}}, {{{}, {}}}, {{{0}, {0}}}},
       .floating_only = false,
       .fuzz = [](std::mt19937_64& rng, const Size& sa, const Size&) {
         const int64_t d = fuzz_int(rng, 0, static_cast<int>(sa.size()));
         return std::optional<FuzzStep>(
             FuzzStep{[d](Pool a, Pool) { return stack({a, tanh(a)}, d); }, "stack([a, tanh(a)], " + str(d) + ")"});
       }},
      {.name = "index_select_repeat",
       .torch = "x[0].index_select(0, torch.tensor([2, 0, 2, 1, 2]))",
       .fn = [](auto& x) { return index_select(x[0], 0, tensor({2, 0, 2, 1, 2})); },
       .samples = {{{{3, 4}}}, {{{3}}}, {{{3, 0}}}},
       .floating_only = false,
       // repeated indices along a random dim
       .fuzz = unary_step(1,
                          [](std::mt19937_64& rng, const Size& sa) {
                            const int64_t d = fuzz_int(rng, 0, static_cast<int>(sa.size()) - 1);
                            // (an empty dim: an empty index)
                            std::vector<int64_t> idx(sa[d] == 0 ? 0 : static_cast<std::size_t>(fuzz_int(rng, 1, 5)));
                            for (int64_t& i : idx) i = fuzz_int(rng, 0, static_cast<int>(sa[d]) - 1);
                            Tensor index = from_vector(idx, {static_cast<int64_t>(idx.size())});
                            return FuzzStep{[d, index](Pool a, Pool) { return index_select(a, d, index); },
                                            "index_select(a, " + str(d) + ", " + Size(idx).str() + ")"};
                          })},
      {.name = "index_select_dim1",
       .torch = "x[0].index_select(1, torch.tensor([2, 0, 2, 1, 2]))",
       .fn = [](auto& x) { return index_select(x[0], 1, tensor({2, 0, 2, 1, 2})); },
       .samples = {{{{2, 3}}}, {{{1, 3, 2}}}},
       .floating_only = false},
      {.name = "index_add",
       .torch = "x[0].index_add(0, torch.tensor([2, 0, 2]), x[1], alpha=0.5)",
       .fn = [](auto& x) { return index_add(x[0], 0, tensor({2, 0, 2}), x[1], 0.5); },
       .samples = {{{{3, 4}, {3, 4}}}, {{{4}, {3}}}, {{{3, 0}, {3, 0}}}},
       .floating_only = false},
      {.name = "index_add_dim1",
       .torch = "x[0].index_add(1, torch.tensor([1, 1]), x[1])",
       .fn = [](auto& x) { return index_add(x[0], 1, tensor({1, 1}), x[1]); },
       .samples = {{{{2, 3}, {2, 2}}}},
       .floating_only = false},
      {.name = "embedding_repeat",
       .torch = "F.embedding(torch.tensor([[0, 2], [2, 2]]), x[0])",
       .fn = [](auto& x) { return embedding(x[0], tensor({{0, 2}, {2, 2}})); },
       .samples = {{{{3, 4}}}, {{{3, 1}}}},
       .floating_only = false,
       // rows of a 2-D tensor, ids with repeats and a batch dim
       .fuzz = unary_step(2,
                          [](std::mt19937_64& rng, const Size& sa) -> std::optional<FuzzStep> {
                            if (sa.size() != 2) return std::nullopt;
                            std::vector<int64_t> ids(4);
                            for (int64_t& i : ids) i = fuzz_int(rng, 0, static_cast<int>(sa[0]) - 1);
                            Tensor idx = from_vector(ids, {2, 2});
                            return FuzzStep{[idx](Pool a, Pool) { return embedding(a, idx); }, "embedding(a, " + Size(ids).str() + ")"};
                          })},
  };
}

std::vector<OpInfo> losses() {
  return {
      {.name = "cross_entropy",
       .torch = "F.cross_entropy(x[0], torch.tensor([1, 0, 3, 1]))",
       .fn = [](auto& x) { return cross_entropy(x[0], tensor({1, 0, 3, 1})); },
       .samples = {{{{4, 5}}}, {{{4, 4}}}},
       // random targets for a 2-D pool tensor
       .fuzz = unary_step(2,
                          [](std::mt19937_64& rng, const Size& sa) -> std::optional<FuzzStep> {
                            if (sa.size() != 2) return std::nullopt;
                            std::vector<int64_t> t(static_cast<std::size_t>(sa[0]));
                            for (int64_t& i : t) i = fuzz_int(rng, 0, static_cast<int>(sa[1]) - 1);
                            Tensor target = from_vector(t, {sa[0]});
                            return FuzzStep{[target](Pool a, Pool) { return cross_entropy(a, target); },
                                            "cross_entropy(a, " + Size(t).str() + ")"};
                          })},
      {.name = "cross_entropy_ignore",
       .torch = "F.cross_entropy(x[0], torch.tensor([1, 0, 3, 1]), ignore_index=1)",
       .fn = [](auto& x) { return cross_entropy(x[0], tensor({1, 0, 3, 1}), 1); },
       .samples = {{{{4, 5}}}}},
      // x + 1e8 rounds each finite-difference step of 1e-6 to a multiple of 1.5e-8 (and wipes out
      // float32 logits): golden values only
      {.name = "cross_entropy_shifted",
       .torch = "F.cross_entropy(x[0] + 1e8, torch.tensor([1, 0, 3, 1]))",
       .fn = [](auto& x) { return cross_entropy(x[0] + 1e8, tensor({1, 0, 3, 1})); },
       .samples = {{{{4, 5}}}},
       .fd_unusable = true,
       .float32_unusable = true},
      {.name = "layer_norm_affine",
       .torch = "F.layer_norm(x[0], (4,), x[1], x[2])",
       .fn = [](auto& x) { return layer_norm(x[0], {4}, x[1], x[2]); },
       .samples = {{{{3, 4}, {4}, {4}}}, {{{2, 1, 4}, {4}, {4}}}, {{{4}, {4}, {4}}}, {{{0, 4}, {4}, {4}}}},
       .fuzz = unary_step(1,
                          [](std::mt19937_64& rng, const Size& sa) {
                            const int64_t n = sa[sa.size() - 1];
                            Tensor w = fuzz_values(rng, Size{n}), b = fuzz_values(rng, Size{n});
                            return FuzzStep{[w, b, n](Pool a, Pool) { return layer_norm(a, {n}, w, b); }, "layer_norm(a, [" + str(n) + "], w, b)"};
                          })},
      {.name = "layer_norm_plain",
       .torch = "F.layer_norm(x[0], (3, 4))",
       .fn = [](auto& x) { return layer_norm(x[0], {3, 4}); },
       .samples = {{{{2, 3, 4}}}, {{{3, 4}}}},
       .fuzz = unary_step(1,
                          [](std::mt19937_64&, const Size& sa) {
                            const int64_t n = sa[sa.size() - 1];
                            return FuzzStep{[n](Pool a, Pool) { return layer_norm(a, {n}); }, "layer_norm(a, [" + str(n) + "])"};
                          })},
      {.name = "mse_loss",
       .torch = "F.mse_loss(x[0], x[1])",
       .fn = [](auto& x) { return mse_loss(x[0], x[1]); },
       .samples = {{{{3, 4}, {3, 4}}}, {{{}, {}}}},
       // against b when it has a's shape, else against a fresh target
       .fuzz = [](std::mt19937_64& rng, const Size& sa, const Size& sb) {
         if (sa == sb) return std::optional<FuzzStep>(FuzzStep{[](Pool a, Pool b) { return mse_loss(a, b); }, "mse_loss(a, b)"});
         Tensor t = fuzz_values(rng, sa);
         return std::optional<FuzzStep>(FuzzStep{[t](Pool a, Pool) { return mse_loss(a, t); }, "mse_loss(a, constant)"});
       }},
  };
}

std::vector<OpInfo> views() {
  return {
      // The integral scalars below are written "* 2" for PyTorch: C++ cannot tell 2.0 from 2, and ag
      // treats an integral double like PyTorch treats an int (int64 * 2 stays int64).
      {.name = "view_transpose",  // view needs a layout it can view: 1-D samples only
       .torch = "x[0].view(3, 4).transpose(0, 1).contiguous().view(-1) * 2",
       .fn = [](auto& x) { return x[0].view({3, 4}).transpose(0, 1).contiguous().view({-1}) * 2.0; },
       .samples = {{{{12}}}},
       .floating_only = false},
      {.name = "transpose",
       .torch = "x[0].transpose(0, -1)",
       .fn = [](auto& x) { return x[0].transpose(0, -1); },
       .samples = {{{{2, 3}}}, {{{2, 3, 4}}}, {{{4}}}, {{{}}}, {{{1, 0}}}},
       .floating_only = false,
       .fuzz = unary_step(2,
                          [](std::mt19937_64& rng, const Size& sa) {
                            const int64_t d0 = fuzz_int(rng, 0, static_cast<int>(sa.size()) - 1);
                            const int64_t d1 = fuzz_int(rng, 0, static_cast<int>(sa.size()) - 1);
                            return FuzzStep{[d0, d1](Pool a, Pool) { return a.transpose(d0, d1) * 1.5; },
                                            "a.transpose(" + str(d0) + ", " + str(d1) + ") * 1.5"};
                          })},
      {.name = "permute_reshape",
       .torch = "x[0].permute(2, 0, 1).reshape(4, 6)",
       .fn = [](auto& x) { return x[0].permute({2, 0, 1}).reshape({4, 6}); },
       .samples = {{{{2, 3, 4}}}, {{{1, 6, 4}}}},
       .floating_only = false,
       // a random permutation of the dims
       .fuzz = [](std::mt19937_64& rng, const Size& sa, const Size&) {
         std::vector<int64_t> perm(static_cast<std::size_t>(sa.size()));
         for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
         std::shuffle(perm.begin(), perm.end(), rng);
         return std::optional<FuzzStep>(
             FuzzStep{[perm](Pool a, Pool) { return a.permute(perm) * 1.0; }, "a.permute(" + Size(perm).str() + ") * 1.0"});
       }},
      {.name = "reshape_flatten",
       .torch = "x[0].reshape(-1)",
       .fn = [](auto& x) { return x[0].reshape({-1}); },
       .samples = {{{{2, 3}}}, {{{}}}, {{{0, 3}}}},
       .floating_only = false,
       .fuzz = elementwise_fuzz([](Pool a) { return a.reshape({-1}); }, "reshape_flatten")},
      {.name = "slice_select",
       .torch = "x[0][1:, ::2][0] * 3",
       .fn = [](auto& x) { return x[0].slice(0, 1, std::nullopt).slice(1, std::nullopt, std::nullopt, 2)[0] * 3.0; },
       .samples = {{{{3, 5}}}, {{{2, 1}}}},
       .floating_only = false,
       // drop the first element of a dim of size >= 2
       .fuzz = unary_step(1,
                          [](std::mt19937_64& rng, const Size& sa) -> std::optional<FuzzStep> {
                            const int64_t d = fuzz_int(rng, 0, static_cast<int>(sa.size()) - 1);
                            if (sa[d] < 2) return std::nullopt;
                            return FuzzStep{[d](Pool a, Pool) { return a.slice(d, 1, std::nullopt); }, "a.slice(" + str(d) + ", 1:)"};
                          })},
      {.name = "select",
       .torch = "x[0].select(1, -1)",
       .fn = [](auto& x) { return x[0].select(1, -1); },
       .samples = {{{{2, 3}}}, {{{3, 1, 2}}}, {{{0, 2}}}},
       .floating_only = false,
       .fuzz = unary_step(2,
                          [](std::mt19937_64& rng, const Size& sa) {
                            const int64_t d = fuzz_int(rng, 0, static_cast<int>(sa.size()) - 1);
                            const int64_t i = fuzz_int(rng, 0, static_cast<int>(sa[d]) - 1);
                            return FuzzStep{[d, i](Pool a, Pool) { return a.select(d, i); }, "a.select(" + str(d) + ", " + str(i) + ")"};
                          })},
      {.name = "expand_unsqueeze",
       .torch = "x[0].unsqueeze(1).expand(3, 4, 2) * 1",
       .fn = [](auto& x) { return x[0].unsqueeze(1).expand({3, 4, 2}) * 1.0; },
       .samples = {{{{3, 2}}}, {{{3, 1}}}, {{{1, 2}}}},
       .floating_only = false,
       // a new dim of size 2 or 3 anywhere, 0-dim tensors too
       .fuzz = [](std::mt19937_64& rng, const Size& sa, const Size&) {
         const int64_t d = fuzz_int(rng, 0, static_cast<int>(sa.size()));
         Size s = sa;
         s.vec().insert(s.vec().begin() + d, fuzz_int(rng, 2, 3));
         std::vector<int64_t> target(s.begin(), s.end());
         return std::optional<FuzzStep>(FuzzStep{[d, target](Pool a, Pool) { return a.unsqueeze(d).expand(target); },
                                                 "a.unsqueeze(" + str(d) + ").expand(" + s.str() + ")"});
       }},
      {.name = "squeeze",
       .torch = "x[0].squeeze()",
       .fn = [](auto& x) { return x[0].squeeze(); },
       .samples = {{{{1, 3, 1}}}, {{{2, 3}}}, {{{1}}}, {{{}}}, {{{1, 0}}}},
       .floating_only = false,
       .fuzz = elementwise_fuzz([](Pool a) { return a.squeeze() + 0.5; }, "squeeze_plus_half")},
      {.name = "triu_tril",
       .torch = "x[0].triu(1) + x[0].tril(-1) * 2",
       .fn = [](auto& x) { return triu(x[0], 1) + tril(x[0], -1) * 2.0; },
       .samples = {{{{4, 4}}}, {{{2, 3, 5}}}, {{{3, 1}}}, {{{0, 2}}}},
       .floating_only = false,
       .fuzz = unary_step(2,
                          [](std::mt19937_64& rng, const Size&) {
                            const int64_t k = fuzz_int(rng, -1, 1);
                            const bool upper = fuzz_int(rng, 0, 1);
                            return FuzzStep{[k, upper](Pool a, Pool) { return upper ? triu(a, k) : tril(a, k); },
                                            std::string(upper ? "triu(a, " : "tril(a, ") + str(k) + ")"};
                          })},
      // a float32 round trip quantizes the finite-difference step: golden gradients only
      {.name = "to_float32_and_back",
       .torch = "x[0].float().double() * 1.0",
       .fn = [](auto& x) { return x[0].to(kFloat32).to(kFloat64) * 1.0; },
       .samples = {{{{3}}}, {{{2, 2}}}},
       .floating_only = false,
       .fd_unusable = true},
  };
}

}  // namespace

std::vector<OpInfo> core_ops() {
  std::vector<OpInfo> all;
  for (auto part : {arithmetic, unary, reductions, matmuls, softmaxes, masking_joining_gathering, losses, views})
    for (OpInfo& op : part()) all.push_back(std::move(op));
  return all;
}

}  // namespace optable
