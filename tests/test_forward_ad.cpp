// Forward mode (autograd/forward_ad.h, autograd/func.h): dual tensors as PyTorch 1.13's
// torch.autograd.forward_ad (every error message asserted), tangents freed with their level, views
// and in-place ops on dual tensors, NoGradGuard; then every op of the op table pushed forward on
// its golden samples (contiguous and strided): the jvp against central finite differences and
// <v, J u> by forward mode against <J^T v, u> by reverse mode to 1e-12; and ag::func against
// ag::functional (jvp, jacobian, hessian, the forward-over-reverse hvp).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "golden_io.h"
#include "op_table.h"
#include "test_util.h"

using namespace ag;
using forward_ad::DualLevel;
using forward_ad::make_dual;
using forward_ad::unpack_dual;
using testutil::error_of;

namespace {

Tensor f64(const std::vector<double>& v, const std::vector<int64_t>& shape) { return from_vector(v, shape, kFloat64); }

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  EXPECT_EQ(va.size(), vb.size());
  double m = 0;
  for (std::size_t i = 0; i < va.size() && i < vb.size(); ++i) m = std::max(m, std::abs(va[i] - vb[i]));
  return m;
}

}  // namespace

// ---- the dual-tensor API, as torch.autograd.forward_ad ----

TEST(ForwardAD, MakeDualOutsideALevelIsPyTorchsError) {
  EXPECT_EQ(error_of([] { make_dual(ones({2}), ones({2})); }),
            "[make_dual] Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first.");
}

TEST(ForwardAD, ASecondLevelWhileOneIsAliveIsRefused) {
  DualLevel level;
  EXPECT_EQ(error_of([] { DualLevel nested; }), "[dual_level] Nested forward mode AD is not supported at the moment");
  EXPECT_TRUE(forward_ad::level_alive());  // the refused one did not end the live one
}

TEST(ForwardAD, ATangentOfAnotherShapeNamesBothShapes) {
  DualLevel level;
  EXPECT_EQ(error_of([] { make_dual(ones({2}, kFloat64), ones({3}, kFloat64)); }),
            "[make_dual] Trying to set a forward gradient that has a different size than that of the original Tensor, "
            "this is not supported. Tensor is of size [2] while the given forward gradient is of size [3].");
}

TEST(ForwardAD, DtypesFollowPyTorch) {
  DualLevel level;
  // an integer primal or tangent is refused; a float32 tangent of a float64 primal stays float32 (1.13)
  EXPECT_EQ(error_of([] { make_dual(ones({2}, kInt64), ones({2})); }),
            "[make_dual] Expected primal to be floating point or complex, but got: torch.int64");
  EXPECT_EQ(error_of([] { make_dual(ones({2}), ones({2}, kInt64)); }),
            "[make_dual] Expected tangent to be floating point or complex, but got: torch.int64");
  const Tensor d = make_dual(ones({2}, kFloat64), ones({2}, kFloat32));
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(unpack_dual(d).tangent.dtype(), kFloat32);
  EXPECT_EQ(unpack_dual(exp(d)).tangent.dtype(), kFloat64);  // promoted by the rule's ops
}

TEST(ForwardAD, MakeDualOfADualIsRefused) {
  DualLevel level;
  const Tensor d = make_dual(ones({2}), ones({2}));
  EXPECT_EQ(error_of([&] { make_dual(d, ones({2})); }),
            "[make_dual] Making a dual Tensor based on a Tensor that already has a forward gradient at the same level 0 "
            "is not supported.");
}

TEST(ForwardAD, UnpackDualGivesAViewOfThePrimalAndTheTangent) {
  DualLevel level;
  const Tensor p = f64({1, 2, 3}, {3}), u = f64({10, 20, 30}, {3});
  const Tensor d = make_dual(p, u);
  EXPECT_TRUE(d.shares_storage(p));
  EXPECT_FALSE(unpack_dual(p).tangent.defined());  // the primal itself carries none
  const auto [primal, tangent] = unpack_dual(d);
  EXPECT_TRUE(primal.shares_storage(p));
  EXPECT_FALSE(unpack_dual(primal).tangent.defined());
  EXPECT_TRUE(tangent.shares_storage(u));  // laid out as the primal: kept as it is
  EXPECT_EQ(tangent.to_vector<double>(), (std::vector<double>{10, 20, 30}));
  // a tangent laid out otherwise is copied into the primal's layout
  const Tensor q = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor ut = f64({1, 2, 3, 4, 5, 6}, {3, 2}).t();
  const Tensor dq = unpack_dual(make_dual(q, ut)).tangent;
  EXPECT_EQ(dq.strides(), q.strides());
  EXPECT_EQ(dq.to_vector<double>(), ut.contiguous().to_vector<double>());
}

TEST(ForwardAD, AMissingTangentIsZeroAndNeverMaterialised) {
  DualLevel level;
  const Tensor x = make_dual(f64({1, 2}, {2}), f64({1, 1}, {2}));
  const Tensor c = f64({3, 4}, {2});
  EXPECT_FALSE(unpack_dual(exp(c)).tangent.defined());  // no dual input: no tangent
  const Tensor t = unpack_dual(x * c).tangent;           // dx c + x dc with dc = 0
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{3, 4}));
}

TEST(ForwardAD, LeavingTheLevelDropsEveryTangent) {
  Tensor x, y;
  {
    DualLevel level;
    x = make_dual(f64({0.5, 1.5}, {2}), f64({1, 2}, {2}));
    y = exp(x);
    ASSERT_TRUE(unpack_dual(y).tangent.defined());
  }
  EXPECT_FALSE(forward_ad::level_alive());
  EXPECT_EQ(x.impl()->fw_grad, nullptr);
  EXPECT_EQ(y.impl()->fw_grad, nullptr);
  EXPECT_FALSE(unpack_dual(y).tangent.defined());
  DualLevel again;  // a new level starts with no tangent
  EXPECT_FALSE(unpack_dual(exp(x)).tangent.defined());
}

TEST(ForwardAD, TangentsAndNodesAreFreedOver1000Levels) {
  const Tensor p = f64({0.1, -0.2, 0.3, 0.4, -0.5, 0.6}, {2, 3}).requires_grad_();
  const Tensor w = f64({0.3, -0.1, 0.2, 0.5, 0.4, -0.6}, {3, 2});
  const int64_t nodes_before = live_nodes();
  std::vector<std::weak_ptr<TensorImpl>> made;
  Tensor kept;  // outlives its level: its tangent must still go
  for (int i = 0; i < 1000; ++i) {
    DualLevel level;
    const Tensor x = make_dual(p, ones_like(p));
    const Tensor y = sum(tanh(matmul(x, w)));
    const Tensor t = unpack_dual(y).tangent;
    ASSERT_TRUE(t.defined());
    made.push_back(x.impl_ptr());
    made.push_back(t.impl_ptr());
    kept = y;
  }
  EXPECT_EQ(kept.impl()->fw_grad, nullptr);
  kept = Tensor();
  int64_t alive = 0;
  for (const auto& w : made) alive += !w.expired();
  EXPECT_EQ(alive, 0) << "tensors made in a level are still alive after it";
  EXPECT_EQ(live_nodes(), nodes_before);
}

TEST(ForwardAD, NoGradGuardLeavesForwardModeOn) {
  DualLevel level;
  const Tensor p = f64({1, 2}, {2}).requires_grad_();
  const Tensor x = make_dual(p, f64({1, -1}, {2}));
  NoGradGuard no_grad;
  const Tensor y = x * 2.0;
  EXPECT_FALSE(y.requires_grad());  // reverse mode is off
  EXPECT_EQ(unpack_dual(y).tangent.to_vector<double>(), (std::vector<double>{2, -2}));  // forward mode is not
}

TEST(ForwardAD, AViewOfADualCarriesTheSameViewOfItsTangent) {
  DualLevel level;
  const Tensor b = make_dual(arange(0.0, 6.0, 1.0, kFloat64).view({2, 3}), arange(0.0, 6.0, 1.0, kFloat64).view({2, 3}) * 10.0);
  const Tensor v = b[1];
  const Tensor t = unpack_dual(v).tangent;
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{30, 40, 50}));
  EXPECT_TRUE(t.shares_storage(unpack_dual(b).tangent));  // a view of the base's tangent
  EXPECT_EQ(unpack_dual(b.t()).tangent.to_vector<double>(), (std::vector<double>{0, 30, 10, 40, 20, 50}));
}

TEST(ForwardAD, InPlaceOpsOnDualsUpdateTheTangent) {
  DualLevel level;
  // x.add_(y) with dual y: x gets y's tangent (it had none), as PyTorch
  Tensor x = ones({2}, kFloat64);
  const Tensor y = make_dual(ones({2}, kFloat64), full({2}, 3.0, kFloat64));
  x.add_(y);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{2, 2}));
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{3, 3}));
  // z.mul_(w): dz = dz w + z dw = 1 * 1 + 1 * 5
  Tensor z = make_dual(ones({2}, kFloat64), ones({2}, kFloat64));
  z.mul_(make_dual(ones({2}, kFloat64), full({2}, 5.0, kFloat64)));
  EXPECT_EQ(unpack_dual(z).tangent.to_vector<double>(), (std::vector<double>{6, 6}));
  // through a view: the base's tangent is updated
  const Tensor b = make_dual(zeros({2, 3}, kFloat64), zeros({2, 3}, kFloat64));
  b[0].add_(make_dual(ones({3}, kFloat64), full({3}, 7.0, kFloat64)));
  EXPECT_EQ(unpack_dual(b).tangent.to_vector<double>(), (std::vector<double>{7, 7, 7, 0, 0, 0}));
  // a view of a base without a tangent: the base gets one (zeros elsewhere)
  Tensor c = zeros({2, 3}, kFloat64);
  c[1].copy_(make_dual(ones({3}, kFloat64), full({3}, 2.0, kFloat64)));
  EXPECT_EQ(unpack_dual(c).tangent.to_vector<double>(), (std::vector<double>{0, 0, 0, 2, 2, 2}));
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{0, 0, 0, 1, 1, 1}));
  // fill_ writes a constant: the tangent becomes 0
  c.fill_(4.0);
  EXPECT_EQ(unpack_dual(c).tangent.to_vector<double>(), (std::vector<double>(6, 0.0)));
  // masked_fill_: zero where filled
  Tensor m = make_dual(ones({3}, kFloat64), full({3}, 9.0, kFloat64));
  m.masked_fill_(tensor({true, false, true}), 0.0);
  EXPECT_EQ(unpack_dual(m).tangent.to_vector<double>(), (std::vector<double>{0, 9, 0}));
}

TEST(ForwardAD, AnInPlaceOpOnAViewOfADualInAGraphKeepsBothModes) {
  // b = 3 x is in a graph and dual; v = b[0] written in place (CopySlices on b), then used
  const Tensor p = f64({0.1, 0.2, 0.3, 0.4}, {2, 2}).requires_grad_();
  DualLevel level;
  const Tensor b = make_dual(p, ones_like(p)) * 3.0;
  const Tensor w = b.t();  // a view taken before the write: its history is refreshed when used
  Tensor v = b[0];
  v.mul_(2.0);
  const Tensor y = sum(v * v);
  // v = 6 p[0], y = 36 sum(p[0]^2): dy = 72 sum(p[0] u[0]) with u = 1, dy/dp[0] = 72 p[0]
  EXPECT_NEAR(unpack_dual(y).tangent.item(), 72 * 0.3, 1e-12);
  const Tensor z = sum(w * w);  // AsStridedBackward0 on w; w keeps the view of b's tangent
  EXPECT_NEAR(unpack_dual(z).tangent.item(), 72 * 0.3 + 18 * 0.7, 1e-12);
  EXPECT_EQ(unpack_dual(b).tangent.to_vector<double>(), (std::vector<double>{6, 6, 3, 3}));  // b's tangent, through v
  EXPECT_NEAR(ag::grad({y}, {p})[0].to_vector<double>()[0], 72 * 0.1, 1e-12);
}

TEST(ForwardAD, AnOpWithoutAJvpRuleThrowsRatherThanDropTheTangent) {
  DualLevel level;
  const Tensor x = make_dual(f64({0.2, 0.7}, {2}), f64({1, 1}, {2}));
  // an op recorded with a backward rule and no jvp rule: PyTorch's error naming it
  auto twice = [](const Tensor& in) {
    Tensor out = zeros(in.shape().vec(), in.dtype());  // (its values do not matter here)
    if (needs_grad(in)) record(out, "TwiceBackward0", {in}, [](const Tensor& g) -> Grads { return {g * 2.0}; });
    return out;
  };
  const std::string e = error_of([&] { twice(x); });
  EXPECT_NE(e.find("[twice] Trying to use forward AD with twice that does not support it"), std::string::npos) << e;
  EXPECT_NE(e.find("TwiceBackward0 has no jvp rule"), std::string::npos) << e;
}

TEST(ForwardAD, BernoulliGivesPyTorchsTangents) {
  DualLevel level;
  const Tensor p = make_dual(f64({0.2, 0.7}, {2}), f64({1, 1}, {2}));
  // bernoulli(p): a zero tangent, materialised; bernoulli(t, p) and t.bernoulli_(p) do not depend
  // on t's values: none, and a zero one (PyTorch 1.13 gives the same three)
  const Tensor a = unpack_dual(bernoulli(p)).tangent;
  ASSERT_TRUE(a.defined());
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{0, 0}));
  EXPECT_FALSE(unpack_dual(bernoulli(p, 0.3)).tangent.defined());
  Tensor c = p.clone();
  c.bernoulli_(0.3);
  const Tensor ct = unpack_dual(c).tangent;
  ASSERT_TRUE(ct.defined());
  EXPECT_EQ(ct.to_vector<double>(), (std::vector<double>{0, 0}));
}

TEST(ForwardAD, ACustomFunctionWithoutJvpThrowsPyTorchsError) {
  struct Twice : public Function<Twice> {
    static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
    static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0] * 2.0}; }
  };
  DualLevel level;
  const Tensor x = make_dual(f64({1, 2}, {2}), f64({1, 1}, {2}));
  const std::string e = error_of([&] { Twice::apply(x); });
  EXPECT_NE(e.find("You must implement the jvp function for custom autograd.Function to use it with forward mode AD"),
            std::string::npos)
      << e;
}

TEST(ForwardAD, ACustomFunctionWithJvpPushesItsTangent) {
  // y = (5 x^3 - 3 x) / 2  =>  dy = dx 3/2 (5 x^2 - 1); x kept for jvp with save_for_forward
  struct Legendre3 : public Function<Legendre3> {
    static Tensor forward(AutogradContext* ctx, const Tensor& x) {
      ctx->save_for_backward({x});
      ctx->save_for_forward({x});
      return (pow(x, 3.0) * 5.0 - x * 3.0) * 0.5;
    }
    static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
      const Tensor x = ctx->get_saved_variables()[0];
      return {g[0] * (x * x * 5.0 - 1.0) * 1.5};
    }
    static std::vector<Tensor> jvp(AutogradContext* ctx, std::vector<Tensor> dx) {
      const Tensor x = ctx->get_saved_variables()[0];
      return {dx[0] * (x * x * 5.0 - 1.0) * 1.5};
    }
  };
  const Tensor p = f64({0.5, -1.0, 2.0}, {3}).requires_grad_();
  {
    DualLevel level;
    const Tensor y = Legendre3::apply(make_dual(p, f64({1, 2, -1}, {3})));
    EXPECT_EQ(unpack_dual(y).tangent.to_vector<double>(), (std::vector<double>{1.5 * 0.25, 2 * 1.5 * 4, -1.5 * 19}));
    EXPECT_EQ(y.grad_fn()->name(), "Legendre3Backward");  // reverse mode as before
  }
  // jacfwd through it equals the Jacobian by reverse mode
  const func::Fn f = [](const std::vector<Tensor>& x) { return Legendre3::apply(x[0]); };
  EXPECT_LE(max_abs_diff(func::jacfwd(f, {p})[0], functional::jacobian(f, {p})[0]), 1e-15);
}

TEST(ForwardAD, ReverseOverForwardDifferentiatesTheTangent) {
  // y = sum(x^3), tangent u: dy = sum(3 x^2 u); d(dy)/dx = 6 x u
  const Tensor p = f64({1, 2, 3}, {3}).requires_grad_();
  const Tensor u = f64({1, -1, 2}, {3});
  Tensor t;
  {
    DualLevel level;
    t = unpack_dual(sum(pow(make_dual(p, u), 3.0))).tangent;
  }
  ASSERT_TRUE(t.requires_grad());
  const Tensor g = ag::grad({t}, {p})[0];
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{6, -12, 36}));
}

// ---- gradcheck with check_forward_ad ----

namespace {
// y = x^2 with a correct backward and a jvp that is wrong on purpose (dy = dx x)
struct WrongJvp : public Function<WrongJvp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    ctx->save_for_forward({x});
    return x * x;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    return {g[0] * ctx->get_saved_variables()[0] * 2.0};
  }
  static std::vector<Tensor> jvp(AutogradContext* ctx, std::vector<Tensor> dx) { return {dx[0] * ctx->get_saved_variables()[0]}; }
};
}  // namespace

TEST(GradcheckForwardAD, ChecksTheJacobianByForwardModeToo) {
  const Tensor x = f64({0.5, -1.0, 2.0}, {3}).requires_grad_(), y = f64({1.5, 0.3, -0.7}, {3}).requires_grad_();
  const GradcheckFn smooth = [](const std::vector<Tensor>& in) { return sin(in[0]) * exp(in[1]) + softmax(in[0] * in[1], 0); };
  GradcheckOptions both;
  both.check_forward_ad = true;
  EXPECT_TRUE(gradcheck_result(smooth, {x, y}, both).ok);
  GradcheckOptions fast = both;
  fast.fast_mode = true;
  EXPECT_TRUE(gradcheck_result(smooth, {x, y}, fast).ok);
  // a wrong jvp: reverse mode alone passes, forward mode names the mismatch
  const GradcheckFn wrong = [](const std::vector<Tensor>& in) { return WrongJvp::apply(in[0]); };
  EXPECT_TRUE(gradcheck_result(wrong, {x}, GradcheckOptions{}).ok);
  const GradcheckResult r = gradcheck_result(wrong, {x}, both);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("Jacobian computed with forward mode mismatch for output element 0 with respect to input 0"),
            std::string::npos)
      << r.message;
  const GradcheckResult rf = gradcheck_result(wrong, {x}, fast);
  EXPECT_FALSE(rf.ok);
  EXPECT_NE(rf.message.find("computed with forward mode"), std::string::npos) << rf.message;
  GradcheckOptions neither;
  neither.check_backward_ad = false;
  EXPECT_EQ(error_of([&] { gradcheck(smooth, {x, y}, neither); }),
            "[gradcheck] Expected at least one of check_forward_ad or check_backward_ad to be True");
}

TEST(GradcheckForwardAD, GradgradcheckChecksForwardOverReverse) {
  const Tensor x = f64({0.5, -1.0, 2.0}, {3}).requires_grad_(), y = f64({1.5, 0.3, -0.7}, {3}).requires_grad_();
  const GradcheckFn smooth = [](const std::vector<Tensor>& in) { return sin(in[0]) * exp(in[1]) + softmax(in[0] * in[1], 0); };
  GradgradcheckOptions o;
  o.check_fwd_over_rev = true;
  EXPECT_TRUE(gradgradcheck_result(smooth, {x, y}, {}, o).ok);
  o.check_rev_over_rev = false;
  EXPECT_TRUE(gradgradcheck_result(smooth, {x, y}, {}, o).ok);
  o.check_fwd_over_rev = false;
  EXPECT_EQ(error_of([&] { gradgradcheck(smooth, {x, y}, {}, o); }),
            "[gradgradcheck] Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True");
}

// ---- every op of the op table ----

namespace {

struct Case {
  const optable::OpInfo* op;
  int sample;
  std::vector<Tensor> inputs;
};

// The op table's golden samples (the inputs PyTorch ran each entry on: within its domain).
std::vector<Case> golden_cases() {
  std::map<std::string, const optable::OpInfo*> by_name;
  for (const optable::OpInfo& op : optable::op_table()) by_name[op.name] = &op;
  std::vector<Case> cases;
  auto f = golden::open("op_table.txt");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string kw;
    in >> kw;
    if (kw == "case") {
      std::string name;
      int sample = 0;
      in >> name >> sample;
      auto it = by_name.find(name);
      cases.push_back({it == by_name.end() ? nullptr : it->second, sample, {}});
    } else if (kw == "input" && !cases.empty()) {
      cases.back().inputs.push_back(golden::parse(line.substr(6)).make(kFloat64));
    }
  }
  std::erase_if(cases, [](const Case& c) { return c.op == nullptr || c.op->order < 1; });
  return cases;
}

Tensor random_like(const Tensor& t, std::mt19937_64& rng) {
  std::normal_distribution<double> n;
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  for (double& x : v) x = n(rng);
  return from_vector(v, t.shape().vec(), kFloat64);
}

// Per shape, a point and a tangent of `dtype`, drawn in that order from rng.
void random_points_and_tangents(const std::vector<std::vector<int64_t>>& shapes, DType dtype, std::mt19937_64& rng,
                                std::vector<Tensor>& xs, std::vector<Tensor>& us) {
  for (const auto& shape : shapes) {
    xs.push_back(random_like(zeros(shape, dtype), rng).to(dtype));
    us.push_back(random_like(zeros(shape, dtype), rng).to(dtype));
  }
}

double dot_all(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].defined() && b[i].defined()) s += sum(a[i].detach() * b[i].detach()).item();
  return s;
}

// J u by forward mode; "" or the error text of an op without a jvp rule
Tensor forward_jvp(const optable::OpInfo& op, const std::vector<Tensor>& xs, const std::vector<Tensor>& us, std::string& missing) {
  DualLevel level;
  std::vector<Tensor> duals;
  for (std::size_t i = 0; i < xs.size(); ++i) duals.push_back(make_dual(xs[i], us[i]));
  Tensor out;
  try {
    out = op.fn(duals);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.find("Trying to use forward AD with") == std::string::npos) throw;
    missing = what;
    return {};
  }
  const Tensor t = unpack_dual(out).tangent;
  EXPECT_TRUE(!t.defined() || t.shape() == out.shape()) << "tangent " << t.shape().str() << " for output " << out.shape().str();
  return t.defined() ? t.detach() : zeros_like(out);
}

std::string case_name(const Case& c) {
  std::string s = c.op->name + " sample " + std::to_string(c.sample) + " (inputs";
  for (const Tensor& t : c.inputs) s += " " + t.shape().str();
  return s + ")";
}

}  // namespace

TEST(ForwardADOpTable, JvpMatchesFiniteDifferencesAndReverseModeOnEveryOp) {
  const std::vector<Case> cases = golden_cases();
  ASSERT_GT(cases.size(), 100u);
  std::mt19937_64 rng(28);
  std::set<std::string> checked, missing_ops;
  std::map<std::string, std::string> missing_why;
  int fd_checks = 0, adjoint_checks = 0;
  for (const Case& c : cases) {
    const optable::OpInfo& op = *c.op;
    SCOPED_TRACE(case_name(c));
    std::vector<Tensor> us;
    for (const Tensor& x : c.inputs) us.push_back(random_like(x, rng));
    for (const bool strided : {false, true}) {
      SCOPED_TRACE(strided ? "strided inputs" : "contiguous inputs");
      std::vector<Tensor> xs;
      for (const Tensor& x : c.inputs) xs.push_back(strided ? testutil::strided_leaf(x).detach() : x);
      std::string missing;
      const Tensor ju = forward_jvp(op, xs, us, missing);
      if (!missing.empty()) {
        missing_ops.insert(op.name);
        missing_why[op.name] = missing;
        break;
      }
      checked.insert(op.name);
      // where the output is not finite (a mean over an empty dim) its derivative is not checked
      Tensor finite;
      {
        NoGradGuard no_grad;
        const Tensor y = op.fn(xs).to(kFloat64);
        finite = eq(y - y, 0.0);
      }
      // J u against central finite differences along u
      if (!op.fd_unusable) {
        NoGradGuard no_grad;
        const double eps = 1e-6;
        std::vector<Tensor> plus, minus;
        for (std::size_t i = 0; i < xs.size(); ++i) {
          plus.push_back(xs[i] + us[i] * eps);
          minus.push_back(xs[i] - us[i] * eps);
        }
        const Tensor fd = where(finite, (op.fn(plus).to(kFloat64) - op.fn(minus).to(kFloat64)) / (2 * eps), 0.0);
        const int64_t bad = testutil::close_mismatches<double>(where(finite, ju.to(kFloat64), 0.0), fd, 1e-4, 1e-5);
        EXPECT_EQ(bad, 0) << "jvp against finite differences: max diff " << max_abs_diff(ju.to(kFloat64), fd);
        ++fd_checks;
      }
      // <v, J u> (forward) against <J^T v, u> (reverse)
      std::vector<Tensor> leaves;
      for (const Tensor& x : xs) leaves.push_back(x.detach().requires_grad_());
      const Tensor out = op.fn(leaves);
      if (!out.requires_grad()) continue;
      const Tensor v = where(finite, random_like(out, rng), 0.0).to(out.dtype());
      const std::vector<Tensor> jtv = ag::grad({out}, leaves, {v}, std::nullopt, false, /*allow_unused=*/true);
      const double fwd = sum(where(finite, v * ju, 0.0)).item(), rev = dot_all(jtv, us);
      const double scale = std::max({1.0, std::abs(fwd), std::abs(rev)});
      // an op that rounds through float32 rounds the tangent and the gradient differently
      const double tol = op.name.find("float32") != std::string::npos ? 1e-6 : 1e-12;
      EXPECT_LE(std::abs(fwd - rev), tol * scale) << "<v, J u> = " << fwd << " by forward mode, <J^T v, u> = " << rev
                                                  << " by reverse mode";
      ++adjoint_checks;
    }
  }
  std::string list;
  for (const std::string& name : missing_ops) list += "  " + name + ": " + missing_why[name].substr(0, 120) + "\n";
  std::cout << "[forward AD] " << checked.size() << " op table entries checked (" << fd_checks << " finite-difference and "
            << adjoint_checks << " adjoint checks); " << missing_ops.size() << " without a jvp rule yet:\n"
            << list;
  EXPECT_GT(checked.size(), 100u);
  for (const std::string& name : missing_ops) EXPECT_EQ(checked.count(name), 0u) << name << " threw on one sample only";
}

TEST(ForwardADOpTable, ForwardOverReverseEqualsReverseOverReverseOnEveryOp) {
  // <w, d/du (J^T v)> by a forward pass through the backward pass, against <d/dx <J^T v, w>, u> by
  // a backward pass through it (create_graph): both the second derivative of <v, f> along u and w
  const std::vector<Case> cases = golden_cases();
  std::mt19937_64 rng(29);
  int checked = 0;
  for (const Case& c : cases) {
    const optable::OpInfo& op = *c.op;
    if (op.order < 2) continue;
    SCOPED_TRACE(case_name(c));
    for (const bool strided : {false, true}) {
      SCOPED_TRACE(strided ? "strided inputs" : "contiguous inputs");
      std::vector<Tensor> leaves, us, ws;
      for (const Tensor& x : c.inputs) {
        leaves.push_back(strided ? testutil::strided_leaf(x) : x.detach().requires_grad_());
        us.push_back(random_like(x, rng));
        ws.push_back(random_like(x, rng));
      }
      Tensor finite, v;
      {
        NoGradGuard no_grad;
        const Tensor y = op.fn(leaves).to(kFloat64);
        if (!is_floating(op.fn(leaves).dtype())) break;
        finite = eq(y - y, 0.0);
        v = where(finite, random_like(y, rng), 0.0);
      }
      // reverse over reverse
      const Tensor out = op.fn(leaves);
      if (!out.requires_grad()) break;
      const std::vector<Tensor> g = ag::grad({out}, leaves, {v.to(out.dtype())}, true, true, /*allow_unused=*/true);
      Tensor s = zeros({}, kFloat64);
      for (std::size_t i = 0; i < g.size(); ++i)
        if (g[i].defined()) s = s + sum(g[i] * ws[i]);
      double rr = 0;
      if (s.requires_grad()) rr = dot_all(ag::grad({s}, leaves, {}, std::nullopt, false, /*allow_unused=*/true), us);
      // forward over reverse
      double fr = 0;
      {
        DualLevel level;
        std::vector<Tensor> duals;
        for (std::size_t i = 0; i < leaves.size(); ++i) duals.push_back(make_dual(leaves[i], us[i]));
        const Tensor out_d = op.fn(duals);
        std::vector<Tensor> tangents;
        for (const Tensor& gi : ag::grad({out_d}, duals, {v.to(out_d.dtype())}, std::nullopt, false, /*allow_unused=*/true))
          tangents.push_back(gi.defined() ? unpack_dual(gi).tangent : Tensor());
        fr = dot_all(tangents, ws);
      }
      const double scale = std::max({1.0, std::abs(fr), std::abs(rr)});
      const double tol = op.name.find("float32") != std::string::npos ? 1e-6 : 1e-10;
      EXPECT_LE(std::abs(fr - rr), tol * scale) << "forward-over-reverse " << fr << ", reverse-over-reverse " << rr;
      ++checked;
    }
  }
  EXPECT_GT(checked, 200);
}

// ---- the jvp kernels against the rules they stand in for ----

// The jvp rules of linear, 2-D matmul, causal attention's ops and cross_entropy run a kernel when
// the tangent's computation records nothing (kernels::product_sum, causal_qk_softmax_jvp,
// causal_matmul_jvp, causal_attention_jvp (out and its tangent in one pass), cross_entropy_jvp), and their composed ag ops when it records a graph (a
// primal that requires grad: reverse-over-forward). Both must give the same tangent, on
// contiguous and strided inputs, with every subset of the inputs carrying a tangent.
TEST(JvpKernels, EqualTheRulesTheyStandInFor) {
  struct JvpCase {
    std::string name;
    std::function<Tensor(const std::vector<Tensor>&)> fn;
    std::vector<std::vector<int64_t>> shapes;
  };
  const Tensor targets = tensor({1, 4, 0, 2, 3}, kInt64);
  const std::vector<JvpCase> cases = {
      {"linear", [](auto& x) { return linear(x[0], x[1], x[2]); }, {{5, 4}, {3, 4}, {3}}},
      {"linear, 3-D input", [](auto& x) { return linear(x[0], x[1], x[2]); }, {{2, 5, 4}, {3, 4}, {3}}},
      {"linear, a bias of one", [](auto& x) { return linear(x[0], x[1], x[2]); }, {{5, 4}, {3, 4}, {1}}},
      {"mm", [](auto& x) { return matmul(x[0], x[1]); }, {{5, 4}, {4, 3}}},
      {"matmul, folded rows", [](auto& x) { return matmul(x[0], x[1]); }, {{2, 5, 4}, {4, 3}}},
      {"causal_qk_softmax", [](auto& x) { return causal_qk_softmax(x[0], x[1], 1.3); }, {{2, 6, 3}, {2, 7, 3}}},
      {"causal_qk_softmax, two row blocks", [](auto& x) { return causal_qk_softmax(x[0], x[1], 2.0); }, {{70, 3}, {70, 3}}},
      {"causal_matmul", [](auto& x) { return causal_matmul(x[0], x[1]); }, {{2, 6, 7}, {2, 7, 3}}},
      {"causal_matmul, two row blocks", [](auto& x) { return causal_matmul(x[0], x[1]); }, {{70, 70}, {70, 2}}},
      {"causal_attention's out", [](auto& x) { return causal_attention(x[0], x[1], x[2], 1.3).out; }, {{2, 5, 3}, {2, 6, 3}, {2, 6, 2}}},
      {"causal_attention's weights", [](auto& x) { return causal_attention(x[0], x[1], x[2], 1.3).weights; },
       {{2, 5, 3}, {2, 6, 3}, {2, 6, 2}}},
      {"causal_attention, two row blocks", [](auto& x) { return causal_attention(x[0], x[1], x[2], 0.7).out; },
       {{70, 3}, {70, 3}, {70, 2}}},
      {"causal_attention_output", [](auto& x) { return causal_attention_output(x[0], x[1], x[2], 1.3); },
       {{2, 5, 3}, {2, 6, 3}, {2, 6, 2}}},
      {"causal_attention_output, two row blocks", [](auto& x) { return causal_attention_output(x[0], x[1], x[2], 0.7); },
       {{70, 3}, {70, 3}, {70, 2}}},
      {"causal_self_attention", [](auto& x) { return causal_self_attention(x[0], x[1], x[2], x[3], 2, 1.3); },
       {{2, 5, 3}, {4, 3}, {4, 3}, {4, 3}}},
      {"cross_entropy", [targets](auto& x) { return cross_entropy(x[0], targets); }, {{5, 6}}},
      {"cross_entropy, ignore_index", [targets](auto& x) { return cross_entropy(x[0], targets, 4); }, {{5, 6}}},
  };
  std::mt19937_64 rng(30);
  int compared = 0;
  for (const JvpCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> xs, us;
    random_points_and_tangents(c.shapes, kFloat64, rng, xs, us);
    const std::size_t n = xs.size();
    for (const bool strided : {false, true}) {
      SCOPED_TRACE(strided ? "strided inputs" : "contiguous inputs");
      for (unsigned subset = 1; subset < (1u << n); ++subset) {
        SCOPED_TRACE("tangents on inputs (bits) " + std::to_string(subset));
        // reverse_over: the primals require grad, so the rule records its ops' graph (the composed path)
        auto tangent = [&](bool reverse_over) {
          DualLevel level;
          std::vector<Tensor> duals;
          for (std::size_t i = 0; i < n; ++i) {
            Tensor x = strided ? testutil::strided_leaf(xs[i]).detach() : xs[i].detach();
            if (reverse_over) x.requires_grad_();
            duals.push_back(subset >> i & 1u ? make_dual(x, strided ? testutil::strided_leaf(us[i]).detach() : us[i]) : x);
          }
          const Tensor t = unpack_dual(c.fn(duals)).tangent;
          if (t.defined() && !reverse_over) EXPECT_FALSE(t.requires_grad()) << "the kernel's path records no graph";
          return t.defined() ? t.detach() : Tensor();
        };
        const Tensor kernel = tangent(false), rule = tangent(true);
        ASSERT_EQ(kernel.defined(), rule.defined());
        if (!kernel.defined()) continue;  // the weights with a tangent on v alone: none
        ASSERT_EQ(kernel.shape(), rule.shape());
        EXPECT_EQ(testutil::close_mismatches<double>(kernel, rule, 1e-12, 1e-12), 0) << "max diff " << max_abs_diff(kernel, rule);
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 2 * (8 * 7 + 6 * 3 + 2 * 1 - 1 + 15));  // 8 cases of 3 inputs, 6 of 2, 2 of 1, 1 of 4
}

// causal_attention_output computes out and its tangent in one pass when nothing records: out keeps
// the forward's bits, inf and NaN included.
TEST(JvpKernels, AttentionOutputWithItsTangentKeepsTheForwardsBits) {
  for (const DType dtype : {kFloat32, kFloat64}) {
    manual_seed(5);
    Tensor q = randn({2, 3, 70, 4}, dtype), k = randn({2, 3, 70, 4}, dtype), v = randn({2, 3, 70, 5}, dtype);
    {
      NoGradGuard no_grad;
      q.index_put_({0, 1, 3, 2}, std::numeric_limits<double>::infinity());
      v.index_put_({1, 0, 9, 1}, std::numeric_limits<double>::quiet_NaN());
    }
    const Tensor plain = causal_attention_output(q, k, v, 2.0);
    DualLevel level;
    const Tensor dual = causal_attention_output(make_dual(q, randn_like(q)), make_dual(k, randn_like(k)), v, 2.0);
    EXPECT_TRUE(unpack_dual(dual).tangent.defined());
    const Tensor primal = unpack_dual(dual).primal;
    EXPECT_EQ(dtype == kFloat32 ? testutil::bit_mismatches<float>(primal, plain) : testutil::bit_mismatches<double>(primal, plain), 0)
        << dtype_name(dtype);
    const std::vector<double> values = plain.to(kFloat64).to_vector<double>();
    EXPECT_TRUE(std::any_of(values.begin(), values.end(), [](double x) { return std::isnan(x); }));  // the NaN reached out
  }
}

// Forward-over-reverse through causal attention's fused backward: without create_graph the
// gradients' tangents come from kernels::causal_attention_backward_jvp; with it (the backward's
// graph is recorded) from the composed rule's ops, each pushing its tangent. Both must agree, with
// every subset of q, k, v and the output gradient carrying a tangent.
TEST(JvpKernels, ForwardOverReverseThroughAttentionEqualsTheComposedRule) {
  struct Case {
    std::string name;
    std::function<Tensor(const std::vector<Tensor>&)> fn;
    std::vector<std::vector<int64_t>> shapes;  // q, k, v
    DType dtype;
  };
  const std::vector<Case> cases = {
      {"causal_attention_output", [](auto& x) { return causal_attention_output(x[0], x[1], x[2], 1.3); },
       {{2, 5, 3}, {2, 6, 3}, {2, 6, 2}}, kFloat64},
      {"causal_attention_output, two row blocks", [](auto& x) { return causal_attention_output(x[0], x[1], x[2], 0.7); },
       {{70, 3}, {70, 3}, {70, 2}}, kFloat64},
      {"causal_attention's out", [](auto& x) { return causal_attention(x[0], x[1], x[2], 1.3).out; },
       {{2, 2, 6, 3}, {2, 2, 6, 3}, {2, 2, 6, 4}}, kFloat64},
      {"causal_attention_output, float32", [](auto& x) { return causal_attention_output(x[0], x[1], x[2], 2.0); },
       {{3, 9, 4}, {3, 9, 4}, {3, 9, 5}}, kFloat32},
  };
  std::mt19937_64 rng(31);
  int compared = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> xs, us;
    random_points_and_tangents(c.shapes, c.dtype, rng, xs, us);
    Tensor out_shape;
    {
      NoGradGuard no_grad;
      out_shape = c.fn(xs);
    }
    const Tensor gout = random_like(out_shape, rng).to(c.dtype), dgout = random_like(out_shape, rng).to(c.dtype);
    for (const bool strided : {false, true}) {
      SCOPED_TRACE(strided ? "strided inputs" : "contiguous inputs");
      for (unsigned subset = 1; subset < 16u; ++subset) {  // bits 0-2: q, k, v; bit 3: the output gradient
        SCOPED_TRACE("tangents on (bits) " + std::to_string(subset));
        auto grads = [&](bool create_graph) {
          DualLevel level;
          std::vector<Tensor> duals;
          for (std::size_t i = 0; i < 3; ++i) {
            Tensor x = (strided ? testutil::strided_leaf(xs[i]) : xs[i]).detach().requires_grad_();
            duals.push_back(subset >> i & 1u ? make_dual(x, strided ? testutil::strided_leaf(us[i]).detach() : us[i]) : x);
          }
          const Tensor g = subset & 8u ? make_dual(gout, dgout) : gout;
          std::vector<Tensor> r;
          for (const Tensor& gi : ag::grad({c.fn(duals)}, duals, {g}, std::nullopt, create_graph)) {
            const forward_ad::UnpackedDual u = unpack_dual(gi);
            if (!create_graph) EXPECT_FALSE(u.tangent.defined() && u.tangent.requires_grad()) << "the kernel's path records nothing";
            r.push_back(u.primal.detach());
            r.push_back(u.tangent.defined() ? u.tangent.detach() : zeros_like(u.primal));
          }
          return r;
        };
        const std::vector<Tensor> kernel = grads(false), rule = grads(true);
        ASSERT_EQ(kernel.size(), 6u);
        for (std::size_t i = 0; i < kernel.size(); ++i) {
          SCOPED_TRACE(i % 2 ? "tangent of gradient " + std::to_string(i / 2) : "gradient " + std::to_string(i / 2));
          const double tol = c.dtype == kFloat32 ? 1e-5 : 1e-12;
          EXPECT_EQ(testutil::close_mismatches<double>(kernel[i].to(kFloat64), rule[i].to(kFloat64), tol, tol), 0)
              << "max diff " << max_abs_diff(kernel[i].to(kFloat64), rule[i].to(kFloat64));
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 4 * 2 * 15 * 6);
}

// ---- ag::func against ag::functional ----

namespace {

// a 2-layer MLP's loss over its weights (w1 (3, 4), w2 (4, 2)) and input x (5, 3)
Tensor mlp_loss(const std::vector<Tensor>& p) {
  const Tensor x = arange(0.0, 15.0, 1.0, kFloat64).view({5, 3}) / 10.0 - 0.7;
  const Tensor h = tanh(matmul(x, p[0]));
  const Tensor logits = matmul(h, p[1]);
  return cross_entropy(logits, tensor({0, 1, 1, 0, 1}, kInt64)) + mse_loss(h, sin(h));
}

std::vector<Tensor> mlp_params() {
  std::mt19937_64 rng(7);
  std::vector<Tensor> p{random_like(zeros({3, 4}, kFloat64), rng) * 0.5, random_like(zeros({4, 2}, kFloat64), rng) * 0.5};
  return p;
}

// a function with more outputs than inputs: (2) -> (3, 2)
Tensor tall(const std::vector<Tensor>& p) { return sigmoid(matmul(f64({1, 2, -1, 0.5, 0.3, -2}, {3, 2}), unsqueeze(p[0], 1)) * p[0]); }

}  // namespace

TEST(Func, JvpEqualsFunctionalsDoubleVjp) {
  const std::vector<Tensor> p = mlp_params();
  std::mt19937_64 rng(3);
  const std::vector<Tensor> u{random_like(p[0], rng), random_like(p[1], rng)};
  const auto [y, jv] = func::jvp(mlp_loss, p, u);
  const auto [y_ref, jv_ref] = functional::jvp(mlp_loss, p, u);
  EXPECT_LE(max_abs_diff(y, y_ref), 1e-15);
  EXPECT_LE(max_abs_diff(jv, jv_ref[0]), 1e-12);
  const auto [y_lin, lin] = func::linearize(mlp_loss, p);
  EXPECT_LE(max_abs_diff(y_lin, y_ref), 1e-15);
  EXPECT_LE(max_abs_diff(lin(u), jv_ref[0]), 1e-12);
}

TEST(Func, JacfwdAndJacrevEqualFunctionalsJacobian) {
  for (const auto& [fn, inputs] : std::vector<std::pair<func::Fn, std::vector<Tensor>>>{
           {mlp_loss, mlp_params()}, {tall, {f64({0.3, -0.8}, {2})}}}) {
    const std::vector<Tensor> ref = functional::jacobian(fn, inputs);
    const std::vector<Tensor> fwd = func::jacfwd(fn, inputs), rev = func::jacrev(fn, inputs);
    ASSERT_EQ(fwd.size(), ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) {
      EXPECT_EQ(fwd[i].shape(), ref[i].shape());
      EXPECT_EQ(rev[i].shape(), ref[i].shape());
      EXPECT_LE(max_abs_diff(fwd[i], ref[i]), 1e-12) << "jacfwd input " << i;
      EXPECT_LE(max_abs_diff(rev[i], ref[i]), 1e-14) << "jacrev input " << i;
    }
  }
}

TEST(Func, HessianByForwardOverReverseEqualsFunctionalsHessian) {
  const std::vector<Tensor> p = mlp_params();
  const auto ref = functional::hessian(mlp_loss, p);
  const auto h = func::hessian(mlp_loss, p);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t j = 0; j < p.size(); ++j) {
      EXPECT_EQ(h[i][j].shape(), ref[i][j].shape());
      EXPECT_LE(max_abs_diff(h[i][j], ref[i][j]), 1e-12) << "H[" << i << "][" << j << "]";
    }
}

TEST(Func, ForwardOverReverseHvpEqualsFunctionalsHvp) {
  const std::vector<Tensor> p = mlp_params();
  std::mt19937_64 rng(5);
  const std::vector<Tensor> v{random_like(p[0], rng), random_like(p[1], rng)};
  const auto [loss, hv_ref] = functional::hvp(mlp_loss, p, v);
  for (std::size_t i = 0; i < p.size(); ++i) {
    // the jvp of the gradient: one forward pass over one backward pass
    auto grad_i = [i](const std::vector<Tensor>& xs) { return ag::grad({mlp_loss(xs)}, xs)[i]; };
    std::vector<Tensor> leaves;
    for (const Tensor& t : p) leaves.push_back(t.detach().requires_grad_());
    const auto [g, hv] = func::jvp(grad_i, leaves, v);
    EXPECT_LE(max_abs_diff(hv, hv_ref[i]), 1e-12) << "input " << i;
  }
}

// ---- review fixes: each expected value by hand (or by reverse mode), checked against PyTorch
// 1.13 where it agrees (x.mul_(x) is the one where PyTorch 1.13 reads the updated self and gives
// dx (x² + x): ag gives the derivative of x², 2 x dx) ----

TEST(ForwardAdReview, AnInPlaceOpWhoseOperandIsSelfKeepsBothTerms) {
  DualLevel level;
  const std::vector<double> p{1, 2, 3}, u{1, -1, 2};
  auto dual = [&] { return make_dual(f64(p, {3}), f64(u, {3})); };
  Tensor x = dual();
  x.mul_(x);  // d(x²) = 2 x dx
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 4, 9}));
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{2, -4, 12}));
  x = dual();
  x += x;  // d(2x) = 2 dx
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{2, -2, 4}));
  x = dual();
  x.add_(x, 2.0);  // d(3x) = 3 dx
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{3, -3, 6}));
  x = dual();
  x.sub_(x);  // d(x - x) = 0
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{0, 0, 0}));
  x = dual();
  x.div_(x);  // d(x / x) = 0
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{0, 0, 0}));
  // on a tensor in a graph too (a non-leaf that requires grad)
  const Tensor q = f64(p, {3}).requires_grad_();
  Tensor y = make_dual(q, f64(u, {3})) * 1.0;
  y *= y;
  EXPECT_EQ(unpack_dual(y).tangent.to_vector<double>(), (std::vector<double>{2, -4, 12}));
}

TEST(ForwardAdReview, AViewTakenBeforeItsBaseGotATangentReadsTheSameViewOfIt) {
  DualLevel level;
  Tensor b = zeros({3, 2}, kFloat64);
  Tensor v = b.narrow(0, 0, 2);
  const Tensor w = b.t();
  const Tensor p = arange(0.0, 6.0, 1.0, kFloat64).view({3, 2});
  const Tensor u = arange(0.0, 6.0, 1.0, kFloat64).view({3, 2}) * 10.0 + 1.0;
  b.copy_(make_dual(p, u));
  EXPECT_EQ(unpack_dual(v).tangent.to_vector<double>(), (std::vector<double>{1, 11, 21, 31}));
  EXPECT_EQ(unpack_dual(w).tangent.to_vector<double>(), (std::vector<double>{1, 21, 41, 11, 31, 51}));
  // an op on the view pushes it: d exp(v) = exp(v) dv
  const std::vector<double> e = unpack_dual(exp(v)).tangent.to_vector<double>();
  const std::vector<double> want{1.0, std::exp(1.0) * 11, std::exp(2.0) * 21, std::exp(3.0) * 31};
  ASSERT_EQ(e.size(), want.size());
  for (std::size_t i = 0; i < e.size(); ++i) EXPECT_NEAR(e[i], want[i], 1e-12 * std::abs(want[i]));
  // an in-place op through the view updates the base's tangent
  v.mul_(2.0);
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{0, 2, 4, 6, 4, 5}));
  EXPECT_EQ(unpack_dual(b).tangent.to_vector<double>(), (std::vector<double>{2, 22, 42, 62, 41, 51}));
  EXPECT_EQ(unpack_dual(w).tangent.to_vector<double>(), (std::vector<double>{2, 42, 41, 22, 62, 51}));
  // a view in a graph, taken before its base got a tangent by copy_: refreshed, then read
  const Tensor q = f64({1, 2, 3, 4}, {2, 2}).requires_grad_();
  Tensor c = q * 1.0;
  const Tensor c0 = c[0];
  c.copy_(make_dual(f64({0.5, 1, 1.5, 2}, {2, 2}), f64({1, 2, 3, 4}, {2, 2})));
  const std::vector<double> ct = unpack_dual(exp(c0)).tangent.to_vector<double>();  // exp(c0) dc0
  ASSERT_EQ(ct.size(), 2u);
  EXPECT_NEAR(ct[0], std::exp(0.5) * 1, 1e-12);
  EXPECT_NEAR(ct[1], std::exp(1.0) * 2, 1e-12);
  // the primal unpack_dual gives (and views of it) still carry none
  const Tensor y = exp(make_dual(p, u));
  const Tensor primal = unpack_dual(y).primal;
  EXPECT_FALSE(unpack_dual(primal).tangent.defined());
  EXPECT_FALSE(unpack_dual(primal[0]).tangent.defined());
  EXPECT_FALSE(unpack_dual(exp(primal)).tangent.defined());
}

TEST(ForwardAdReview, ATensorGivenATangentInPlaceOwnsIt) {
  // x.copy_(y) gives x y's tangent as a copy: a later write into x's tangent leaves y's alone
  DualLevel level;
  Tensor x = zeros({2}, kFloat64);
  const Tensor y = make_dual(ones({2}, kFloat64), f64({3, 4}, {2}));
  x.copy_(y);
  x.mul_(2.0);
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{6, 8}));
  EXPECT_EQ(unpack_dual(y).tangent.to_vector<double>(), (std::vector<double>{3, 4}));
}

TEST(ForwardAdReview, AViewRefreshedAfterItsBaseChangedInPlaceKeepsItsTangent) {
  const Tensor p = f64({0.5, 1, 1.5, 2}, {2, 2}).requires_grad_();
  const Tensor u = f64({1, 2, 3, 4}, {2, 2});
  DualLevel level;
  // b requires grad and carries a tangent; v = b[0]; b *= 2; then exp(v): v = 2 b0, dv = 2 u0
  Tensor b = make_dual(p, u) * 1.0;
  const Tensor v = b[0];
  b.mul_(2.0);
  const Tensor y = exp(v);
  const std::vector<double> t = unpack_dual(y).tangent.to_vector<double>();
  const std::vector<double> want_t{std::exp(1.0) * 2 * 1, std::exp(2.0) * 2 * 2};
  for (std::size_t i = 0; i < 2; ++i) EXPECT_NEAR(t[i], want_t[i], 1e-12 * want_t[i]);
  // reverse mode through the refreshed view: d sum(exp(2 p0)) / dp = 2 exp(2 p0) on row 0, and
  // its tangent (forward-over-reverse, exp's rule reading its saved output's tangent): 4 exp(2 p0) u0
  const Tensor g = ag::grad({sum(y)}, {p}, {}, true, true)[0];
  const std::vector<double> gv = g.to_vector<double>();
  const std::vector<double> want_g{2 * std::exp(1.0), 2 * std::exp(2.0), 0, 0};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(gv[i], want_g[i], 1e-12 * (1 + want_g[i]));
  ASSERT_TRUE(unpack_dual(g).tangent.defined());
  const std::vector<double> gt = unpack_dual(g).tangent.to_vector<double>();
  const std::vector<double> want_gt{4 * std::exp(1.0) * 1, 4 * std::exp(2.0) * 2, 0, 0};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(gt[i], want_gt[i], 1e-12 * (1 + want_gt[i]));
  // fill_ / assignment through a view of a non-leaf dual that requires grad: zero tangent there
  Tensor x = make_dual(p, u) * 1.0;
  x[0].fill_(0.0);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 0, 1.5, 2}));
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{0, 0, 3, 4}));
  EXPECT_EQ(ag::grad({sum(x * x)}, {p})[0].to_vector<double>(), (std::vector<double>{0, 0, 3, 4}));  // 2 x, 0 where filled
  Tensor z = make_dual(p, u) * 1.0;
  z[1] = 0.0;
  EXPECT_EQ(z.to_vector<double>(), (std::vector<double>{0.5, 1, 0, 0}));
  EXPECT_EQ(unpack_dual(z).tangent.to_vector<double>(), (std::vector<double>{1, 2, 0, 0}));
}

// An in-place op in a graph with dual operands, in both orders of composition, equals its
// out-of-place form: forward-over-reverse (the node the in-place op records saves its tensors with
// their tangents) and reverse-over-forward (the tangent written into self keeps its history).
// Both had lost terms: the in-place node was recorded with tangents paused, and the tangent was
// written into self's by a plain copy.
TEST(ForwardAdReview, InPlaceOpsInAGraphComposeBothModesAsTheirOutOfPlaceForms) {
  using F = std::function<Tensor(const Tensor&, const Tensor&)>;
  // d/d(x, z) of sum(w * f(x, z)), pushed forward along (u, uz); or d/d(x, z) of its tangent
  auto second = [](const F& f, bool reverse_over_forward) {
    const Tensor x0 = f64({0.3, -1.2, 0.8}, {3}).requires_grad_(), z0 = f64({1.1, 0.4, -0.6}, {3}).requires_grad_();
    const Tensor w = f64({0.9, -0.1, 0.4}, {3});
    DualLevel level;
    const Tensor x = make_dual(x0, f64({1.0, 0.5, -2.0}, {3})), z = make_dual(z0, f64({0.2, -0.7, 1.3}, {3}));
    const Tensor y = sum(f(x, z) * w);
    std::vector<double> out;
    if (reverse_over_forward) {
      for (const Tensor& g : ag::grad({unpack_dual(y).tangent}, {x0, z0}, {}, std::nullopt, false, true))
        for (double v : (g.defined() ? g : zeros({3}, kFloat64)).to_vector<double>()) out.push_back(v);
    } else {
      for (const Tensor& g : ag::grad({y}, {x, z})) {
        const Tensor t = unpack_dual(g).tangent;
        for (double v : (t.defined() ? t : zeros({3}, kFloat64)).to_vector<double>()) out.push_back(v);
      }
    }
    return out;
  };
  struct Pair {
    std::string name;
    F in_place, out_of_place;
  };
  const std::vector<Pair> pairs = {
      {"mul_", [](auto& x, auto& z) { Tensor c = x * 1.0; c.mul_(z); return c; }, [](auto& x, auto& z) { return x * z; }},
      {"div_", [](auto& x, auto& z) { Tensor c = x * z; c.div_(z * z + 1.0); return c; }, [](auto& x, auto& z) { return x * z / (z * z + 1.0); }},
      {"add_", [](auto& x, auto& z) { Tensor c = x * x; c.add_(z * x); return c; }, [](auto& x, auto& z) { return x * x + z * x; }},
      {"sub_", [](auto& x, auto& z) { Tensor c = x * z; c.sub_(z * z); return c * x; }, [](auto& x, auto& z) { return (x * z - z * z) * x; }},
      {"clamp_", [](auto& x, auto& z) { Tensor c = x * z; c.clamp_(-0.5, 0.5); return c * c; },
       [](auto& x, auto& z) { const Tensor c = clamp(x * z, -0.5, 0.5); return c * c; }},
      {"masked_fill_", [](auto& x, auto& z) { Tensor c = x * z; c.masked_fill_(gt(x, 0.5), 2.0); return c * z; },
       [](auto& x, auto& z) { return masked_fill(x * z, gt(x, 0.5), 2.0) * z; }},
      {"copy_ into a view", [](auto& x, auto& z) { Tensor c = x * x; c.slice(0, 0, 2).copy_(z.slice(0, 1, 3) * x.slice(0, 0, 2)); return c * z; },
       [](auto& x, auto& z) { return cat({z.slice(0, 1, 3) * x.slice(0, 0, 2), x.slice(0, 2, 3) * x.slice(0, 2, 3)}, 0) * z; }},
      {"mul_ through a view", [](auto& x, auto& z) { Tensor c = x * z; c.slice(0, 1, 3).mul_(z.slice(0, 0, 2)); return c * c; },
       [](auto& x, auto& z) {
         const Tensor d = cat({x.slice(0, 0, 1) * z.slice(0, 0, 1), x.slice(0, 1, 3) * z.slice(0, 1, 3) * z.slice(0, 0, 2)}, 0);
         return d * d;
       }},
  };
  for (const Pair& p : pairs) {
    SCOPED_TRACE(p.name);
    for (const bool rof : {false, true}) {
      SCOPED_TRACE(rof ? "reverse-over-forward" : "forward-over-reverse");
      const std::vector<double> a = second(p.in_place, rof), b = second(p.out_of_place, rof);
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << "element " << i;
    }
  }
  // PyTorch 1.13's numbers, printed by tools/golden/inplace_dual_in_graph.py
  const std::vector<double> mul_for = second(pairs[0].in_place, false);
  const std::vector<double> torch_mul_for{0.18, 0.07, 0.52, 0.9, -0.05, -0.8};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(mul_for[i], torch_mul_for[i], 1e-12) << "mul_, element " << i;
  const std::vector<double> clamp_rof = second(pairs[4].in_place, true);
  const std::vector<double> torch_clamp_rof{2.4156, -0.1504, -1.5744, 1.2204, 0.2976, 2.2016};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(clamp_rof[i], torch_clamp_rof[i], 1e-12) << "clamp_, element " << i;
}

TEST(ForwardAdReview, IndexPutPushesTheTangentOfWhatItWrites) {
  using namespace ag::indexing;
  DualLevel level;
  const std::vector<double> p{1, 2, 3, 4, 5}, u{10, 20, 30, 40, 50};
  const Tensor idx = from_vector(std::vector<int64_t>{3, 0, 3}, {3});
  const Tensor vals = make_dual(f64({7, 8, 9}, {3}), f64({0.5, 0.25, 0.125}, {3}));
  // x[idx] = vals: the last value aimed at a position wins, its tangent with it
  Tensor x = make_dual(f64(p, {5}), f64(u, {5}));
  x.index_put_({idx}, vals);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{8, 2, 3, 9, 5}));
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{0.25, 20, 30, 0.125, 50}));
  // accumulate: every value adds
  x = make_dual(f64(p, {5}), f64(u, {5}));
  x.index_put_({idx}, vals, true);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{9, 2, 3, 20, 5}));
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{10.25, 20, 30, 40.625, 50}));
  // a self without a tangent: zero but where written
  x = f64(p, {5});
  x.index_put_({idx}, vals);
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{0.25, 0, 0, 0.125, 0}));
  // x[idx] += v (index, add, write back)
  x = make_dual(f64(p, {5}), f64(u, {5}));
  x.index({from_vector(std::vector<int64_t>{2, 0}, {2})}) += make_dual(f64({7, 8}, {2}), f64({0.5, 0.25}, {2}));
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{9, 2, 10, 4, 5}));
  EXPECT_EQ(unpack_dual(x).tangent.to_vector<double>(), (std::vector<double>{10.25, 20, 30.5, 40, 50}));
  // a 2-d tensor indexed on its second dim; a value without a tangent over a dual self
  const Tensor P = arange(0.0, 6.0, 1.0, kFloat64).view({2, 3}), U = P + 100.0;
  Tensor m = make_dual(P.clone(), U.clone());
  m.index({Slice(), from_vector(std::vector<int64_t>{2, 0}, {2})}) = make_dual(f64({-1, -2}, {2}), f64({1000, 2000}, {2}));
  EXPECT_EQ(m.to_vector<double>(), (std::vector<double>{-2, 1, -1, -2, 4, -1}));
  EXPECT_EQ(unpack_dual(m).tangent.to_vector<double>(), (std::vector<double>{2000, 101, 1000, 2000, 104, 1000}));
  m = make_dual(P.clone(), U.clone());
  m.index({from_vector(std::vector<double>{1, 0, 1, 0, 0, 1}, {2, 3}, kBool)}) = 0.0;
  EXPECT_EQ(m.to_vector<double>(), (std::vector<double>{0, 1, 0, 3, 4, 0}));
  EXPECT_EQ(unpack_dual(m).tangent.to_vector<double>(), (std::vector<double>{0, 101, 0, 103, 104, 0}));
  // in a graph too: the reverse gradient of sum(x * x) after x[idx] = vals, w.r.t. the primal
  const Tensor q = f64(p, {5}).requires_grad_();
  Tensor xg = make_dual(q, f64(u, {5})) * 1.0;
  xg.index_put_({idx}, vals);
  EXPECT_EQ(unpack_dual(xg).tangent.to_vector<double>(), (std::vector<double>{0.25, 20, 30, 0.125, 50}));
  EXPECT_EQ(ag::grad({sum(xg * xg)}, {q})[0].to_vector<double>(), (std::vector<double>{0, 4, 6, 0, 10}));
}
