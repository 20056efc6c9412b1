// nn modules and the Module API against PyTorch 1.13 (tests/golden/nn_modules.json, written by
// tools/golden/make_nn_modules_golden.py): BatchNorm1d's training steps, running statistics, eval
// and second-order gradients; the activation modules; reprs; Sequential built from module values;
// named_modules / apply order; load_state_dict's copies, returned keys and error texts.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "golden_io.h"
#include "nn/layers.h"
#include "test_util.h"

using namespace ag;
using namespace ag::nn;
using nlohmann::json;
using testutil::error_of;

namespace {

const json& golden_data() {
  static const json data = [] {
    std::ifstream f(golden::path("nn_modules.json"));
    if (!f) throw std::runtime_error("cannot open tests/golden/nn_modules.json");
    return json::parse(f);
  }();
  return data;
}

Tensor from_json(const json& j, DType dt) {
  std::vector<int64_t> shape = j.at("shape").get<std::vector<int64_t>>();
  return from_vector(j.at("values").get<std::vector<double>>(), DimVector(shape.begin(), shape.end()), dt);
}

// got within atol + rtol |want| of the golden tensor, element by element (the first miss reported).
void expect_close(const Tensor& got, const json& want, double rtol, double atol, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(got.defined());
  EXPECT_EQ(testutil::close_mismatches<double>(got, from_json(want, kFloat64), rtol, atol), 0);
}

DType dtype_of(const std::string& name) { return name == "float64" ? kFloat64 : kFloat32; }

std::vector<std::string> keys_of(const NamedTensors& v) {
  std::vector<std::string> out;
  for (const auto& [n, t] : v) out.push_back(n);
  return out;
}

// The golden script's NestedModel, registered in the same order.
struct Attn : Module {
  Attn() : Module("Attn") {
    register_module("W_query", std::make_shared<Linear>(4, 4, false));
    register_module("W_key", std::make_shared<Linear>(4, 4, false));
  }
};
struct Block : Module {
  Block() : Module("Block") {
    register_module("attn", std::make_shared<Attn>());
    register_module("norm", std::make_shared<BatchNorm1d>(4));
    auto mlp = register_module("mlp", std::make_shared<Sequential>(Sequential{Linear(4, 8), GELU(), Linear(8, 4)}));
    register_module("mlp_again", mlp);  // the same module twice
  }
};
struct NestedModel : Module {
  NestedModel() : Module("NestedModel") {
    register_module("blocks", std::make_shared<Sequential>(Sequential{Block(), Block()}));
    register_module("head", std::make_shared<Linear>(4, 2));
  }
};

}  // namespace

// ---------------------------------------------------------------- BatchNorm1d

TEST(BatchNorm1dGolden, TrainStepsRunningStatsAndEvalMatchPyTorch) {
  int checked = 0;
  for (const json& c : golden_data().at("batchnorm")) {
    const DType dt = dtype_of(c.at("dtype"));
    const std::string name = c.at("name").get<std::string>() + " " + c.at("dtype").get<std::string>();
    SCOPED_TRACE(name);
    // float32: PyTorch's kernel rounds differently from our composed ops; float64 pins the formulas.
    const double rtol = dt == kFloat64 ? 1e-10 : 5e-6, atol = dt == kFloat64 ? 1e-12 : 1e-6;
    std::optional<double> momentum;
    if (!c.at("momentum").is_null()) momentum = c.at("momentum").get<double>();
    BatchNorm1d bn(c.at("num_features"), c.at("eps"), momentum, c.at("affine"), c.at("track_running_stats"));
    bn.to(dt);
    if (bn.affine) {
      NoGradGuard g;
      bn.weight.copy_(from_json(c.at("weight"), dt));
      bn.bias.copy_(from_json(c.at("bias"), dt));
    }
    int step_no = 0;
    for (const json& s : c.at("steps")) {
      SCOPED_TRACE("step " + std::to_string(step_no++));
      Tensor x = from_json(s.at("x"), dt).requires_grad_();
      bn.zero_grad();
      Tensor y = bn(x);
      sum(y * from_json(s.at("g"), dt)).backward();
      EXPECT_EQ(y.dtype(), dt);
      expect_close(y, s.at("y"), rtol, atol, "y");
      expect_close(x.grad(), s.at("dx"), rtol, atol, "dx");
      if (bn.affine) {
        expect_close(bn.weight.grad(), s.at("dweight"), rtol, atol, "dweight");
        expect_close(bn.bias.grad(), s.at("dbias"), rtol, atol, "dbias");
      }
      if (bn.track_running_stats) {
        expect_close(bn.running_mean, s.at("running_mean"), rtol, atol, "running_mean");
        expect_close(bn.running_var, s.at("running_var"), rtol, atol, "running_var");
        EXPECT_EQ(bn.num_batches_tracked.item(), s.at("num_batches_tracked").get<int64_t>());
      }
      ++checked;
    }
    bn.eval();
    const json& e = c.at("eval");
    Tensor x = from_json(e.at("x"), dt).requires_grad_();
    Tensor y = bn(x);
    sum(y * from_json(e.at("g"), dt)).backward();
    expect_close(y, e.at("y"), rtol, atol, "eval y");
    expect_close(x.grad(), e.at("dx"), rtol, atol, "eval dx");
  }
  EXPECT_EQ(checked, 22);
}

TEST(BatchNorm1dGolden, SecondOrderGradientsMatchPyTorch) {
  const json& so = golden_data().at("batchnorm_second_order");
  BatchNorm1d bn(3);
  bn.to(kFloat64);
  {
    NoGradGuard g;
    bn.weight.copy_(from_json(so.at("weight"), kFloat64));
    bn.bias.copy_(from_json(so.at("bias"), kFloat64));
  }
  for (const char* name : {"2d", "3d"}) {
    SCOPED_TRACE(name);
    const json& c = so.at(name);
    Tensor x = from_json(c.at("x"), kFloat64).requires_grad_();
    Tensor y = bn(x);
    auto first = grad({sum(y * from_json(c.at("g"), kFloat64))}, {x, bn.weight}, {}, std::nullopt, /*create_graph=*/true);
    Tensor s = sum(first[0] * from_json(c.at("v"), kFloat64)) + sum(first[1] * from_json(c.at("u"), kFloat64));
    auto second = grad({s}, {x, bn.weight});
    expect_close(second[0], c.at("ddx"), 1e-9, 1e-11, "d/dx");
    expect_close(second[1], c.at("ddweight"), 1e-9, 1e-11, "d/dweight");
  }
}

TEST(BatchNorm1d, GradcheckAndGradgradcheckInTrainAndEval) {
  manual_seed(5);
  BatchNorm1d bn(3, 1e-3);
  bn.to(kFloat64);
  {
    NoGradGuard g;
    bn.weight.copy_(rand({3}, kFloat64) + 0.5);
    bn.bias.copy_(randn({3}, kFloat64));
  }
  auto fn = [&](const std::vector<Tensor>& in) { return bn(in[0]); };
  for (const Size& shape : {Size{4, 3}, Size{2, 3, 3}}) {
    for (bool train : {true, false}) {
      SCOPED_TRACE(shape.str() + (train ? " train" : " eval"));
      bn.train(train);
      Tensor x = randn(shape.vec(), kFloat64).requires_grad_();
      EXPECT_TRUE(gradcheck(fn, {x}));
      EXPECT_TRUE(gradgradcheck(fn, {x}));
    }
  }
}

TEST(BatchNorm1d, StateDictHasPyTorchsNamesOrderAndDtypes) {
  BatchNorm1d bn(4);
  EXPECT_EQ(keys_of(bn.state_dict()),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(keys_of(bn.named_parameters()), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(bn.num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(bn.num_batches_tracked.dim(), 0);
  EXPECT_EQ(bn.running_var.to_vector<float>(), std::vector<float>(4, 1.0f));
  EXPECT_FALSE(bn.running_mean.requires_grad());
  bn.to(kFloat64);
  EXPECT_EQ(bn.running_mean.dtype(), kFloat64);
  EXPECT_EQ(bn.num_batches_tracked.dtype(), kInt64);  // to() converts floating tensors only
  EXPECT_TRUE(BatchNorm1d(4, 1e-5, 0.1, false, false).state_dict().empty());
  EXPECT_EQ(keys_of(BatchNorm1d(4, 1e-5, 0.1, false).state_dict()),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
}

TEST(BatchNorm1d, RejectsWhatPyTorchRejectsWithItsMessages) {
  BatchNorm1d bn(4);
  EXPECT_EQ(error_of([&] { bn(ones({1, 4})); }),
            "[BatchNorm1d] Expected more than 1 value per channel when training, got input size torch.Size([1, 4])");
  EXPECT_EQ(error_of([&] { bn(ones({1, 4, 1})); }),
            "[BatchNorm1d] Expected more than 1 value per channel when training, got input size torch.Size([1, 4, 1])");
  EXPECT_EQ(error_of([&] { bn(ones({3, 5})); }), "[BatchNorm1d] running_mean should contain 5 elements not 4");
  EXPECT_EQ(error_of([&] { bn(ones({3})); }), "[BatchNorm1d] expected 2D or 3D input (got 1D input)");
  EXPECT_EQ(error_of([&] { bn(ones({3, 4, 2, 2})); }), "[BatchNorm1d] expected 2D or 3D input (got 4D input)");
  EXPECT_THROW(bn(ones({1, 4})), std::invalid_argument);
  EXPECT_EQ(bn.num_batches_tracked.item(), 0);  // a rejected call does not count (in PyTorch it does)
  bn.eval();
  EXPECT_EQ(bn(ones({1, 4})).shape(), (Size{1, 4}));  // eval uses the running statistics
  BatchNorm1d no_stats(4, 1e-5, 0.1, true, false);
  no_stats.eval();  // without running statistics eval normalizes by the batch's, as PyTorch
  EXPECT_EQ(error_of([&] { no_stats(ones({3, 5})); }), "[BatchNorm1d] weight should contain 5 elements not 4");
  EXPECT_NE(error_of([&] { no_stats(ones({1, 4})); }).find("Expected more than 1 value per channel"), std::string::npos);
  BatchNorm1d bare(4, 1e-5, 0.1, false, false);
  EXPECT_EQ(bare(ones({3, 5})).shape(), (Size{3, 5}));  // nothing sized by num_features: PyTorch accepts it too
}

TEST(BatchNorm1d, EmptyInputCountsTheBatchAndLeavesTheStatistics) {
  BatchNorm1d bn(4);
  {
    NoGradGuard g;
    bn.weight.fill_(2.0);
    bn.bias.fill_(3.0);
  }
  EXPECT_EQ(bn(ones({0, 4})).shape(), (Size{0, 4}));
  EXPECT_EQ(bn(ones({2, 4, 0})).shape(), (Size{2, 4, 0}));
  EXPECT_EQ(bn.num_batches_tracked.item(), 2);
  EXPECT_EQ(bn.running_mean.to_vector<float>(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(bn.running_var.to_vector<float>(), std::vector<float>(4, 1.0f));
}

// ---------------------------------------------------------------- activations and reprs

TEST(ActivationsGolden, OutputsAndReprsMatchPyTorch) {
  const json& a = golden_data().at("activations");
  std::map<std::string, std::shared_ptr<Module>> modules = {
      {"Tanh()", std::make_shared<Tanh>()},         {"ReLU()", std::make_shared<ReLU>()},
      {"GELU()", std::make_shared<GELU>()},         {"GELU('tanh')", std::make_shared<GELU>("tanh")},
      {"Sigmoid()", std::make_shared<Sigmoid>()},   {"Softmax(1)", std::make_shared<Softmax>(1)},
      {"Softmax(0)", std::make_shared<Softmax>(0)}, {"Softmax(-1)", std::make_shared<Softmax>(-1)},
      {"Softmax()", std::make_shared<Softmax>()},   {"Identity()", std::make_shared<Identity>()},
      {"SiLU()", std::make_shared<SiLU>()},         {"Flatten()", std::make_shared<Flatten>()},
      {"Flatten(0, 1)", std::make_shared<Flatten>(0, 1)}};
  ASSERT_EQ(a.at("cases").size(), modules.size());
  for (const json& c : a.at("cases")) {
    const std::string name = c.at("module");
    SCOPED_TRACE(name);
    Module& m = *modules.at(name);
    EXPECT_EQ(m.repr(), c.at("repr").get<std::string>());
    for (const char* key : {"2", "3", "1"}) {
      Tensor x = from_json(a.at(std::string("x") + key), kFloat32);
      if (!c.contains(std::string("y") + key)) {  // Softmax(1), Flatten on 1-D input
        EXPECT_NE(error_of([&] { m(x); }).find("out of range"), std::string::npos);
        continue;
      }
      // atol: GELU's 1 + erf(x / sqrt 2) cancels for x << 0 (both sides in float32)
      expect_close(m(x), c.at(std::string("y") + key), 1e-6, 1e-6, std::string("y") + key);
    }
  }
  Tensor x = ones({2});
  EXPECT_EQ(Identity()(x).impl(), x.impl());  // the same tensor, as PyTorch returns its input
}

TEST(ReprGolden, SequentialOfTheNewModulesPrintsLikePyTorch) {
  const json& r = golden_data().at("reprs");
  Sequential seq{Linear(4, 8), BatchNorm1d(8), ReLU(), GELU(), GELU("tanh"), Tanh(), Sigmoid(), Softmax(1), Softmax(),
                 Identity(), BatchNorm1d(8, 1e-3, std::nullopt, false, false),
                 Sequential{BatchNorm1d(8, 1e-5, 0.2), Identity()}};
  EXPECT_EQ(seq.repr(), r.at("sequential").get<std::string>());
  EXPECT_EQ(BatchNorm1d(4).repr(), r.at("batchnorm_default").get<std::string>());
  EXPECT_EQ(BatchNorm1d(16, 0.001, 0.01, false).repr(), r.at("batchnorm_options").get<std::string>());
  EXPECT_EQ(BatchNorm1d(2, 1e-7, std::nullopt, true, false).repr(), r.at("batchnorm_cumulative").get<std::string>());
  EXPECT_EQ(Unflatten(1, {2, 2}).repr(), r.at("unflatten").get<std::string>());
  EXPECT_EQ(Unflatten(0, {4}).repr(), r.at("unflatten_one").get<std::string>());
}

TEST(LossModules, PrintLikePyTorchAndCallTheFunctionalLossWithTheirOptions) {
  const json& r = golden_data().at("reprs");
  Sequential losses(std::vector<std::shared_ptr<Module>>{
      std::make_shared<L1Loss>(), std::make_shared<MSELoss>("sum"), std::make_shared<CrossEntropyLoss>(-100, "mean", 0.1),
      std::make_shared<NLLLoss>(), std::make_shared<BCELoss>(), std::make_shared<BCEWithLogitsLoss>(Tensor(), "mean", ones({3})),
      std::make_shared<SmoothL1Loss>("mean", 0.5), std::make_shared<HuberLoss>("mean", 2.0), std::make_shared<KLDivLoss>("batchmean")});
  std::string want = r.at("losses").get<std::string>();
  want.replace(0, std::string("ModuleList").size(), "Sequential");  // the same list; ag has no ModuleList
  EXPECT_EQ(losses.repr(), want);
  // the weights are buffers, in PyTorch's order
  BCEWithLogitsLoss weighted(ones({3}), "mean", ones({3}));
  std::vector<std::string> keys;
  for (const auto& [name, t] : weighted.state_dict()) keys.push_back(name);
  EXPECT_EQ(keys, r.at("bce_with_logits_state").get<std::vector<std::string>>());
  // forward is the functional loss with the module's options
  manual_seed(0);
  const Tensor x = randn({4, 3}, kFloat64), y = randn({4, 3}, kFloat64), t = tensor({0, 2, -100, 1});
  auto same = [](const Tensor& a, const Tensor& b) { return testutil::bit_mismatches<double>(a, b) == 0; };
  EXPECT_TRUE(same(CrossEntropyLoss(-100, "sum", 0.1)(x, t), cross_entropy(x, t, -100, "sum", 0.1)));
  EXPECT_TRUE(same(CrossEntropyLoss(2)(x, tensor({0, 2, 2, 1})), cross_entropy(x, tensor({0, 2, 2, 1}), 2)));
  EXPECT_TRUE(same(MSELoss("none")(x, y), mse_loss(x, y, "none")));
  EXPECT_TRUE(same(L1Loss("sum")(x, y), l1_loss(x, y, "sum")));
  EXPECT_TRUE(same(HuberLoss("none", 0.3)(x, y), huber_loss(x, y, "none", 0.3)));
  EXPECT_TRUE(same(SmoothL1Loss("sum", 0.3)(x, y), smooth_l1_loss(x, y, "sum", 0.3)));
  EXPECT_TRUE(same(BCEWithLogitsLoss(ones({3}) * 2.0, "none", ones({3}) * 3.0)(x, sigmoid(y)),
                   binary_cross_entropy_with_logits(x, sigmoid(y), ones({3}) * 2.0, "none", ones({3}) * 3.0)));
  EXPECT_TRUE(same(BCELoss(Tensor(), "sum")(sigmoid(x), sigmoid(y)), binary_cross_entropy(sigmoid(x), sigmoid(y), {}, "sum")));
  EXPECT_TRUE(same(KLDivLoss("batchmean")(log_softmax(x, 1), softmax(y, 1)), kl_div(log_softmax(x, 1), softmax(y, 1), "batchmean")));
  EXPECT_TRUE(same(NLLLoss(-100, "none")(log_softmax(x, 1), t), nll_loss(log_softmax(x, 1), t, -100, "none")));
  EXPECT_THROW(MSELoss("avg")(x, y), std::invalid_argument);
}

// ---------------------------------------------------------------- Sequential from values

static_assert(!std::is_copy_constructible_v<Module> && !std::is_copy_constructible_v<Linear>);
// Sequential(a, b) would build b before a under GCC (call arguments are evaluated in an unspecified
// order): only the braced form, evaluated left to right, compiles.
static_assert(!std::is_constructible_v<Sequential, Linear&&, ReLU&&>);
static_assert(!std::is_constructible_v<Sequential, std::shared_ptr<Linear>, Tanh&&>);
static_assert(std::is_constructible_v<Sequential, std::initializer_list<SequentialItem>>);
static_assert(!std::is_convertible_v<Linear&, SequentialItem>, "an lvalue module is not copied or stolen");
static_assert(std::is_convertible_v<Linear&&, SequentialItem> && std::is_convertible_v<std::shared_ptr<Linear>, SequentialItem>);

TEST(Sequential, TakesModulesByValueAndSharedPtrs) {
  manual_seed(0);
  auto shared = std::make_shared<Linear>(8, 2);
  Linear first(4, 8);
  const Tensor first_weight = first.weight;
  Sequential seq{std::move(first), ReLU(), shared};
  ASSERT_EQ(seq.size(), 3u);
  EXPECT_EQ(seq[2], shared);  // a shared_ptr is kept, not copied
  auto* lin = dynamic_cast<Linear*>(seq[0].get());
  ASSERT_NE(lin, nullptr);  // moved in as its own type
  EXPECT_EQ(lin->weight.impl(), first_weight.impl());
  EXPECT_EQ(seq.parameters()[0].impl(), first_weight.impl());
  EXPECT_EQ(keys_of(seq.named_parameters()), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  Tensor x = randn({3, 4});
  EXPECT_EQ(seq(x).to_vector<float>(), (*shared)(relu((*lin)(x))).to_vector<float>());
  seq.push_back(Softmax(1));
  EXPECT_EQ(seq[3]->repr(), "Softmax(dim=1)");
  // the existing forms still work
  Sequential from_vector({std::make_shared<Linear>(2, 2), std::make_shared<Tanh>()});
  EXPECT_EQ(from_vector.size(), 2u);
}

TEST(Sequential, AtGivesTheModuleAsItsOwnTypeAndIndexingPastTheEndThrows) {
  Sequential model{Linear(3, 1), Flatten(0, 1)};
  Linear& linear_layer = model.at<Linear>(0);  // PyTorch's model[0].weight is model.at<Linear>(0).weight
  EXPECT_EQ(&linear_layer, model[0].get());
  EXPECT_EQ(linear_layer.weight.impl(), model.parameters()[0].impl());
  EXPECT_EQ(model.at<Flatten>(1).start_dim, 0);
  EXPECT_EQ(error_of([&] { model.at<Linear>(1); }), "Sequential::at: module 1 is a Flatten, not ag::nn::Linear");
  EXPECT_EQ(error_of([&] { model.at<Linear>(2); }), "Sequential: index 2 is out of range (it holds 2 modules)");
  EXPECT_EQ(error_of([&] { model[2]; }), "Sequential: index 2 is out of range (it holds 2 modules)");
  EXPECT_THROW(model[5], std::out_of_range);
  EXPECT_THROW(model.at<Linear>(1), std::invalid_argument);
}

// ---------------------------------------------------------------- named_modules, apply, requires_grad_

TEST(ModuleApiGolden, NamedModulesApplyAndStateDictOrderMatchPyTorch) {
  const json& n = golden_data().at("nested");
  NestedModel m;
  std::vector<std::vector<std::string>> named;
  for (const auto& [name, mod] : m.named_modules()) named.push_back({name, mod->type_name()});
  EXPECT_EQ(named, n.at("named_modules").get<std::vector<std::vector<std::string>>>());
  std::vector<std::string> visited;
  Module& self = m.apply([&](Module& mod) { visited.push_back(mod.type_name()); });
  EXPECT_EQ(&self, &m);
  EXPECT_EQ(visited, n.at("apply_order").get<std::vector<std::string>>());
  EXPECT_EQ(keys_of(m.state_dict()), n.at("state_dict_keys").get<std::vector<std::string>>());
  EXPECT_EQ(m.modules().size(), named.size());
  EXPECT_EQ(m.modules()[0], &m);
  const NestedModel& cm = m;
  EXPECT_EQ(cm.named_modules()[3].first, "blocks.0.attn");
}

TEST(ModuleApi, RequiresGradAndApplyReachEveryModule) {
  NestedModel m;
  EXPECT_EQ(&m.requires_grad_(false), &m);
  for (const Tensor& p : m.parameters()) EXPECT_FALSE(p.requires_grad());
  m.requires_grad_();
  for (const Tensor& p : m.parameters()) EXPECT_TRUE(p.requires_grad());
  // apply as PyTorch's init idiom: zero every Linear's bias
  m.apply([](Module& mod) {
    if (auto* lin = dynamic_cast<Linear*>(&mod); lin && lin->bias.defined()) {
      NoGradGuard g;
      lin->bias.zero_();
    }
  });
  for (const auto& [name, t] : m.named_parameters()) {
    if (name.size() >= 4 && name.substr(name.size() - 4) == "bias" && name.find("norm") == std::string::npos) {
      EXPECT_EQ(t.to_vector<float>(), std::vector<float>(t.numel(), 0.0f)) << name;
    }
  }
}

// ---------------------------------------------------------------- load_state_dict

TEST(LoadStateDict, CopiesInPlaceSoEveryHandleSeesTheValues) {
  manual_seed(1);
  Linear a(3, 2), b(3, 2);
  b.to(kFloat64);
  const Tensor handle = b.weight;  // an optimizer's handle, say
  const IncompatibleKeys keys = b.load_state_dict(a.state_dict());
  EXPECT_TRUE(keys.missing_keys.empty() && keys.unexpected_keys.empty());
  EXPECT_EQ(handle.impl(), b.weight.impl());
  EXPECT_EQ(handle.dtype(), kFloat64);  // the values convert to the module's dtype
  EXPECT_EQ(handle.to_vector<double>(), a.weight.to(kFloat64).to_vector<double>());
  EXPECT_EQ(b.bias.to_vector<double>(), a.bias.to(kFloat64).to_vector<double>());
  EXPECT_TRUE(b.weight.is_leaf() && b.weight.requires_grad());
  EXPECT_FALSE(b.weight.grad_fn());
  std::ostringstream os;
  os << keys;
  EXPECT_EQ(os.str(), "<All keys matched successfully>");
  // a model's state_dict into a twin: the same outputs
  manual_seed(2);
  NestedModel m1;
  manual_seed(3);
  NestedModel m2;
  m2.load_state_dict(m1.state_dict());
  for (const auto& [n1, t1] : m1.state_dict()) {
    bool found = false;
    for (const auto& [n2, t2] : m2.state_dict()) {
      if (n1 != n2) continue;
      found = true;
      EXPECT_EQ(t1.to_vector<double>(), t2.to_vector<double>()) << n1;
      EXPECT_NE(t1.impl(), t2.impl()) << n1;  // copied, not shared
    }
    EXPECT_TRUE(found) << n1;
  }
}

TEST(LoadStateDictGolden, ErrorsAndReturnedKeysAreThoseOfPyTorch) {
  const json& e = golden_data().at("load_errors");
  Linear lin(3, 3);
  const auto before = lin.weight.to_vector<float>();
  EXPECT_EQ(error_of([&] { lin.load_state_dict({{"weight", zeros({3, 3})}}); }), e.at("linear_missing").get<std::string>());
  EXPECT_EQ(lin.weight.to_vector<float>(), before);  // nothing copied when it throws (PyTorch copies what matched)
  EXPECT_EQ(error_of([&] {
              lin.load_state_dict({{"weight", zeros({2, 3})}, {"bias", ones({3})}, {"y.z", ones({1})}, {"a", ones({1})}});
            }),
            e.at("linear_unexpected_and_size").get<std::string>());
  EXPECT_EQ(error_of([&] { lin.load_state_dict({{"weight", zeros({2, 3})}, {"bias", ones({3})}}, false); }),
            e.at("linear_size_not_strict").get<std::string>());
  EXPECT_THROW(lin.load_state_dict({{"weight", zeros({2, 3})}, {"bias", ones({3})}}, false), std::runtime_error);
  IncompatibleKeys k = lin.load_state_dict({{"weight", zeros({3, 3})}, {"x", ones({1})}, {"weight.q", ones({1})}}, false);
  EXPECT_EQ(k.missing_keys, e.at("linear_not_strict_keys").at("missing").get<std::vector<std::string>>());
  EXPECT_EQ(k.unexpected_keys, e.at("linear_not_strict_keys").at("unexpected").get<std::vector<std::string>>());
  EXPECT_EQ(lin.weight.to_vector<float>(), std::vector<float>(9, 0.0f));  // what matched was loaded
  std::ostringstream os;
  os << k;
  EXPECT_EQ(os.str(), "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['x'])");

  NestedModel m;
  auto edited = [&](int64_t head_bias) {
    NamedTensors sd;
    for (auto& [n, t] : m.state_dict()) {
      if (n == "blocks.0.norm.running_var" || n == "blocks.1.mlp.2.bias") continue;
      sd.emplace_back(n, n == "head.bias" ? zeros({head_bias}) : t);
    }
    for (const char* extra : {"blocks.1.attn.W_value.weight", "head.weight.extra", "blocks.2.x", "extra"})
      sd.emplace_back(extra, zeros({1}));
    return sd;
  };
  EXPECT_EQ(error_of([&] { m.load_state_dict(edited(3)); }), e.at("nested_strict").get<std::string>());
  k = m.load_state_dict(edited(2), false);
  EXPECT_EQ(k.missing_keys, e.at("nested_not_strict_keys").at("missing").get<std::vector<std::string>>());
  EXPECT_EQ(k.unexpected_keys, e.at("nested_not_strict_keys").at("unexpected").get<std::vector<std::string>>());

  EXPECT_THROW(lin.load_state_dict({{"weight", zeros({3, 3})}, {"weight", zeros({3, 3})}, {"bias", zeros({3})}}),
               std::invalid_argument);  // a Python dict cannot hold a key twice
}

TEST(LoadStateDictGolden, BatchNormCountDefaultsToZeroAndTakesA1DTensor) {
  const json& e = golden_data().at("load_errors");
  BatchNorm1d bn(2);
  bn(randn({4, 2}));
  EXPECT_EQ(bn.num_batches_tracked.item(), 1);
  const IncompatibleKeys k = bn.load_state_dict(
      {{"weight", ones({2})}, {"bias", zeros({2})}, {"running_mean", ones({2})}, {"running_var", ones({2})}});
  EXPECT_EQ(k.missing_keys, e.at("batchnorm_without_count").at("missing").get<std::vector<std::string>>());
  EXPECT_EQ(k.unexpected_keys, e.at("batchnorm_without_count").at("unexpected").get<std::vector<std::string>>());
  EXPECT_EQ(bn.num_batches_tracked.item(), e.at("batchnorm_without_count").at("num_batches_tracked").get<int64_t>());
  bn.load_state_dict({{"weight", ones({2})}, {"bias", zeros({2})}, {"running_mean", ones({2})}, {"running_var", ones({2})},
                      {"num_batches_tracked", tensor({7})}});
  EXPECT_EQ(bn.num_batches_tracked.item(), e.at("batchnorm_count_from_1d").get<int64_t>());
  EXPECT_EQ(bn.num_batches_tracked.dim(), 0);
}
