// Every op of the op table (tests/op_table.h), every sample, checked the same ways: float64 values
// and gradients against PyTorch 1.13 (tests/golden/op_table.txt, made by
// tools/golden/make_op_golden.py from the table), float32 against the float64 golden, strided
// inputs against contiguous ones, gradcheck (also with an input reused on a second path),
// gradgradcheck on contiguous and strided inputs, the fast backward kernels against the rules in ag
// ops, ops without a gradient, and int64 inputs (refused, or computed with PyTorch's dtype).
// A failure names the entry and the sample: "sin sample 2 (inputs [0, 3])".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "golden_io.h"
#include "op_table.h"
#include "test_util.h"

using namespace ag;
using optable::OpInfo;

namespace {

// One case of the golden file: an entry's sample as PyTorch computed it.
struct Golden {
  std::string dtype, f32_dtype, int_dtype;  // the output's dtype for float64, float32 and int64 inputs
  std::string grad_fn;                      // the output's grad_fn name, or "none"
  bool requires_grad = false;
  std::vector<golden::Data> inputs;
  golden::Data output, weight;
  std::vector<std::optional<golden::Data>> grads;  // nullopt: PyTorch left the gradient None
  std::optional<golden::Data> int_output;
};

using GoldenMap = std::map<std::pair<std::string, int>, Golden>;

const GoldenMap& goldens() {
  static const GoldenMap cases = [] {
    GoldenMap m;
    auto f = golden::open("op_table.txt");
    std::string line;
    while (std::getline(f, line)) {
      std::istringstream head(line);
      std::string kw, name, rg;
      int sample = 0, n = 0;
      Golden g;
      head >> kw >> name >> sample >> n >> g.dtype >> rg >> g.f32_dtype >> g.int_dtype >> g.grad_fn;
      if (kw != "case" || !head) throw std::runtime_error("op_table.txt: malformed case line: " + line);
      g.requires_grad = rg == "1";
      for (int i = 0; i < n; ++i) g.inputs.push_back(golden::parse(golden::expect_keyword(f, "input")));
      g.output = golden::parse(golden::expect_keyword(f, "output"));
      g.weight = golden::parse(golden::expect_keyword(f, "weight"));
      if (g.requires_grad)
        for (int i = 0; i < n; ++i) {
          const std::string rest = golden::expect_keyword(f, "grad");
          g.grads.push_back(rest == "none" ? std::nullopt : std::optional(golden::parse(rest)));
        }
      if (g.int_dtype != "error") g.int_output = golden::parse(golden::expect_keyword(f, "int_output"));
      m[{name, sample}] = std::move(g);
    }
    return m;
  }();
  return cases;
}

// "sin sample 2 (inputs [0, 3])"
std::string where(const OpInfo& op, std::size_t i) {
  std::string s = op.name + " sample " + std::to_string(i) + " (inputs";
  for (const auto& shape : op.samples[i].shapes) s += " " + Size(shape).str();
  return s + ")";
}

// Calls f(op, sample index, golden) for every sample that has golden data (the coverage test
// reports the others).
template <class F>
void for_each_case(F f) {
  for (const OpInfo& op : optable::op_table())
    for (std::size_t i = 0; i < op.samples.size(); ++i) {
      auto it = goldens().find({op.name, static_cast<int>(i)});
      if (it == goldens().end()) continue;
      SCOPED_TRACE(where(op, i));
      f(op, i, it->second);
    }
}

std::vector<Tensor> leaves(const Golden& g, DType dt = kFloat64) {
  std::vector<Tensor> ins;
  for (const auto& d : g.inputs) ins.push_back(d.make(dt).requires_grad_());
  return ins;
}

// got against want: shape, inf and NaN at the same places, |got - want| <= atol + rtol |want|
// elsewhere; prints the worst element.
void expect_close(const Tensor& got, const golden::Data& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(std::vector<int64_t>(got.shape().begin(), got.shape().end()), want.shape) << what << ": shape";
  const std::vector<double> g = got.to_vector<double>();
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double w = want.values[i];
    if (!std::isfinite(w) || !std::isfinite(g[i])) {
      EXPECT_TRUE(std::isnan(w) ? std::isnan(g[i]) : g[i] == w) << what << ": element " << i << " is " << g[i] << ", PyTorch's " << w;
      continue;
    }
    const double e = std::abs(g[i] - w) / (atol + rtol * std::abs(w));
    if (e > worst) worst = e, at = i;
  }
  EXPECT_LE(worst, 1.0) << what << ": worst element " << at << " is " << g[at] << ", want " << want.values[at] << " (diff "
                        << std::abs(g[at] - want.values[at]) << ")";
}

int64_t nonzeros(const Tensor& t) {
  const std::vector<double> v = t.to_vector<double>();
  return std::count_if(v.begin(), v.end(), [](double x) { return x != 0; });
}

golden::Data data_of(const Tensor& t) { return {std::vector<int64_t>(t.shape().begin(), t.shape().end()), t.to_vector<double>()}; }

// sum(out * w).backward() for w of out's shape, in out's dtype
void backward_weighted(const Tensor& out, const golden::Data& w) { sum(out * w.make(out.dtype())).backward(); }

// ---- layouts: the same values in memory that is not row-major

// dims reversed in memory (2-D and up), every other element of a buffer (1-D)
Tensor transposed_leaf(const Tensor& x) { return testutil::strided_leaf(x); }

// every other element along the last dim of size > 1 (the last dim if none)
Tensor sliced_leaf(const Tensor& x) {
  if (x.dim() == 0) return x.clone().detach().requires_grad_();
  NoGradGuard no_grad;
  int64_t d = x.dim() - 1;
  for (int64_t k = x.dim() - 1; k >= 0; --k)
    if (x.size(k) > 1) {
      d = k;
      break;
    }
  std::vector<int64_t> big(x.shape().begin(), x.shape().end());
  big[static_cast<std::size_t>(d)] *= 2;
  Tensor v = zeros(big, x.dtype()).slice(d, std::nullopt, std::nullopt, 2);
  v.copy_(x);
  return v.requires_grad_();
}

using LeafMaker = Tensor (*)(const Tensor&);
const std::vector<std::pair<std::string, LeafMaker>> kLayouts = {{"transposed", transposed_leaf}, {"sliced", sliced_leaf}};

std::vector<Tensor> laid_out(const Golden& g, LeafMaker make, DType dt = kFloat64) {
  std::vector<Tensor> ins;
  for (const auto& d : g.inputs) ins.push_back(make(d.make(dt)));
  return ins;
}

// grad of sum(fn(x) * w) with respect to the inputs, with or without create_graph
std::vector<Tensor> first_grads(const OpInfo& op, const std::vector<Tensor>& ins, const golden::Data& w, bool create_graph) {
  Tensor out = op.fn(ins);
  return grad({sum(out * w.make(out.dtype()))}, ins, {}, std::nullopt, create_graph, /*allow_unused=*/true);
}

bool checks_finite_differences(const OpInfo& op) { return op.order >= 1 && !op.fd_unusable; }

}  // namespace

// ---------------------------------------------------------------- the table and its golden data

TEST(OpTable, EveryEntryHasGoldenDataAndEveryGoldenCaseAnEntry) {
  std::set<std::pair<std::string, int>> in_table;
  for (const OpInfo& op : optable::op_table()) {
    EXPECT_FALSE(op.samples.empty()) << op.name << ": no samples";
    EXPECT_TRUE(op.fn) << op.name << ": no fn";
    EXPECT_GE(op.order, 0) << op.name;
    EXPECT_LE(op.order, 2) << op.name;
    for (std::size_t i = 0; i < op.samples.size(); ++i) {
      in_table.insert({op.name, static_cast<int>(i)});
      auto it = goldens().find({op.name, static_cast<int>(i)});
      if (it == goldens().end()) {
        ADD_FAILURE() << where(op, i) << " has no golden data: rerun tools/golden/make_op_golden.py";
        continue;
      }
      // the golden inputs were drawn for this sample's shapes (else the golden file is stale)
      const auto& shapes = op.samples[i].shapes;
      ASSERT_EQ(it->second.inputs.size(), shapes.size()) << where(op, i) << ": stale golden data";
      for (std::size_t k = 0; k < shapes.size(); ++k)
        EXPECT_EQ(it->second.inputs[k].shape, shapes[k]) << where(op, i) << " input " << k << ": stale golden data";
    }
  }
  for (const auto& [key, g] : goldens())
    EXPECT_TRUE(in_table.count(key)) << key.first << " sample " << key.second << " is in the golden file but not in the table";
  EXPECT_GE(in_table.size(), 100u);
}

// ---------------------------------------------------------------- values and gradients

TEST(OpTable, Float64ValuesAndGradientsMatchPyTorch) {
  for_each_case([](const OpInfo& op, std::size_t, const Golden& g) {
    std::vector<Tensor> ins = leaves(g);
    Tensor out = op.fn(ins);
    EXPECT_EQ(dtype_name(out.dtype()), g.dtype) << "output dtype";
    expect_close(out, g.output, 1e-10, 1e-12, "output");
    ASSERT_EQ(out.requires_grad(), g.requires_grad) << "output requires grad (PyTorch: " << g.requires_grad << ")";
    if (!g.requires_grad) return;
    backward_weighted(out, g.weight);
    for (std::size_t i = 0; i < ins.size(); ++i) {
      const std::string what = "gradient of input " + std::to_string(i);
      if (!g.grads[i]) {  // PyTorch: None; ag may say the same with zeros
        if (ins[i].grad().defined()) EXPECT_EQ(nonzeros(ins[i].grad()), 0) << what << ": PyTorch gives none";
        continue;
      }
      ASSERT_TRUE(ins[i].grad().defined()) << what << " is undefined";
      expect_close(ins[i].grad(), *g.grads[i], 1e-10, 1e-12, what);
    }
  });
}

TEST(OpTable, Float32AgreesWithTheFloat64GoldenToFloatNoise) {
  for_each_case([](const OpInfo& op, std::size_t, const Golden& g) {
    std::vector<Tensor> ins = leaves(g, kFloat32);
    Tensor out = op.fn(ins);
    EXPECT_EQ(dtype_name(out.dtype()), g.f32_dtype) << "output dtype for float32 inputs";
    if (op.float32_unusable) return;
    expect_close(out, g.output, 1e-4, 1e-5, "float32 output");
    if (!g.requires_grad) return;
    backward_weighted(out, g.weight);
    for (std::size_t i = 0; i < ins.size(); ++i) {
      if (!g.grads[i]) continue;
      ASSERT_TRUE(ins[i].grad().defined()) << "float32 gradient of input " << i << " is undefined";
      EXPECT_EQ(ins[i].grad().dtype(), kFloat32) << "a leaf's gradient has the leaf's dtype";
      expect_close(ins[i].grad(), *g.grads[i], 1e-3, 1e-4, "float32 gradient of input " + std::to_string(i));
    }
  });
}

TEST(OpTable, StridedInputsGiveTheValuesAndGradientsOfContiguousOnes) {
  int strided = 0;
  for_each_case([&strided](const OpInfo& op, std::size_t, const Golden& g) {
    std::vector<Tensor> dense = leaves(g);
    Tensor want = op.fn(dense);
    if (g.requires_grad) backward_weighted(want, g.weight);
    for (const auto& [layout, make] : kLayouts) {
      SCOPED_TRACE(layout + " inputs");
      std::vector<Tensor> ins = laid_out(g, make);
      for (const Tensor& t : ins) strided += !t.is_contiguous();
      Tensor out = op.fn(ins);
      expect_close(out, data_of(want), 1e-12, 1e-14, "output");
      if (!g.requires_grad) continue;
      backward_weighted(out, g.weight);
      for (std::size_t i = 0; i < ins.size(); ++i) {
        ASSERT_EQ(ins[i].grad().defined(), dense[i].grad().defined()) << "input " << i;
        if (dense[i].grad().defined()) expect_close(ins[i].grad(), data_of(dense[i].grad()), 1e-12, 1e-14, "gradient of input " + std::to_string(i));
      }
    }
  });
  EXPECT_GE(strided, 100);  // most inputs were laid out differently
}

// ---------------------------------------------------------------- finite differences

TEST(OpTable, GradcheckOnEverySampleContiguousAndStrided) {
  for_each_case([](const OpInfo& op, std::size_t, const Golden& g) {
    if (!checks_finite_differences(op)) return;
    for (bool strided : {false, true}) {
      SCOPED_TRACE(strided ? "transposed inputs" : "contiguous inputs");
      GradcheckResult r = gradcheck_result(op.fn, strided ? laid_out(g, transposed_leaf) : leaves(g));
      EXPECT_TRUE(r.ok) << r.message;
    }
  });
}

// x feeds the op and, separately, a second branch: its gradient is the sum of both.
TEST(OpTable, GradcheckWithTheFirstInputReusedOnASecondPath) {
  for_each_case([](const OpInfo& op, std::size_t, const Golden& g) {
    if (!checks_finite_differences(op)) return;
    auto twice = [&op](const std::vector<Tensor>& in) { return sum(op.fn(in)) * sum(in[0] * in[0]); };
    GradcheckResult r = gradcheck_result(twice, leaves(g));
    EXPECT_TRUE(r.ok) << r.message;
  });
}

TEST(OpTable, GradgradcheckOnEverySampleContiguousAndStrided) {
  for_each_case([](const OpInfo& op, std::size_t, const Golden& g) {
    if (op.order < 2 || op.fd_unusable) return;
    for (bool strided : {false, true}) {
      SCOPED_TRACE(strided ? "transposed inputs" : "contiguous inputs");
      manual_seed(1);  // the random grad_output
      GradcheckResult r = gradgradcheck_result(op.fn, strided ? laid_out(g, transposed_leaf) : leaves(g));
      EXPECT_TRUE(r.ok) << r.message;
    }
  });
}

// Each fast backward kernel stands in for its rule when nothing is recorded: gradients without
// create_graph (kernels) and with it (the rules in ag ops) agree, float64 and float32, on
// contiguous and strided inputs.
TEST(OpTable, FastKernelsEqualTheRulesTheyStandInFor) {
  for_each_case([](const OpInfo& op, std::size_t, const Golden& g) {
    if (op.order < 1) return;
    for (DType dt : {kFloat64, kFloat32}) {
      const double tol = dt == kFloat64 ? 1e-12 : 2e-5;
      for (bool strided : {false, true}) {
        SCOPED_TRACE(std::string(strided ? "transposed " : "contiguous ") + dtype_name(dt));
        std::vector<Tensor> ins = strided ? laid_out(g, transposed_leaf, dt) : leaves(g, dt);
        std::vector<Tensor> fast = first_grads(op, ins, g.weight, false), rule = first_grads(op, ins, g.weight, true);
        for (std::size_t i = 0; i < ins.size(); ++i) {
          ASSERT_EQ(fast[i].defined(), rule[i].defined()) << "input " << i;
          if (fast[i].defined()) expect_close(fast[i], data_of(rule[i]), tol, tol, "kernel gradient of input " + std::to_string(i));
        }
      }
    }
  });
}

// ---------------------------------------------------------------- no gradient, int64 inputs

// An op of order 0 has no derivative to check: like PyTorch its output does not require grad, or
// its gradient is zero (PyTorch's for sign, round, ...).
TEST(OpTable, OpsWithoutAGradientGiveNoneOrZerosLikePyTorch) {
  int checked = 0;
  for_each_case([&checked](const OpInfo& op, std::size_t, const Golden& g) {
    if (op.order != 0) return;
    ++checked;
    std::vector<Tensor> ins = leaves(g);
    Tensor out = op.fn(ins);
    EXPECT_EQ(out.requires_grad(), g.requires_grad);
    if (!g.requires_grad) return;
    for (const auto& want : g.grads)
      if (want) EXPECT_TRUE(std::all_of(want->values.begin(), want->values.end(), [](double v) { return v == 0; }))
          << "PyTorch's gradient is not zero: the entry's order should be 1 or 2";
    backward_weighted(out, g.weight);
    for (std::size_t i = 0; i < ins.size(); ++i)
      if (ins[i].grad().defined()) EXPECT_EQ(nonzeros(ins[i].grad()), 0) << "gradient of input " << i;
  });
  EXPECT_GT(checked, 0);
}

// What is wrong with ag's result for int64 inputs, or "" when it does what PyTorch does: refuses
// them for floating_only entries, else computes PyTorch's dtype and values.
std::string int64_mismatch(const OpInfo& op, const Golden& g) {
  std::vector<Tensor> ins;
  for (const auto& d : g.inputs) ins.push_back(d.make().to(kInt64));  // truncated, as PyTorch's .long()
  Tensor out;
  try {
    out = op.fn(ins);
  } catch (const std::exception& e) {
    if (op.floating_only) return "";
    return "int64 inputs threw (PyTorch gives " + g.int_dtype + "): " + e.what();
  }
  if (op.floating_only) return "floating_only, but int64 inputs are computed (to " + dtype_name(out.dtype()) + ")";
  if (!g.int_output) return "PyTorch refuses int64 inputs: the entry should be floating_only";
  if (dtype_name(out.dtype()) != g.int_dtype) return "int64 inputs give " + dtype_name(out.dtype()) + ", PyTorch " + g.int_dtype;
  const std::vector<double> got = out.to_vector<double>(), want = g.int_output->values;
  if (out.shape().vec() != DimVector(g.int_output->shape)) return "int64 inputs give shape " + out.shape().str();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= 1e-6 * (1 + std::abs(want[i])) || (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i]))
      return "int64 inputs: element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", PyTorch's " + std::to_string(want[i]);
  return "";
}

TEST(OpTable, Int64InputsAreRefusedByFloatingOpsAndComputedWithPyTorchsDtypeByOthers) {
  for_each_case([](const OpInfo& op, std::size_t, const Golden& g) {
    const std::string mismatch = int64_mismatch(op, g);
    if (op.int64_gap.empty()) EXPECT_EQ(mismatch, "");
    else EXPECT_NE(mismatch, "") << "the known int64 gap '" << op.int64_gap << "' is fixed: remove it from the entry";
  });
}

// An undefined input (a default-constructed Tensor, or .grad() before backward) is a
// std::logic_error naming the op, never a crash: each input in turn is left undefined.
TEST(OpTable, AnUndefinedInputThrowsLogicErrorNamingTheOp) {
  // optional inputs, where an undefined tensor means PyTorch's None: linear's bias, layer_norm's
  // weight and bias
  const std::set<std::pair<std::string, std::size_t>> optional = {{"linear", 2}, {"layer_norm_affine", 1}, {"layer_norm_affine", 2}};
  for (const OpInfo& op : optable::op_table()) {
    if (op.samples.empty()) continue;
    const auto& shapes = op.samples[0].shapes;
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      if (optional.count({op.name, k})) continue;
      std::vector<Tensor> ins;
      for (const auto& s : shapes) ins.push_back(ones(s, kFloat64) * 0.5);
      ins[k] = Tensor();
      try {
        op.fn(ins);
        ADD_FAILURE() << op.name << ": no exception with input " << k << " undefined";
      } catch (const std::logic_error& e) {
        EXPECT_NE(std::string(e.what()).find("called on an undefined tensor"), std::string::npos) << op.name << ": " << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << op.name << ": input " << k << " undefined threw a non-logic_error: " << e.what();
      }
    }
  }
}

// The output's node has PyTorch's name (what print shows as grad_fn=<...>), where the entry
// computes the op the way PyTorch does; known_grad_fn_differences lists where ag's graph is
// deliberately another (a fused op where PyTorch composes, or the reverse).
TEST(OpTable, GradFnNamesArePyTorchs) {
  // entry -> {PyTorch's name for the entry's torch expression, ag's}
  const std::multimap<std::string, std::pair<std::string, std::string>> known_grad_fn_differences = {
      // fused ops with no PyTorch counterpart; PyTorch's graph ends in the softmax
      {"causal_softmax", {"SoftmaxBackward0", "CausalSoftmaxBackward0"}},
      {"causal_qk_softmax", {"SoftmaxBackward0", "CausalQKSoftmaxBackward0"}},
      // the expression divides by (1 - p); ag's op is F.dropout's multiplication by the scaled mask
      {"dropout_with_mask", {"DivBackward0", "MulBackward0"}},
      // the seed notebooks (run with PyTorch 2) print SqueezeBackward4 (tests/test_seeds.cpp);
      // linear of a 1-D input names it SqueezeBackward3, as PyTorch 1.13
      {"matmul_1d_2d", {"SqueezeBackward3", "SqueezeBackward4"}},
  };
  for_each_case([&](const OpInfo& op, std::size_t, const Golden& g) {
    std::vector<Tensor> ins = leaves(g);
    const Tensor out = op.fn(ins);
    const std::string got = out.grad_fn() ? std::string(out.grad_fn()->name()) : "none";
    const auto [first, last] = known_grad_fn_differences.equal_range(op.name);
    for (auto known = first; known != last; ++known) {
      if (g.grad_fn == known->second.first) {
        EXPECT_EQ(got, known->second.second) << op.name << " (a known difference)";
        return;
      }
    }
    EXPECT_EQ(got, g.grad_fn) << op.name;
  });
}
