// What a translator of PyTorch code reaches for (issue 26): rounding at the values where rounding
// rules differ, multinomial / bernoulli / exponential_ errors, the method forms and the creation
// overloads. Golden values: tests/golden/translator.json (tools/golden/make_translator_golden.py);
// the random draws themselves are checked bit for bit in test_random.cpp (rng_cases.txt).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "golden_json.h"

using namespace ag;

namespace {

const nlohmann::json& golden(const std::string& key) { return testutil::golden_json("translator.json").at(key); }

double number(const nlohmann::json& v) {
  if (v.is_string()) return v == "nan" ? std::nan("") : v == "inf" ? INFINITY : -INFINITY;
  return v.get<double>();
}

// Values equal to PyTorch's exactly: NaN where it has NaN, and the sign of a zero.
void expect_same(const Tensor& got, const nlohmann::json& want, const std::string& what) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double w = number(want[i]);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " element " << i;
    } else {
      EXPECT_EQ(g[i], w) << what << " element " << i;
      EXPECT_EQ(std::signbit(g[i]), std::signbit(w)) << what << " element " << i << " (sign of zero)";
    }
  }
}

Tensor input(const nlohmann::json& values, DType dt) {
  std::vector<double> v;
  for (const auto& e : values) v.push_back(number(e));
  return from_vector(v, {static_cast<int64_t>(v.size())}, dt);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Rounding, HalvesZerosNanAndInfAsPyTorch) {
  for (const auto& [name, dt] : {std::pair{"float32", kFloat32}, std::pair{"float64", kFloat64}}) {
    const auto& c = golden(std::string("rounding_") + name);
    const Tensor x = input(c.at("x"), dt);
    expect_same(round(x), c.at("round"), std::string("round ") + name);
    expect_same(floor(x), c.at("floor"), std::string("floor ") + name);
    expect_same(ceil(x), c.at("ceil"), std::string("ceil ") + name);
    expect_same(trunc(x), c.at("trunc"), std::string("trunc ") + name);
    expect_same(frac(x), c.at("frac"), std::string("frac ") + name);
    EXPECT_EQ(round(x).dtype(), dt);
  }
  // half to even, unlike std::round
  EXPECT_EQ(round(tensor({0.5, 1.5, 2.5, -2.5})).to_vector<double>(), (std::vector<double>{0, 2, 2, -2}));
}

TEST(Rounding, RoundWithDecimalsAsPyTorch) {
  for (const auto& [name, dt] : {std::pair{"float32", kFloat32}, std::pair{"float64", kFloat64}}) {
    const auto& c = golden(std::string("round_decimals_") + name);
    const Tensor x = input(c.at("x"), dt);
    for (int d = -2; d <= 3; ++d) expect_same(round(x, d), c.at(std::to_string(d)), std::string("round decimals ") + std::to_string(d) + " " + name);
  }
}

TEST(Rounding, IntegersStayAsTheyAreBoolAndIntegerFracAreRefused) {
  const Tensor i = tensor({1, -2, 3});
  for (const Tensor& y : {round(i), floor(i), ceil(i), trunc(i)}) {
    EXPECT_EQ(y.dtype(), kInt64);
    EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));
    EXPECT_FALSE(y.shares_storage(i));
  }
  EXPECT_NE(error_of([&] { frac(i); }).find("\"frac_cpu\" not implemented for 'Long'"), std::string::npos);
  EXPECT_NE(error_of([&] { round(i, 1); }).find("\"round_cpu\" not implemented for 'Long'"), std::string::npos);
  const Tensor b = tensor({true, false});
  EXPECT_NE(error_of([&] { round(b); }).find("\"round_vml_cpu\" not implemented for 'Bool'"), std::string::npos);
  EXPECT_NE(error_of([&] { floor(b); }).find("\"floor_vml_cpu\" not implemented for 'Bool'"), std::string::npos);
  EXPECT_NE(error_of([&] { frac(b); }).find("\"frac_cpu\" not implemented for 'Bool'"), std::string::npos);
}

TEST(Rounding, GradientsAreZeroExceptFracs) {
  Tensor x = tensor({0.3, 1.7, -2.5}, kFloat64).requires_grad_();
  Tensor w = tensor({1.0, 2.0, 3.0}, kFloat64);
  sum((round(x) + floor(x) + ceil(x) + trunc(x) + round(x, 1)) * w).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 0}));
  x.set_grad({});
  sum(frac(x) * w).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(round(x, 2).grad_fn()->name(), "RoundBackward1");
  EXPECT_EQ(frac(x).grad_fn()->name(), "FracBackward0");
}

TEST(Sampling, MultinomialErrorsArePyTorchs) {
  auto msg = [](const std::function<void()>& f) { return error_of(f); };
  auto has = [](const std::string& m, const std::string& key) { return m.find(key) != std::string::npos; };
  EXPECT_TRUE(has(msg([] { multinomial(ones({2, 2, 2}), 1); }), "prob_dist must be 1 or 2 dim"));
  EXPECT_TRUE(has(msg([] { multinomial(tensor(1.0), 1); }), "prob_dist must be 1 or 2 dim"));
  EXPECT_TRUE(has(msg([] { multinomial(tensor({1, 2}), 1); }), "multinomial only supports floating-point dtypes for input, got: Long"));
  EXPECT_TRUE(has(msg([] { multinomial(ones({3}), 0); }), "cannot sample n_sample <= 0 samples"));
  EXPECT_TRUE(has(msg([] { multinomial(ones({3}), 4); }), "cannot sample n_sample > prob_dist.size(-1) samples without replacement"));
  EXPECT_TRUE(has(msg([] { multinomial(tensor({1.0, -1.0}), 1); }), "probability tensor contains either `inf`, `nan` or element < 0"));
  EXPECT_TRUE(has(msg([] { multinomial(tensor({1.0, NAN}), 1); }), "probability tensor contains either `inf`, `nan` or element < 0"));
  EXPECT_TRUE(has(msg([] { multinomial(tensor({{1.0, 1.0}, {0.0, 0.0}}), 1); }), "invalid multinomial distribution (sum of probabilities <= 0)"));
  EXPECT_TRUE(has(msg([] { multinomial(tensor({1.0, -1.0}), 2, true); }), "invalid multinomial distribution (encountering probability entry < 0)"));
  EXPECT_TRUE(has(msg([] { multinomial(tensor({1.0, INFINITY}), 2, true); }),
                  "invalid multinomial distribution (encountering probability entry = infinity or NaN)"));
  EXPECT_TRUE(has(msg([] { multinomial(zeros({3}), 2, true); }), "invalid multinomial distribution (sum of probabilities <= 0)"));
  // with replacement, more samples than categories; no rows: no draws
  EXPECT_EQ(multinomial(ones({2}), 5, true).sizes(), (Size{5}));
  Generator g(3);
  EXPECT_EQ(multinomial(ones({0, 3}), 2, false, &g).sizes(), (Size{0, 2}));
  EXPECT_EQ(g.random(), Generator(3).random());
  // the samples are int64 and never require grad
  Tensor p = tensor({0.2, 0.8}).requires_grad_();
  Tensor m = multinomial(p, 2);
  EXPECT_EQ(m.dtype(), kInt64);
  EXPECT_FALSE(m.requires_grad());
  // a zero-probability category is never drawn with replacement (but the first, only at u == 0)
  Tensor many = multinomial(tensor({0.0, 1.0, 0.0, 3.0}), 200, true);
  for (int64_t v : many.to_vector<int64_t>()) EXPECT_TRUE(v == 1 || v == 3) << v;
}

TEST(Sampling, BernoulliAndExponentialErrorsArePyTorchs) {
  auto has = [](const std::function<void()>& f, const std::string& key) { return error_of(f).find(key) != std::string::npos; };
  EXPECT_TRUE(has([] { bernoulli(tensor({0.5, 1.5})); }, "Expected p_in >= 0 && p_in <= 1 to be true, but got false"));
  EXPECT_TRUE(has([] { bernoulli(tensor({0, 1})); }, "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"));
  EXPECT_TRUE(has([] { bernoulli(ones({2}), 1.5); }, "bernoulli_ expects p to be in [0, 1], but got p=1.5"));
  EXPECT_TRUE(has([] { Tensor t = empty({3}); exponential_(t, -1.5); }, "exponential_ expects lambda >= 0.0, but found lambda=-1.5"));
  // bernoulli(p): zero gradient (BernoulliBackward0); bernoulli(t, p) has none; int64 t stays int64
  Tensor p = tensor({0.2, 0.7}).requires_grad_();
  Tensor y = bernoulli(p);
  EXPECT_EQ(y.grad_fn()->name(), "BernoulliBackward0");
  sum(y * 3.0).backward();
  EXPECT_EQ(p.grad().to_vector<double>(), (std::vector<double>{0, 0}));
  EXPECT_FALSE(bernoulli(p, 0.5).requires_grad());
  EXPECT_EQ(bernoulli(tensor({0, 1}), 0.5).dtype(), kInt64);
  // lambda 0 gives inf, as PyTorch
  Tensor e = empty({2});
  exponential_(e, 0.0);
  EXPECT_TRUE(std::isinf(e.to_vector<double>()[0]));
}

// Every method is its free function: same values, dtype, shape and node.
TEST(Methods, EachMethodIsItsFreeFunction) {
  const Tensor x = tensor({{0.25, 1.5, 2.75}, {0.5, 1.25, 3.5}}, kFloat64).requires_grad_();
  const Tensor y = tensor({{1.0, 0.5, 2.0}, {3.0, 1.5, 0.25}}, kFloat64);
  const Tensor mask = tensor({{true, false, true}, {false, true, false}});
  const Tensor idx = tensor({1, 0, 1});
  const Tensor idx2 = tensor({{0, 1, 0}, {1, 0, 1}});
  using Pair = std::pair<Tensor, Tensor>;
  const std::vector<std::pair<std::string, Pair>> cases = {
      {"add", {x.add(y), add(x, y)}}, {"add scalar", {x.add(2.0), add(x, 2.0)}},
      {"sub", {x.sub(y), sub(x, y)}}, {"sub scalar", {x.sub(2.0), sub(x, 2.0)}},
      {"mul", {x.mul(y), mul(x, y)}}, {"mul scalar", {x.mul(2.0), mul(x, 2.0)}},
      {"div", {x.div(y), div(x, y)}}, {"div scalar", {x.div(2.0), div(x, 2.0)}},
      {"pow", {x.pow(y), pow(x, y)}}, {"neg", {x.neg(), neg(x)}}, {"exp", {x.exp(), exp(x)}},
      {"log", {x.log(), log(x)}}, {"sqrt", {x.sqrt(), sqrt(x)}}, {"tanh", {x.tanh(), tanh(x)}},
      {"sigmoid", {x.sigmoid(), sigmoid(x)}}, {"relu", {x.relu(), relu(x)}}, {"erf", {x.erf(), erf(x)}},
      {"sin", {x.sin(), sin(x)}}, {"cos", {x.cos(), cos(x)}}, {"log1p", {x.log1p(), log1p(x)}},
      {"expm1", {x.expm1(), expm1(x)}}, {"rsqrt", {x.rsqrt(), rsqrt(x)}}, {"reciprocal", {x.reciprocal(), reciprocal(x)}},
      {"abs", {x.abs(), abs(x)}}, {"sign", {x.sign(), sign(x)}}, {"square", {x.square(), square(x)}},
      {"round", {x.round(), round(x)}}, {"round decimals", {x.round(1), round(x, 1)}}, {"floor", {x.floor(), floor(x)}},
      {"ceil", {x.ceil(), ceil(x)}}, {"trunc", {x.trunc(), trunc(x)}}, {"frac", {x.frac(), frac(x)}},
      {"clamp", {x.clamp(0.5, 2.0), clamp(x, 0.5, 2.0)}}, {"clamp_min", {x.clamp_min(1.0), clamp_min(x, 1.0)}},
      {"clamp_max", {x.clamp_max(1.0), clamp_max(x, 1.0)}}, {"minimum", {x.minimum(y), minimum(x, y)}},
      {"maximum", {x.maximum(y), maximum(x, y)}}, {"where", {x.where(mask, y), where(mask, x, y)}},
      {"where scalar", {x.where(mask, 0.5), where(mask, x, 0.5)}},
      {"gt", {x.gt(y), gt(x, y)}}, {"gt scalar", {x.gt(1.0), gt(x, 1.0)}}, {"lt", {x.lt(y), lt(x, y)}},
      {"lt scalar", {x.lt(1.0), lt(x, 1.0)}}, {"ge", {x.ge(y), ge(x, y)}}, {"ge scalar", {x.ge(1.5), ge(x, 1.5)}},
      {"le", {x.le(y), le(x, y)}}, {"le scalar", {x.le(1.5), le(x, 1.5)}}, {"eq", {x.eq(y), eq(x, y)}},
      {"eq scalar", {x.eq(1.5), eq(x, 1.5)}}, {"ne", {x.ne(y), ne(x, y)}}, {"ne scalar", {x.ne(1.5), ne(x, 1.5)}},
      {"logical_not", {mask.logical_not(), logical_not(mask)}}, {"logical_and", {mask.logical_and(x.gt(1.0)), logical_and(mask, gt(x, 1.0))}},
      {"logical_or", {mask.logical_or(x.gt(1.0)), logical_or(mask, gt(x, 1.0))}},
      {"sum", {x.sum({1}), sum(x, {1})}}, {"mean", {x.mean({0}, true), mean(x, {0}, true)}},
      {"max", {x.max(1).first, max(x, 1).first}}, {"min", {x.min(), min(x)}}, {"argmin", {x.argmin(1), argmin(x, 1)}},
      {"prod", {x.prod(1), prod(x, 1)}}, {"var", {x.var(1), var(x, 1)}}, {"std", {x.std(), ag::std(x)}},
      {"logsumexp", {x.logsumexp({1}), logsumexp(x, {1})}}, {"cumsum", {x.cumsum(1), cumsum(x, 1)}},
      {"norm", {x.norm(1.0, {1}), norm(x, 1.0, {1})}}, {"matmul", {x.matmul(y.t()), matmul(x, y.t())}},
      {"softmax", {x.softmax(1), softmax(x, 1)}}, {"log_softmax", {x.log_softmax(0), log_softmax(x, 0)}},
      {"masked_fill", {x.masked_fill(mask, 0.0), masked_fill(x, mask, 0.0)}}, {"triu", {x.triu(1), triu(x, 1)}},
      {"index_select", {x.index_select(1, idx), index_select(x, 1, idx)}},
      {"index_add", {x.index_add(1, idx, y, 2.0), index_add(x, 1, idx, y, 2.0)}},
      {"gather", {x.gather(1, idx2), gather(x, 1, idx2)}}, {"scatter_add", {x.scatter_add(1, idx2, y), scatter_add(x, 1, idx2, y)}},
      {"masked_select", {x.masked_select(mask), masked_select(x, mask)}}, {"flip", {x.flip({1}), flip(x, {1})}},
      {"roll", {x.roll(1), roll(x, 1)}}, {"roll dim", {x.roll(1, 1), roll(x, 1, 1)}}, {"repeat", {x.repeat({2, 1}), repeat(x, {2, 1})}},
      {"flatten", {x.flatten(), flatten(x)}}, {"unflatten", {x.unflatten(1, {3, 1}), unflatten(x, 1, {3, 1})}},
  };
  for (const auto& [name, p] : cases) {
    const auto& [method, free] = p;
    EXPECT_EQ(method.shape(), free.shape()) << name;
    EXPECT_EQ(method.dtype(), free.dtype()) << name;
    EXPECT_EQ(method.to_vector<double>(), free.to_vector<double>()) << name;
    EXPECT_EQ(method.requires_grad(), free.requires_grad()) << name;
    if (free.grad_fn()) EXPECT_EQ(method.grad_fn()->name(), free.grad_fn()->name()) << name;
  }
  EXPECT_EQ(x.chunk(3, 1).size(), 3u);
  // the random methods draw what their free functions draw
  Generator g1(5), g2(5);
  const Tensor p = tensor({0.1, 0.2, 0.3, 0.4});
  EXPECT_EQ(p.multinomial(3, false, &g1).to_vector<int64_t>(), multinomial(p, 3, false, &g2).to_vector<int64_t>());
  EXPECT_EQ(p.bernoulli(&g1).to_vector<double>(), bernoulli(p, &g2).to_vector<double>());
  Tensor a = empty({4}), b = empty({4});
  EXPECT_EQ(a.uniform_(-1, 1, &g1).to_vector<double>(), uniform_(b, -1, 1, &g2).to_vector<double>());
  EXPECT_EQ(a.normal_(0, 2, &g1).to_vector<double>(), normal_(b, 0, 2, &g2).to_vector<double>());
  EXPECT_EQ(a.bernoulli_(0.3, &g1).to_vector<double>(), bernoulli_(b, 0.3, &g2).to_vector<double>());
  EXPECT_EQ(a.exponential_(2.0, &g1).to_vector<double>(), exponential_(b, 2.0, &g2).to_vector<double>());
}

TEST(Creation, LibtorchOverloadsTakeOptions) {
  const Tensor a = arange(1., 9., kFloat64);  // libtorch's arange(start, end, options)
  EXPECT_EQ(a.dtype(), kFloat64);
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(arange(0, 3, Options().dtype(kFloat32).requires_grad()).requires_grad());
  const Tensor i = tensor({1, 2, 3});
  EXPECT_EQ(zeros_like(i, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(zeros_like(i).dtype(), kInt64);
  EXPECT_EQ(ones_like(i, kFloat32).to_vector<double>(), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(full_like(i, 2.5, kFloat64).to_vector<double>(), (std::vector<double>{2.5, 2.5, 2.5}));
  EXPECT_EQ(empty_like(i, kBool).dtype(), kBool);
  EXPECT_TRUE(zeros_like(ones({2}), Options().requires_grad()).requires_grad());
}

// libtorch's item<T>(): makemore's multinomial(probs, 1, false, &g).item<int64_t>(). An int64
// beyond 2^53 comes back exactly (item() goes through double); errors name item.
TEST(Conversions, ItemOfATypeAsLibtorch) {
  const int64_t big = (int64_t{1} << 53) + 1;
  EXPECT_EQ(tensor({big}).item<int64_t>(), big);
  EXPECT_NE(static_cast<int64_t>(tensor({big}).item()), big);  // why item<int64_t> exists
  EXPECT_EQ(tensor(2.75).item<float>(), 2.75f);
  EXPECT_EQ(tensor(-2.75).item<int64_t>(), -2);  // truncation toward zero, as C++ and libtorch
  EXPECT_EQ(tensor({7}).view({1, 1}).item<int>(), 7);
  EXPECT_TRUE(tensor(true).item<bool>());
  EXPECT_FALSE(tensor(0.0).item<bool>());
  EXPECT_TRUE(tensor(0.5).item<bool>());
  try {
    (void)tensor({1, 2}).item<int64_t>();
    FAIL() << "item of two elements";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[item] a Tensor with 2 elements cannot be converted to a scalar"),
              std::string::npos)
        << e.what();
  }
}

// libtorch's data() (Python's p.data): the same storage without history, so p.data() += -lr * g
// updates a leaf that requires grad without recording anything.
TEST(Conversions, DataUpdatesAParameterOutsideTheGraph) {
  Tensor p = tensor({1.0, 2.0}).requires_grad_(true);
  Tensor d = p.data();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.shares_storage(p));
  p.data() += -0.5 * ones({2});
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
  (p * p).sum().backward();
  EXPECT_EQ(p.grad().to_vector<float>(), (std::vector<float>{1.0f, 3.0f}));
  // PyTorch's .data has a version counter of its own, and this backward would silently use the
  // new values; ag's shares p's, and refuses (docs/pytorch-differences.md)
  Tensor y = p * p;
  p.data() += 1.0;
  try {
    y.sum().backward();
    FAIL() << "backward through a tensor written in place after it was saved";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos) << e.what();
  }
}
