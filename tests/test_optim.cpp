// Optimizers against PyTorch 1.13: 12 steps of each on a small model (tests/golden/optim_cases.txt,
// made by tools/golden/make_optim_golden.py), float32 to float noise and float64 to 1e-10.
#include <gtest/gtest.h>

#include "golden_io.h"
#include "nn/clip_grad.h"
#include "nn/layers.h"
#include "optim/optimizer.h"

using namespace ag;

namespace {

std::vector<double> numbers(const std::string& rest) {
  std::istringstream is(rest);
  std::vector<double> v;
  std::string tok;
  while (is >> tok) v.push_back(std::stod(tok));
  return v;
}

std::unique_ptr<optim::Optimizer> make(const std::string& name, std::vector<Tensor> p) {
  using namespace optim;
  if (name == "sgd") return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1});
  if (name == "sgd_momentum_dampening_wd")
    return std::make_unique<SGD>(p, SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01});
  if (name == "sgd_nesterov") return std::make_unique<SGD>(p, SGDOptions{.lr = 0.05, .momentum = 0.8, .nesterov = true});
  if (name == "adam") return std::make_unique<Adam>(p, AdamOptions{.lr = 0.01});
  if (name == "adam_wd_amsgrad")
    return std::make_unique<Adam>(p, AdamOptions{.lr = 0.02, .betas = {0.8, 0.99}, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true});
  if (name == "adamw") return std::make_unique<AdamW>(p, AdamWOptions{.lr = 0.01});
  if (name == "adamw_amsgrad") return std::make_unique<AdamW>(p, AdamWOptions{.lr = 0.03, .weight_decay = 0.05, .amsgrad = true});
  if (name == "sgd_clip") return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1, .momentum = 0.5});
  throw std::runtime_error("unknown optimizer case " + name);
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(got[i] - want[i]) / (atol + rtol * std::abs(want[i]));
    if (e > worst) worst = e, at = i;
  }
  EXPECT_LE(worst, 1.0) << what << ": element " << at << " got " << got[at] << " want " << want[at] << " (diff "
                        << std::abs(got[at] - want[at]) << ")";
}

}  // namespace

TEST(Optim, TwelveStepsOfEachOptimizerMatchPyTorch) {
  auto f = golden::open("optim_cases.txt");
  const std::vector<double> xs = numbers(golden::expect_keyword(f, "x"));
  const std::vector<double> ys = numbers(golden::expect_keyword(f, "y"));
  std::string line;
  int cases = 0;
  while (std::getline(f, line)) {
    std::istringstream head(line);
    std::string kw, name, dtype, clip;
    int steps = 0, n_params = 0;
    head >> kw >> name >> dtype >> steps >> n_params >> clip;
    const DType dt = dtype == "float64" ? kFloat64 : kFloat32;
    const double rtol = dt == kFloat64 ? 1e-10 : 2e-5, atol = dt == kFloat64 ? 1e-12 : 2e-6;
    SCOPED_TRACE(name + " " + dtype);
    const std::vector<double> want_losses = numbers(golden::expect_keyword(f, "losses"));
    std::getline(f, line);
    const std::vector<double> want_norms = numbers(line.substr(5));
    // the model and data of the script: float32 first, then converted
    Tensor x = from_vector(xs, {5, 4}).to(dt), y = from_vector(ys, {5, 2}).to(dt);
    manual_seed(0);
    nn::Sequential model({std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::Tanh>(), std::make_shared<nn::Linear>(3, 2)});
    model.to(dt);
    auto opt = make(name, model.parameters());
    std::vector<double> losses, norms;
    for (int s = 0; s < steps; ++s) {
      opt->zero_grad();
      Tensor loss = mse_loss(model.forward(x), y);
      loss.backward();
      if (clip != "-") norms.push_back(nn::clip_grad_norm_(model.parameters(), std::stod(clip)).item());
      opt->step();
      losses.push_back(loss.item());
    }
    expect_close(losses, want_losses, rtol, atol, "losses");
    expect_close(norms, want_norms, rtol, atol, "clip_grad_norm_ totals");
    const auto params = model.parameters();
    ASSERT_EQ(static_cast<int>(params.size()), n_params);
    for (int i = 0; i < n_params; ++i) {
      const std::vector<double> want = numbers(golden::expect_keyword(f, "param"));
      expect_close(params[static_cast<std::size_t>(i)].to_vector<double>(), want, rtol, atol, "param " + std::to_string(i));
    }
    ++cases;
  }
  EXPECT_EQ(cases, 16);
}

TEST(Optim, InvalidOptionsAreRejectedWithPyTorchMessages) {
  auto params = [] { return std::vector<Tensor>{ones({2}).requires_grad_()}; };
  auto message = [](auto f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no exception)");
  };
  using namespace optim;
  EXPECT_EQ(message([&] { SGD(params(), {.lr = -1.0}); }), "Invalid learning rate: -1.0");
  EXPECT_EQ(message([&] { SGD(params(), {.lr = 0.1, .momentum = -0.5}); }), "Invalid momentum value: -0.5");
  EXPECT_EQ(message([&] { SGD(params(), {.lr = 0.1, .weight_decay = -1}); }), "Invalid weight_decay value: -1.0");
  EXPECT_EQ(message([&] { SGD(params(), {.lr = 0.1, .nesterov = true}); }), "Nesterov momentum requires a momentum and zero dampening");
  EXPECT_EQ(message([&] { SGD(params(), {}); }), "SGD: lr is required (there is no default learning rate)");
  EXPECT_EQ(message([&] { Adam(params(), {.lr = -0.001}); }), "Invalid learning rate: -0.001");
  EXPECT_EQ(message([&] { Adam(params(), {.eps = -1e-8}); }), "Invalid epsilon value: -1e-08");
  EXPECT_EQ(message([&] { Adam(params(), {.betas = {1.0, 0.999}}); }), "Invalid beta parameter at index 0: 1.0");
  EXPECT_EQ(message([&] { AdamW(params(), {.betas = {0.9, -0.1}}); }), "Invalid beta parameter at index 1: -0.1");
  EXPECT_EQ(message([&] { AdamW(params(), {.weight_decay = -0.01}); }), "Invalid weight_decay value: -0.01");
  EXPECT_EQ(message([&] { Adam(std::vector<Tensor>{}); }), "optimizer got an empty parameter list");
}

TEST(Optim, DefaultsAndLearningRateAccess) {
  Tensor p = ones({2}).requires_grad_();
  optim::AdamW opt({p});
  EXPECT_EQ(opt.lr(), 1e-3);
  opt.set_lr(0.5);
  EXPECT_EQ(opt.lr(), 0.5);
  EXPECT_THROW(opt.set_lr(-1), std::invalid_argument);
  // a parameter without a gradient is left alone, even by weight decay
  opt.step();
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{1, 1}));
  optim::AdamWOptions defaults;
  EXPECT_EQ(defaults.weight_decay, 1e-2);
  optim::AdamOptions adam_defaults;
  EXPECT_EQ(adam_defaults.weight_decay, 0.0);
  EXPECT_EQ(adam_defaults.betas.second, 0.999);
}

TEST(Optim, StepBumpsTheVersionSoStaleGraphsCannotBackward) {
  Tensor w = ones({2, 2}).requires_grad_();
  optim::SGD opt({w}, {.lr = 0.1});
  Tensor loss = sum(matmul(w, w));
  sum(matmul(w, w)).backward();
  opt.step();
  EXPECT_THROW(loss.backward(), std::runtime_error);
}

TEST(ClipGradNorm, ScalesOnlyWhenAboveMaxNorm) {
  Tensor a = tensor({3.0, 4.0}, kFloat64).requires_grad_();
  sum(a * a).backward();  // grad (6, 8), norm 10
  Tensor total = nn::clip_grad_norm_({a}, 5.0);
  EXPECT_DOUBLE_EQ(total.item(), 10.0);
  EXPECT_NEAR(a.grad().to_vector<double>()[0], 6.0 * 5.0 / (10.0 + 1e-6), 1e-12);
  Tensor again = nn::clip_grad_norm_({a}, 100.0);
  EXPECT_NEAR(again.item(), 5.0, 1e-6);
  EXPECT_NEAR(a.grad().to_vector<double>()[1], 8.0 * 5.0 / (10.0 + 1e-6), 1e-12);  // unchanged
}
