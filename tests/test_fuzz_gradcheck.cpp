// Random graph testing: seeded random graphs of 2-8 ops drawn from the op table's fuzz steps
// (tests/op_table.h: every entry with a `fuzz`, structural ops included), on random shapes with
// size-1 and broadcast dims, transposed inputs, nodes reused on several paths and gathers with
// repeated indices; each graph is checked with float64 gradcheck. A failure prints the seed and
// the graph, and AG_FUZZ_SEED=<seed> replays just that graph; AG_FUZZ_COUNT=<n> checks n graphs
// instead of 2,000; the second-order runs (gradgradcheck, 500 graphs, reverse over reverse and
// forward over reverse) take AG_FUZZ_COUNT2, the forward-mode run (1,000 graphs, forward against
// reverse) AG_FUZZ_COUNT3, and gradcheck with check_forward_ad (1,000 graphs) AG_FUZZ_COUNT4.
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "autograd/autograd.h"
#include "op_table.h"

using namespace ag;

namespace {

struct Graph {
  std::vector<Tensor> inputs;  // leaves, float64, some non-contiguous
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  std::string text;  // one line per op, for the failure message
  std::vector<std::string> ops;  // the entries its steps came from
};

// The entries the fuzzer draws from.
const std::vector<const optable::OpInfo*>& fuzzable() {
  static const std::vector<const optable::OpInfo*> ops = [] {
    std::vector<const optable::OpInfo*> v;
    for (const optable::OpInfo& op : optable::op_table())
      if (op.fuzz) v.push_back(&op);
    return v;
  }();
  return ops;
}

class Builder {
 public:
  explicit Builder(uint64_t seed) : rng_(seed) {}

  Graph build() {
    Graph g;
    const int n_inputs = pick(1, 3);
    for (int i = 0; i < n_inputs; ++i) g.inputs.push_back(make_leaf(random_shape()));
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < g.inputs.size(); ++i) {
      std::ostringstream os;
      os << "t" << i << " = leaf " << g.inputs[i].shape().str() << (g.inputs[i].is_contiguous() ? "" : " (strided)");
      lines.push_back(os.str());
    }
    // Steps are closures over pool indices so the graph can be rebuilt for every gradcheck
    // evaluation; the pool's values (without grad) give each step's output shape.
    struct Step {
      int a, b;
      std::function<Tensor(const Tensor&, const Tensor&)> apply;
    };
    std::vector<Step> steps;
    std::vector<Tensor> pool;
    for (const Tensor& t : g.inputs) pool.push_back(t.detach());
    const int n_ops = pick(2, 8);
    for (int k = 0; k < n_ops; ++k) {
      for (;;) {  // until a drawn op applies to the drawn operands
        const int a = pick(0, static_cast<int>(pool.size()) - 1), b = pick(0, static_cast<int>(pool.size()) - 1);
        const optable::OpInfo& op = *fuzzable()[static_cast<std::size_t>(pick(0, static_cast<int>(fuzzable().size()) - 1))];
        std::optional<optable::FuzzStep> step = op.fuzz(rng_, pool[a].shape(), pool[b].shape());
        // max has no gradient at ties, which copies and fills create: on the random leaves only
        if (!step || (step->needs_leaf && a >= n_inputs)) continue;
        Tensor out;
        try {
          NoGradGuard no_grad;
          out = step->apply(pool[a], pool[b]);
        } catch (const std::exception& e) {
          throw std::runtime_error(op.name + "'s fuzz step " + step->text + " with a " + pool[a].shape().str() + ", b " +
                                   pool[b].shape().str() + ": " + e.what());
        }
        lines.push_back("t" + std::to_string(pool.size()) + " = " + step->text + "  with a = t" + std::to_string(a) +
                        ", b = t" + std::to_string(b) + "  -> " + out.shape().str() + "  [" + op.name + "]");
        steps.push_back({a, b, step->apply});
        g.ops.push_back(op.name);
        pool.push_back(out);
        break;
      }
    }
    g.fn = [steps, n_inputs](const std::vector<Tensor>& in) {
      std::vector<Tensor> p(in.begin(), in.begin() + n_inputs);
      for (const Step& s : steps) p.push_back(s.apply(p[s.a], p[s.b]));
      return p.back();
    };
    for (const auto& l : lines) g.text += "  " + l + "\n";
    return g;
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  Size random_shape() {
    Size s;
    const int nd = pick(1, 3);
    for (int i = 0; i < nd; ++i) s.vec().push_back(pick(1, 4));
    return s;
  }

  // A leaf with random values whose layout is transposed half of the time.
  Tensor make_leaf(const Size& s) {
    Tensor v = optable::fuzz_values(rng_, s);
    if (s.size() >= 2 && pick(0, 1)) {
      std::vector<int64_t> rev(s.begin(), s.end()), perm;
      std::reverse(rev.begin(), rev.end());
      for (int64_t i = s.size() - 1; i >= 0; --i) perm.push_back(i);
      Tensor t = zeros(rev, kFloat64).permute(perm);
      t.copy_(v);
      return t.requires_grad_();
    }
    return v.requires_grad_();
  }

  std::mt19937_64 rng_;
};

// Checks `count` graphs from seed `first` with `check`; AG_FUZZ_SEED replays one graph, and
// `count_env` sets how many to check.
void fuzz(uint64_t first, uint64_t count, const char* count_env,
          const std::function<GradcheckResult(const Graph&)>& check) {
  if (const char* s = std::getenv(count_env)) count = std::stoull(s);  // longer runs by hand
  if (const char* s = std::getenv("AG_FUZZ_SEED")) first = std::stoull(s), count = 1;
  int failures = 0;
  uint64_t skipped = 0;  // graphs whose output is not finite at the drawn inputs
  int64_t ops = 0;
  std::set<std::string> drawn;
  ASSERT_FALSE(fuzzable().empty());
  for (uint64_t seed = first; seed < first + count; ++seed) {
    Graph g;
    try {
      g = Builder(seed).build();
    } catch (const std::exception& e) {  // a step that throws on the shapes it accepted
      if (++failures <= 5) ADD_FAILURE() << "graph seed " << seed << " (replay: AG_FUZZ_SEED=" << seed << "): building threw: " << e.what();
      continue;
    }
    ops += static_cast<int64_t>(std::count(g.text.begin(), g.text.end(), '\n'));
    drawn.insert(g.ops.begin(), g.ops.end());
    // a NaN or inf output (e.g. the mean of an empty tensor) is no point to take finite
    // differences at: PyTorch's gradcheck fails there too
    bool finite = true;
    try {
      NoGradGuard no_grad;
      for (double v : g.fn(g.inputs).to(kFloat64).to_vector<double>()) finite = finite && std::isfinite(v);
    } catch (const std::exception&) {  // (reported by the check below)
    }
    if (!finite) {
      ++skipped;
      continue;
    }
    GradcheckResult r;
    try {
      r = check(g);
    } catch (const std::exception& e) {
      r.ok = false;
      r.message = std::string("threw: ") + e.what();
    }
    if (!r.ok && ++failures <= 5) {
      ADD_FAILURE() << "graph seed " << seed << " (replay: AG_FUZZ_SEED=" << seed << ")\n" << g.text << r.message;
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_LE(skipped * 20, count) << "more than 5% of the graphs had a non-finite output";
  // every fuzz step applies to some shapes (a step that never does tests nothing)
  if (count >= 500)
    for (const optable::OpInfo* op : fuzzable()) EXPECT_TRUE(drawn.count(op->name)) << op->name << "'s fuzz step was never drawn";
  std::printf("%llu graphs (%llu skipped: output not finite), %lld lines (inputs and ops), steps of %zu of the %zu fuzzable entries\n",
              static_cast<unsigned long long>(count), static_cast<unsigned long long>(skipped), static_cast<long long>(ops), drawn.size(),
              fuzzable().size());
}

}  // namespace

TEST(FuzzGradcheck, TwoThousandRandomGraphsPassGradcheck) {
  fuzz(0, 2000, "AG_FUZZ_COUNT", [](const Graph& g) { return gradcheck_result(g.fn, g.inputs, 1e-6, 1e-5, 1e-3); });
}

// Second order: the graph a create_graph backward records, differentiated again, against finite
// differences of the first-order gradients (other seeds than the first-order run's).
TEST(FuzzGradcheck, FiveHundredRandomGraphsPassGradgradcheck) {
  fuzz(1000000, 500, "AG_FUZZ_COUNT2", [](const Graph& g) {
    manual_seed(7);  // the random grad_output
    return gradgradcheck_result(g.fn, g.inputs, {}, 1e-6, 1e-5, 1e-3);
  });
}

// Forward mode: for random u (one per input) and v (the output's shape), ⟨v, J u⟩ with J u from
// one forward pass over dual inputs equals ⟨Jᵀ v, u⟩ with Jᵀ v from reverse mode (other seeds
// again). Both are the same directional derivative, computed by different rules: every jvp rule
// the graph reaches is checked against the backward rules gradcheck has checked above.
TEST(FuzzGradcheck, ThousandRandomGraphsAgreeInBothModes) {
  fuzz(2000000, 1000, "AG_FUZZ_COUNT3", [](const Graph& g) {
    manual_seed(11);
    std::vector<Tensor> us;
    for (const Tensor& x : g.inputs) us.push_back(randn_like(x));
    const Tensor y = g.fn(g.inputs);
    const Tensor v = randn_like(y.detach());
    double fwd = 0;
    {
      forward_ad::DualLevel level;
      std::vector<Tensor> duals;
      for (std::size_t i = 0; i < us.size(); ++i) duals.push_back(forward_ad::make_dual(g.inputs[i].detach(), us[i]));
      const Tensor ju = forward_ad::unpack_dual(g.fn(duals)).tangent;  // undefined: J u = 0
      if (ju.defined()) fwd = sum(ju * v).item<double>();
    }
    double rev = 0, scale = 1;
    const std::vector<Tensor> gs = grad({y}, g.inputs, {v}, std::nullopt, false, /*allow_unused=*/true);
    for (std::size_t i = 0; i < gs.size(); ++i) {
      if (!gs[i].defined()) continue;
      rev += sum(gs[i] * us[i]).item<double>();
      scale += sum(abs(gs[i] * us[i])).item<double>();
    }
    GradcheckResult r;
    r.max_error = std::abs(fwd - rev);
    r.ok = r.max_error <= 1e-12 * scale;
    if (!r.ok) {
      std::ostringstream os;
      os.precision(17);
      os << "<v, J u> by forward mode " << fwd << " but <J^T v, u> by reverse mode " << rev << "\n";
      r.message = os.str();
    }
    return r;
  });
}

// Forward mode: the Jacobian by forward mode (one jvp per input element, gradcheck's
// check_forward_ad) against finite differences, on other seeds again.
TEST(FuzzGradcheck, OneThousandRandomGraphsPassGradcheckInForwardMode) {
  fuzz(4000000, 1000, "AG_FUZZ_COUNT4", [](const Graph& g) {
    GradcheckOptions forward_only;
    forward_only.check_forward_ad = true;
    forward_only.check_backward_ad = false;
    return gradcheck_result(g.fn, g.inputs, forward_only);
  });
}

// Forward over reverse: the second derivatives of the recorded backward pass by jvps through it
// (gradgradcheck's check_fwd_over_rev), against finite differences of the first-order gradients.
TEST(FuzzGradcheck, FiveHundredRandomGraphsPassGradgradcheckForwardOverReverse) {
  fuzz(3000000, 500, "AG_FUZZ_COUNT2", [](const Graph& g) {
    manual_seed(7);  // the random grad_output
    GradgradcheckOptions fwd_over_rev;
    fwd_over_rev.check_fwd_over_rev = true;
    fwd_over_rev.check_rev_over_rev = false;
    return gradgradcheck_result(g.fn, g.inputs, {}, fwd_over_rev);
  });
}
