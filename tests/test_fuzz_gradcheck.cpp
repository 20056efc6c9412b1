// Random graph testing: seeded random graphs of 2-8 ops drawn from the whole op set, on random
// shapes with size-1 and broadcast dims, transposed inputs, nodes reused on several paths and
// gathers with repeated indices; each graph is checked with float64 gradcheck. A failure prints
// the seed and the graph, and AG_FUZZ_SEED=<seed> replays just that graph; AG_FUZZ_COUNT=<n>
// checks n graphs instead of 2,000; the second-order run (gradgradcheck, 500 graphs) takes
// AG_FUZZ_COUNT2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>

#include "autograd/autograd.h"

using namespace ag;

namespace {

struct Graph {
  std::vector<Tensor> inputs;  // leaves, float64, some non-contiguous
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  std::string text;  // one line per op, for the failure message
};

class Builder {
 public:
  explicit Builder(uint64_t seed) : rng_(seed) {}

  Graph build() {
    Graph g;
    const int n_inputs = pick(1, 3);
    for (int i = 0; i < n_inputs; ++i) g.inputs.push_back(make_leaf(random_shape()));
    for (std::size_t i = 0; i < g.inputs.size(); ++i) {
      std::ostringstream os;
      os << "x" << i << " = leaf " << g.inputs[i].shape().str() << (g.inputs[i].is_contiguous() ? "" : " (strided)");
      lines_.push_back(os.str());
    }
    const int n_ops = pick(2, 8);
    std::vector<std::function<Tensor(std::vector<Tensor>&)>> steps;
    // Ops are recorded as closures over pool indices so the graph can be rebuilt for every
    // gradcheck evaluation.
    std::vector<Size> shapes;
    for (const Tensor& t : g.inputs) shapes.push_back(t.shape());
    n_inputs_ = n_inputs;
    for (int k = 0; k < n_ops; ++k) {
      auto [step, shape, line] = random_op(shapes);
      steps.push_back(step);
      shapes.push_back(shape);
      lines_.push_back("t" + std::to_string(shapes.size() - 1) + " = " + line + "  -> " + shape.str());
    }
    g.fn = [steps, n_inputs](const std::vector<Tensor>& in) {
      std::vector<Tensor> pool(in.begin(), in.begin() + n_inputs);
      for (const auto& s : steps) pool.push_back(s(pool));
      return pool.back();
    };
    for (const auto& l : lines_) g.text += "  " + l + "\n";
    return g;
  }

 private:
  using Step = std::function<Tensor(std::vector<Tensor>&)>;

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }

  Size random_shape() {
    Size s;
    const int nd = pick(1, 3);
    for (int i = 0; i < nd; ++i) s.vec().push_back(pick(1, 4));
    return s;
  }

  // s with its last dim replaced by n
  static Size with_last(Size s, int64_t n) {
    s[s.size() - 1] = n;
    return s;
  }

  Tensor values(const Size& s) {
    std::vector<double> v(static_cast<std::size_t>(s.numel()));
    for (double& x : v) x = uniform(-1.5, 1.5);
    return from_vector(v, s.vec(), kFloat64);
  }

  // A leaf with these values whose layout is transposed half of the time.
  Tensor make_leaf(const Size& s) {
    Tensor v = values(s);
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

  // A shape that broadcasts with s: some dims set to 1, maybe fewer leading dims.
  Size broadcastable(const Size& s) {
    Size b;
    const int64_t drop = pick(0, static_cast<int>(s.size()) - 1);
    for (int64_t i = drop; i < s.size(); ++i) b.vec().push_back(pick(0, 2) == 0 ? 1 : s[i]);
    return b;
  }

  std::tuple<Step, Size, std::string> random_op(const std::vector<Size>& shapes) {
    const int a = pick(0, static_cast<int>(shapes.size()) - 1);  // operands may be reused
    const Size sa = shapes[static_cast<std::size_t>(a)];
    const int64_t nd = sa.size();
    const std::string A = "t" + std::to_string(a);
    auto dim_of = [&]() { return pick(0, static_cast<int>(nd) - 1); };
    // 0-dim tensors get elementwise ops, or are unsqueezed and expanded
    int op = nd == 0 ? (pick(0, 3) == 0 ? 14 : pick(0, 7)) : pick(0, 35);
    // max has no gradient at ties, which copies and fills create: take it on the random leaves only
    if (op == 12 && a >= n_inputs_) op = 2;
    switch (op) {
      case 0: return {[a](auto& p) { return -p[a]; }, sa, "neg " + A};
      case 1: return {[a](auto& p) { return exp(p[a] * 0.5); }, sa, "exp(" + A + " * 0.5)"};
      case 2: return {[a](auto& p) { return tanh(p[a]); }, sa, "tanh " + A};
      case 3: return {[a](auto& p) { return sigmoid(p[a]); }, sa, "sigmoid " + A};
      case 4: return {[a](auto& p) { return gelu(p[a]); }, sa, "gelu " + A};
      case 5: return {[a](auto& p) { return pow(p[a], 2.0); }, sa, "pow(" + A + ", 2)"};
      case 6: return {[a](auto& p) { return sqrt(exp(p[a]) + 0.5); }, sa, "sqrt(exp " + A + " + 0.5)"};
      case 7: return {[a](auto& p) { return log(p[a] * p[a] + 1.0); }, sa, "log(" + A + "^2 + 1)"};
      case 8: {
        const int d = dim_of();
        return {[a, d](auto& p) { return softmax(p[a], d); }, sa, "softmax(" + A + ", " + std::to_string(d) + ")"};
      }
      case 9: {
        const int d = dim_of();
        return {[a, d](auto& p) { return log_softmax(p[a], d); }, sa, "log_softmax(" + A + ", " + std::to_string(d) + ")"};
      }
      case 10: {
        const int d = dim_of();
        const bool keep = pick(0, 1);
        Size s = sa;
        if (keep) s[d] = 1;
        else s.vec().erase(s.vec().begin() + d);
        return {[a, d, keep](auto& p) { return sum(p[a], {d}, keep); }, s, "sum(" + A + ", " + std::to_string(d) + ")"};
      }
      case 11: {
        const int d = dim_of();
        Size s = sa;
        s[d] = 1;
        return {[a, d](auto& p) { return mean(p[a], {d}, true); }, s, "mean(" + A + ", " + std::to_string(d) + ", keepdim)"};
      }
      case 12: {
        const int d = dim_of();
        Size s = sa;
        s.vec().erase(s.vec().begin() + d);
        return {[a, d](auto& p) { return max(p[a], d).first; }, s, "max(" + A + ", " + std::to_string(d) + ")"};
      }
      case 13: {
        if (nd < 2) return random_op(shapes);
        const int d0 = pick(0, static_cast<int>(nd) - 1), d1 = pick(0, static_cast<int>(nd) - 1);
        Size s = sa;
        std::swap(s[d0], s[d1]);
        return {[a, d0, d1](auto& p) { return p[a].transpose(d0, d1) * 1.5; }, s,
                A + ".transpose(" + std::to_string(d0) + ", " + std::to_string(d1) + ") * 1.5"};
      }
      case 14: {
        const int d = nd == 0 ? 0 : pick(0, static_cast<int>(nd));
        const int64_t n = pick(2, 3);
        Size s = sa;
        s.vec().insert(s.vec().begin() + d, n);
        std::vector<int64_t> target(s.begin(), s.end());
        return {[a, d, target](auto& p) { return p[a].unsqueeze(d).expand(target); }, s,
                A + ".unsqueeze(" + std::to_string(d) + ").expand" + Size(target).str()};
      }
      case 15: {
        const int d = dim_of();
        if (sa[d] < 2) return random_op(shapes);
        Size s = sa;
        s[d] = sa[d] - 1;
        return {[a, d](auto& p) { return p[a].slice(d, 1, std::nullopt); }, s, A + ".slice(" + std::to_string(d) + ", 1:)"};
      }
      case 16: {
        if (nd < 2) return random_op(shapes);
        const int d = dim_of();
        const int64_t i = pick(0, static_cast<int>(sa[d]) - 1);
        Size s = sa;
        s.vec().erase(s.vec().begin() + d);
        return {[a, d, i](auto& p) { return p[a].select(d, i); }, s, A + ".select(" + std::to_string(d) + ", " + std::to_string(i) + ")"};
      }
      case 17: return {[a](auto& p) { return p[a].reshape({-1}); }, Size{sa.numel()}, A + ".reshape(-1)"};
      case 18: {  // masked_fill with a random broadcast mask
        const Size ms = broadcastable(sa);
        std::vector<double> mv(static_cast<std::size_t>(ms.numel()));
        for (double& m : mv) m = pick(0, 2) == 0;
        Tensor mask = from_vector(mv, ms.vec(), kBool);
        return {[a, mask](auto& p) { return masked_fill(p[a], mask, 0.25); }, sa, "masked_fill(" + A + ", mask " + ms.str() + ", 0.25)"};
      }
      case 19: {  // dropout with its mask held fixed
        std::vector<double> mv(static_cast<std::size_t>(sa.numel()));
        for (double& m : mv) m = pick(0, 3) != 0;
        Tensor mask = from_vector(mv, sa.vec(), kBool);
        return {[a, mask](auto& p) { return dropout_with_mask(p[a], mask, 0.25); }, sa, "dropout(" + A + ", fixed mask, 0.25)"};
      }
      case 20: return {[a](auto& p) { return layer_norm(p[a], {p[a].size(-1)}); }, sa, "layer_norm(" + A + ")"};
      case 21:
      case 22: {  // binary op with another pool tensor if it broadcasts, else with a constant
        const int b = pick(0, static_cast<int>(shapes.size()) - 1);
        const Size sb = shapes[static_cast<std::size_t>(b)];
        Size out;
        bool ok = true;
        try {
          out = broadcast_shapes(sa, sb, "fuzz");
        } catch (const std::exception&) {
          ok = false;
        }
        const std::string B = "t" + std::to_string(b);
        const int which = pick(0, 3);
        if (!ok) {
          Tensor c = values(broadcastable(sa));
          return {[a, c, which](auto& p) { return which == 0 ? p[a] + c : which == 1 ? p[a] - c : which == 2 ? p[a] * c : p[a] / (exp(c) + 0.5); },
                  sa, A + " op constant " + c.shape().str()};
        }
        return {[a, b, which](auto& p) {
                  return which == 0 ? p[a] + p[b] : which == 1 ? p[a] - p[b] : which == 2 ? p[a] * p[b] : p[a] / (exp(p[b]) + 0.5);
                },
                out, A + " {+,-,*,/(exp+.5)}[" + std::to_string(which) + "] " + B};
      }
      case 23: {  // matmul with a fresh weight (2-D) or with itself transposed
        const int64_t k = sa[nd - 1];
        const int64_t n = pick(1, 3);
        Tensor w = values(Size{k, n});
        Size s = sa;
        s[nd - 1] = n;
        if (nd == 1) s = Size{n};
        return {[a, w](auto& p) { return matmul(p[a], w); }, s, "matmul(" + A + ", W " + w.shape().str() + ")"};
      }
      case 24: {
        if (nd < 2) return random_op(shapes);
        Size s = sa;
        s[nd - 1] = sa[nd - 2];
        return {[a](auto& p) { return matmul(p[a], p[a].transpose(-1, -2)); }, s, "matmul(" + A + ", " + A + "^T)"};
      }
      case 25: {  // cat / stack with itself
        const int d = dim_of();
        if (pick(0, 1)) {
          Size s = sa;
          s[d] *= 2;
          return {[a, d](auto& p) { return cat({p[a], p[a] * 2.0}, d); }, s, "cat(" + A + ", 2" + A + ", " + std::to_string(d) + ")"};
        }
        Size s = sa;
        s.vec().insert(s.vec().begin() + d, 2);
        return {[a, d](auto& p) { return stack({p[a], tanh(p[a])}, d); }, s, "stack(" + A + ", tanh " + A + ", " + std::to_string(d) + ")"};
      }
      case 27: {  // a random permutation of the dims
        std::vector<int64_t> perm(static_cast<std::size_t>(nd));
        for (int64_t i = 0; i < nd; ++i) perm[static_cast<std::size_t>(i)] = i;
        std::shuffle(perm.begin(), perm.end(), rng_);
        Size s;
        for (int64_t d : perm) s.vec().push_back(sa[d]);
        return {[a, perm](auto& p) { return p[a].permute(perm) * 1.0; }, s, A + ".permute" + Size(perm).str()};
      }
      case 28: {
        if (nd < 2) return random_op(shapes);
        const int k = pick(-1, 1);
        const bool upper = pick(0, 1);
        return {[a, k, upper](auto& p) { return upper ? triu(p[a], k) : tril(p[a], k); }, sa,
                std::string(upper ? "triu(" : "tril(") + A + ", " + std::to_string(k) + ")"};
      }
      case 29: {  // squeeze every size-1 dim, or unsqueeze then squeeze that dim
        Size s;
        for (int64_t d : sa)
          if (d != 1) s.vec().push_back(d);
        return {[a](auto& p) { return p[a].squeeze() + 0.5; }, s, A + ".squeeze() + 0.5"};
      }
      case 30: {  // embedding rows of a 2-D tensor, ids with repeats and a batch dim
        if (nd != 2) return random_op(shapes);
        std::vector<int64_t> ids;
        for (int i = 0; i < 4; ++i) ids.push_back(pick(0, static_cast<int>(sa[0]) - 1));
        Tensor idx = from_vector(ids, {2, 2});
        return {[a, idx](auto& p) { return embedding(p[a], idx); }, Size{2, 2, sa[1]}, "embedding(" + A + ", " + Size(ids).str() + ")"};
      }
      case 32: {  // the fused causal attention weights over the last two dims
        if (nd < 2) return random_op(shapes);
        return {[a](auto& p) { return causal_softmax(p[a], 1.5); }, sa, "causal_softmax(" + A + ", 1.5)"};
      }
      case 33: {  // linear (addmm): the pool tensor as input, or as the weight
        if (nd != 2) return random_op(shapes);
        const int64_t rows = sa[0], cols = sa[1];
        if (pick(0, 1)) {
          const int64_t n = pick(1, 3);
          Tensor w = values(Size{n, cols}), b = values(Size{n});
          return {[a, w, b](auto& p) { return linear(p[a], w, b); }, Size{rows, n}, "linear(" + A + ", W " + w.shape().str() + ", b)"};
        }
        Tensor x = values(Size{3, cols}), b = values(Size{rows});
        return {[a, x, b](auto& p) { return linear(x, p[a], b); }, Size{3, rows}, "linear(X [3, " + std::to_string(cols) + "], " + A + ", b)"};
      }
      case 34: {  // causal attention scores: the pool tensor as queries and keys, or with fixed keys
        if (nd < 2) return random_op(shapes);
        if (pick(0, 1)) return {[a](auto& p) { return causal_qk_softmax(p[a], p[a], 1.5); }, with_last(sa, sa[nd - 2]), "causal_qk_softmax(" + A + ", " + A + ")"};
        Size ks = sa;
        ks[nd - 2] = pick(1, 4);
        Tensor k = values(ks);
        return {[a, k](auto& p) { return causal_qk_softmax(p[a], k, 1.5); }, with_last(sa, ks[nd - 2]), "causal_qk_softmax(" + A + ", K " + ks.str() + ")"};
      }
      case 35: {  // tril(w) @ v: the pool tensor as the weights or as the values
        if (nd < 2) return random_op(shapes);
        Size other = sa;
        if (pick(0, 1)) {
          other[nd - 2] = sa[nd - 1];
          other[nd - 1] = pick(1, 3);
          Tensor v = values(other);
          return {[a, v](auto& p) { return causal_matmul(p[a], v); }, with_last(sa, other[nd - 1]), "causal_matmul(" + A + ", V " + other.str() + ")"};
        }
        other[nd - 1] = sa[nd - 2];
        other[nd - 2] = pick(1, 4);
        Tensor w = values(other);
        return {[a, w](auto& p) { return causal_matmul(w, p[a]); }, with_last(other, sa[nd - 1]), "causal_matmul(W " + other.str() + ", " + A + ")"};
      }
      default: {  // gathers with repeated indices, or a cross-entropy
        const int d = dim_of();
        const int64_t n = sa[d];
        if (pick(0, 2) == 0 && nd == 2) {
          std::vector<int64_t> t;
          for (int64_t i = 0; i < sa[0]; ++i) t.push_back(pick(0, static_cast<int>(sa[1]) - 1));
          Tensor target = from_vector(t, {sa[0]});
          return {[a, target](auto& p) { return cross_entropy(p[a], target); }, Size{}, "cross_entropy(" + A + ")"};
        }
        std::vector<int64_t> idx;
        const int k = pick(1, 5);
        for (int i = 0; i < k; ++i) idx.push_back(pick(0, static_cast<int>(n) - 1));
        Tensor index = from_vector(idx, {k});
        Size s = sa;
        s[d] = k;
        return {[a, d, index](auto& p) { return index_select(p[a], d, index); }, s,
                "index_select(" + A + ", " + std::to_string(d) + ", " + Size(idx).str() + ")"};
      }
    }
  }

  std::mt19937_64 rng_;
  std::vector<std::string> lines_;
  int n_inputs_ = 0;
};

// Checks `count` graphs from seed `first` with `check`; AG_FUZZ_SEED replays one graph, and
// `count_env` sets how many to check.
void fuzz(uint64_t first, uint64_t count, const char* count_env,
          const std::function<GradcheckResult(const Graph&)>& check) {
  if (const char* s = std::getenv(count_env)) count = std::stoull(s);  // longer runs by hand
  if (const char* s = std::getenv("AG_FUZZ_SEED")) first = std::stoull(s), count = 1;
  int failures = 0;
  int64_t ops = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    Graph g = Builder(seed).build();
    ops += static_cast<int64_t>(std::count(g.text.begin(), g.text.end(), '\n'));
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
  std::printf("%llu graphs, %lld lines (inputs and ops)\n", static_cast<unsigned long long>(count), static_cast<long long>(ops));
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
