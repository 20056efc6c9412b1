// Every op's forward values and gradients against PyTorch 1.13 on the same float64 inputs
// (tests/golden/op_cases.txt, made by tools/golden/make_golden.py), plus gradcheck of each.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "golden_io.h"
#include "ops_table.h"

using namespace ag;

namespace {

// Max |a - b| / (atol/rtol scale); prints the worst element on failure.
void expect_close(const Tensor& got, const golden::Data& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.shape().vec(), want.shape) << what << ": shape";
  const std::vector<double> g = got.to_vector<double>();
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double w = want.values[i];
    if (std::isnan(w) || std::isinf(w)) {
      EXPECT_TRUE(std::isnan(w) ? std::isnan(g[i]) : g[i] == w) << what << " element " << i;
      continue;
    }
    const double e = std::abs(g[i] - w) / (atol + rtol * std::abs(w));
    if (e > worst) worst = e, at = i;
  }
  EXPECT_LE(worst, 1.0) << what << ": worst element " << at << " got " << g[at] << " want " << want.values[at]
                        << " (max diff " << std::abs(g[at] - want.values[at]) << ")";
}

}  // namespace

TEST(OpsGolden, EveryGoldenCaseHasAnImplementationAndViceVersa) {
  const auto cases = optable::load_cases();
  ASSERT_GE(cases.size(), 50u);
  std::set<std::string> names;
  for (const auto& c : cases) {
    names.insert(c.name);
    EXPECT_TRUE(optable::ops().count(c.name)) << c.name << " missing from ops_table.h";
  }
  for (const auto& [name, fn] : optable::ops()) EXPECT_TRUE(names.count(name)) << name << " missing from the golden file";
}

TEST(OpsGolden, Float64ForwardAndGradientsMatchPyTorch) {
  for (const auto& c : optable::load_cases()) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> ins;
    for (const auto& d : c.inputs) ins.push_back(d.make().requires_grad_());
    Tensor out = optable::ops().at(c.name)(ins);
    expect_close(out, c.output, 1e-10, 1e-12, c.name + " forward");
    sum(out * c.weight.make()).backward();
    for (std::size_t i = 0; i < ins.size(); ++i) {
      ASSERT_TRUE(ins[i].grad().defined()) << "input " << i;
      expect_close(ins[i].grad(), c.grads[i], 1e-10, 1e-12, c.name + " grad of input " + std::to_string(i));
    }
  }
}

TEST(OpsGolden, Float32ForwardAgreesWithPyTorchToFloatNoise) {
  for (const auto& c : optable::load_cases()) {
    if (c.name == "cross_entropy_shifted") continue;  // +1e8 wipes out float32 logits: no reference
    SCOPED_TRACE(c.name);
    std::vector<Tensor> ins;
    for (const auto& d : c.inputs) ins.push_back(d.make(kFloat32).requires_grad_());
    Tensor out = optable::ops().at(c.name)(ins);
    if (c.name != "to_float32_and_back") EXPECT_EQ(out.dtype(), kFloat32);
    expect_close(out, c.output, 1e-4, 1e-5, c.name + " float32 forward");
    sum(out * c.weight.make(kFloat32)).backward();
    for (std::size_t i = 0; i < ins.size(); ++i) {
      EXPECT_EQ(ins[i].grad().dtype(), kFloat32);  // a leaf's grad has the leaf's dtype
      expect_close(ins[i].grad(), c.grads[i], 1e-3, 1e-4, c.name + " float32 grad " + std::to_string(i));
    }
  }
}

TEST(OpsGolden, EveryOpPassesGradcheckOnContiguousInputs) {
  for (const auto& c : optable::load_cases()) {
    // x + 1e8 rounds each finite-difference step of 1e-6 to a multiple of 1.5e-8: too coarse
    if (optable::finite_differences_unusable(c.name)) continue;
    SCOPED_TRACE(c.name);
    std::vector<Tensor> ins;
    for (const auto& d : c.inputs) ins.push_back(d.make().requires_grad_());
    // max/relu at ties or kinks would be ill-posed; the golden inputs are random normals, so none
    GradcheckResult r = gradcheck_result(optable::ops().at(c.name), ins);
    EXPECT_TRUE(r.ok) << r.message;
  }
}
