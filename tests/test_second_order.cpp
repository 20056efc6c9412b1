// examples/second_order against its PyTorch reference (tests/golden/second_order.json, the --json
// output of tools/golden/second_order_reference.py): the same JSON keys and every number within
// 1e-9 relative (float64; plus 1e-14 absolute, the rounding noise of a gradient of O(1) terms,
// which Newton's last gradient norms are made of). Then what the example is meant to show:
// Newton's method converges quadratically, and the gradient penalty holds the critic's input
// gradient norm near 1 while the critic without it runs away.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "test_util.h"

namespace {

using nlohmann::json;

constexpr double kRtol = 1e-9, kAtol = 1e-14;
// Hessian-free Newton: 20 conjugate-gradient iterations a step on a nonconvex loss amplify the
// last-bit differences of float64 sums (tanh and reductions vectorized otherwise in PyTorch) by
// about 10x a step: 2e-10 relative at step 7, 8e-6 at step 12. Its first 8 steps are held to
// 1e-8, the rest to 1e-3, with room for other CPUs' BLAS kernels (that every step keeps or lowers
// the loss is tested on its own).
constexpr double kHfEarlyRtol = 1e-8, kHfLateRtol = 1e-3;
constexpr int kHfEarlySteps = 8;

double rtol_at(const std::string& at) {
  const std::string prefix = "$.hessian_free.";
  if (at.rfind(prefix, 0) != 0) return kRtol;
  const std::string steps = prefix + "steps[";
  if (at.rfind(steps, 0) == 0 && std::stoi(at.substr(steps.size())) < kHfEarlySteps) return kHfEarlyRtol;
  return kHfLateRtol;  // the later steps and the final parameters
}

const json& example_output() {
  static const json j = [] {
    const auto [status, out] = testutil::run_command(std::string(SECOND_ORDER_BIN) + " --json");
    EXPECT_EQ(status, 0) << out;
    return json::parse(out);
  }();
  return j;
}

const json& golden() {
  static const json j = [] {
    std::ifstream f(std::string(AG_GOLDEN_DIR) + "/second_order.json");
    EXPECT_TRUE(f.good()) << "cannot open tests/golden/second_order.json";
    return json::parse(f);
  }();
  return j;
}

struct Compare {
  int numbers = 0, bad = 0;
  double worst_abs = 0, worst_rel = 0;  // worst_rel over reference values of magnitude >= 1e-6
  std::string worst_abs_at, worst_rel_at;

  void operator()(const json& a, const json& b, const std::string& at) {
    if (b.is_object()) {
      ASSERT_TRUE(a.is_object()) << at << ": expected an object, got " << a.dump();
      ASSERT_EQ(a.size(), b.size()) << at << ": keys differ: " << a.dump().substr(0, 200);
      for (const auto& [k, v] : b.items()) {
        ASSERT_TRUE(a.contains(k)) << at << ": missing key '" << k << "'";
        (*this)(a.at(k), v, at + "." + k);
      }
    } else if (b.is_array()) {
      ASSERT_TRUE(a.is_array()) << at << ": expected an array, got " << a.dump();
      ASSERT_EQ(a.size(), b.size()) << at << ": lengths differ";
      for (std::size_t i = 0; i < b.size(); ++i) (*this)(a[i], b[i], at + "[" + std::to_string(i) + "]");
    } else if (b.is_number_integer()) {
      ++numbers;
      EXPECT_EQ(a, b) << at;
    } else {
      ASSERT_TRUE(a.is_number()) << at << ": expected a number, got " << a.dump();
      ++numbers;
      const double x = a.get<double>(), y = b.get<double>();
      const double diff = std::abs(x - y);
      if (diff > worst_abs) worst_abs = diff, worst_abs_at = at;
      if (std::abs(y) >= 1e-6 && diff / std::abs(y) > worst_rel) worst_rel = diff / std::abs(y), worst_rel_at = at;
      if (!(diff <= kAtol + rtol_at(at) * std::abs(y))) {
        ++bad;
        ADD_FAILURE() << at << ": ag " << a.dump() << " vs PyTorch " << b.dump() << " (difference " << diff << ")";
      }
    }
  }
};

TEST(SecondOrderExample, EveryNumberMatchesThePyTorchReference) {
  Compare c;
  c(example_output(), golden(), "$");
  std::printf("%d numbers compared; worst absolute difference %.3g (%s), worst relative %.3g (%s)\n", c.numbers,
              c.worst_abs, c.worst_abs_at.c_str(), c.worst_rel, c.worst_rel_at.c_str());
  EXPECT_GT(c.numbers, 300);  // newton (6 steps x 3 + w + b), two critic runs of 25 steps x 5, and
                              // Hessian-free Newton (16 steps x 4 + 33 parameters)
  EXPECT_EQ(c.bad, 0);
}

TEST(SecondOrderExample, NewtonConvergesQuadratically) {
  const json& steps = example_output().at("newton").at("steps");
  ASSERT_GE(steps.size(), 3u);
  ASSERT_LE(steps.size(), 10u);  // a handful of steps, not MAX_STEPS
  double prev = steps[0].at("grad_norm").get<double>();
  EXPECT_GT(prev, 0.1);  // it starts far from the optimum
  for (std::size_t i = 1; i < steps.size(); ++i) {
    const double g = steps[i].at("grad_norm").get<double>();
    EXPECT_LT(g, prev) << "step " << i;
    EXPECT_LE(steps[i].at("loss").get<double>(), steps[i - 1].at("loss").get<double>() + 1e-15) << "step " << i;
    // quadratic: once near the optimum, |g| squares (up to a constant) every step
    if (prev < 1e-2) {
      EXPECT_LT(g, std::max(10 * prev * prev, kAtol)) << "step " << i;  // down to rounding noise
    }
    prev = g;
  }
  EXPECT_LT(prev, 1e-8);
}

TEST(SecondOrderExample, GradientPenaltyPullsTheCriticsGradientNormTowardsOne) {
  const json& gp = example_output().at("gp");
  const json& no_gp = example_output().at("no_gp");
  ASSERT_EQ(gp.size(), no_gp.size());
  ASSERT_GE(gp.size(), 10u);
  auto off = [](const json& row) { return std::abs(row.at("grad_norm").get<double>() - 1.0); };
  // Same critic, same first batch: the first rows agree (the penalty has not acted yet).
  EXPECT_EQ(gp.front().at("grad_norm"), no_gp.front().at("grad_norm"));
  const double start = off(gp.front()), end_gp = off(gp.back()), end_no_gp = off(no_gp.back());
  std::printf("|mean |df/dx| - 1|: start %.4f, end with penalty %.4f, end without %.4f\n", start, end_gp, end_no_gp);
  EXPECT_GT(start, 0.5);      // the untrained critic is far from 1-Lipschitz
  EXPECT_LT(end_gp, 0.1);     // the penalty brings it to about 1
  EXPECT_GT(end_no_gp, 1.0);  // without it the gradient norm runs away
  EXPECT_LT(gp.back().at("penalty").get<double>(), 0.1 * gp.front().at("penalty").get<double>());
}

// (c): every step keeps the loss or lowers it (a step that would raise it is refused, and the
// damping grows), and the forward-over-reverse Newton steps take the loss far down.
TEST(SecondOrderExample, HessianFreeNewtonLowersTheLossWithForwardOverReverseProducts) {
  const json& steps = example_output().at("hessian_free").at("steps");
  ASSERT_GE(steps.size(), 10u);
  int refused = 0;
  for (std::size_t i = 1; i < steps.size(); ++i) {
    const double loss = steps[i].at("loss").get<double>(), prev = steps[i - 1].at("loss").get<double>();
    EXPECT_LE(loss, prev) << "step " << i;
    const double damping = steps[i].at("damping").get<double>(), prev_damping = steps[i - 1].at("damping").get<double>();
    if (loss == prev) {
      ++refused;
      EXPECT_EQ(damping, 4 * prev_damping) << "step " << i << ": a refused step damps more";
    } else {
      EXPECT_EQ(damping, prev_damping / 2) << "step " << i << ": an accepted step damps less";
    }
  }
  const double first = steps.front().at("loss").get<double>(), last = steps.back().at("loss").get<double>();
  std::printf("Hessian-free Newton: loss %.4f -> %.4f in %zu steps (%d refused)\n", first, last, steps.size() - 1, refused);
  EXPECT_LT(last, 0.05 * first);
}

TEST(SecondOrderExample, BadArgumentGivesOneLineAndNonZeroExit) {
  const auto [status, out] = testutil::run_command(std::string(SECOND_ORDER_BIN) + " --nope 2>&1 >/dev/null");
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("second_order:"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

}  // namespace
