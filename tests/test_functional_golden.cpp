// ag::functional (hessian, jacobian, vjp, jvp, hvp, vhp) against torch.autograd.functional, and
// forward mode (ag::forward_ad's tangents; ag::func's jvp, jacfwd and hessian; forward-over-reverse
// Hessian-vector products) against torch.autograd.forward_ad and functorch, of PyTorch 1.13
// (tests/golden/higher_order_cases.txt, made by tools/golden/make_higher_order_golden.py).
// Each case names a function; its C++ twin below is written the same way as the Python one and
// is keyed by the same name. Inputs, constants and v tensors come from the file (float64).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/forward_ad.h"
#include "autograd/func.h"
#include "autograd/functional.h"
#include "golden_io.h"

using namespace ag;

namespace {

using Tensors = std::vector<Tensor>;
// in: the tensors differentiated; c: the case's constants (fixed tensors from the file).
using Twin = std::function<Tensor(const Tensors& in, const Tensors& c)>;

// ---------------------------------------------------------------- the twins of the Python functions
const std::map<std::string, Twin>& twins() {
  static const std::map<std::string, Twin> table = {
      {"mlp_tanh_mse",
       [](const Tensors& in, const Tensors& c) {
         const Tensor &W1 = in[0], &b1 = in[1], &W2 = in[2], &b2 = in[3];
         const Tensor &x = c[0], &y = c[1];
         Tensor h = tanh(matmul(x, W1) + b1);
         return mse_loss(matmul(h, W2) + b2, y);
       }},
      {"mlp_gelu_ce",
       [](const Tensors& in, const Tensors& c) {
         const Tensor &W1 = in[0], &b1 = in[1], &W2 = in[2], &b2 = in[3];
         const Tensor& x = c[0];
         Tensor h = gelu(matmul(x, W1) + b1);
         return cross_entropy(matmul(h, W2) + b2, tensor({0, 2, 1, 2, 0}));
       }},
      {"attention",
       [](const Tensors& in, const Tensors& c) {
         const Tensor &q = in[0], &k = in[1], &v = in[2];
         const Tensor& w = c[0];
         Tensor a = softmax(matmul(q, k.transpose(0, 1)) / std::sqrt(2.0), -1);
         return sum(matmul(a, v) * w);
       }},
      {"causal_attention",
       [](const Tensors& in, const Tensors& c) {
         const Tensor &q = in[0], &k = in[1], &v = in[2];
         const Tensor& w = c[0];
         Tensor mask = triu(ones({3, 3}, kFloat64), 1).bool_();
         Tensor s = masked_fill(matmul(q, k.transpose(0, 1)), mask, -INFINITY) / std::sqrt(2.0);
         return sum(matmul(softmax(s, -1), v) * w);
       }},
      {"layer_norm_sq",
       [](const Tensors& in, const Tensors& c) {
         const Tensor &x = in[0], &w = in[1], &b = in[2];
         const Tensor& u = c[0];
         return sum(pow(layer_norm(x, {4}, w, b), 2.0) * u);
       }},
      {"cross_entropy", [](const Tensors& in, const Tensors&) { return cross_entropy(in[0], tensor({0, 2, 1, 2})); }},
      {"cross_entropy_ignore",
       [](const Tensors& in, const Tensors&) { return cross_entropy(in[0], tensor({0, 2, 1, 2}), /*ignore_index=*/2); }},
      {"log_softmax_sigmoid_exp_log",
       [](const Tensors& in, const Tensors&) {
         const Tensor &x = in[0], &y = in[1];
         Tensor a = log_softmax(x, -1) * sigmoid(y);  // (2, 3) * (3)
         Tensor b = log(sum(exp(0.5 * x), {0}) + 1.0) * y;
         return sum(a) + sum(b);
       }},
      {"elementwise_mix",
       [](const Tensors& in, const Tensors&) {
         const Tensor &x = in[0], &y = in[1];  // > 0.5
         Tensor t = sqrt(x) / (y + 2.0) + pow(x, 3.0) * y - relu(x - 1.0) * y + log(x / y) + pow(x, y);
         return sum(t);
       }},
      {"linear_and_unused",
       [](const Tensors& in, const Tensors& c) {
         // y enters linearly (H[1][1] = 0), z (in[2]) not at all (its blocks are 0)
         const Tensor &x = in[0], &y = in[1];
         const Tensor& u = c[0];
         return sum(exp(x)) + sum(x * y) + sum(y * u);
       }},
      {"max_mean",
       [](const Tensors& in, const Tensors&) {
         const Tensor& x = in[0];
         return sum(pow(max(x, 1).first, 2.0)) + sum(pow(mean(x, {0}), 2.0)) * max(x);
       }},
      {"softmax_dim0", [](const Tensors& in, const Tensors&) { return softmax(in[0], 0); }},
      {"matmul", [](const Tensors& in, const Tensors&) { return matmul(in[0], in[1]); }},
      {"composite",
       [](const Tensors& in, const Tensors&) {
         const Tensor &x = in[0], &y = in[1];  // y > 0.5
         return tanh(x) * y - x / (y * y + 1.0) + sqrt(sigmoid(x - y)) + relu(x) * 2.0;
       }},
      {"cat_stack_index",
       [](const Tensors& in, const Tensors&) {
         Tensor m = cat({in[0], in[1]}, 1);  // (2, 5)
         Tensor s = stack({m, m * m}, 0);    // (2, 2, 5)
         return index_select(s, 2, tensor({4, 0, 4, 1}));
       }},
      {"views",
       [](const Tensors& in, const Tensors&) {
         const Tensor& x = in[0];  // (3, 4)
         Tensor a = x.t().reshape({2, 6}).slice(1, 1, std::nullopt, 2);  // (2, 3)
         Tensor b = x.reshape({12}).slice(0, 3, 9).view({2, 3});
         Tensor e = x.select(1, 2).unsqueeze(0).expand({2, 3});
         return triu(a * b, 1) + tril(e + a, 0);
       }},
      {"embedding_layer_norm",
       [](const Tensors& in, const Tensors&) {
         const Tensor &w = in[0], &g = in[1], &b = in[2];
         Tensor e = embedding(w, tensor({{1, 4}, {1, 0}, {3, 1}}));  // (3, 2, 4)
         return layer_norm(e, {4}, g, b);
       }},
      {"masked_log_softmax",
       [](const Tensors& in, const Tensors&) {
         Tensor mask = tensor({{false, true, false, false}, {false, false, false, true}, {true, false, false, false}});
         return log_softmax(masked_fill(in[0], mask, -1e9), -1);
       }},
      {"mse_two", [](const Tensors& in, const Tensors&) { return mse_loss(in[0], in[1]); }},
      {"reductions",
       [](const Tensors& in, const Tensors&) {
         const Tensor& x = in[0];
         return cat({max(x, 1).first, mean(x, {0}), sum(x, {1}), max(x).unsqueeze(0)});
       }},
      {"gelu_tanh_pow",
       [](const Tensors& in, const Tensors&) { return gelu(in[0], "tanh") * pow(in[0], 1.5); }},  // x > 0.5
      {"unused_input", [](const Tensors& in, const Tensors&) { return in[0] * 2.0 + 1.0; }},
      {"mlp_forward",
       [](const Tensors& in, const Tensors&) {
         const Tensor &x = in[0], &W = in[1], &b = in[2];
         return tanh(matmul(x, W) + b);
       }},
      {"softmax_matmul", [](const Tensors& in, const Tensors&) { return softmax(matmul(in[0], in[1]), -1); }},
      {"scalar_to_vector",
       [](const Tensors& in, const Tensors& c) {
         const Tensor &s = in[0], &u = c[0];  // s 0-dim, u (3)
         return exp(s * u);
       }},
      // forward mode: one function per family of ops
      {"softmax_lastdim", [](const Tensors& in, const Tensors&) { return softmax(in[0], -1); }},
      {"log_softmax_dim0", [](const Tensors& in, const Tensors&) { return log_softmax(in[0], 0); }},
      {"layer_norm", [](const Tensors& in, const Tensors&) { return layer_norm(in[0], {4}, in[1], in[2]); }},
      {"gelu_exact", [](const Tensors& in, const Tensors&) { return gelu(in[0]); }},
      {"regression_losses",
       [](const Tensors& in, const Tensors&) {
         const Tensor &a = in[0], &b = in[1];
         return l1_loss(a, b) + smooth_l1_loss(a, b, "mean", 0.5) + huber_loss(a, b, "mean", 0.7) + mse_loss(a, b, "sum");
       }},
      {"classification_losses",
       [](const Tensors& in, const Tensors& c) {
         const Tensor &x = in[0], &y = in[1], &t = c[0];  // t in (0, 1)
         Tensor bce = binary_cross_entropy(sigmoid(x), t);
         Tensor bcel = binary_cross_entropy_with_logits(x, t, {}, "mean", tensor({1.5, 0.5, 2.0}, kFloat64));
         Tensor kl = kl_div(log_softmax(x, -1), softmax(y, -1), "batchmean");
         Tensor nll = nll_loss(log_softmax(y, -1), tensor({2, 0, 1, 1}));
         Tensor ce = cross_entropy(x, tensor({1, 0, 2, 2}), -100, "mean", 0.1);
         return stack({bce, bcel, kl, nll, ce});
       }},
      {"unary_chain",
       [](const Tensors& in, const Tensors&) {
         const Tensor& x = in[0];  // x > 0.5
         Tensor a = exp(-x) + log(x) + tanh(x) + sigmoid(x) + relu(x - 1.0);
         Tensor b = sin(x) * cos(x) + sqrt(x) + rsqrt(x) + reciprocal(x) + abs(x - 1.3);
         Tensor d = silu(x) + softplus(x, 2.0) + elu(x - 1.0) + leaky_relu(x - 1.0, 0.1) + log1p(x);
         Tensor e = expm1(x) + erf(x) + square(x) + pow(x, 2.5) + (-x) + clamp(x, 0.7, 1.2);
         return a * b + d * e;
       }},
      {"binary_mix",
       [](const Tensors& in, const Tensors&) {
         const Tensor &x = in[0], &y = in[1];  // x, y > 0.5; (2, 3) and (3)
         return x * y + x / y - (x - y) + pow(x, y) + maximum(x, y * 1.1) + minimum(x, y * 0.9) + where(gt(x, y), x * x, y);
       }},
      {"stats",
       [](const Tensors& in, const Tensors&) {
         const Tensor& x = in[0];
         return cat({var(x, {1}), ag::std(x, {0}, false), logsumexp(x, {1}), max(x, 0).first});
       }},
      {"prod_cumsum_norm",
       [](const Tensors& in, const Tensors&) {
         const Tensor& x = in[0];
         return cat({prod(x, 1), cumsum(x, 0).reshape({-1}), norm(x).reshape({1}), norm(x, 1, {0})});
       }},
      {"gathers",
       [](const Tensors& in, const Tensors&) {
         const Tensor& x = in[0];
         Tensor idx = tensor({{0, 2}, {1, 1}, {3, 0}});
         Tensor g = gather(x, 1, idx);
         Tensor s = scatter_add(zeros({3, 4}, kFloat64), 1, idx, x.slice(1, 0, 2));
         Tensor m = masked_select(x, gt(x, 0.0));
         return cat({g.reshape({-1}), s.reshape({-1}), m, x.index({tensor({2, 0, 2})}).reshape({-1})});
       }},
      {"rearrange",
       [](const Tensors& in, const Tensors&) {
         const Tensor& x = in[0];  // (2, 3, 4)
         Tensor a = roll(flip(x.permute({2, 0, 1}), {0}), 1, 2);
         Tensor b = repeat(x, {1, 2, 1}).slice(1, 1, 5, 2).transpose(1, 2);
         return cat({a.reshape({-1}), b.reshape({-1}), sum(flatten(x, 1), {0})});
       }},
      {"batched_linear",
       [](const Tensors& in, const Tensors& c) { return linear(matmul(in[0], in[1]), c[0], in[2]); }},
      {"bmm", [](const Tensors& in, const Tensors&) { return matmul(in[0], in[1]); }},
      {"mlp_tanh_sq",
       [](const Tensors& in, const Tensors& c) {
         const Tensor &W1 = in[0], &b1 = in[1], &W2 = in[2], &b2 = in[3];
         const Tensor &x = c[0], &y = c[1];
         Tensor h = tanh(matmul(x, W1) + b1);
         return mean(pow(matmul(h, W2) + b2 - y, 2.0));
       }},
  };
  return table;
}

// ---------------------------------------------------------------- the golden file
struct Case {
  std::string kind, fn;
  std::vector<golden::Data> inputs, consts, vs;
  golden::Data output;
  std::vector<golden::Data> results;
  std::string label() const { return kind + " " + fn; }
};

std::vector<golden::Data> read_tensors(std::istream& f, const std::string& count_kw, const std::string& kw) {
  const int n = std::stoi(golden::expect_keyword(f, count_kw));
  std::vector<golden::Data> out;
  for (int i = 0; i < n; ++i) out.push_back(golden::parse(golden::expect_keyword(f, kw)));
  return out;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    auto f = golden::open("higher_order_cases.txt");
    std::vector<Case> cs;
    std::string line;
    while (std::getline(f, line)) {
      if (line.empty()) continue;
      std::istringstream head(line);
      std::string kw;
      Case c;
      head >> kw >> c.kind >> c.fn;
      if (kw != "case" || c.fn.empty()) throw std::runtime_error("golden: expected 'case KIND FN', got: " + line);
      c.inputs = read_tensors(f, "inputs", "input");
      c.consts = read_tensors(f, "consts", "const");
      c.vs = read_tensors(f, "vs", "v");
      c.output = golden::parse(golden::expect_keyword(f, "output"));
      c.results = read_tensors(f, "results", "result");
      cs.push_back(std::move(c));
    }
    return cs;
  }();
  return all;
}

Tensors make_all(const std::vector<golden::Data>& ds) {
  Tensors out;
  for (const auto& d : ds) out.push_back(d.make(kFloat64));
  return out;
}

std::string index_string(std::size_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = static_cast<int64_t>(flat) % shape[d];
    flat /= static_cast<std::size_t>(shape[d]);
  }
  std::string s = "[";
  for (std::size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

// Every element within 1e-10 * (1 + |want|); at most 5 failing elements reported per tensor.
void expect_close(const Tensor& got, const golden::Data& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << ": undefined tensor";
  ASSERT_EQ(got.shape().vec(), want.shape) << what << ": shape";
  EXPECT_EQ(got.dtype(), kFloat64) << what << ": dtype";
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.values.size()) << what << ": element count";
  int bad = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double w = want.values[i];
    if (std::abs(g[i] - w) <= 1e-10 * (1 + std::abs(w))) continue;
    if (++bad <= 5)
      ADD_FAILURE() << what << ", element " << i << " " << index_string(i, want.shape) << ": got " << g[i] << " want "
                    << w << " (diff " << g[i] - w << ")";
  }
  if (bad > 5) ADD_FAILURE() << what << ": " << bad << " elements differ in all (first 5 shown)";
}

// Runs one case through ag::functional; returns {output, results in the file's order}.
std::pair<Tensor, Tensors> run(const Case& c, const Tensors& ins, bool create_graph) {
  const Tensors consts = make_all(c.consts);
  const Twin& twin = twins().at(c.fn);
  const functional::Fn fn = [&](const Tensors& x) { return twin(x, consts); };
  const Tensors vs = make_all(c.vs);
  if (c.kind == "hessian" || c.kind == "func_hessian") {
    auto h = c.kind == "hessian" ? functional::hessian(fn, ins, create_graph) : func::hessian(fn, ins);
    EXPECT_EQ(h.size(), ins.size()) << c.label() << ": hessian rows";
    Tensors flat;
    for (const auto& row : h) {
      EXPECT_EQ(row.size(), ins.size()) << c.label() << ": hessian columns";
      flat.insert(flat.end(), row.begin(), row.end());
    }
    return {fn(ins).detach(), flat};
  }
  if (c.kind == "jacobian") return {fn(ins).detach(), functional::jacobian(fn, ins, create_graph)};
  if (c.kind == "vjp") return functional::vjp(fn, ins, vs.empty() ? Tensor() : vs[0], create_graph);
  if (c.kind == "jvp") return functional::jvp(fn, ins, vs, create_graph);
  if (c.kind == "hvp") return functional::hvp(fn, ins, vs, create_graph);
  if (c.kind == "vhp") return functional::vhp(fn, ins, vs, create_graph);
  // forward mode
  if (c.kind == "fwd_jvp") {  // torch.autograd.forward_ad: dual inputs, the output's tangent
    forward_ad::DualLevel level;
    Tensors duals;
    for (std::size_t i = 0; i < ins.size(); ++i) duals.push_back(forward_ad::make_dual(ins[i], vs[i]));
    const forward_ad::UnpackedDual y = forward_ad::unpack_dual(fn(duals));
    EXPECT_TRUE(y.tangent.defined()) << c.label() << ": no tangent";
    return {y.primal, {y.tangent}};
  }
  if (c.kind == "func_jvp") {
    auto [y, t] = func::jvp(fn, ins, vs);
    return {y, {t}};
  }
  if (c.kind == "jacfwd") return {fn(ins).detach(), func::jacfwd(fn, ins)};
  if (c.kind == "fwd_over_rev") {  // the jvp of the gradient
    Tensors hv;
    for (std::size_t i = 0; i < ins.size(); ++i) {
      const functional::Fn grad_i = [&](const Tensors& x) { return grad({fn(x)}, x, {}, std::nullopt, create_graph)[i]; };
      Tensors at;
      for (const Tensor& x : ins) at.push_back(x.detach().requires_grad_());
      hv.push_back(func::jvp(grad_i, at, vs).second);
    }
    return {fn(ins).detach(), hv};
  }
  ADD_FAILURE() << c.label() << ": unknown kind";
  return {};
}

void check(const Case& c, const Tensor& out, const Tensors& results) {
  expect_close(out, c.output, c.label() + ": output");
  ASSERT_EQ(results.size(), c.results.size()) << c.label() << ": number of results";
  for (std::size_t r = 0; r < results.size(); ++r) {
    std::string what = c.label() + ": result " + std::to_string(r);
    if (c.kind == "hessian" || c.kind == "func_hessian") {
      const std::size_t n = c.inputs.size();
      what += " (H[" + std::to_string(r / n) + "][" + std::to_string(r % n) + "])";
    }
    expect_close(results[r], c.results[r], what);
  }
}

}  // namespace

TEST(FunctionalGolden, EveryCaseHasATwinAndEveryKindIsCovered) {
  const auto& cs = cases();
  ASSERT_GE(cs.size(), 40u);
  std::set<std::string> names, kinds;
  for (const auto& c : cs) {
    names.insert(c.fn);
    kinds.insert(c.kind);
    EXPECT_TRUE(twins().count(c.fn)) << c.fn << " (case " << c.label() << ") has no C++ twin";
  }
  for (const auto& [name, twin] : twins()) EXPECT_TRUE(names.count(name)) << name << " is used by no golden case";
  for (const char* k : {"hessian", "jacobian", "vjp", "jvp", "hvp", "vhp", "fwd_jvp", "func_jvp", "jacfwd", "func_hessian",
                        "fwd_over_rev"})
    EXPECT_TRUE(kinds.count(k)) << "no " << k << " case in the golden file";
  EXPECT_EQ(kinds.size(), 11u) << "unknown kind in the golden file";
}

TEST(FunctionalGolden, MatchesPyTorch) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.label());
    if (!twins().count(c.fn)) continue;  // reported by the test above
    const Tensors ins = make_all(c.inputs);
    std::pair<Tensor, Tensors> got;
    try {
      got = run(c, ins, /*create_graph=*/false);
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.label() << ": threw " << e.what();
      continue;
    }
    const auto& [out, results] = got;
    check(c, out, results);
    // Without create_graph everything comes back detached.
    for (std::size_t r = 0; r < results.size(); ++r) {
      if (results[r].defined()) {
        EXPECT_FALSE(results[r].requires_grad()) << c.label() << ": result " << r;
      }
    }
    if (c.kind != "hessian" && c.kind != "func_hessian" && c.kind != "jacobian" && c.kind != "jacfwd" && out.defined()) {
      EXPECT_FALSE(out.requires_grad()) << c.label() << ": output";
    }
  }
}

// The same numbers with create_graph, on inputs that require grad: their .grad is never touched.
TEST(FunctionalGolden, MatchesPyTorchWithCreateGraph) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.label());
    if (!twins().count(c.fn)) continue;
    Tensors ins = make_all(c.inputs);
    for (auto& x : ins) x.requires_grad_();
    std::pair<Tensor, Tensors> got;
    try {
      got = run(c, ins, /*create_graph=*/true);
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.label() << ": threw " << e.what();
      continue;
    }
    check(c, got.first, got.second);
    for (std::size_t i = 0; i < ins.size(); ++i)
      EXPECT_FALSE(ins[i].grad().defined()) << c.label() << ": input " << i << " got a .grad";
  }
}
