// Creation ops (linspace, logspace, eye, rand_like, randn_like, randint_like, tensor(std::vector)),
// in-place ops (add_, sub_, mul_, div_, clamp_, += -= *= /=), and the edge cases of the elementwise
// ops that the op table's random inputs never reach (ties, bounds, zeros, NaN, thresholds, integer
// and bool inputs), against PyTorch 1.13: tests/golden/creation_cases.txt, written by
// tools/golden/make_creation_golden.py (its docstring describes the format).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "golden_io.h"
#include "test_util.h"

using namespace ag;

namespace {

DType dtype_of(const std::string& s) {
  if (s == "float32") return kFloat32;
  if (s == "float64" || s == "float64c") return kFloat64;
  if (s == "int64") return kInt64;
  if (s == "bool") return kBool;
  throw std::runtime_error("golden: unknown dtype " + s);
}

std::vector<int64_t> dims(const std::string& s) {
  std::vector<int64_t> d;
  if (s == "-") return d;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ',')) d.push_back(std::stoll(x));
  return d;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s.empty() ? "-" : s;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream is(line);
  std::vector<std::string> w;
  for (std::string x; is >> x;) w.push_back(x);
  return w;
}

// ---- creation cases: "op ...", "shape S strides T", "all N v..." or "pick N i:v ..." ----

// The tensor a *_like op takes its shape, dtype and layout from (see the script's source()).
Tensor like_source(const std::string& kind, DType dt, const std::vector<int64_t>& shape) {
  if (kind == "contig") return zeros(shape, dt);
  if (kind == "t") return zeros({shape[1], shape[0]}, dt).t();
  std::vector<int64_t> wide = shape;
  wide.back() *= 2;
  return zeros(wide, dt).slice(-1, std::nullopt, std::nullopt, 2);  // "step": every other column
}

Tensor run_creation(const std::vector<std::string>& w) {
  const DType dt = dtype_of(w[1]);
  if (w[0] == "linspace") return linspace(std::stod(w[2]), std::stod(w[3]), std::stoll(w[4]), dt);
  if (w[0] == "logspace") return logspace(std::stod(w[2]), std::stod(w[3]), std::stoll(w[4]), std::stod(w[5]), dt);
  if (w[0] == "eye") return w.size() == 3 ? eye(std::stoll(w[2]), dt) : eye(std::stoll(w[2]), std::stoll(w[3]), dt);
  const Tensor src = like_source(w[2], dt, dims(w[3]));
  if (w[0] == "rand_like") return rand_like(src);
  if (w[0] == "randn_like") return randn_like(src);
  if (w[0] == "randint_like") return randint_like(src, std::stoll(w[4]), std::stoll(w[5]));
  throw std::runtime_error("golden: unknown op " + w[0]);
}

// Element i of t (row-major) in the golden file's encoding: 8 or 16 hex digits, or decimal.
std::string encode(const Tensor& t, int64_t i) {
  char buf[32];
  switch (t.dtype()) {
    case kFloat32: {
      const float v = t.to_vector<float>()[static_cast<std::size_t>(i)];
      uint32_t b;
      std::memcpy(&b, &v, 4);
      std::snprintf(buf, sizeof buf, "%08X", b);
      return buf;
    }
    case kFloat64: {
      const double v = t.to_vector<double>()[static_cast<std::size_t>(i)];
      uint64_t b;
      std::memcpy(&b, &v, 8);
      std::snprintf(buf, sizeof buf, "%016llX", static_cast<unsigned long long>(b));
      return buf;
    }
    default: return std::to_string(t.to_vector<int64_t>()[static_cast<std::size_t>(i)]);
  }
}

// Runs every creation case of the golden file whose op passes `want` (seed lines reseed the default
// generator, in file order) and returns the number of cases checked.
int check_creation_cases(const std::function<bool(const std::string&)>& want) {
  std::ifstream f = golden::open("creation_cases.txt");
  int checked = 0;
  for (std::string line; std::getline(f, line);) {
    std::vector<std::string> w = words(line);
    if (w.empty()) continue;
    if (w[0] == "seed") {
      manual_seed(std::stoull(w[1]));
      continue;
    }
    if (w[0] != "op") continue;
    w.erase(w.begin());
    std::string layout, values;
    std::getline(f, layout);
    std::getline(f, values);
    if (!want(w[0])) continue;
    const std::string op = line.substr(3);
    const Tensor t = run_creation(w);
    const std::vector<std::string> lw = words(layout), vw = words(values);
    EXPECT_EQ(join(t.shape().vec()), lw[1]) << op;
    EXPECT_EQ(join(std::vector<int64_t>(t.strides().begin(), t.strides().end())), lw[3]) << op;
    EXPECT_EQ(std::to_string(t.numel()), vw[1]) << op;
    if (join(t.shape().vec()) != lw[1]) continue;
    const Tensor flat = t.contiguous();
    int bad = 0;
    for (std::size_t k = 2; k < vw.size(); ++k) {
      const auto colon = vw[0] == "pick" ? vw[k].find(':') : std::string::npos;
      const int64_t i = colon == std::string::npos ? static_cast<int64_t>(k - 2) : std::stoll(vw[k].substr(0, colon));
      const std::string want_v = colon == std::string::npos ? vw[k] : vw[k].substr(colon + 1);
      if (encode(flat, i) != want_v && bad++ == 0) ADD_FAILURE() << op << ": element " << i << " is " << encode(flat, i) << ", PyTorch " << want_v;
    }
    EXPECT_EQ(bad, 0) << op << ": " << bad << " elements differ";
    ++checked;
  }
  return checked;
}

// ---- edge cases: "edge NAME", "in ...", then "error" or "out", ["version"], "grad_fn", "grad"s ----

using Inputs = std::vector<Tensor>;
using EdgeFn = std::function<Tensor(Inputs&)>;

// y = x[0] * 1 (or x[0] itself), then the in-place op f on y: the script's inplace().
EdgeFn inplace(std::function<void(Tensor&, Inputs&)> f, bool on_copy = true) {
  return [f, on_copy](Inputs& x) {
    Tensor y = on_copy ? x[0] * 1.0 : x[0];
    f(y, x);
    return y;
  };
}

const Tensor& c3() {
  static const Tensor c = tensor({true, false, true});
  return c;
}

// The calls of the script's EDGES and INPLACE lists, by name.
const std::map<std::string, EdgeFn>& edge_calls() {
  static const std::map<std::string, EdgeFn> calls = {
      {"abs_at_zero_and_nan", [](Inputs& x) { return abs(x[0]); }},
      {"sign_zero_gradient", [](Inputs& x) { return sign(x[0]); }},
      {"clamp_at_bounds", [](Inputs& x) { return clamp(x[0], -1.0, 1.0); }},
      {"clamp_min_above_max", [](Inputs& x) { return clamp(x[0], 1.0, -1.0); }},
      {"clamp_only_min_at_bound", [](Inputs& x) { return clamp(x[0], 1.0); }},
      {"clamp_min_at_bound", [](Inputs& x) { return clamp_min(x[0], 1.0); }},
      {"clamp_max_at_bound", [](Inputs& x) { return clamp_max(x[0], 1.0); }},
      {"clamp_nan_max", [](Inputs& x) { return clamp(x[0], 0.0, std::nan("")); }},
      {"clamp_only_nan_min", [](Inputs& x) { return clamp(x[0], std::nan("")); }},
      {"clamp_min_nan", [](Inputs& x) { return clamp_min(x[0], std::nan("")); }},
      {"minimum_ties_and_nan", [](Inputs& x) { return minimum(x[0], x[1]); }},
      {"maximum_ties_and_nan", [](Inputs& x) { return maximum(x[0], x[1]); }},
      {"minimum_broadcast_ties", [](Inputs& x) { return minimum(x[0], x[1]); }},
      {"maximum_broadcast_ties", [](Inputs& x) { return maximum(x[0], x[1]); }},
      {"where_broadcast_grads", [](Inputs& x) { return where(tensor({{true}, {false}}), x[0], x[1]); }},
      {"leaky_relu_at_zero", [](Inputs& x) { return leaky_relu(x[0], 0.2); }},
      {"elu_at_zero", [](Inputs& x) { return elu(x[0], 2.0); }},
      {"softplus_at_threshold", [](Inputs& x) { return softplus(x[0]); }},
      {"softplus_beta_at_threshold", [](Inputs& x) { return softplus(x[0], 2.0, 5.0); }},
      {"silu_extremes", [](Inputs& x) { return silu(x[0]); }},
      {"rsqrt_at_zero", [](Inputs& x) { return rsqrt(x[0]); }},
      {"reciprocal_at_zero", [](Inputs& x) { return reciprocal(x[0]); }},
      {"log1p_at_minus_one", [](Inputs& x) { return log1p(x[0]); }},
      {"expm1_small", [](Inputs& x) { return expm1(x[0]); }},
      {"square_float", [](Inputs& x) { return square(x[0]); }},
      {"sin_int64", [](Inputs& x) { return sin(x[0]); }},
      {"cos_bool", [](Inputs& x) { return cos(x[0]); }},
      {"log1p_int64", [](Inputs& x) { return log1p(x[0]); }},
      {"expm1_int64", [](Inputs& x) { return expm1(x[0]); }},
      {"rsqrt_int64", [](Inputs& x) { return rsqrt(x[0]); }},
      {"reciprocal_int64", [](Inputs& x) { return reciprocal(x[0]); }},
      {"abs_int64", [](Inputs& x) { return abs(x[0]); }},
      {"abs_bool", [](Inputs& x) { return abs(x[0]); }},
      {"square_int64", [](Inputs& x) { return square(x[0]); }},
      {"square_bool", [](Inputs& x) { return square(x[0]); }},
      {"sign_int64", [](Inputs& x) { return sign(x[0]); }},
      {"sign_bool", [](Inputs& x) { return sign(x[0]); }},
      {"clamp_int64", [](Inputs& x) { return clamp(x[0], -1, 2); }},
      {"clamp_int64_fraction", [](Inputs& x) { return clamp(x[0], -1.5, 2.5); }},
      {"clamp_bool", [](Inputs& x) { return clamp(x[0], 0, 1); }},
      {"clamp_min_int64", [](Inputs& x) { return clamp_min(x[0], 0); }},
      {"clamp_max_int64_fraction", [](Inputs& x) { return clamp_max(x[0], 0.5); }},
      {"minimum_int64", [](Inputs& x) { return minimum(x[0], x[1]); }},
      {"maximum_int64_float32", [](Inputs& x) { return maximum(x[0], x[1]); }},
      {"minimum_float32_float64", [](Inputs& x) { return minimum(x[0], x[1]); }},
      {"minimum_bool", [](Inputs& x) { return minimum(x[0], x[1]); }},
      {"where_int64", [](Inputs& x) { return where(c3(), x[0], x[1]); }},
      {"where_int64_float_scalar", [](Inputs& x) { return where(c3(), x[0], 1.5); }},
      {"where_int64_int_scalar", [](Inputs& x) { return where(c3(), x[0], 7); }},
      {"where_scalar_float64", [](Inputs& x) { return where(c3(), 2.5, x[0]); }},
      {"where_int64_float32", [](Inputs& x) { return where(c3(), x[0], x[1]); }},
      {"where_bool", [](Inputs& x) { return where(c3(), x[0], x[1]); }},
      {"where_int_condition", [](Inputs& x) { return where(tensor({1, 0, 1}), x[0], x[1]); }},
      {"softplus_int64", [](Inputs& x) { return softplus(x[0]); }},
      {"silu_int64", [](Inputs& x) { return silu(x[0]); }},
      {"leaky_relu_int64", [](Inputs& x) { return leaky_relu(x[0]); }},
      {"elu_int64", [](Inputs& x) { return elu(x[0]); }},
      {"gt_tensor_mixed", [](Inputs& x) { return gt(x[0], x[1]); }},
      {"ne_tensor_broadcast", [](Inputs& x) { return ne(x[0], x[1]); }},

      {"inplace_add_tensor_alpha", inplace([](Tensor& y, Inputs& x) { y.add_(x[1], 2.0); })},
      {"inplace_add_scalar", inplace([](Tensor& y, Inputs&) { y.add_(1.5); })},
      {"inplace_sub_tensor", inplace([](Tensor& y, Inputs& x) { y.sub_(x[1]); })},
      {"inplace_sub_tensor_alpha", inplace([](Tensor& y, Inputs& x) { y.sub_(x[1], 2.0); })},
      {"inplace_sub_scalar", inplace([](Tensor& y, Inputs&) { y.sub_(1.5); })},
      {"inplace_mul_tensor", inplace([](Tensor& y, Inputs& x) { y.mul_(x[1]); })},
      {"inplace_mul_scalar", inplace([](Tensor& y, Inputs&) { y.mul_(1.5); })},
      {"inplace_div_tensor", inplace([](Tensor& y, Inputs& x) { y.div_(x[1]); })},
      {"inplace_div_scalar", inplace([](Tensor& y, Inputs&) { y.div_(1.5); })},
      {"inplace_clamp_both", inplace([](Tensor& y, Inputs&) { y.clamp_(-1.0, 2.0); })},
      {"inplace_clamp_min_only", inplace([](Tensor& y, Inputs&) { y.clamp_(0.5); })},
      {"inplace_clamp_max_only", inplace([](Tensor& y, Inputs&) { y.clamp_(std::nullopt, 0.5); })},
      {"inplace_iadd_tensor", inplace([](Tensor& y, Inputs& x) { y += x[1]; })},
      {"inplace_isub_tensor", inplace([](Tensor& y, Inputs& x) { y -= x[1]; })},
      {"inplace_imul_tensor", inplace([](Tensor& y, Inputs& x) { y *= x[1]; })},
      {"inplace_idiv_tensor", inplace([](Tensor& y, Inputs& x) { y /= x[1]; })},
      {"inplace_iadd_scalar", inplace([](Tensor& y, Inputs&) { y += 1.5; })},
      {"inplace_isub_scalar", inplace([](Tensor& y, Inputs&) { y -= 1.5; })},
      {"inplace_imul_scalar", inplace([](Tensor& y, Inputs&) { y *= 1.5; })},
      {"inplace_idiv_scalar", inplace([](Tensor& y, Inputs&) { y /= 1.5; })},
      {"inplace_two_in_place_ops", inplace([](Tensor& y, Inputs& x) { y.mul_(x[1]).sub_(x[1]).clamp_(-3.0, 3.0); })},
      {"inplace_add_into_tensor_without_grad", inplace([](Tensor& y, Inputs& x) { y.add_(x[1]); }, false)},
      {"inplace_mul_into_tensor_without_grad", inplace([](Tensor& y, Inputs& x) { y.mul_(x[1]); }, false)},
      {"inplace_add_float64_into_float32", inplace([](Tensor& y, Inputs& x) { y.add_(x[1]); }, false)},
      {"inplace_add_int64", inplace([](Tensor& y, Inputs& x) { y.add_(x[1]); }, false)},
      {"inplace_mul_int64_scalar", inplace([](Tensor& y, Inputs&) { y.mul_(3); }, false)},
      {"inplace_sub_int64_scalar", inplace([](Tensor& y, Inputs&) { y.sub_(3); }, false)},
      {"inplace_clamp_int64", inplace([](Tensor& y, Inputs&) { y.clamp_(0, 2); }, false)},
      {"inplace_div_int64", inplace([](Tensor& y, Inputs&) { y.div_(2); }, false)},
      {"inplace_mul_int64_fraction", inplace([](Tensor& y, Inputs&) { y.mul_(1.5); }, false)},
      {"inplace_clamp_int64_fraction", inplace([](Tensor& y, Inputs&) { y.clamp_(0.5, 2.5); }, false)},
      {"inplace_add_float_into_int64", inplace([](Tensor& y, Inputs& x) { y.add_(x[1]); }, false)},
  };
  return calls;
}

// "DTYPE SHAPE : v ..." -> the tensor (values parsed as doubles: nan and inf included)
Tensor parse_tensor(const std::string& rest, bool* requires_grad = nullptr) {
  std::istringstream is(rest);
  std::string dt, shape, colon;
  is >> dt >> shape >> colon;
  std::vector<double> v;
  for (std::string x; is >> x;) v.push_back(std::stod(x));
  if (requires_grad) *requires_grad = dt == "float64";
  return from_vector(v, dims(shape), dtype_of(dt));
}

// Compares values: floating ones to 1e-12 (float64) or 1e-6 (float32) relative (the rules may round
// differently from PyTorch's kernels: softplus's and silu's gradients go through sigmoid), NaN
// and inf exactly; integers and bools exactly.
void expect_values(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const double rtol = got.dtype() == kFloat32 ? 1e-6 : 1e-12;
  EXPECT_EQ(testutil::close_mismatches<double>(got.to(kFloat64), want.to(kFloat64), rtol, 1e-300), 0) << what;
}

struct EdgeCase {
  std::string name;
  std::vector<Tensor> inputs;
  std::vector<bool> leaf;  // the input requires grad
  bool error = false;
  std::string out_dtype;
  Tensor out;
  int64_t version = -1;  // -1: not an in-place case
  std::string grad_fn;
  std::vector<std::string> grads;  // one per input that requires grad: "none" or the tensor's text
};

std::vector<EdgeCase> edge_cases() {
  std::ifstream f = golden::open("creation_cases.txt");
  std::vector<EdgeCase> cases;
  for (std::string line; std::getline(f, line);) {
    const auto sp = line.find(' ');
    const std::string kw = line.substr(0, sp), rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (kw == "edge") {
      cases.push_back(EdgeCase{rest});
    } else if (cases.empty() || kw == "op" || kw == "seed" || kw == "shape" || kw == "all" || kw == "pick") {
      continue;
    } else if (kw == "in") {
      bool rg = false;
      cases.back().inputs.push_back(parse_tensor(rest, &rg));
      cases.back().leaf.push_back(rg);
    } else if (kw == "error") {
      cases.back().error = true;
    } else if (kw == "out") {
      cases.back().out_dtype = words(rest)[0];
      cases.back().out = parse_tensor(rest);
    } else if (kw == "version") {
      cases.back().version = std::stoll(rest);
    } else if (kw == "grad_fn") {
      cases.back().grad_fn = rest;
    } else if (kw == "grad") {
      cases.back().grads.push_back(rest);
    }
  }
  return cases;
}

void check_edge_case(const EdgeCase& c);

// One case; an exception fails that case only.
void check_edge(const EdgeCase& c) {
  try {
    check_edge_case(c);
  } catch (const std::exception& e) {
    ADD_FAILURE() << c.name << ": " << e.what();
  }
}

void check_edge_case(const EdgeCase& c) {
  SCOPED_TRACE(c.name);
  const auto it = edge_calls().find(c.name);
  ASSERT_NE(it, edge_calls().end()) << "no call for golden case " << c.name;
  Inputs x;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    x.push_back(c.inputs[i].clone());
    if (c.leaf[i]) x.back().requires_grad_();
  }
  const Inputs leaves = x;  // the handles before the call: an in-place op may give x[0] history
  if (c.error) {
    EXPECT_ANY_THROW(it->second(x)) << "PyTorch refuses this call";
    return;
  }
  const Tensor y = it->second(x);
  EXPECT_EQ(dtype_name(y.dtype()), "torch." + c.out_dtype);
  expect_values(y.detach(), c.out, "forward");
  if (c.version >= 0) EXPECT_EQ(static_cast<int64_t>(y.impl()->storage->version), c.version) << "version counter";
  EXPECT_EQ(y.grad_fn() ? std::string(y.grad_fn()->name()) : "none", c.grad_fn);
  if (y.requires_grad()) sum(y).backward();
  std::size_t k = 0;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (!c.leaf[i]) continue;
    ASSERT_LT(k, c.grads.size());
    const std::string& g = c.grads[k++];
    if (g == "none") {
      EXPECT_FALSE(leaves[i].grad().defined()) << "input " << i << " should get no gradient";
    } else {
      ASSERT_TRUE(leaves[i].grad().defined()) << "input " << i << " got no gradient";
      expect_values(leaves[i].grad(), parse_tensor("float64 " + g), "gradient of input " + std::to_string(i));
    }
  }
  EXPECT_EQ(k, c.grads.size());
}

}  // namespace

// ---- creation ----

TEST(Linspace, EqualsPyTorchBitForBitInFloat32Float64AndInt64) {
  EXPECT_GT(check_creation_cases([](const std::string& op) { return op == "linspace"; }), 300);
}

TEST(Logspace, EqualsPyTorchBitForBit) {
  EXPECT_GT(check_creation_cases([](const std::string& op) { return op == "logspace"; }), 150);
}

TEST(Eye, EqualsPyTorchForEveryDtypeAndShape) {
  EXPECT_EQ(check_creation_cases([](const std::string& op) { return op == "eye"; }), 24);
}

TEST(RandomLike, DrawsPyTorchsNumbersInItsInputsLayout) {
  EXPECT_EQ(check_creation_cases([](const std::string& op) { return op.ends_with("_like"); }), 51);
}

TEST(RandomLike, UsesTheGivenGeneratorAndOptions) {
  Generator g1(5), g2(5);
  const Tensor t = zeros({4, 5}, kFloat64);
  const Tensor a = randn_like(t, {}, &g1), b = randn(t.shape().vec(), kFloat64, &g2);
  EXPECT_EQ(testutil::bit_mismatches<double>(a, b), 0);
  const Tensor r = rand_like(t, Options().dtype(kFloat32).requires_grad());
  EXPECT_EQ(r.dtype(), kFloat32);
  EXPECT_TRUE(r.requires_grad());
  EXPECT_EQ(r.impl()->storage->version, 0u);
  EXPECT_EQ(testutil::error_of([&] { randint_like(t, 3, 3); }), "[randint_like] expects low < high, but got low=3 high=3");
}

TEST(Linspace, SmallStepCountsOptionsAndErrors) {
  EXPECT_EQ(linspace(0, 1, 5).dtype(), kFloat32);  // the default dtype even for integral ends, as PyTorch
  EXPECT_EQ(logspace(0, 1, 5).dtype(), kFloat32);
  EXPECT_TRUE(linspace(0, 1, 3, Options().requires_grad()).requires_grad());
  EXPECT_TRUE(logspace(0, 1, 1, 2.0, Options().requires_grad()).requires_grad());
  EXPECT_EQ(testutil::error_of([] { linspace(0, 1, -1); }), "[linspace] number of steps must be non-negative");
  EXPECT_EQ(testutil::error_of([] { logspace(0, 1, -1); }), "[logspace] number of steps must be non-negative");
  EXPECT_EQ(testutil::error_of([] { eye(-1); }), "[eye] n must be greater or equal to 0, got -1");
  EXPECT_EQ(testutil::error_of([] { eye(2, -3); }), "[eye] m must be greater or equal to 0, got -3");
  EXPECT_EQ(testutil::error_of([] { linspace(0, 1, 4, kBool); }), "[linspace] not implemented for torch.bool");
}

TEST(TensorFromVector, InfersTheDtypeAsTensorOfAListDoes) {
  EXPECT_EQ(tensor(std::vector<double>{1.5, 2.0}).dtype(), kFloat32);
  EXPECT_EQ(tensor(std::vector<float>{1.5f}).dtype(), kFloat32);
  EXPECT_EQ(tensor(std::vector<int64_t>{1, 2, 3}).dtype(), kInt64);
  EXPECT_EQ(tensor(std::vector<int>{1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor(std::vector<bool>{true, false}).dtype(), kBool);
  EXPECT_EQ(tensor(std::vector<int>{1, 2}, kFloat64).dtype(), kFloat64);
  const Tensor t = tensor(std::vector<double>{1.5, -2.0, 3.0}, Options().dtype(kFloat64).requires_grad());
  EXPECT_EQ(t.shape(), Size({3}));
  EXPECT_TRUE(t.requires_grad());
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{1.5, -2.0, 3.0}));
  EXPECT_EQ(tensor(std::vector<double>{}).shape(), Size({0}));
  EXPECT_EQ(tensor({1.5, 2.0}).dtype(), kFloat32);  // a braced list still goes to the nested-list overload
}

// ---- edge cases of the elementwise ops, and the in-place ops ----

TEST(ElementwiseEdges, MatchPyTorchAtTiesBoundsZerosNaNAndForIntegerInputs) {
  int n = 0;
  for (const EdgeCase& c : edge_cases()) {
    if (c.name.starts_with("inplace_")) continue;
    check_edge(c);
    ++n;
  }
  EXPECT_EQ(n, 59);
}

TEST(InPlace, ArithmeticAndClampMatchPyTorchValuesGradFnsGradientsAndVersions) {
  int n = 0;
  for (const EdgeCase& c : edge_cases()) {
    if (!c.name.starts_with("inplace_")) continue;
    check_edge(c);
    ++n;
  }
  EXPECT_EQ(n, 32);
}

TEST(InPlace, LeafThatRequiresGradIsRefusedWithPyTorchsMessage) {
  const std::string pytorch = "a leaf Variable that requires grad is being used in an in-place operation.";
  Tensor w = ones({2}, kFloat64).requires_grad_();
  const Tensor o = ones({2}, kFloat64);
  const std::vector<std::pair<std::string, std::function<void()>>> ops = {
      {"add_", [&] { w.add_(o); }},         {"add_", [&] { w.add_(1.0); }},      {"sub_", [&] { w.sub_(o); }},
      {"sub_", [&] { w.sub_(1.0); }},       {"mul_", [&] { w.mul_(o); }},        {"mul_", [&] { w.mul_(2.0); }},
      {"div_", [&] { w.div_(o); }},         {"div_", [&] { w.div_(2.0); }},      {"clamp_", [&] { w.clamp_(0.0, 1.0); }},
      {"add_", [&] { w += o; }},            {"sub_", [&] { w -= 1.0; }},         {"mul_", [&] { w *= o; }},
      {"div_", [&] { w /= 2.0; }},          {"fill_", [&] { w.fill_(1.0); }},
  };
  for (const auto& [name, op] : ops) {
    const std::string e = testutil::error_of(op);
    EXPECT_EQ(e.rfind("[" + name + "] " + pytorch, 0), 0u) << e;
  }
  EXPECT_EQ(w.impl()->storage->version, 0u) << "a refused op must not bump the version";
  EXPECT_EQ(w.to_vector<double>(), (std::vector<double>{1, 1}));
  {
    NoGradGuard g;  // as optimizers do
    w.sub_(o, 0.5).div_(2.0).clamp_(0.0, 0.2);
    w *= 10.0;
    w += o;
  }
  EXPECT_EQ(w.to_vector<double>(), (std::vector<double>{3, 3}));
  EXPECT_TRUE(w.is_leaf());
  EXPECT_FALSE(w.grad_fn());
}

TEST(InPlace, EveryOpBumpsTheVersionCounterOnce) {
  Tensor a = ones({3}, kFloat64);
  const Tensor o = full({3}, 2.0, kFloat64);
  const std::vector<std::function<void()>> ops = {
      [&] { a.add_(o); },  [&] { a.add_(1.0); }, [&] { a.sub_(o); }, [&] { a.sub_(1.0); },     [&] { a.mul_(o); },
      [&] { a.mul_(2.0); }, [&] { a.div_(o); },  [&] { a.div_(2.0); }, [&] { a.clamp_(0.0, 1.0); }, [&] { a += o; },
      [&] { a -= 1.0; },   [&] { a *= o; },      [&] { a /= 2.0; },
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const uint64_t before = a.impl()->storage->version;
    ops[i]();
    EXPECT_EQ(a.impl()->storage->version, before + 1) << "op " << i;
  }
  // a view shares its base's counter
  Tensor v = a.slice(0, 0, 2);
  const uint64_t before = a.impl()->storage->version;
  v.mul_(3.0);
  EXPECT_EQ(a.impl()->storage->version, before + 1);
}

TEST(InPlace, WritingASavedTensorMakesBackwardThrow) {
  const Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = exp(x);  // saves its output y
  y.mul_(2.0);
  EXPECT_NE(testutil::error_of([&] { sum(y).backward(); }).find("modified by an inplace operation"), std::string::npos);

  Tensor z = x * 1.0;
  const Tensor w = sin(z);  // saves its input z
  z.add_(2.0);
  EXPECT_NE(testutil::error_of([&] { sum(w).backward(); }).find("modified by an inplace operation"), std::string::npos);
  sum(z).backward();  // z's own graph (sin's input is not in it) is fine
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 1}));

  Tensor s = x * 1.0;
  s *= s;  // mul_ saves its operand s, which it then overwrites: PyTorch's backward throws too
  EXPECT_NE(testutil::error_of([&] { sum(s).backward(); }).find("modified by an inplace operation"), std::string::npos);
}

TEST(InPlace, OnAViewOfATensorInAGraphRecordsCopySlicesOnTheBase) {
  // as PyTorch: the base's history becomes CopySlices, the view's AsStridedBackward0
  const Tensor x = ones({2, 3}, kFloat64).requires_grad_();
  Tensor y = x * 2.0;
  Tensor row = y.select(0, 0);
  row.mul_(3.0);
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(row.grad_fn()->name(), "AsStridedBackward0");
  sum(y).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{6, 6, 6, 2, 2, 2}));
  Tensor plain = zeros({2, 3}, kFloat64);
  Tensor prow = plain.select(0, 1);
  prow.add_(x.select(0, 0) * 1.0);
  EXPECT_EQ(plain.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(plain.to_vector<double>(), (std::vector<double>{0, 0, 0, 1, 1, 1}));
}

// An op whose input is a view refreshed because its base changed in place records two nodes (the
// refresh's AsStridedBackward0, then its own): the op's saved tensors are its own node's, so a
// second backward names that node, as PyTorch does (the refresh had taken them).
TEST(InPlace, AnOpOnARefreshedViewKeepsItsOwnSavedTensors) {
  const Tensor x = full({4}, 2.0, kFloat64).requires_grad_();
  Tensor b = x * 1.0;
  const Tensor v = b.slice(0, 0, 2);
  b.mul_(3.0);
  const Tensor y = sum(v * v);  // v = 3 x[0:2]: dy/dx[0] = 18 x[0]
  y.backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{36, 36, 0, 0}));
  std::string e;
  try {
    y.backward();
  } catch (const std::exception& ex) {
    e = ex.what();
  }
  EXPECT_NE(e.find("Trying to backward through the graph a second time"), std::string::npos) << e;
  EXPECT_NE(e.find("MulBackward0's saved tensors were freed"), std::string::npos) << e;
}

TEST(InPlace, GradientsThroughInPlaceOpsPassGradcheckAndGradgradcheck) {
  // self's old value is read by mul_'s and div_'s rules for the operand, and by clamp_'s mask
  auto f = [](const std::vector<Tensor>& in) {
    Tensor y = in[0] * 1.0;
    y.mul_(in[1]);
    y.div_(in[1] * in[1] + 1.0);
    y -= in[1];
    y.clamp_(-5.0, 5.0);
    y *= in[1];
    return y;
  };
  manual_seed(3);
  const Tensor a = randn({2, 3}, kFloat64).requires_grad_(), b = randn({3}, kFloat64).requires_grad_();
  const GradcheckResult r1 = gradcheck_result(f, {a, b});
  EXPECT_TRUE(r1.ok) << r1.message;
  const GradcheckResult r2 = gradgradcheck_result(f, {a, b});
  EXPECT_TRUE(r2.ok) << r2.message;
}

TEST(InPlace, ResultTypeThatSelfCannotHoldIsAnErrorWithPyTorchsMessage) {
  Tensor i = tensor({1, 2, 3});
  EXPECT_EQ(testutil::error_of([&] { i.div_(2.0); }), "[div_] result type Float can't be cast to the desired output type Long");
  EXPECT_EQ(testutil::error_of([&] { i += tensor({0.5, 1.0, 2.0}); }),
            "[add_] result type Float can't be cast to the desired output type Long");
  Tensor b = tensor({true, false});
  EXPECT_EQ(testutil::error_of([&] { b.mul_(tensor({2, 3})); }), "[mul_] result type Long can't be cast to the desired output type Bool");
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3})) << "a refused op must not write";
  EXPECT_EQ(testutil::error_of([&] { i.add_(ones({2, 3}, kInt64)); }),
            "[add_] cannot broadcast a tensor of shape [2, 3] into one of shape [3]");
}

TEST(ElementwiseErrors, NameTheOpAndTheProblem) {
  const Tensor a = ones({2, 3}), b = ones({4});
  EXPECT_EQ(testutil::error_of([&] { clamp(a, std::nullopt, std::nullopt); }),
            "[clamp] At least one of 'min' or 'max' must not be None");
  EXPECT_EQ(testutil::error_of([&] { where(ones({2, 3}, kInt64), a, a); }),
            "[where] expected condition to be a boolean tensor, but got a tensor with dtype torch.int64");
  EXPECT_NE(testutil::error_of([&] { minimum(a, b); }).find("[minimum] shapes [2, 3] and [4] cannot be broadcast"), std::string::npos);
  EXPECT_NE(testutil::error_of([&] { where(tensor({true, false}), a, a); }).find("[where]"), std::string::npos);
  EXPECT_EQ(testutil::error_of([&] { softplus(tensor({1, 2})); }), "[softplus] expected a floating point tensor, got torch.int64");
  EXPECT_EQ(testutil::error_of([&] { abs(tensor({true})); }), "[abs] not implemented for torch.bool");
  EXPECT_NE(testutil::error_of([&] { sin(Tensor()); }).find("[sin] called on an undefined tensor"), std::string::npos);
}

// add_ and the other in-place ops with a same-dtype operand take fast loops: one flat loop where
// both are contiguous, 16 x 16 blocks for a 2-D operand of another layout (a weight's gradient
// arriving transposed), a walk otherwise. Each gives what the out-of-place op gives, bit for bit.
TEST(InPlace, SameDtypeOperandsInEveryLayoutGiveTheOutOfPlaceBits) {
  manual_seed(12);
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {5, 33}, {40, 17}, {128, 128}}) {
    const Tensor base = randn({rows, cols}), other = randn({cols, rows}).t();  // other transposed
    Tensor a = base.clone(), b = base.clone().t().contiguous().t();            // self contiguous, then transposed
    a.add_(other, 0.5);
    b.add_(other);
    EXPECT_EQ(testutil::bit_mismatches<float>(a, add(base, mul(other, 0.5))), 0) << rows << " x " << cols;
    EXPECT_EQ(testutil::bit_mismatches<float>(b, add(base, other)), 0) << rows << " x " << cols;
    Tensor c = base.clone();
    c.sub_(other.contiguous());
    EXPECT_EQ(testutil::bit_mismatches<float>(c, sub(base, other)), 0) << rows << " x " << cols;
  }
}
