// The op table's reduce_index group (see op_table.h): the reductions (min, prod, var, std,
// logsumexp, cumsum, norm), the element-wise gathers and scatters (gather, scatter_add,
// masked_select) and the rearranging ops (flip, roll, repeat, chunk, split, flatten, unflatten),
// with the fuzz steps the random-graph fuzzer draws.
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "op_table.h"

namespace optable {

namespace {

using namespace ag;

using Pool = const Tensor&;
using Rng = std::mt19937_64;

int pick(Rng& rng, int64_t lo, int64_t hi) {  // uniform in [lo, hi]
  return std::uniform_int_distribution<int>(static_cast<int>(lo), static_cast<int>(hi))(rng);
}

// A fresh float64 constant uniform in [-1.5, 1.5): added to a pool tensor, it breaks the ties
// (copies, zeros from relu) that make min, norm and std non-smooth.
Tensor noise(Rng& rng, const Size& shape) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  for (double& e : v) e = u(rng);
  return from_vector(v, shape.vec(), kFloat64);
}

// A random int64 index of `shape` with values in [0, n).
Tensor random_index(Rng& rng, const Size& shape, int64_t n) {
  std::vector<int64_t> v(static_cast<std::size_t>(shape.numel()));
  for (int64_t& e : v) e = pick(rng, 0, n - 1);
  return from_vector(v, shape.vec());
}

std::string str(int64_t v) { return std::to_string(v); }

// A step over `a` alone, on tensors of at least min_dim dims and one element; `make` gets a random
// dim of a (0 if a is 0-dim) and may decline (nullopt).
Fuzz dim_step(int64_t min_dim, std::function<std::optional<FuzzStep>(Rng&, const Size&, int64_t)> make) {
  return [min_dim, make = std::move(make)](Rng& rng, const Size& sa, const Size&) -> std::optional<FuzzStep> {
    if (sa.size() < min_dim || sa.numel() == 0) return std::nullopt;
    return make(rng, sa, sa.size() == 0 ? 0 : pick(rng, 0, sa.size() - 1));
  };
}

// A reduction over a random dim of `a + noise` (no ties), optionally keeping the dim.
Fuzz untied_dim_step(std::function<Tensor(const Tensor&, int64_t, bool)> f, std::string name, int64_t min_size = 1) {
  return dim_step(1, [f = std::move(f), name = std::move(name), min_size](Rng& rng, const Size& sa, int64_t d) -> std::optional<FuzzStep> {
    if (sa[d] < min_size) return std::nullopt;
    const bool keep = pick(rng, 0, 1);
    const Tensor c = noise(rng, sa);
    return FuzzStep{[f, c, d, keep](Pool a, Pool) { return f(a + c, d, keep); },
                    name + "(a + noise, " + str(d) + (keep ? ", keepdim)" : ")")};
  });
}

std::vector<OpInfo> min_prod() {
  return {
      // min: random inputs have no ties; the fuzz steps add noise to break the pool's ties
      {.name = "min_all",
       .torch = "x[0].min()",
       .fn = [](auto& x) { return min(x[0]); },
       .samples = {{{{3, 4}}}, {{{}}}, {{{1, 1}}}},
       .floating_only = false,
       .fuzz = [](Rng& rng, const Size& sa, const Size&) -> std::optional<FuzzStep> {
         if (sa.numel() == 0) return std::nullopt;
         const Tensor c = noise(rng, sa);
         return FuzzStep{[c](Pool a, Pool) { return min(a + c); }, "min(a + noise)"};
       }},
      {.name = "min_dim",
       .torch = "x[0].min(1)[0]",
       .fn = [](auto& x) { return min(x[0], 1).first; },
       .samples = {{{{2, 5, 3}}}, {{{4, 1}}}, {{{0, 3}}}, {{{2, 3, 0}}}},
       .floating_only = false,
       .fuzz = untied_dim_step([](Pool a, int64_t d, bool k) { return min(a, d, k).first; }, "min")},
      {.name = "min_dim_keepdim",
       .torch = "x[0].min(-1, keepdim=True)[0]",
       .fn = [](auto& x) { return min(x[0], -1, true).first; },
       .samples = {{{{4, 3}}}, {{{1}}}, {{{}}}, {{{0, 2}}}},
       .floating_only = false},
      {.name = "argmin",
       .torch = "x[0].argmin(0)",
       .fn = [](auto& x) { return argmin(x[0], 0); },
       .samples = {{{{4, 3}}}, {{{5}}}, {{{}}}, {{{3, 0}}}},
       .order = 0,
       .floating_only = false},
      {.name = "prod_all",
       .torch = "x[0].prod()",
       .fn = [](auto& x) { return prod(x[0]); },
       .samples = {{{{2, 3}}}, {{{}}}, {{{1, 1}}}, {{{0, 3}}}},
       .floating_only = false,
       .fuzz = [](Rng&, const Size& sa, const Size&) -> std::optional<FuzzStep> {
         if (sa.numel() > 8) return std::nullopt;  // a product of many values overflows or vanishes
         return FuzzStep{[](Pool a, Pool) { return prod(a); }, "prod(a)"};
       }},
      {.name = "prod_dim",
       .torch = "x[0].prod(1)",
       .fn = [](auto& x) { return prod(x[0], 1); },
       .samples = {{{{2, 4, 3}}}, {{{3, 1}}}, {{{2, 0}}}, {{{0, 3}}}},
       .floating_only = false,
       .fuzz = dim_step(1, [](Rng& rng, const Size& sa, int64_t d) -> std::optional<FuzzStep> {
         if (sa[d] > 5) return std::nullopt;
         const bool keep = pick(rng, 0, 1);
         return FuzzStep{[d, keep](Pool a, Pool) { return prod(a, d, keep); }, "prod(a, " + str(d) + (keep ? ", keepdim)" : ")")};
       })},
      {.name = "prod_dim_keepdim",
       .torch = "x[0].prod(0, keepdim=True)",
       .fn = [](auto& x) { return prod(x[0], 0, true); },
       .samples = {{{{3, 2}}}, {{{}}}, {{{4}}}},
       .floating_only = false},
  };
}

std::vector<OpInfo> moments() {
  return {
      {.name = "var_all",
       .torch = "x[0].var()",
       .fn = [](auto& x) { return var(x[0]); },
       .samples = {{{{3, 4}}}, {{{5}}}, {{{2, 1}}}}},
      {.name = "var_dim",
       .torch = "x[0].var(1)",
       .fn = [](auto& x) { return var(x[0], 1); },
       .samples = {{{{2, 5, 3}}}, {{{4, 2}}}, {{{0, 3}}}},
       .fuzz = untied_dim_step([](Pool a, int64_t d, bool k) { return var(a, {d}, true, k); }, "var", 2)},
      {.name = "var_dims_biased_keepdim",
       .torch = "x[0].var([0, 2], unbiased=False, keepdim=True)",
       .fn = [](auto& x) { return var(x[0], {0, 2}, false, true); },
       .samples = {{{{2, 3, 4}}}, {{{1, 2, 3}}}, {{{2, 0, 3}}}}},
      {.name = "var_correction",
       .torch = "torch.var(x[0], dim=-1, correction=2)",
       .fn = [](auto& x) { return var(x[0], DimVector{-1}, std::optional<int64_t>(2)); },
       .samples = {{{{3, 5}}}, {{{4}}}}},
      {.name = "var_correction_all",
       .torch = "torch.var(x[0], dim=None, correction=0)",
       .fn = [](auto& x) { return var(x[0], std::nullopt, std::optional<int64_t>(0)); },
       .samples = {{{{3, 4}}}, {{{}}}, {{{1}}}}},
      {.name = "std_all",
       .torch = "x[0].std()",
       .fn = [](auto& x) { return ag::std(x[0]); },
       .samples = {{{{3, 4}}}, {{{5}}}},
       .fuzz = [](Rng& rng, const Size& sa, const Size&) -> std::optional<FuzzStep> {
         if (sa.numel() < 2) return std::nullopt;
         const Tensor c = noise(rng, sa);
         return FuzzStep{[c](Pool a, Pool) { return ag::std(a + c); }, "std(a + noise)"};
       }},
      {.name = "std_dim",
       .torch = "x[0].std(0, unbiased=False)",
       .fn = [](auto& x) { return ag::std(x[0], {0}, false); },
       .samples = {{{{4, 3}}}, {{{3}}}, {{{2, 0}}}},
       .fuzz = untied_dim_step([](Pool a, int64_t d, bool k) { return ag::std(a, {d}, true, k); }, "std", 2)},
      {.name = "std_correction_keepdim",
       .torch = "torch.std(x[0], dim=[1, 2], correction=3, keepdim=True)",
       .fn = [](auto& x) { return ag::std(x[0], DimVector{1, 2}, std::optional<int64_t>(3), true); },
       .samples = {{{{2, 3, 2}}}, {{{1, 4, 1}}}}},
      {.name = "logsumexp_dim",
       .torch = "torch.logsumexp(x[0], 1)",
       .fn = [](auto& x) { return logsumexp(x[0], {1}); },
       .samples = {{{{2, 5, 3}}}, {{{4, 1}}}, {{{3, 0}}}, {{{0, 2}}}},
       .floating_only = false,  // integers are computed in float32
       .fuzz = dim_step(1, [](Rng& rng, const Size&, int64_t d) {
         const bool keep = pick(rng, 0, 1);
         return std::optional<FuzzStep>(FuzzStep{[d, keep](Pool a, Pool) { return logsumexp(a, {d}, keep); },
                                                 "logsumexp(a, " + str(d) + (keep ? ", keepdim)" : ")")});
       })},
      {.name = "logsumexp_dims_keepdim",
       .torch = "torch.logsumexp(x[0], [0, -1], keepdim=True)",
       .fn = [](auto& x) { return logsumexp(x[0], {0, -1}, true); },
       .samples = {{{{3, 2, 4}}}, {{{1, 1}}}},
       .floating_only = false},
      {.name = "logsumexp_0dim",
       .torch = "torch.logsumexp(x[0], 0)",
       .fn = [](auto& x) { return logsumexp(x[0], {0}); },
       .samples = {{{{}}}, {{{5}}}},
       .floating_only = false},
      {.name = "cumsum",
       .torch = "torch.cumsum(x[0], 1)",
       .fn = [](auto& x) { return cumsum(x[0], 1); },
       .samples = {{{{3, 4}}}, {{{2, 1, 3}}}, {{{0, 3}}}, {{{2, 0}}}},
       .floating_only = false,
       .fuzz = dim_step(1, [](Rng&, const Size&, int64_t d) {
         return std::optional<FuzzStep>(FuzzStep{[d](Pool a, Pool) { return cumsum(a, d); }, "cumsum(a, " + str(d) + ")"});
       })},
      {.name = "cumsum_last",
       .torch = "torch.cumsum(x[0], -1)",
       .fn = [](auto& x) { return cumsum(x[0], -1); },
       .samples = {{{{}}}, {{{6}}}, {{{2, 3}}}},
       .floating_only = false},
  };
}

std::vector<OpInfo> norms() {
  // |x| and the p-norm have a kink at 0: random inputs are not within finite-difference reach of it
  return {
      {.name = "norm_2",
       .torch = "x[0].norm()",
       .fn = [](auto& x) { return norm(x[0]); },
       .samples = {{{{3, 4}}}, {{{}}}, {{{1}}}, {{{0, 3}}}},
       .fuzz = [](Rng& rng, const Size& sa, const Size&) -> std::optional<FuzzStep> {
         const Tensor c = noise(rng, sa);
         return FuzzStep{[c](Pool a, Pool) { return norm(a + c); }, "norm(a + noise)"};
       }},
      {.name = "norm_3",
       .torch = "x[0].norm(3)",
       .fn = [](auto& x) { return norm(x[0], 3); },
       .samples = {{{{3, 4}}}, {{{}}}}},
      {.name = "norm_1_dim",
       .torch = "x[0].norm(1, [1])",
       .fn = [](auto& x) { return norm(x[0], 1, {1}); },
       .samples = {{{{2, 5, 3}}}, {{{4, 1}}}, {{{0, 3}}}, {{{3, 0}}}},
       .fuzz = untied_dim_step([](Pool a, int64_t d, bool k) { return norm(a, 1, {d}, k); }, "norm_1")},
      {.name = "norm_2_dims_keepdim",
       .torch = "x[0].norm(2, [0, 2], keepdim=True)",
       .fn = [](auto& x) { return norm(x[0], 2, {0, 2}, true); },
       .samples = {{{{2, 3, 4}}}, {{{1, 2, 1}}}},
       .fuzz = untied_dim_step([](Pool a, int64_t d, bool k) { return norm(a, 2, {d}, k); }, "norm_2")},
      {.name = "norm_1_5_dim",
       .torch = "x[0].norm(1.5, [-1])",
       .fn = [](auto& x) { return norm(x[0], 1.5, {-1}); },
       .samples = {{{{3, 4}}}, {{{5}}}}},
      {.name = "norm_0_5_dim",
       .torch = "x[0].norm(0.5, [0])",
       .fn = [](auto& x) { return norm(x[0], 0.5, {0}); },
       .samples = {{{{4, 3}}}, {{{}}}}},
      {.name = "norm_inf_dim",
       .torch = "x[0].norm(float('inf'), [1])",
       .fn = [](auto& x) { return norm(x[0], INFINITY, {1}); },
       .samples = {{{{3, 4}}}, {{{2, 1}}}},
       .fuzz = untied_dim_step([](Pool a, int64_t d, bool k) { return norm(a, INFINITY, {d}, k); }, "norm_inf")},
      {.name = "norm_neg_inf",
       .torch = "x[0].norm(float('-inf'))",
       .fn = [](auto& x) { return norm(x[0], -INFINITY); },
       .samples = {{{{3, 4}}}, {{{}}}}},
  };
}

std::vector<OpInfo> gathers() {
  return {
      {.name = "gather_dim1",
       .torch = "torch.gather(x[0], 1, torch.tensor([[0, 0], [1, 0], [3, 2]]))",
       .fn = [](auto& x) { return gather(x[0], 1, tensor({{0, 0}, {1, 0}, {3, 2}})); },
       .samples = {{{{3, 4}}}, {{{4, 5}}}},
       .floating_only = false,
       .fuzz = dim_step(1, [](Rng& rng, const Size& sa, int64_t d) {
         Size is = sa;  // index: any size along d, at most a's elsewhere
         for (int64_t i = 0; i < is.size(); ++i) is[i] = i == d ? pick(rng, 1, 4) : pick(rng, 1, sa[i]);
         const Tensor index = random_index(rng, is, sa[d]);
         return std::optional<FuzzStep>(FuzzStep{[d, index](Pool a, Pool) { return gather(a, d, index); },
                                                 "gather(a, " + str(d) + ", " + repr(index) + ")"});
       })},
      {.name = "gather_dim0_3d",
       .torch = "torch.gather(x[0], 0, torch.tensor([[[1], [0]], [[1], [1]], [[0], [1]]]))",
       .fn = [](auto& x) { return gather(x[0], 0, tensor({{{1}, {0}}, {{1}, {1}}, {{0}, {1}}})); },
       .samples = {{{{2, 3, 2}}}, {{{2, 2, 1}}}},
       .floating_only = false},
      {.name = "gather_0dim",
       .torch = "torch.gather(x[0], 0, torch.tensor(0))",
       .fn = [](auto& x) { return gather(x[0], 0, tensor(0)); },
       .samples = {{{{}}}, {{{3}}}},
       .floating_only = false},
      {.name = "gather_empty",
       .torch = "torch.gather(x[0], 1, torch.zeros(0, 2, dtype=torch.long))",
       .fn = [](auto& x) { return gather(x[0], 1, zeros({0, 2}, kInt64)); },
       .samples = {{{{3, 4}}}, {{{0, 1}}}},
       .floating_only = false},
      {.name = "scatter_add_dim1",
       .torch = "torch.scatter_add(x[0], 1, torch.tensor([[0, 1], [2, 0], [1, 1]]), x[1])",
       .fn = [](auto& x) { return scatter_add(x[0], 1, tensor({{0, 1}, {2, 0}, {1, 1}}), x[1]); },
       .samples = {{{{3, 4}, {3, 2}}}, {{{4, 3}, {3, 2}}}},
       .floating_only = false,
       // the pool tensor scattered into a fresh constant of its shape, or into b if it fits
       .fuzz = dim_step(1, [](Rng& rng, const Size& sa, int64_t d) {
         const Tensor index = random_index(rng, sa, sa[d]);
         return std::optional<FuzzStep>(FuzzStep{[d, index](Pool a, Pool b) {
                                                   return scatter_add(b.shape() == a.shape() ? b : a * 0.5, d, index, a);
                                                 },
                                                 "scatter_add(b or a * 0.5, " + str(d) + ", " + repr(index) + ", a)"});
       })},
      {.name = "scatter_add_dim0_repeats",
       .torch = "torch.scatter_add(x[0], 0, torch.tensor([[1, 1, 1], [1, 0, 1]]), x[1])",
       .fn = [](auto& x) { return scatter_add(x[0], 0, tensor({{1, 1, 1}, {1, 0, 1}}), x[1]); },
       .samples = {{{{2, 3}, {2, 3}}}, {{{3, 4}, {2, 3}}}},
       .floating_only = false},
      {.name = "scatter_add_0dim",
       .torch = "torch.scatter_add(x[0], 0, torch.tensor(0), x[1])",
       .fn = [](auto& x) { return scatter_add(x[0], 0, tensor(0), x[1]); },
       .samples = {{{{}, {}}}},
       .floating_only = false},
      {.name = "masked_select",
       .torch = "torch.masked_select(x[0], torch.tensor([[True, False, True, True], [False, False, True, False], "
                "[True, True, True, False]]))",
       .fn = [](auto& x) {
         return masked_select(x[0], tensor({{true, false, true, true}, {false, false, true, false}, {true, true, true, false}}));
       },
       .samples = {{{{3, 4}}}, {{{4}}}, {{{1, 4}}}, {{{2, 3, 4}}}},
       .floating_only = false,
       .fuzz = [](Rng& rng, const Size& sa, const Size&) -> std::optional<FuzzStep> {
         std::vector<int64_t> bits(static_cast<std::size_t>(sa.numel()));
         for (int64_t& e : bits) e = pick(rng, 0, 1);
         const Tensor mask = from_vector(bits, sa.vec()).bool_();
         return FuzzStep{[mask](Pool a, Pool) { return masked_select(a, mask); }, "masked_select(a, " + repr(mask) + ")"};
       }},
      {.name = "masked_select_broadcast",
       .torch = "torch.masked_select(x[0], torch.tensor([[True], [False], [True]]))",
       .fn = [](auto& x) { return masked_select(x[0], tensor({{true}, {false}, {true}})); },
       .samples = {{{{3, 4}}}, {{{2}}}, {{{}}}, {{{0}}}},
       .floating_only = false},
  };
}

std::vector<OpInfo> rearranging() {
  return {
      {.name = "flip",
       .torch = "torch.flip(x[0], [0, 2])",
       .fn = [](auto& x) { return flip(x[0], {0, 2}); },
       .samples = {{{{2, 3, 4}}}, {{{1, 2, 1}}}, {{{2, 0, 3}}}},
       .floating_only = false,
       .fuzz = [](Rng& rng, const Size& sa, const Size&) -> std::optional<FuzzStep> {
         DimVector dims;
         for (int64_t d = 0; d < sa.size(); ++d)
           if (pick(rng, 0, 1)) dims.push_back(d);
         return FuzzStep{[dims](Pool a, Pool) { return flip(a, dims); }, "flip(a, " + Size(dims).str() + ")"};
       }},
      {.name = "flip_last",
       .torch = "torch.flip(x[0], [-1])",
       .fn = [](auto& x) { return flip(x[0], {-1}); },
       .samples = {{{{3, 4}}}, {{{5}}}, {{{}}}, {{{0, 3}}}},
       .floating_only = false},
      {.name = "roll_dim",
       .torch = "torch.roll(x[0], 1, 0)",
       .fn = [](auto& x) { return roll(x[0], 1, 0); },
       .samples = {{{{3, 4}}}, {{{5}}}, {{{0, 2}}}},
       .floating_only = false,
       .fuzz = dim_step(1, [](Rng& rng, const Size&, int64_t d) {
         const int64_t s = pick(rng, -5, 5);
         return std::optional<FuzzStep>(FuzzStep{[s, d](Pool a, Pool) { return roll(a, s, d); },
                                                 "roll(a, " + str(s) + ", " + str(d) + ")"});
       })},
      {.name = "roll_dims",
       .torch = "torch.roll(x[0], [2, -1], [1, 0])",
       .fn = [](auto& x) { return roll(x[0], {2, -1}, {1, 0}); },
       .samples = {{{{3, 4}}}, {{{2, 3, 2}}}},
       .floating_only = false},
      {.name = "roll_flat",
       .torch = "torch.roll(x[0], 5)",
       .fn = [](auto& x) { return roll(x[0], 5); },
       .samples = {{{{3, 4}}}, {{{}}}, {{{2, 0}}}},
       .floating_only = false,
       .fuzz = [](Rng& rng, const Size&, const Size&) -> std::optional<FuzzStep> {
         const int64_t s = pick(rng, -7, 7);
         return FuzzStep{[s](Pool a, Pool) { return roll(a, s); }, "roll(a, " + str(s) + ")"};
       }},
      {.name = "repeat",
       .torch = "x[0].repeat(2, 1, 3)",
       .fn = [](auto& x) { return repeat(x[0], {2, 1, 3}); },
       .samples = {{{{2, 3}}}, {{{1, 2, 1}}}, {{{}}}, {{{0, 2}}}},
       .floating_only = false,
       .fuzz = [](Rng& rng, const Size& sa, const Size&) -> std::optional<FuzzStep> {
         if (sa.numel() > 12) return std::nullopt;
         DimVector reps;
         for (int64_t d = 0; d < sa.size() + pick(rng, 0, 1); ++d) reps.push_back(pick(rng, 1, 2));
         return FuzzStep{[reps](Pool a, Pool) { return repeat(a, reps); }, "repeat(a, " + Size(reps).str() + ")"};
       }},
      {.name = "chunk_last_part",
       .torch = "torch.chunk(x[0], 3, 1)[-1]",
       .fn = [](auto& x) { return chunk(x[0], 3, 1).back(); },
       .samples = {{{{2, 5}}}, {{{2, 7, 1}}}, {{{3, 1}}}},
       .floating_only = false},
      {.name = "chunk_all_parts",
       .torch = "sum(p.sum() * (i + 1) for i, p in enumerate(torch.chunk(x[0], 4)))",
       .fn = [](auto& x) {
         Tensor s = zeros({}, x[0].dtype());
         const std::vector<Tensor> parts = chunk(x[0], 4);
         for (std::size_t i = 0; i < parts.size(); ++i) s = s + sum(parts[i]) * static_cast<double>(i + 1);
         return s;
       },
       .samples = {{{{6, 2}}}, {{{3}}}, {{{0, 2}}}},
       .floating_only = false},
      {.name = "split_size",
       .torch = "torch.split(x[0], 2, -1)[1]",
       .fn = [](auto& x) { return split(x[0], 2, -1)[1]; },
       .samples = {{{{3, 5}}}, {{{4}}}},
       .floating_only = false,
       .fuzz = dim_step(1, [](Rng& rng, const Size& sa, int64_t d) {
         const int64_t size = pick(rng, 1, sa[d]), parts = (sa[d] + size - 1) / size, k = pick(rng, 0, parts - 1);
         return std::optional<FuzzStep>(FuzzStep{[size, d, k](Pool a, Pool) { return split(a, size, d)[static_cast<std::size_t>(k)]; },
                                                 "split(a, " + str(size) + ", " + str(d) + ")[" + str(k) + "]"});
       })},
      {.name = "split_sizes",
       .torch = "torch.split(x[0], [1, 0, 3], 0)[2]",
       .fn = [](auto& x) { return split(x[0], std::vector<int64_t>{1, 0, 3}, 0)[2]; },
       .samples = {{{{4, 2}}}, {{{4}}}},
       .floating_only = false},
      {.name = "flatten",
       .torch = "torch.flatten(x[0], 1)",
       .fn = [](auto& x) { return flatten(x[0], 1); },
       .samples = {{{{2, 3, 4}}}, {{{2, 0, 3}}}, {{{3, 1}}}},
       .floating_only = false,
       .fuzz = [](Rng& rng, const Size& sa, const Size&) -> std::optional<FuzzStep> {
         const int64_t n = std::max<int64_t>(sa.size(), 1), s = pick(rng, 0, n - 1), e = pick(rng, s, n - 1);
         return FuzzStep{[s, e](Pool a, Pool) { return flatten(a, s, e); }, "flatten(a, " + str(s) + ", " + str(e) + ")"};
       }},
      {.name = "flatten_all",
       .torch = "x[0].flatten()",
       .fn = [](auto& x) { return flatten(x[0]); },
       .samples = {{{{2, 3}}}, {{{}}}, {{{0, 2}}}},
       .floating_only = false},
      {.name = "unflatten",
       .torch = "x[0].unflatten(1, (2, -1))",
       .fn = [](auto& x) { return unflatten(x[0], 1, {2, -1}); },
       .samples = {{{{3, 4}}}, {{{2, 6, 1}}}, {{{0, 4}}}},
       .floating_only = false,
       .fuzz = dim_step(1, [](Rng& rng, const Size& sa, int64_t d) {
         const DimVector sizes = sa[d] % 2 == 0 ? DimVector{2, -1} : pick(rng, 0, 1) ? DimVector{1, sa[d]} : DimVector{sa[d], 1};
         return std::optional<FuzzStep>(FuzzStep{[d, sizes](Pool a, Pool) { return unflatten(a, d, sizes); },
                                                 "unflatten(a, " + str(d) + ", " + Size(sizes).str() + ")"});
       })},
  };
}

}  // namespace

std::vector<OpInfo> reduce_index_ops() {
  std::vector<OpInfo> all;
  for (auto group : {min_prod, moments, norms, gathers, rearranging})
    for (OpInfo& op : group()) all.push_back(std::move(op));
  return all;
}

}  // namespace optable
