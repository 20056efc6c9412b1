// The reductions, gathers and rearranging ops of issue 13 beyond the op table: errors (bad
// indices, bad dims, dtypes), edge cases against PyTorch 1.13 (tests/golden/reduce_index.json, made
// by tools/golden/make_reduce_index_golden.py: prod with zeros, var/std with too few elements,
// norm at 0, logsumexp of infinities, min's ties, integer results, chunk/split sizes, grad_fn
// names), split's views, overload resolution of var/std, and the fast kernels against their rules.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/autograd.h"
#include "test_util.h"

using namespace ag;
using nlohmann::json;
using testutil::close_mismatches;
using testutil::error_of;

namespace {

const json& golden() {
  static const json j = [] {
    std::ifstream f(std::string(AG_GOLDEN_DIR) + "/reduce_index.json");
    if (!f) throw std::runtime_error("cannot open tests/golden/reduce_index.json");
    return json::parse(f);
  }();
  return j;
}

double value_of(const json& v) {
  if (v.is_string()) {
    const std::string s = v;
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    return s == "inf" ? INFINITY : -INFINITY;
  }
  return v.get<double>();
}

// A golden tensor, in its own dtype.
Tensor from_json(const json& t) {
  std::vector<double> data;
  for (const json& v : t["data"]) data.push_back(value_of(v));
  const std::string dt = t["dtype"];
  const DType dtype = dt == "torch.int64" ? kInt64 : dt == "torch.bool" ? kBool : dt == "torch.float32" ? kFloat32 : kFloat64;
  return from_vector(data, t["shape"].get<std::vector<int64_t>>(), dtype);
}

// Same shape and dtype, values within 1e-12 (float32: 1e-6; NaN where the golden has NaN,
// infinities equal).
void expect_matches(const Tensor& got, const json& want, const std::string& what) {
  SCOPED_TRACE(what);
  const Tensor w = from_json(want);
  ASSERT_EQ(got.shape(), w.shape());
  EXPECT_EQ(got.dtype(), w.dtype());
  const double tol = w.dtype() == kFloat32 ? 1e-6 : 1e-12;
  EXPECT_EQ(close_mismatches<double>(got.to(kFloat64), w.to(kFloat64), tol, tol), 0);
}

Tensor leaf(const json& t) { return from_json(t).requires_grad_(); }

// The gradient of sum(y * w) with respect to x (w = ones if not given).
Tensor grad_of(const Tensor& y, const Tensor& x, const Tensor& w = {}) {
  return grad({sum(y * (w.defined() ? w : ones_like(y)))}, {x})[0];
}

// A float64 leaf of the given shape, uniform in [-2, 2).
Tensor random_leaf(const DimVector& shape) { return (rand(shape, kFloat64) * 4.0 - 2.0).detach().requires_grad_(); }

}  // namespace

// ---------------------------------------------------------------- against PyTorch

TEST(ReduceIndexGolden, ProdGradientAndHessianAreExactWithZeros) {
  for (const char* name : {"one_zero", "two_zeros", "no_zero"}) {
    SCOPED_TRACE(name);
    const json& c = golden()["prod"][name];
    const Tensor x = leaf(c["input"]);
    const Tensor y = prod(x);
    expect_matches(y, c["output"], "output");
    expect_matches(grad_of(y, x), c["grad"], "grad");
    // the Hessian of x0 x1 x2 (PyTorch's own prod Hessian is 0 with two zeros: hessian_torch)
    expect_matches(functional::hessian([](auto& v) { return prod(v[0]); }, {x})[0][0], c["hessian_exact"], "hessian");
  }
  const json& rows = golden()["prod"]["dim_rows"];  // rows with no, one, two and three zeros
  const Tensor x = leaf(rows["input"]), w = from_json(rows["weight"]);
  const Tensor y = prod(x, 1);
  expect_matches(y, rows["output"], "rows output");
  expect_matches(grad_of(y, x, w), rows["grad"], "rows grad");
  expect_matches(functional::hessian([w](auto& v) { return sum(prod(v[0], 1) * w); }, {x})[0][0], rows["hessian_exact"],
                 "rows hessian");
  const json& s = golden()["prod"]["zero_0dim"];
  const Tensor z = leaf(s["input"]);
  expect_matches(grad_of(prod(z), z), s["grad"], "0-dim");
}

TEST(ReduceIndexGolden, VarAndStdWithTooFewElementsAndConstantRows) {
  const json& c = golden()["var_std"];
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> cases = {
      {"var_one_per_row", [](const Tensor& v) { return var(v.narrow(1, 0, 1), 1); }},
      {"var_correction_equals_n", [](const Tensor& v) { return var(v, DimVector{1}, std::optional<int64_t>(2)); }},
      {"var_correction_above_n", [](const Tensor& v) { return var(v, DimVector{1}, std::optional<int64_t>(3)); }},
      {"var_correction_negative", [](const Tensor& v) { return var(v, DimVector{1}, std::optional<int64_t>(-1)); }},
      {"std_one_per_row", [](const Tensor& v) { return ag::std(v.narrow(1, 0, 1), 1); }},
      {"std_constant_row", [](const Tensor& v) { return ag::std(v, 1); }},
  };
  for (const auto& [name, f] : cases) {
    const Tensor x = leaf(c[name]["input"]);
    const Tensor y = f(x);
    expect_matches(y, c[name]["output"], name + " output");
    expect_matches(grad_of(y, x), c[name]["grad"], name + " grad");
  }
}

TEST(ReduceIndexGolden, NormGradientAtZeroForEveryP) {
  for (const auto& [key, c] : golden()["norm"].items()) {
    const double p = value_of(c["p"]);
    const Tensor x = leaf(c["input"]);
    const Tensor y = norm(x, p, {1});
    expect_matches(y, c["output"], "p = " + key + " output");
    if (c["grad"].is_null()) {  // p = 0: no gradient at all, as in PyTorch
      EXPECT_NE(error_of([&] { grad_of(y, x); }).find("appears to not have been used in the graph"), std::string::npos);
      EXPECT_FALSE(grad({sum(norm(x, p, {1}))}, {x}, {}, std::nullopt, false, true)[0].defined());
      continue;
    }
    expect_matches(grad_of(y, x), c["grad"], "p = " + key + " grad");
  }
}

TEST(ReduceIndexGolden, LogsumexpOfInfinitiesAndNaN) {
  const json& c = golden()["logsumexp"];
  const Tensor x = leaf(c["input"]);
  const Tensor y = logsumexp(x, {1});
  expect_matches(y, c["output"], "output");
  expect_matches(grad_of(y, x), c["grad"], "grad");
}

TEST(ReduceIndexGolden, MinSharesTiesAndPicksTheFirstNaN) {
  for (const char* name : {"ties", "nan"}) {
    SCOPED_TRACE(name);
    const json& c = golden()["min"][name];
    const Tensor x = leaf(c["input"]);
    expect_matches(min(x), c["output"], "min");
    expect_matches(grad_of(min(x), x), c["grad"], "min grad");
    const auto [values, indices] = min(x, 0);
    expect_matches(values, c["dim_values"], "min(0) values");
    expect_matches(indices, c["dim_indices"], "min(0) indices");
    expect_matches(grad_of(values, x), c["dim_grad"], "min(0) grad");
  }
}

TEST(ReduceIndexGolden, IntegerInputsGiveWhatPyTorchGives) {
  const json& c = golden()["integer"];
  const json& out = c["out"];
  const Tensor i = from_json(c["input"]), b = from_json(c["bool_input"]);
  ASSERT_EQ(i.dtype(), kInt64);
  ASSERT_EQ(b.dtype(), kBool);
  expect_matches(min(i), out["min"], "min");
  expect_matches(min(i, 1).first, out["min_dim_values"], "min_dim values");
  expect_matches(min(i, 1).second, out["min_dim_indices"], "min_dim indices");
  expect_matches(argmin(i, 0), out["argmin"], "argmin");
  expect_matches(prod(i), out["prod"], "prod");
  expect_matches(prod(i, 1), out["prod_dim"], "prod_dim");
  expect_matches(prod(b), out["prod_bool"], "prod_bool");
  expect_matches(cumsum(i, 1), out["cumsum"], "cumsum");
  expect_matches(cumsum(b, 0), out["cumsum_bool"], "cumsum_bool");
  expect_matches(logsumexp(i, {1}), out["logsumexp"], "logsumexp (float32)");
  expect_matches(gather(i, 1, tensor({{2, 0}, {1, 1}})), out["gather"], "gather");
  expect_matches(scatter_add(i, 1, tensor({{0}, {2}}), tensor({{10}, {20}})), out["scatter_add"], "scatter_add");
  expect_matches(masked_select(i, i > 1.0), out["masked_select"], "masked_select");
  expect_matches(flip(i, {0, 1}), out["flip"], "flip");
  expect_matches(roll(i, 1, 1), out["roll"], "roll");
  expect_matches(repeat(i, {2, 1}), out["repeat"], "repeat");
  expect_matches(flatten(i), out["flatten"], "flatten");
  expect_matches(min(b), out["min_bool"], "min_bool");
}

TEST(ReduceIndexGolden, ChunkAndSplitPartSizesAsPyTorch) {
  for (const json& c : golden()["parts"]["chunk"]) {
    const int64_t n = c["n"], chunks = c["chunks"];
    std::vector<int64_t> sizes;
    for (const Tensor& p : chunk(zeros({n}), chunks)) sizes.push_back(p.numel());
    EXPECT_EQ(sizes, c["sizes"].get<std::vector<int64_t>>()) << "chunk(" << n << " elements, " << chunks << ")";
  }
  for (const json& c : golden()["parts"]["split"]) {
    const int64_t n = c["n"], size = c["split_size"];
    std::vector<int64_t> sizes;
    for (const Tensor& p : split(zeros({n}), size)) sizes.push_back(p.numel());
    EXPECT_EQ(sizes, c["sizes"].get<std::vector<int64_t>>()) << "split(" << n << " elements, " << size << ")";
  }
}

TEST(ReduceIndexGolden, ScatterAddGivesALargerSrcAZeroPaddedGradient) {
  // PyTorch 1.13 computes this forward but fails in backward (its rule returns index's shape)
  const json& c = golden()["scatter_add_larger_src"];
  const Tensor t = leaf(c["input"]), src = leaf(c["src"]), w = from_json(c["weight"]);
  const Tensor y = scatter_add(t, 1, from_json(c["index"]), src);
  expect_matches(y, c["output"], "output");
  const std::vector<Tensor> g = grad({sum(y * w)}, {t, src});
  expect_matches(g[0], c["grad_input"], "grad of input");
  expect_matches(g[1], c["grad_src"], "grad of src");
}

TEST(ReduceIndexGolden, GradFnNamesArePyTorchs) {
  const Tensor x = random_leaf({3, 4}), s = random_leaf({}), e = zeros({0, 3}, kFloat64).requires_grad_();
  const std::vector<std::pair<std::string, Tensor>> ours = {
      {"min", min(x)},
      {"min_dim", min(x, 1).first},
      {"min_0dim", min(s, 0).first},
      {"max_0dim", max(s, 0).first},
      {"prod", prod(x)},
      {"prod_dim", prod(x, 1)},
      {"var", var(x)},
      {"var_dims", var(x, {0, 1}, false)},
      {"var_correction", var(x, DimVector{1}, std::optional<int64_t>(0))},
      {"std", ag::std(x)},
      {"std_dim", ag::std(x, 1)},
      {"logsumexp", logsumexp(x, {1})},
      {"cumsum", cumsum(x, 1)},
      {"norm", norm(x)},
      {"norm_dim", norm(x, 3, {1})},
      {"gather", gather(x, 1, tensor({{0}, {1}, {2}}))},
      {"scatter_add", scatter_add(x, 1, tensor({{0}, {1}, {2}}), x.narrow(1, 0, 1) * 1.0)},
      {"masked_select", masked_select(x, x > 0.0)},
      {"flip", flip(x, {0})},
      {"roll", roll(x, 1, 0)},
      {"roll_flat", roll(x, 1)},
      {"repeat", repeat(x, {2, 1})},
      {"chunk", chunk(x, 2, 1)[1]},
      {"split", split(x, 3, 1)[1]},
      {"split_sizes", split(x, std::vector<int64_t>{1, 3}, 1)[1]},
      {"chunk_empty", chunk(e, 2)[1]},
      {"flatten", flatten(x)},
      {"flatten_0dim", flatten(s)},
      {"unflatten", unflatten(x, 1, {2, 2})},
  };
  ASSERT_EQ(ours.size(), golden()["grad_fn"].size());
  for (const auto& [key, t] : ours) {
    ASSERT_TRUE(t.grad_fn()) << key;
    EXPECT_EQ(t.grad_fn()->name(), golden()["grad_fn"][key].get<std::string>()) << key;
  }
}

// ---------------------------------------------------------------- errors

TEST(ReduceIndexErrors, BadIndicesAreOutOfRangeInSelf) {
  const Tensor x = ones({3, 4});
  EXPECT_EQ(error_of([&] { gather(x, 1, tensor({{4}})); }),
            "[gather] index out of range in self: index 4 for dim 1 of size 4 (shape [3, 4])");
  EXPECT_EQ(error_of([&] { gather(x, 0, tensor({{-1}})); }),
            "[gather] index out of range in self: index -1 for dim 0 of size 3 (shape [3, 4])");
  EXPECT_EQ(error_of([&] { scatter_add(x, 1, tensor({{0, 7}}), ones({1, 2})); }),
            "[scatter_add] index out of range in self: index 7 for dim 1 of size 4 (shape [3, 4])");
  EXPECT_THROW(gather(x, 1, tensor({{4}})), std::out_of_range);
  EXPECT_THROW(scatter_add(x, 0, tensor({{-1}}), ones({1, 1})), std::out_of_range);
  // the index's dtype, rank and sizes
  EXPECT_EQ(error_of([&] { gather(x, 1, tensor({{0.0}})); }), "[gather] expected an int64 index tensor, got torch.float32");
  EXPECT_EQ(error_of([&] { gather(x, 1, tensor({0})); }),
            "[gather] index tensor must have the same number of dimensions as the input: index [1], input [3, 4]");
  EXPECT_EQ(error_of([&] { gather(x, 1, zeros({4, 1}, kInt64)); }),
            "[gather] index [4, 1] must be no larger than input [3, 4] apart from dim 1");
  EXPECT_EQ(error_of([&] { scatter_add(x, 1, zeros({1, 3}, kInt64), ones({1, 2})); }),
            "[scatter_add] index [1, 3] must be no larger than input [3, 4] apart from dim 1 and no larger than src [1, 2]");
  EXPECT_EQ(error_of([&] { scatter_add(x, 1, zeros({1, 1}, kInt64), ones({1, 1}, kFloat64)); }),
            "[scatter_add] expected self.dtype to be equal to src.dtype, got torch.float32 and torch.float64");
  // masked_select: a bool mask that broadcasts
  EXPECT_EQ(error_of([&] { masked_select(x, ones({3, 4}, kInt64)); }), "[masked_select] expected a bool mask, got torch.int64 (use mask.bool_())");
  EXPECT_THROW(masked_select(x, ones({2}, kBool)), std::invalid_argument);
  // in range: the gradient of repeated indices accumulates
  const Tensor v = random_leaf({2, 3});
  const Tensor g = grad_of(gather(v, 1, tensor({{2, 2, 2, 0}, {1, 1, 0, 0}})), v);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{1, 0, 3, 2, 2, 0}));
}

TEST(ReduceIndexErrors, DimsOutOfRangeAndRepeated) {
  const Tensor s = tensor(0.5), x = ones({3, 4});
  // a 0-dim tensor takes dims -1 and 0, as in PyTorch ("Dimension out of range (expected to be in range of [-1, 0], but got 2)")
  EXPECT_EQ(error_of([&] { min(s, 2); }), "[min] dim 2 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { prod(s, 1); }), "[prod] dim 1 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { cumsum(s, -2); }), "[cumsum] dim -2 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { logsumexp(s, {1}); }), "[logsumexp] dim 1 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { flip(s, {1}); }), "[flip] dim 1 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { norm(s, 2, {1}); }), "[norm] dim 1 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { var(s, 1); }), "[var] dim 1 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { flatten(s, 0, 1); }), "[flatten] dim 1 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { gather(s, 1, tensor(0)); }), "[gather] dim 1 out of range for a tensor of shape [] (expected in [-1, 0])");
  EXPECT_EQ(error_of([&] { roll(s, 1, 0); }), "[roll] dimension specified as 0 but tensor has no dimensions");
  EXPECT_EQ(error_of([&] { unflatten(s, 0, {1}); }), "[unflatten] dimension specified as 0 but tensor has no dimensions");
  for (int64_t d : {0, -1}) {  // and these work
    EXPECT_EQ(min(s, d).first.item(), 0.5);
    EXPECT_EQ(argmin(s, d).item(), 0);
    EXPECT_EQ(prod(s, d).item(), 0.5);
    EXPECT_EQ(cumsum(s, d).item(), 0.5);
    EXPECT_EQ(logsumexp(s, {d}).item(), 0.5);
    EXPECT_EQ(flip(s, {d}).item(), 0.5);
  }
  EXPECT_EQ(flatten(s).shape(), Size({1}));
  EXPECT_EQ(roll(s, 3).item(), 0.5);
  // 2-D: dims in [-2, 1]
  EXPECT_EQ(error_of([&] { min(x, 2); }), "[min] dim 2 out of range for a tensor of shape [3, 4] (expected in [-2, 1])");
  EXPECT_THROW(cumsum(x, -3), std::out_of_range);
  EXPECT_THROW(roll(x, 1, 2), std::out_of_range);
  EXPECT_THROW(chunk(x, 2, 2), std::out_of_range);
  EXPECT_THROW(split(x, 2, -3), std::out_of_range);
  EXPECT_THROW(unflatten(x, 2, {1}), std::out_of_range);
  EXPECT_THROW(gather(x, 2, zeros({1, 1}, kInt64)), std::out_of_range);
  // a dim listed twice (also under another name)
  EXPECT_EQ(error_of([&] { flip(x, {0, -2}); }), "[flip] dim 0 appears multiple times in the list of dims");
  EXPECT_EQ(error_of([&] { var(x, {1, 1}); }), "[var] dim 1 appears multiple times in the list of dims");
  EXPECT_EQ(error_of([&] { logsumexp(x, {0, 0}); }), "[logsumexp] dim 0 appears multiple times in the list of dims");
  EXPECT_EQ(error_of([&] { norm(x, 2, {-1, 1}); }), "[norm] dim 1 appears multiple times in the list of dims");
  EXPECT_EQ(error_of([&] { logsumexp(x, {}); }), "[logsumexp] expected at least one dim to reduce, got an empty list (shape [3, 4])");
  // roll over the same dim twice is two rolls, as in PyTorch
  EXPECT_EQ(roll(arange(4), {1, 1}, {0, 0}).to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 0, 1}));
}

TEST(ReduceIndexErrors, DtypesAsPyTorch) {
  const Tensor i = tensor({{1, 2}, {3, 4}}), b = tensor({true, false});
  EXPECT_EQ(error_of([&] { var(i); }), "[var] std and var only support floating point dtypes, got torch.int64 of shape [2, 2]");
  EXPECT_EQ(error_of([&] { ag::std(b); }), "[std] std and var only support floating point dtypes, got torch.bool of shape [2]");
  EXPECT_EQ(error_of([&] { norm(i, 2, {1}); }),
            "[norm] input dtype should be either floating point or complex, got torch.int64 of shape [2, 2]");
  EXPECT_THROW(norm(b), std::invalid_argument);
  // logsumexp computes integers in float32; min, prod, cumsum, gather, flip keep integers
  EXPECT_EQ(logsumexp(i, {1}).dtype(), kFloat32);
  EXPECT_EQ(min(i).dtype(), kInt64);
  EXPECT_EQ(prod(b).dtype(), kInt64);
  EXPECT_EQ(cumsum(b, 0).dtype(), kInt64);
  EXPECT_EQ(gather(b, 0, tensor({1})).dtype(), kBool);
  EXPECT_EQ(flip(b, {0}).to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  // float32 stays float32
  EXPECT_EQ(var(ones({3})).dtype(), kFloat32);
  EXPECT_EQ(cumsum(ones({3}, kFloat64), 0).dtype(), kFloat64);
}

TEST(ReduceIndexErrors, EmptyInputs) {
  const Tensor e = zeros({0, 3});
  EXPECT_EQ(error_of([&] { min(e); }),
            "[min] expected a non-empty tensor: min() of an empty tensor (shape [0, 3]) has no identity; use min(dim) on a non-empty dim");
  EXPECT_EQ(error_of([&] { min(e, 0); }), "[min] cannot reduce over zero-size dim 0 of shape [0, 3]");
  EXPECT_EQ(min(e, 1).first.shape(), Size({0}));
  EXPECT_EQ(prod(e).item(), 1.0);
  EXPECT_EQ(prod(e, 0).to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(norm(e, 2, {0}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(logsumexp(e, {0}).to_vector<float>(), (std::vector<float>(3, -INFINITY)));
  EXPECT_TRUE(std::isnan(var(e).item()));
  EXPECT_EQ(cumsum(e, 0).shape(), Size({0, 3}));
  EXPECT_EQ(repeat(e, {2, 2}).shape(), Size({0, 6}));
  EXPECT_EQ(repeat(ones({2}), {3, 0}).shape(), Size({3, 0}));
}

TEST(ReduceIndexErrors, ChunkSplitRollRepeatFlattenArguments) {
  const Tensor x = ones({3, 4});
  EXPECT_EQ(error_of([&] { chunk(x, 0); }), "[chunk] chunk expects `chunks` to be greater than 0, got: 0");
  EXPECT_EQ(error_of([&] { chunk(tensor(1.0), 2); }), "[chunk] chunk expects at least a 1-dimensional tensor");
  EXPECT_EQ(error_of([&] { split(x, -1, 1); }), "[split] split expects split_size be non-negative, but got split_size=-1");
  EXPECT_EQ(error_of([&] { split(x, 0, 1); }), "[split] split_size can only be 0 if dimension size is 0, but got dimension size of 4");
  EXPECT_EQ(error_of([&] { split(x, std::vector<int64_t>{1, 2}, 1); }),
            "[split] split_with_sizes expects split_sizes to sum exactly to 4 (input tensor's size at dimension 1), but got "
            "split_sizes=[1, 2]");
  EXPECT_EQ(error_of([&] { split(x, std::vector<int64_t>{5, -1}, 1); }),
            "[split] split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[5, -1]");
  EXPECT_EQ(error_of([&] { roll(x, {1, 2}, {0}); }), "[roll] shifts and dimensions must align. shifts: 2, dims:1");
  EXPECT_EQ(error_of([&] { roll(x, {1, 2}); }), "[roll] shifts and dimensions must align. shifts: 2, dims:0");
  EXPECT_EQ(error_of([&] { roll(x, DimVector{}, DimVector{}); }), "[roll] `shifts` required");
  EXPECT_EQ(error_of([&] { repeat(x, {2}); }),
            "[repeat] number of dimensions of repeat dims [2] can not be smaller than number of dimensions of tensor [3, 4]");
  EXPECT_EQ(error_of([&] { repeat(x, {-1, 1}); }), "[repeat] negative repeat -1 in [-1, 1]");
  EXPECT_EQ(error_of([&] { flatten(ones({2, 3, 4}), 2, 1); }), "[flatten] flatten() has invalid args: start_dim cannot come after end_dim");
  EXPECT_EQ(error_of([&] { unflatten(x, 1, {3, 2}); }),
            "[unflatten] provided sizes [3, 2] don't multiply up to the size of dim 1 (4) in the input tensor of shape [3, 4]");
  EXPECT_EQ(error_of([&] { unflatten(x, 1, {}); }), "[unflatten] sizes must be non-empty");
  EXPECT_EQ(error_of([&] { unflatten(x, 1, {-1, -1}); }), "[unflatten] only one dimension can be inferred in sizes [-1, -1]");
  EXPECT_THROW(unflatten(zeros({0, 2}), 0, {0, -1}), std::invalid_argument);
  EXPECT_EQ(unflatten(x, -1, {-1, 2}).shape(), Size({3, 2, 2}));
}

// ---------------------------------------------------------------- views and overloads

TEST(ReduceIndexViews, SplitAndChunkPartsAreViewsOfTheInput) {
  Tensor x = arange(10, kFloat32).view({2, 5});
  std::vector<Tensor> parts = split(x, 2, 1);
  ASSERT_EQ(parts.size(), 3u);
  for (const Tensor& p : parts) EXPECT_TRUE(p.shares_storage(x));
  EXPECT_EQ(parts[2].shape(), Size({2, 1}));
  {
    NoGradGuard g;
    parts[1].fill_(-1.0);  // writes through to x
  }
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, -1, -1, 4, 5, 6, -1, -1, 9}));
  for (const Tensor& p : chunk(x, 2, 0)) EXPECT_TRUE(p.shares_storage(x));
  // each part's gradient lands in its own columns
  const Tensor v = random_leaf({2, 5});
  const std::vector<Tensor> vp = split(v, std::vector<int64_t>{1, 3, 1}, 1);
  sum(vp[0] * 1.0 + 0.0).backward();
  sum(vp[2] * 3.0).backward();
  EXPECT_EQ(v.grad().to_vector<double>(), (std::vector<double>{1, 0, 0, 0, 3, 1, 0, 0, 0, 3}));
  // unflatten is always a view; flatten is a view when reshape is one
  EXPECT_TRUE(unflatten(x.t(), 0, {5, 1}).shares_storage(x));
  EXPECT_TRUE(flatten(x).shares_storage(x));
  EXPECT_FALSE(flatten(x.t()).shares_storage(x));
  EXPECT_TRUE(flatten(x, 1, 1).shares_storage(x));
}

namespace {
template <class T>
concept VarTakesAPlainIntCorrection = requires(T t) { ag::var(t, ag::DimVector{1}, 2); };
template <class T>
concept StdTakesAPlainIntCorrection = requires(T t) { t.std(ag::DimVector{1}, 2); };
}  // namespace

TEST(ReduceIndexViews, VarOverloadsPickTheMeaningLibtorchGives) {
  // var(t, {1}, 2) would silently be var(t, {1}, unbiased=true) in libtorch: here it does not compile
  static_assert(!VarTakesAPlainIntCorrection<Tensor>);
  static_assert(!StdTakesAPlainIntCorrection<Tensor>);
  const Tensor x = arange(6, kFloat64).view({2, 3}) * arange(6, kFloat64).view({2, 3});
  EXPECT_EQ(var(x, 1).shape(), Size({2}));  // an int is a dim (libtorch's var(t, int dim))
  EXPECT_EQ(var(x, {1}).shape(), Size({2}));
  EXPECT_EQ(var(x, true).shape(), Size({}));
  EXPECT_EQ(var(x, false).item(), var(x, std::nullopt, std::optional<int64_t>(0)).item());
  EXPECT_EQ(var(x, {0, 1}, false, true).shape(), Size({1, 1}));
  EXPECT_EQ(var(x, DimVector{}, true).item(), var(x).item());  // an empty list is all dims, as in PyTorch
  EXPECT_EQ(x.var(1).to_vector<double>(), var(x, {1}).to_vector<double>());
  EXPECT_NE(var(x, DimVector{1}, std::optional<int64_t>(2)).to_vector<double>(), var(x, 1).to_vector<double>());
  EXPECT_EQ(x.std({1}, false).to_vector<double>(), ag::std(x, DimVector{1}, std::optional<int64_t>(0)).to_vector<double>());
}

// ---------------------------------------------------------------- fast kernels

// The gradient of sum(y * w) through the fast kernel (no graph recorded) and through the rule in ag
// ops (recorded with create_graph; w requires grad, so the incoming gradient does too), which must
// agree to rounding.
void expect_fast_equals_rule(const std::function<Tensor(const Tensor&)>& f, const Tensor& x0, const std::string& what) {
  SCOPED_TRACE(what);
  const Tensor x = x0.detach().requires_grad_();
  const Tensor y = f(x);
  const Tensor w = rand(y.shape().vec(), kFloat64).requires_grad_();
  const Tensor fast = grad({sum(y * w)}, {x}, {}, true, false)[0];
  const Tensor rule = grad({sum(y * w)}, {x}, {}, true, true)[0];
  ASSERT_TRUE(rule.requires_grad());  // the rule ran and recorded its graph
  EXPECT_EQ(close_mismatches<double>(fast.detach(), rule.detach(), 1e-12, 1e-12), 0);
}

TEST(ReduceIndexFastKernels, EqualTheRulesTheyStandInFor) {
  manual_seed(3);
  const Tensor zeros_in = tensor({{2.0, 0.0, 3.0, 1.5}, {1.0, 2.0, -3.0, 0.5}, {0.0, 0.0, 1.0, 2.0}, {0.0, 0.0, 0.0, 4.0}}, kFloat64);
  const Tensor no_zeros = rand({3, 4, 2}, kFloat64) + 0.5;
  for (const Tensor& x : {zeros_in, no_zeros}) {
    expect_fast_equals_rule([](const Tensor& v) { return prod(v); }, x, "prod");
    expect_fast_equals_rule([](const Tensor& v) { return prod(v, 1); }, x, "prod(1)");
    expect_fast_equals_rule([](const Tensor& v) { return prod(v, 0, true); }, x, "prod(0, keepdim)");
    expect_fast_equals_rule([](const Tensor& v) { return prod(v.transpose(0, 1), -1); }, x, "prod of a strided input");
    expect_fast_equals_rule([](const Tensor& v) { return min(v, 1).first; }, x, "min(1)");
    expect_fast_equals_rule([](const Tensor& v) { return max(v, 0, true).first; }, x, "max(0, keepdim)");
    expect_fast_equals_rule([](const Tensor& v) { return masked_select(v, v > 1.0); }, x, "masked_select");
  }
}
