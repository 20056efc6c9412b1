// Second-order autograd on the real model: the Hessian-vector product of the next-word training
// loss with respect to all nine parameter tensors (1318 numbers), against PyTorch's
// torch.autograd.functional.hvp (tests/golden/next_word_hvp.txt, made by
// tools/golden/make_next_word_hvp_golden.py from ../shared/reference/next_word.py).
// State: the default flags' model (seed 123, dim 16, heads 2, dropout 0), initialized in float32
// and converted to float64, before any step; loss: the trainer's cross_entropy on the full batch.
// v[k] = sin(0.1 * (k + 1)) over the flat index k of all parameters in named_parameters() order
// (also in the golden file). Loss, gradient (ag::grad) and H v (ag::functional::hvp, and vhp: H is
// symmetric) must match every element within |a - b| <= 1e-10 (1 + |b|).
//
// The loss function takes the parameter tensors and runs the example's own forward
// (TinyCausalLM::forward of examples/next_word/model.cpp) on them: for the duration of the call
// the module's parameter members (Linear::weight, bias, Embedding::weight, which its forward reads)
// hold the given tensors, and are put back afterwards. That tests the code the trainer runs
// (embedding, the Linear layers' addmm, the fused causal attention, the one-op cross_entropy),
// where a functional copy of the model written in this file would test a third version of it.
// Needs next_word_lib (built with the examples), hence AG_HAVE_NEXT_WORD.
#if defined(AG_HAVE_NEXT_WORD)

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "autograd/forward_ad.h"
#include "autograd/functional.h"
#include "golden_io.h"
#include "next_word/model.h"
#include "next_word/trainer.h"

namespace {

using ag::Tensor;

struct GoldenParam {
  std::string name;
  golden::Data value, v, grad, hvp;
};

struct Golden {
  double loss = 0;
  std::vector<GoldenParam> params;
};

Golden read_golden() {
  auto f = golden::open("next_word_hvp.txt");
  Golden g;
  const golden::Data loss = golden::parse(golden::expect_keyword(f, "loss"));
  if (!loss.shape.empty() || loss.values.size() != 1) throw std::runtime_error("golden: loss must be one number");
  g.loss = loss.values[0];
  const int n = std::stoi(golden::expect_keyword(f, "params"));
  for (int i = 0; i < n; ++i) {
    GoldenParam p;
    p.name = golden::expect_keyword(f, "param");
    p.value = golden::parse(golden::expect_keyword(f, "value"));
    p.v = golden::parse(golden::expect_keyword(f, "v"));
    p.grad = golden::parse(golden::expect_keyword(f, "grad"));
    p.hvp = golden::parse(golden::expect_keyword(f, "hvp"));
    g.params.push_back(std::move(p));
  }
  return g;
}

// The trainer's batch: its vocabulary and sentence (next_word::run with no epochs), ids[:-1] as
// the inputs and ids[1:] as the targets, a batch of one.
struct Batch {
  Tensor inputs, targets;
  int64_t vocab = 0;
};

Batch trainer_batch() {
  next_word::Config c;
  c.epochs = 0;
  const next_word::Result r = next_word::run(c);
  std::vector<int64_t> ids;
  for (const auto& w : r.words) ids.push_back(std::find(r.vocab.begin(), r.vocab.end(), w) - r.vocab.begin());
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 4, 5, 2, 1, 3})) << "the reference's ids";
  const auto n = static_cast<int64_t>(ids.size());
  Tensor all = ag::from_vector(ids, {n});
  return {all.slice(0, 0, n - 1).unsqueeze(0), all.slice(0, 1, n).unsqueeze(0), static_cast<int64_t>(r.vocab.size())};
}

// The default flags' model, built as the trainer builds it: float32 init from the seed, then float64.
struct Model {
  next_word::Config config;  // defaults: seed 123, dim 16, heads 2, dropout 0
  std::unique_ptr<next_word::TinyCausalLM> m;
  explicit Model(int64_t vocab, int64_t T) {
    ag::manual_seed(config.seed);
    m = std::make_unique<next_word::TinyCausalLM>(vocab, T, config.dim, config.heads, config.dropout);
    m->to(ag::kFloat64);
    m->train();  // as the trainer computes its loss (dropout 0: the identity)
  }
  // The members the forward reads, in named_parameters() order (checked by the test).
  std::vector<Tensor*> slots() const {
    auto& a = *m->attn;
    return {&m->tok->weight,       &m->pos->weight,       &a.W_query->weight, &a.W_key->weight, &a.W_value->weight,
            &a.out_proj->weight,   &a.out_proj->bias,     &m->head->weight,   &m->head->bias};
  }
};

// Puts `with` into the slots for its lifetime, then the previous tensors back.
class SwapIn {
 public:
  SwapIn(const std::vector<Tensor*>& slots, const std::vector<Tensor>& with) : slots_(slots) {
    if (with.size() != slots.size()) {
      throw std::invalid_argument("SwapIn: " + std::to_string(with.size()) + " tensors for " + std::to_string(slots.size()) + " parameters");
    }
    for (std::size_t i = 0; i < slots.size(); ++i) saved_.push_back(std::exchange(*slots[i], with[i]));
  }
  ~SwapIn() {
    for (std::size_t i = 0; i < slots_.size(); ++i) *slots_[i] = saved_[i];
  }
  SwapIn(const SwapIn&) = delete;
  SwapIn& operator=(const SwapIn&) = delete;

 private:
  std::vector<Tensor*> slots_;
  std::vector<Tensor> saved_;
};

// |a - b| <= 1e-10 (1 + |b|) element by element, each failure naming the parameter and element;
// keeps the largest differences seen.
struct Comparer {
  double max_abs = 0, max_rel = 0;
  int64_t failures = 0;
  void check(const std::string& what, const std::string& name, const Tensor& got, const golden::Data& want) {
    const std::vector<int64_t> shape(got.shape().begin(), got.shape().end());
    ASSERT_EQ(shape, want.shape) << what << " of " << name;
    ASSERT_EQ(got.dtype(), ag::kFloat64) << what << " of " << name;
    const std::vector<double> a = got.contiguous().to_vector<double>();
    ASSERT_EQ(a.size(), want.values.size()) << what << " of " << name;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double b = want.values[i], d = std::abs(a[i] - b);
      max_abs = std::max(max_abs, d);
      if (b != 0) max_rel = std::max(max_rel, d / std::abs(b));
      if (!(d <= 1e-10 * (1 + std::abs(b)))) {  // also fails on NaN
        ++failures;
        if (failures <= 20) {  // enough to see a pattern without flooding the log
          ADD_FAILURE() << what << " of " << name << " element " << i << " " << index_str(want.shape, i) << ": ag " << a[i]
                        << ", PyTorch " << b << ", difference " << d;
        }
      }
    }
  }
  static std::string index_str(const std::vector<int64_t>& shape, std::size_t flat) {
    std::vector<int64_t> idx(shape.size());
    auto rest = static_cast<int64_t>(flat);
    for (std::size_t d = shape.size(); d-- > 0;) idx[d] = rest % shape[d], rest /= shape[d];
    std::ostringstream os;
    os << "[";
    for (std::size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
    os << "]";
    return os.str();
  }
};

class NextWordHvp : public ::testing::Test {
 protected:
  void SetUp() override {
    golden_ = read_golden();
    batch_ = trainer_batch();
    model_ = std::make_unique<Model>(batch_.vocab, batch_.inputs.size(1));
    const auto named = model_->m->named_parameters();
    const auto slots = model_->slots();
    ASSERT_EQ(named.size(), golden_.params.size());
    ASSERT_EQ(slots.size(), named.size()) << "a parameter was added to the model: add its member to Model::slots";
    for (std::size_t i = 0; i < named.size(); ++i) {
      ASSERT_EQ(named[i].first, golden_.params[i].name) << "parameter " << i;
      ASSERT_EQ(slots[i]->impl(), named[i].second.impl()) << "Model::slots()[" << i << "] is not " << named[i].first;
      params_.push_back(named[i].second.detach().clone());
      v_.push_back(golden_.params[i].v.make(ag::kFloat64));
    }
  }

  // The trainer's loss as a function of the parameter tensors.
  ag::functional::Fn loss_fn() {
    return [this](const std::vector<Tensor>& ps) {
      SwapIn swap(model_->slots(), ps);
      Tensor logits = model_->m->forward(batch_.inputs);
      return ag::cross_entropy(logits.view({-1, batch_.vocab}), batch_.targets.view({-1}));
    };
  }

  void report(const char* what, const Comparer& c) {
    std::cout << "[          ] " << what << ": max |ag - torch| " << c.max_abs << ", max relative " << c.max_rel << "\n";
  }

  Golden golden_;
  Batch batch_;
  std::unique_ptr<Model> model_;
  std::vector<Tensor> params_, v_;
};

TEST_F(NextWordHvp, StateAndVAreTheGoldenOnes) {
  // The float32 init converted to float64 is exact on both sides, so the state must be too.
  Comparer c;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const auto& g = golden_.params[i];
    c.check("value", g.name, params_[i], g.value);
    // v[k] = sin(0.1 * (k + 1)): the file's numbers are the formula's
    const std::vector<int64_t> shape(params_[i].shape().begin(), params_[i].shape().end());
    ASSERT_EQ(shape, g.v.shape) << g.name;
  }
  EXPECT_EQ(c.max_abs, 0.0) << "the initial parameters differ from PyTorch's";
  int64_t k = 0;
  for (const auto& g : golden_.params) {
    for (double x : g.v.values) {
      ++k;
      EXPECT_NEAR(x, std::sin(0.1 * static_cast<double>(k)), 1e-15) << "v of " << g.name << " at global index " << k - 1;
    }
  }
  EXPECT_EQ(k, 1318);
}

TEST_F(NextWordHvp, LossAndGradientMatchPyTorch) {
  std::vector<Tensor> leaves;
  for (const auto& p : params_) leaves.push_back(p.detach().clone().requires_grad_());
  const Tensor loss = loss_fn()(leaves);
  EXPECT_LE(std::abs(loss.item() - golden_.loss), 1e-10 * (1 + std::abs(golden_.loss))) << "loss: ag " << loss.item() << ", PyTorch " << golden_.loss;
  const std::vector<Tensor> grads = ag::grad({loss}, leaves);
  ASSERT_EQ(grads.size(), leaves.size());
  Comparer c;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    ASSERT_TRUE(grads[i].defined()) << golden_.params[i].name;
    c.check("grad", golden_.params[i].name, grads[i], golden_.params[i].grad);
    EXPECT_FALSE(leaves[i].grad().defined()) << "ag::grad must not touch .grad of " << golden_.params[i].name;
  }
  report("loss gradient", c);
  // the module has its own parameters back
  const auto named = model_->m->named_parameters();
  for (std::size_t i = 0; i < named.size(); ++i) EXPECT_EQ(model_->slots()[i]->impl(), named[i].second.impl()) << named[i].first;
}

TEST_F(NextWordHvp, HvpMatchesPyTorch) {
  const auto [value, hv] = ag::functional::hvp(loss_fn(), params_, v_);
  ASSERT_TRUE(value.defined());
  EXPECT_LE(std::abs(value.item() - golden_.loss), 1e-10 * (1 + std::abs(golden_.loss))) << "hvp's loss: ag " << value.item() << ", PyTorch " << golden_.loss;
  EXPECT_FALSE(value.requires_grad()) << "without create_graph the value is detached";
  ASSERT_EQ(hv.size(), params_.size());
  Comparer c;
  for (std::size_t i = 0; i < hv.size(); ++i) {
    ASSERT_TRUE(hv[i].defined()) << golden_.params[i].name;
    EXPECT_FALSE(hv[i].requires_grad()) << "without create_graph the result is detached: " << golden_.params[i].name;
    c.check("hvp", golden_.params[i].name, hv[i], golden_.params[i].hvp);
    EXPECT_FALSE(params_[i].grad().defined()) << "hvp must not touch .grad of the inputs: " << golden_.params[i].name;
  }
  report("H v", c);
}

// Forward over reverse: H v as the tangent of the gradient, when the parameters carry v (one
// forward pass pushing tangents, one backward pass whose rules push them on), against PyTorch's
// double-vjp H v. It goes through the fused causal attention node and the fused cross-entropy, whose
// backward PyTorch 1.13 itself cannot take forward-over-reverse.
TEST_F(NextWordHvp, ForwardOverReverseHvpMatchesPyTorch) {
  ag::forward_ad::DualLevel level;
  std::vector<Tensor> duals;
  for (std::size_t i = 0; i < params_.size(); ++i)
    duals.push_back(ag::forward_ad::make_dual(params_[i].detach().requires_grad_(), v_[i]));
  const std::vector<Tensor> grads = ag::grad({loss_fn()(duals)}, duals);
  ASSERT_EQ(grads.size(), params_.size());
  Comparer c;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Tensor hv = ag::forward_ad::unpack_dual(grads[i]).tangent;
    ASSERT_TRUE(hv.defined()) << golden_.params[i].name << ": the gradient carries no tangent";
    c.check("forward-over-reverse hvp", golden_.params[i].name, hv, golden_.params[i].hvp);
  }
  report("H v, forward over reverse", c);
}

TEST_F(NextWordHvp, VhpMatchesPyTorchHvp) {  // v^T H = (H v)^T: the Hessian is symmetric
  const auto [value, vh] = ag::functional::vhp(loss_fn(), params_, v_);
  EXPECT_LE(std::abs(value.item() - golden_.loss), 1e-10 * (1 + std::abs(golden_.loss)));
  ASSERT_EQ(vh.size(), params_.size());
  Comparer c;
  for (std::size_t i = 0; i < vh.size(); ++i) {
    ASSERT_TRUE(vh[i].defined()) << golden_.params[i].name;
    c.check("vhp", golden_.params[i].name, vh[i], golden_.params[i].hvp);
  }
  report("v^T H", c);
}

}  // namespace

#endif  // AG_HAVE_NEXT_WORD
