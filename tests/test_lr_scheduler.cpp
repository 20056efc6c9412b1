// Learning-rate schedulers, RMSprop and Adagrad against PyTorch 1.13 (tests/golden/
// lr_scheduler_cases.json, made by tools/golden/make_scheduler_golden.py): every lr and momentum
// of every schedule bit for bit, the RMSprop and Adagrad trajectories bit for bit (float64 and
// float32), and PyTorch's error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iomanip>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "golden_io.h"
#include "optim/lr_scheduler.h"
#include "test_util.h"

using namespace ag;
using json = nlohmann::json;
namespace sched = ag::optim::lr_scheduler;

namespace {

const json& cases() {
  static const json j = [] {
    std::ifstream f(golden::path("lr_scheduler_cases.json"));
    if (!f) throw std::runtime_error("golden: cannot open lr_scheduler_cases.json");
    return json::parse(f);
  }();
  return j;
}

// The script's problem: three parameters and the tensors of grad = c * (p - t) + k * p^3.
Tensor problem_tensor(const char* key, std::size_t i, DType dt) {
  const json& shape = cases()["shapes"][i];
  return from_vector(cases()["problem"][key][i].get<std::vector<double>>(), shape.get<std::vector<int64_t>>(), kFloat64).to(dt);
}

std::vector<Tensor> make_params(DType dt) {
  std::vector<Tensor> ps;
  for (std::size_t i = 0; i < 3; ++i) ps.push_back(problem_tensor("p0", i, dt).requires_grad_());
  return ps;
}

// The third parameter has a gradient on even steps only, as in the script.
void set_grads(const std::vector<Tensor>& params, int step, DType dt) {
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (i == 2 && step % 2 == 1) {
      params[i].set_grad(Tensor());
      continue;
    }
    const Tensor p = params[i].detach();
    const Tensor c = problem_tensor("c", i, dt), t = problem_tensor("t", i, dt), k = problem_tensor("k", i, dt);
    params[i].set_grad(c * (p - t) + k * (p * p * p));
  }
}

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, const json& a, std::vector<Tensor> params) {
  using namespace optim;
  if (name == "sgd") return std::make_unique<SGD>(params, SGDOptions{.lr = a["lr"].get<double>(), .momentum = a.value("momentum", 0.0)});
  if (name == "adam") {
    AdamOptions o{.lr = a["lr"]};
    if (a.contains("betas")) o.betas = {a["betas"][0], a["betas"][1]};
    return std::make_unique<Adam>(params, o);
  }
  if (name == "adamw") return std::make_unique<AdamW>(params, AdamWOptions{.lr = a["lr"]});
  if (name == "rmsprop") {
    RMSpropOptions o;  // the defaults under test where the case leaves them out
    o.lr = a.value("lr", o.lr), o.alpha = a.value("alpha", o.alpha), o.eps = a.value("eps", o.eps);
    o.weight_decay = a.value("weight_decay", o.weight_decay), o.momentum = a.value("momentum", o.momentum);
    o.centered = a.value("centered", o.centered);
    return std::make_unique<RMSprop>(params, o);
  }
  if (name == "adagrad") {
    AdagradOptions o;
    o.lr = a.value("lr", o.lr), o.lr_decay = a.value("lr_decay", o.lr_decay), o.weight_decay = a.value("weight_decay", o.weight_decay);
    o.initial_accumulator_value = a.value("initial_accumulator_value", o.initial_accumulator_value), o.eps = a.value("eps", o.eps);
    return std::make_unique<Adagrad>(params, o);
  }
  throw std::runtime_error("unknown optimizer " + name);
}

// The script's LAMBDAS.
std::function<double(int64_t)> lr_lambda(const std::string& name) {
  if (name == "pow095") return [](int64_t e) { return std::pow(0.95, static_cast<double>(e)); };
  if (name == "warmup10") return [](int64_t e) { return std::min(1.0, static_cast<double>(e + 1) / 10); };
  if (name == "halve_every7") return [](int64_t e) { return 1.0 / static_cast<double>(1 + e / 7); };
  throw std::runtime_error("unknown lambda " + name);
}

// Arguments the case leaves out are left out here too, so the C++ defaults meet PyTorch's.
std::unique_ptr<sched::LRScheduler> make_scheduler(const std::string& name, const json& a, optim::Optimizer& opt) {
  if (name == "StepLR")
    return a.contains("gamma") ? std::make_unique<sched::StepLR>(opt, a["step_size"], a["gamma"])
                               : std::make_unique<sched::StepLR>(opt, a["step_size"]);
  if (name == "MultiStepLR") {
    const auto milestones = a["milestones"].get<std::vector<int64_t>>();
    return a.contains("gamma") ? std::make_unique<sched::MultiStepLR>(opt, milestones, a["gamma"])
                               : std::make_unique<sched::MultiStepLR>(opt, milestones);
  }
  if (name == "ExponentialLR") return std::make_unique<sched::ExponentialLR>(opt, a["gamma"]);
  if (name == "CosineAnnealingLR")
    return a.contains("eta_min") ? std::make_unique<sched::CosineAnnealingLR>(opt, a["T_max"], a["eta_min"])
                                 : std::make_unique<sched::CosineAnnealingLR>(opt, a["T_max"]);
  if (name == "LambdaLR") return std::make_unique<sched::LambdaLR>(opt, lr_lambda(a["lr_lambda"]));
  if (name == "LinearLR")
    return a.empty() ? std::make_unique<sched::LinearLR>(opt)
                     : std::make_unique<sched::LinearLR>(opt, a["start_factor"], a["end_factor"], a["total_iters"]);
  if (name == "OneCycleLR") {
    sched::OneCycleLROptions o;
    o.pct_start = a.value("pct_start", o.pct_start), o.anneal_strategy = a.value("anneal_strategy", o.anneal_strategy);
    o.cycle_momentum = a.value("cycle_momentum", o.cycle_momentum), o.base_momentum = a.value("base_momentum", o.base_momentum);
    o.max_momentum = a.value("max_momentum", o.max_momentum), o.div_factor = a.value("div_factor", o.div_factor);
    o.final_div_factor = a.value("final_div_factor", o.final_div_factor), o.three_phase = a.value("three_phase", o.three_phase);
    return std::make_unique<sched::OneCycleLR>(opt, a["max_lr"], a["total_steps"], o);
  }
  throw std::runtime_error("unknown scheduler " + name);
}

double momentum_of(const optim::Optimizer& opt) { return opt.betas() ? opt.betas()->first : opt.momentum().value(); }

// Largest |got - want| / (atol + rtol |want|) over all parameters; <= 1 passes (with
// rtol = atol = 0, equal values give 0 / 0, which never counts as worse).
struct Worst {
  double ratio = 0, got = 0, want = 0;
  std::string where;
};

void compare_params(const std::vector<Tensor>& params, const json& want, double rtol, double atol, const std::string& what, Worst& worst) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto got = params[i].to_vector<double>();
    const auto exp = want[i].get<std::vector<double>>();
    ASSERT_EQ(got.size(), exp.size());
    for (std::size_t j = 0; j < got.size(); ++j) {
      const double r = std::abs(got[j] - exp[j]) / (atol + rtol * std::abs(exp[j]));
      if (r > worst.ratio || (std::isnan(got[j]) && !std::isnan(worst.ratio)))
        worst = {std::isnan(got[j]) ? NAN : r, got[j], exp[j], what + " param " + std::to_string(i) + "[" + std::to_string(j) + "]"};
    }
  }
}

}  // namespace

TEST(LRScheduler, EveryLrAndMomentumOfEveryScheduleEqualsPyTorch) {
  int n = 0;
  for (const json& c : cases()["schedulers"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const std::vector<Tensor> params = make_params(kFloat64);
    auto opt = make_optimizer(c["optimizer"], c["optimizer_args"], params);
    auto s = make_scheduler(c["scheduler"], c["scheduler_args"], *opt);
    const auto lrs = c["lr"].get<std::vector<double>>();
    const auto moms = c["momentum"].get<std::vector<double>>();
    const int steps = c["steps"];
    ASSERT_EQ(lrs.size(), static_cast<std::size_t>(steps + 1));
    int lr_mismatches = 0, momentum_mismatches = 0;
    for (int step = 0; step <= steps; ++step) {
      if (step > 0) {
        set_grads(params, step, kFloat64);
        opt->step();
        s->step();
      }
      ASSERT_EQ(s->get_last_lr().size(), 1u);
      ASSERT_EQ(s->last_epoch, step);
      const double lr = s->get_last_lr()[0];
      EXPECT_EQ(opt->lr(), lr);
      // exact: the first mismatch is reported with both values to the last digit
      if (lr != lrs[static_cast<std::size_t>(step)] && lr_mismatches++ == 0)
        ADD_FAILURE() << "lr after step " << step << ": got " << std::setprecision(17) << lr << ", PyTorch "
                      << lrs[static_cast<std::size_t>(step)];
      if (!moms.empty() && momentum_of(*opt) != moms[static_cast<std::size_t>(step)] && momentum_mismatches++ == 0)
        ADD_FAILURE() << "momentum after step " << step << ": got " << std::setprecision(17) << momentum_of(*opt)
                      << ", PyTorch " << moms[static_cast<std::size_t>(step)];
    }
    EXPECT_EQ(lr_mismatches, 0);
    EXPECT_EQ(momentum_mismatches, 0);
    if (c["scheduler"] == "OneCycleLR") {
      ASSERT_EQ(moms.empty(), !c["scheduler_args"].value("cycle_momentum", true));
      EXPECT_EQ(testutil::error_of([&] { s->step(); }), c["step_past_end_error"].get<std::string>());
    }
    // The updates used the scheduled lr and momentum. SGD and Adam round a few multiply-adds
    // differently from PyTorch's fused ones (ulps apart here).
    const std::string o = c["optimizer"];
    const bool exact = o == "rmsprop" || o == "adagrad";
    Worst worst;
    compare_params(params, c["params"], exact ? 0 : 1e-12, exact ? 0 : 1e-15, "final", worst);
    EXPECT_LE(worst.ratio, 1.0) << worst.where << ": got " << std::setprecision(17) << worst.got << ", PyTorch " << worst.want;
    ++n;
  }
  EXPECT_EQ(n, 24);
}

TEST(LRScheduler, ChainedSchedulersComposeAsInPyTorch) {
  int n = 0;
  for (const json& c : cases()["chained"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::vector<Tensor> params = make_params(kFloat64);
    auto opt = make_optimizer(c["optimizer"], c["optimizer_args"], params);
    std::vector<std::unique_ptr<sched::LRScheduler>> ss;
    for (const json& s : c["schedulers"]) ss.push_back(make_scheduler(s["scheduler"], s["scheduler_args"], *opt));
    // the second scheduler starts from the initial_lr the first one recorded, not the current lr
    for (std::size_t i = 0; i < ss.size(); ++i) EXPECT_EQ(ss[i]->base_lrs, (std::vector<double>{c["base_lrs"][i].get<double>()}));
    const auto lrs = c["lr"].get<std::vector<double>>();
    EXPECT_EQ(opt->lr(), lrs[0]);
    for (int step = 1; step <= c["steps"].get<int>(); ++step) {
      set_grads(params, step, kFloat64);
      opt->step();
      for (auto& s : ss) s->step();
      ASSERT_EQ(opt->lr(), lrs[static_cast<std::size_t>(step)]) << "after step " << step;
    }
    ++n;
  }
  EXPECT_EQ(n, 2);
}

TEST(RMSpropAdagrad, TrajectoriesEqualPyTorchBitForBitInFloat64AndFloat32) {
  int n = 0;
  for (const json& c : cases()["optimizers"]) {
    const std::string dtype = c["dtype"];
    SCOPED_TRACE(c["name"].get<std::string>() + " " + dtype);
    const DType dt = dtype == "float64" ? kFloat64 : kFloat32;
    const std::vector<Tensor> params = make_params(dt);
    auto opt = make_optimizer(c["optimizer"], c["optimizer_args"], params);
    const json& record = c["record"];
    std::size_t next = 0;
    Worst worst;
    for (int step = 1; step <= c["steps"].get<int>(); ++step) {
      set_grads(params, step, dt);
      opt->step();
      if (next < record.size() && record[next]["step"] == step)  // exact: rtol = atol = 0
        compare_params(params, record[next++]["params"], 0, 0, "step " + std::to_string(step), worst);
    }
    EXPECT_EQ(next, record.size());
    EXPECT_LE(worst.ratio, 1.0) << worst.where << ": got " << std::setprecision(17) << worst.got << ", PyTorch " << worst.want;
    ++n;
  }
  EXPECT_EQ(n, 10);
}

TEST(LRScheduler, ErrorsCarryPyTorchsMessages) {
  using namespace optim;
  auto p = [] { return std::vector<Tensor>{ones({2}, kFloat64).requires_grad_()}; };
  SGD sgd(p(), {.lr = 0.1, .momentum = 0.9});
  Adagrad adagrad(p());
  const std::map<std::string, std::function<void()>> actions = {
      {"rmsprop_lr", [&] { RMSprop(p(), {.lr = -0.01}); }},
      {"rmsprop_eps", [&] { RMSprop(p(), {.eps = -1e-8}); }},
      {"rmsprop_momentum", [&] { RMSprop(p(), {.momentum = -0.9}); }},
      {"rmsprop_weight_decay", [&] { RMSprop(p(), {.weight_decay = -0.1}); }},
      {"rmsprop_alpha", [&] { RMSprop(p(), {.alpha = -0.5}); }},
      {"adagrad_lr", [&] { Adagrad(p(), {.lr = -0.1}); }},
      {"adagrad_lr_decay", [&] { Adagrad(p(), {.lr_decay = -0.5}); }},
      {"adagrad_weight_decay", [&] { Adagrad(p(), {.weight_decay = -1e-3}); }},
      {"adagrad_initial_accumulator_value", [&] { Adagrad(p(), {.initial_accumulator_value = -0.25}); }},
      {"adagrad_eps", [&] { Adagrad(p(), {.eps = -1e-10}); }},
      {"onecycle_total_steps_0", [&] { sched::OneCycleLR(sgd, 0.1, 0); }},
      {"onecycle_total_steps_negative", [&] { sched::OneCycleLR(sgd, 0.1, -5); }},
      {"onecycle_pct_start", [&] { sched::OneCycleLR(sgd, 0.1, 10, {.pct_start = 1.5}); }},
      {"onecycle_anneal_strategy", [&] { sched::OneCycleLR(sgd, 0.1, 10, {.anneal_strategy = "exp"}); }},
      {"onecycle_no_momentum", [&] { sched::OneCycleLR(adagrad, 0.1, 10); }},
      {"linear_start_factor", [&] { sched::LinearLR(sgd, 1.5); }},
      {"linear_end_factor", [&] { sched::LinearLR(sgd, 1.0 / 3, -0.1); }},
      {"linear_zero_start_factor_step", [&] { sched::LinearLR(sgd, 0.0).step(); }},
      {"step_zero_step_size_step", [&] { sched::StepLR(sgd, 0).step(); }},
      {"cosine_zero_t_max_step", [&] { sched::CosineAnnealingLR(sgd, 0).step(); }},
      {"onecycle_phase_without_steps", [&] { sched::OneCycleLR(sgd, 0.1, 10, {.pct_start = 0.1}); }},
  };
  int n = 0;
  for (const auto& [name, want] : cases()["errors"].items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(actions.count(name)) << "no C++ action for the golden error " << name;
    const std::string got = testutil::error_of(actions.at(name)), text = want["message"];
    if (want["type"] == "ZeroDivisionError")  // Python's own text, with the scheduler named
      EXPECT_NE(got.find(text), std::string::npos) << got;
    else
      EXPECT_EQ(got, text);
    ++n;
  }
  EXPECT_EQ(n, static_cast<int>(actions.size()));
}

TEST(LRScheduler, OptimizersExposeLrMomentumAndBetasAsParamGroupsDo) {
  using namespace optim;
  Tensor w = ones({2}, kFloat64).requires_grad_();
  SGD sgd({w}, {.lr = 0.1});
  EXPECT_EQ(sgd.momentum(), 0.0);
  EXPECT_FALSE(sgd.betas());
  sgd.set_momentum(0.9);
  EXPECT_EQ(sgd.options().momentum, 0.9);
  EXPECT_EQ(testutil::error_of([&] { sgd.set_momentum(-1); }), "Invalid momentum value: -1.0");
  Adam adam({w});
  EXPECT_EQ(adam.betas(), (std::pair<double, double>{0.9, 0.999}));
  EXPECT_FALSE(adam.momentum());
  EXPECT_EQ(testutil::error_of([&] { adam.set_betas({0.5, 1.0}); }), "Invalid beta parameter at index 1: 1.0");
  EXPECT_THROW(adam.set_momentum(0.9), std::invalid_argument);
  Adagrad adagrad({w});
  EXPECT_FALSE(adagrad.momentum());
  EXPECT_FALSE(adagrad.betas());
  RMSprop rmsprop({w});
  EXPECT_EQ(rmsprop.momentum(), 0.0);
  // constructing a scheduler records initial_lr once; OneCycleLR overwrites it
  EXPECT_FALSE(sgd.initial_lr());
  sched::ExponentialLR e(sgd, 0.5);
  sgd.set_lr(0.02);
  sched::StepLR s(sgd, 2);
  EXPECT_EQ(s.base_lrs, std::vector<double>{0.1});
  sched::OneCycleLR one(sgd, 1.0, 10, {.div_factor = 4});
  EXPECT_EQ(sgd.initial_lr(), 0.25);
  EXPECT_EQ(one.base_lrs, std::vector<double>{0.25});
  EXPECT_EQ(sgd.lr(), 0.25);
  EXPECT_NEAR(sgd.momentum().value(), 0.95, 1e-15);
}
