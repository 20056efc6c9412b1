// Saved-tensor hooks (autograd/saved.h), Python's torch.autograd.graph.saved_tensors_hooks: every
// tensor a node saves goes through pack_hook while a guard lives, backward unpacks it, and the
// gradients are those without hooks when the hooks lose nothing.
#include <gtest/gtest.h>

#include <any>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/function.h"
#include "golden_json.h"
#include "test_util.h"

using namespace ag;

namespace {

// Hooks that keep the tensor as it is, counting the calls and the shapes they saw.
struct Counting {
  int packs = 0, unpacks = 0;
  std::vector<Size> packed_shapes;
  std::function<std::any(const Tensor&)> pack() {
    return [this](const Tensor& t) -> std::any {
      ++packs;
      packed_shapes.push_back(t.shape());
      return t;
    };
  }
  std::function<Tensor(const std::any&)> unpack() {
    return [this](const std::any& a) {
      ++unpacks;
      return std::any_cast<Tensor>(a);
    };
  }
  SavedTensorsHooks guard() { return SavedTensorsHooks(pack(), unpack()); }
};

// x * w, then sin, exp (which saves its output), a matmul and a sum: 6 tensors saved
// (mul: x and w; sin: its input; exp: its output; matmul: both operands).
Tensor small_graph(const Tensor& x, const Tensor& w, const Tensor& m) { return matmul((x * w).sin().exp(), m).sum(); }

std::vector<Tensor> leaves() {
  manual_seed(3);
  return {randn({3, 4}, kFloat64).requires_grad_(), randn({3, 4}, kFloat64).requires_grad_(), randn({4, 2}, kFloat64).requires_grad_()};
}

int64_t bit_mismatches_all(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  int64_t bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) bad += testutil::bit_mismatches<double>(a[i], b[i]);
  return bad;
}

// A pack hook that keeps a float32 tensor's values rounded to float16 precision (round to
// nearest even on the 13 mantissa bits float16 lacks; normal range only): the docs' example.
Tensor round_to_half_precision(const Tensor& t) {
  std::vector<float> v = t.to_vector<float>();
  for (float& x : v) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    const uint32_t lsb = (b >> 13) & 1u;
    b = (b + 0x0FFFu + lsb) & ~0x1FFFu;
    std::memcpy(&x, &b, 4);
  }
  return from_vector(v, t.shape().vec(), kFloat32);
}

}  // namespace

TEST(SavedTensorsHooks, EverySavedTensorIsPackedAndUnpackedOnceAndTheGradientsKeepTheirBits) {
  const std::vector<Tensor> p = leaves();
  const std::vector<Tensor> plain = grad({small_graph(p[0], p[1], p[2])}, p);
  Counting c;
  Tensor loss;
  {
    SavedTensorsHooks g = c.guard();
    loss = small_graph(p[0], p[1], p[2]);
  }
  EXPECT_EQ(c.packs, 6);
  EXPECT_EQ(c.unpacks, 0) << "nothing is unpacked before backward";
  const std::vector<Tensor> hooked = grad({loss}, p);
  EXPECT_EQ(c.unpacks, 6) << "each saved tensor unpacked once by its node's backward";
  EXPECT_EQ(bit_mismatches_all(hooked, plain), 0);
}

TEST(SavedTensorsHooks, OnlyTensorsSavedWhileTheGuardLivesArePacked) {
  const std::vector<Tensor> p = leaves();
  Counting c;
  Tensor h;
  {
    SavedTensorsHooks g = c.guard();
    h = (p[0] * p[1]).sin();  // mul saves 2, sin 1
  }
  const Tensor loss = matmul(h.exp(), p[2]).sum();  // saved without hooks
  EXPECT_EQ(c.packs, 3);
  const std::vector<Tensor> hooked = grad({loss}, p);
  EXPECT_EQ(c.unpacks, 3);
  EXPECT_EQ(bit_mismatches_all(hooked, grad({small_graph(p[0], p[1], p[2])}, p)), 0);
}

TEST(SavedTensorsHooks, GuardsNestAndTheInnermostApplies) {
  const std::vector<Tensor> p = leaves();
  Counting outer, inner;
  Tensor loss;
  {
    SavedTensorsHooks go = outer.guard();
    const Tensor a = p[0] * p[1];  // outer: 2
    {
      SavedTensorsHooks gi = inner.guard();
      const Tensor b = a.sin();  // inner: 1
      loss = matmul(b.exp(), p[2]).sum();  // inner: 3
    }
    EXPECT_EQ(inner.packs, 4);
    loss = loss + (a * a).sum();  // outer again: 2 more
  }
  EXPECT_EQ(outer.packs, 4);
  grad({loss}, p);
  EXPECT_EQ(inner.unpacks, 4);
  EXPECT_EQ(outer.unpacks, 4);
}

TEST(SavedTensorsHooks, SecondDerivativesGoThroughHookedTensors) {
  const std::vector<Tensor> p = leaves();
  auto hessian_vector = [&](bool hooks) {
    Counting c;
    Tensor loss;
    {
      std::optional<SavedTensorsHooks> g;
      if (hooks) g.emplace(c.pack(), c.unpack());
      loss = small_graph(p[0], p[1], p[2]);
    }
    const std::vector<Tensor> g1 = grad({loss}, p, {}, std::nullopt, /*create_graph=*/true);
    Tensor gv = sum(g1[0] * p[1]) + sum(g1[1] * p[0]) + sum(g1[2] * p[2]);
    if (hooks) EXPECT_EQ(c.unpacks, 6);
    return grad({gv}, p);
  };
  EXPECT_EQ(bit_mismatches_all(hessian_vector(true), hessian_vector(false)), 0);
}

TEST(SavedTensorsHooks, CustomFunctionsSaveThroughTheHooks) {
  struct Cube : Function<Cube> {
    static Tensor forward(AutogradContext* ctx, Tensor x) {
      ctx->save_for_backward({x});
      return x * x * x;
    }
    static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
      const Tensor x = ctx->get_saved_variables()[0];
      return {g[0] * 3 * x * x};
    }
  };
  const Tensor x = tensor({0.5, -1.5, 2.0}, kFloat64).requires_grad_();
  Counting c;
  Tensor y;
  {
    SavedTensorsHooks g = c.guard();
    y = Cube::apply(x).sum();
  }
  EXPECT_EQ(c.packs, 1) << "save_for_backward's x (the ops inside forward record nothing)";
  const Tensor dx = grad({y}, {x})[0];
  EXPECT_EQ(c.unpacks, 1);
  EXPECT_EQ(testutil::bit_mismatches<double>(dx, 3 * x.detach() * x.detach()), 0);
}

TEST(SavedTensorsHooks, TheNodeKeepsWhatPackReturnsNotTheTensor) {
  manual_seed(4);
  const Tensor x = randn({64, 64}).requires_grad_();
  Tensor b = x * 2.0;  // an intermediate that sin saves
  const std::weak_ptr<Storage> storage = b.impl()->storage;
  Tensor loss;
  {
    SavedTensorsHooks g([](const Tensor& t) -> std::any { return t.to_vector<float>(); },  // a copy elsewhere
                        [shape = b.shape().vec()](const std::any& a) { return from_vector(std::any_cast<std::vector<float>>(a), shape, kFloat32); });
    loss = b.sin().sum();
  }
  b = Tensor();
  EXPECT_TRUE(storage.expired()) << "the forward kept only the packed copy";
  const Tensor dx = grad({loss}, {x})[0];
  EXPECT_EQ(testutil::bit_mismatches<float>(dx, (x.detach() * 2.0).cos() * 2.0), 0);

  // without hooks the node holds the storage
  Tensor b2 = x * 2.0;
  const std::weak_ptr<Storage> kept = b2.impl()->storage;
  const Tensor loss2 = b2.sin().sum();
  b2 = Tensor();
  EXPECT_FALSE(kept.expired());
  EXPECT_TRUE(loss2.requires_grad());
}

TEST(SavedTensorsHooks, HalfPrecisionPackingChangesTheGradientsByRoundingOnly) {
  manual_seed(5);
  const Tensor x = randn({8, 16}).requires_grad_(), w = randn({16, 4}).requires_grad_();
  const std::vector<Tensor> exact = grad({matmul(x, w).tanh().sum()}, {x, w});
  Tensor loss;
  {
    SavedTensorsHooks g([](const Tensor& t) -> std::any { return round_to_half_precision(t); },
                        [](const std::any& a) { return std::any_cast<Tensor>(a); });
    loss = matmul(x, w).tanh().sum();
  }
  const std::vector<Tensor> half = grad({loss}, {x, w});
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(testutil::close_mismatches<float>(half[i], exact[i], 1e-2, 1e-2), 0) << "within float16's rounding";
  EXPECT_GT(sum(abs(half[0] - exact[0])).item(), 0.0) << "the saved values were rounded";
}

TEST(SavedTensorsHooks, UnpackReturningAnotherShapeOrDtypeIsAnError) {
  const Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor y;
  {
    SavedTensorsHooks g([](const Tensor& t) -> std::any { return t; }, [](const std::any&) { return zeros({2, 2}, kFloat64); });
    y = x.sin().sum();
  }
  const std::string e = testutil::error_of([&] { y.backward(); });
  EXPECT_NE(e.find("unpack_hook"), std::string::npos) << e;
  EXPECT_NE(e.find("[2, 2]"), std::string::npos) << e;
  EXPECT_NE(e.find("[3]"), std::string::npos) << e;
  {
    SavedTensorsHooks g([](const Tensor& t) -> std::any { return t; }, [](const std::any& a) { return std::any_cast<Tensor>(a).to(kFloat32); });
    y = x.sin().sum();
  }
  const std::string e2 = testutil::error_of([&] { y.backward(); });
  EXPECT_NE(e2.find("float32"), std::string::npos) << e2;
  EXPECT_NE(e2.find("float64"), std::string::npos) << e2;
  EXPECT_NE(testutil::error_of([] { SavedTensorsHooks g(nullptr, [](const std::any&) { return Tensor(); }); }).find("pack_hook"),
            std::string::npos);
}

TEST(SavedTensorsHooks, TheVersionCheckStillAppliesToTheOriginalTensor) {
  const Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor a = x * 1.0;
  Tensor y;
  {
    SavedTensorsHooks g([](const Tensor& t) -> std::any { return t.clone(); }, [](const std::any& v) { return std::any_cast<Tensor>(v); });
    y = a.sin().sum();
  }
  {
    NoGradGuard no_grad;
    a.mul_(2.0);
  }
  const std::string e = testutil::error_of([&] { y.backward(); });
  EXPECT_NE(e.find("modified by an inplace operation"), std::string::npos) << e;
}

TEST(SavedTensorsHooks, TheHooksRunWithoutGradAndWithoutHooksOfTheirOwn) {
  const Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  int packs = 0;
  bool saw_grad_mode = true, saw_requires_grad = true;
  Tensor y;
  {
    SavedTensorsHooks g(
        [&](const Tensor& t) -> std::any {
          ++packs;
          saw_grad_mode = grad_enabled();
          saw_requires_grad = t.requires_grad();
          {
            EnableGradGuard on;  // a recording op inside the hook: its saved tensor is not packed
            EXPECT_TRUE((x * 2.0).requires_grad());
          }
          return (t * 1.0) + 0.0;
        },
        [](const std::any& a) { return std::any_cast<Tensor>(a); });
    y = x.exp().sum();
  }
  EXPECT_EQ(packs, 1);
  EXPECT_FALSE(saw_grad_mode);
  EXPECT_FALSE(saw_requires_grad) << "pack_hook receives a detached alias";
  const Tensor dx = grad({y}, {x})[0];
  EXPECT_EQ(testutil::close_mismatches<double>(dx, x.detach().exp(), 1e-12, 1e-12), 0);
}

// The pack and unpack calls on a small graph, in order, each naming the tensor it saw, against
// PyTorch 1.13's (tools/golden/make_saved_hooks_golden.py): the same tensors saved by the same
// nodes, packed in the forward's order and unpacked in the backward's.
TEST(SavedTensorsHooks, AnOpThatOnlyPushesTangentsPacksNothing) {
  // as in PyTorch: inputs that carry tangents but do not require grad make no node, so nothing
  // is saved, with grad mode on
  manual_seed(5);
  const Tensor p = randn({3}, kFloat64), u = randn({3}, kFloat64);
  const Tensor w = randn({3}, kFloat64).requires_grad_();
  Counting c;
  forward_ad::DualLevel level;
  const Tensor x = forward_ad::make_dual(p, u);
  auto guard = c.guard();
  const Tensor y = (x * x).sin().exp();
  EXPECT_EQ(c.packs, 0);
  EXPECT_EQ(y.grad_fn(), nullptr);
  // the tangents went through: d/dt exp(sin(x^2)) = exp(sin(x^2)) cos(x^2) 2x u
  const Tensor expected = (p * p).sin().exp() * (p * p).cos() * 2.0 * p * u;
  EXPECT_EQ(testutil::close_mismatches<double>(forward_ad::unpack_dual(y).tangent, expected, 1e-12, 1e-12), 0);
  // an op that makes a node packs what it saves (mul: x and w), tangents or not
  const Tensor z = x * w;
  EXPECT_EQ(c.packs, 2);
  EXPECT_TRUE(forward_ad::unpack_dual(z).tangent.defined());
  // and a tangent-only op after it still packs nothing (PyTorch: the same 0, 2, 2 calls)
  const Tensor e = (x * 2.0).exp();
  EXPECT_TRUE(forward_ad::unpack_dual(e).tangent.defined());
  EXPECT_EQ(c.packs, 2);
}

TEST(SavedTensorsHooks, PackAndUnpackCallsComeInPyTorchsOrder) {
  manual_seed(0);
  const Tensor x = randn({3, 4}, kFloat64).requires_grad_(), w = randn({3, 4}, kFloat64).requires_grad_(),
               m = randn({4, 2}, kFloat64).requires_grad_();
  std::vector<std::pair<std::string, Tensor>> names{{"x", x}, {"w", w}, {"m", m}};
  auto name = [&](const Tensor& t) {
    for (const auto& [k, v] : names)
      if (v.data_ptr<double>() == t.data_ptr<double>()) return k;
    return std::string("?");
  };
  std::vector<std::string> log;
  Tensor s;
  {
    SavedTensorsHooks g(
        [&](const Tensor& t) -> std::any {
          log.push_back("pack:" + name(t));
          return t;
        },
        [&](const std::any& a) {
          const Tensor t = std::any_cast<Tensor>(a);
          log.push_back("unpack:" + name(t));
          return t;
        });
    const Tensor h = x * w;
    names.emplace_back("h", h);
    const Tensor t = h.tanh();
    names.emplace_back("t", t);
    const Tensor z = matmul(t, m);
    names.emplace_back("z", z);
    const Tensor e = z.exp();
    names.emplace_back("e", e);
    s = (e / z.sigmoid()).pow(2.0).sum();
  }
  s.backward();
  const std::vector<std::string> torch = testutil::golden_json("saved_hooks.json")["events"].get<std::vector<std::string>>();
  EXPECT_EQ(log, torch);
}
