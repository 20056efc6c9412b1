// libFuzzer target of the public API: the bytes are decoded into a short program of ag calls on a
// pool of 8 tensor slots. The contract it checks: every call returns (a tensor, a value) or throws
// a std::exception; never a crash, an abort, an ASan or UBSan report (built with both, UBSan
// fatal), a hang (-timeout) or an allocation past -malloc_limit_mb / -rss_limit_mb. Assignment
// through a temporary (x[i] = t, x[i] = 2.5, x.select(d, i) = t) is also checked to have written.
//
// Encoding (tools/make_api_fuzz_corpus.py writes the seed corpus in it): up to kMaxSteps records
// of kRecord bytes each (a shorter tail is padded with zeros):
//   [op, variant, dst, a, b, c, p0, p1, p2, p3, p4, p5]
// op picks the kind of step (Op below), variant the call inside it, dst the slot that receives the
// result, a/b/c the operand slots (each % 8). The low nibble of a p byte indexes kInts (I(k)) or
// kDoubles (D(k)); the high nibbles carry flags, dtypes and counts (hi(k)). A shape S is
// (hi(0) % 5) dims I(0), I(1), I(2), I(3).
//
// Sizes come from kInts, which mixes normal sizes (all <= 7, so every legitimate tensor is small)
// with hostile ones (-1, -2, 2^31, 2^32, 2^62, INT64_MAX, INT64_MIN). The fuzzer never allocates by
// a drawn size itself; ag must reject what it cannot do. What the fuzzer guards is only results that
// are legitimately huge: ops that compute (not views) run only on inputs of at most kSmall elements,
// so a legitimate expand to 2^62 followed by sum() is not reported as a hang, and chunk / split
// only where the number of parts is small.
//
// Memory: the process behaves as a small machine would (__asan_default_options below): an
// allocation over 256 MiB fails (malloc returns null) instead of succeeding (a legitimate 1.4 GB
// tensor, arange(0, 1e10, 7, kBool), took over -timeout=5 s to fill under ASan), so zeros({1LL << 32})
// must throw (ag throws PyTorch's "DefaultCPUAllocator: can't allocate memory", as PyTorch does on
// a machine without the memory) where on a large machine it would succeed. A size computed wrongly (an overflow that wraps to a small
// buffer) is still an ASan report, and -rss_limit_mb / -malloc_limit_mb (2048, see
// tools/test_all.sh) still report memory that is actually used up.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ag/ag.h"

namespace {

using ag::DimVector;
using ag::Tensor;

constexpr int kSlots = 8;
constexpr int kMaxSteps = 32;
constexpr std::size_t kRecord = 12;
constexpr int64_t kSmall = 4096;

constexpr int64_t kInts[16] = {0,
                               1,
                               2,
                               3,
                               7,
                               -1,
                               -2,
                               int64_t{1} << 31,
                               int64_t{1} << 32,
                               int64_t{1} << 62,
                               std::numeric_limits<int64_t>::max(),
                               std::numeric_limits<int64_t>::min(),
                               4,
                               5,
                               6,
                               -3};
const double kDoubles[16] = {0.0,
                             1.0,
                             -1.0,
                             2.5,
                             0.5,
                             -0.0,
                             3.0,
                             std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             1e308,
                             1e-310,
                             9.3e18,  // past INT64_MAX
                             -9.3e18,
                             1e10,
                             7.0};
constexpr ag::DType kDTypes[4] = {ag::kFloat32, ag::kFloat64, ag::kInt64, ag::kBool};
// x[i] = v: values every dtype holds (a NaN or 1e308 into int64 is out of range)
constexpr double kAssignValues[4] = {0.0, 2.5, -1.0, 7.0};
const char* const kKeys[8] = {"weight", "bias", "weight", "bias", "", "weight.", "bias.x", "."};
const char* const kReductions[4] = {"mean", "sum", "none", "batchmean"};

enum Op : uint8_t {
  kCreate,
  kLiteral,
  kView,
  kSlice,
  kIndex,
  kReduce,
  kBinary,
  kUnary,
  kConvert,
  kInplace,
  kGradMeta,
  kBackward,
  kGrad,
  kOptim,
  kLinear,
  kAssign,
  kTouch,
  kLoss,
  kNumOps
};
// Op bytes from here on are the translator's step (indexing, rounding, sampling): the ops above
// keep their bytes (r[0] % kNumOps), so the corpus files still decode to what they were.
constexpr uint8_t kTranslateByte = 252;

// What set_grad and gradient hooks get: t without its history (undefined stays undefined). A
// gradient that carries history can lead back to the tensor that holds it, a reference cycle
// that leaks (LeakSanitizer reports it) in PyTorch as in ag: PyTorch documents it for
// backward(create_graph=True), which the decoder leaves out for the same reason (ag::grad, which
// writes no .grad, covers create_graph).
Tensor detached(const Tensor& t) { return t.defined() ? t.detach() : Tensor(); }

// A step that the fuzzer decided not to run (an operand over kSmall elements).
struct Skip {};

// numel of t without overflow; INT64_MAX when it would overflow (or a size is negative).
int64_t safe_numel(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d : t.sizes()) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  }
  return n;
}

// An operand a computing op may read: undefined (ag must throw) or at most kSmall elements.
const Tensor& small(const Tensor& t) {
  if (t.defined() && safe_numel(t) > kSmall) throw Skip{};
  return t;
}

// An operand whose parts (chunk, split: up to one per element of a dim) are few: every dim at
// most kSmall (an expand to 2^62 split into ones would legitimately be 2^62 tensors).
const Tensor& small_dims(const Tensor& t) {
  if (t.defined()) {
    for (int64_t d : t.sizes()) {
      if (d > kSmall) throw Skip{};
    }
  }
  return t;
}

// Reads every element (ASan sees a view that points outside its storage).
void touch(const Tensor& t) {
  if (!t.defined() || safe_numel(t) > kSmall) return;
  volatile double sink = 0;
  for (double v : t.to_vector<double>()) sink = sink + v;
  (void)sink;
}

// Equal as values: NaN equals NaN.
bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i]) && !(std::isnan(a[i]) && std::isnan(b[i]))) return false;
  }
  return true;
}

[[noreturn]] void contract_broken(const char* what) {
  std::fprintf(stderr, "api_fuzzer: %s\n", what);
  std::abort();
}

// dst = t through the temporary dst (x[i] = t), as PyTorch's x[i] = t: a copy_ into the view.
// Then checks it wrote: dst holds t broadcast to its shape in its dtype (unless t overlaps dst).
template <class View>
void assign_tensor(View&& dst, const Tensor& src, const Tensor& base) {
  Tensor view = dst;  // the same view, to read back
  std::forward<View>(dst) = src;
  if (!src.defined() || src.shares_storage(base)) return;
  std::vector<double> want;
  try {
    want = ag::expand(src, view.sizes().vec()).to(view.dtype()).to_vector<double>();
  } catch (const std::exception&) {
    contract_broken("x[i] = t accepted a t that does not broadcast to x[i]'s shape");
  }
  if (!same_values(view.to_vector<double>(), want)) contract_broken("x[i] = t did not write t into x[i]");
}

// dst = v through the temporary. Uses Tensor's scalar assignment where it exists; without one
// (x[i] = 2.5 does not compile) it is what that assignment means, a fill_ of the view.
template <class View>
void assign_scalar(View&& dst, double v) {
  Tensor view = dst;
  if constexpr (requires { std::forward<View>(dst) = v; }) {
    std::forward<View>(dst) = v;
  } else {
    view.fill_(v);
  }
  if (!same_values(view.to_vector<double>(), ag::full_like(view, v).to_vector<double>()))
    contract_broken("x[i] = v did not write v into x[i]");
}

struct Program {
  Tensor slot[kSlots];
  std::unique_ptr<ag::optim::Optimizer> opt;
  std::shared_ptr<ag::nn::Linear> lin;
  const uint8_t* r = nullptr;  // the current record

  int64_t I(int k) const { return kInts[r[6 + k] & 15]; }
  double D(int k) const { return kDoubles[r[6 + k] & 15]; }
  int hi(int k) const { return r[6 + k] >> 4; }
  bool flag(int k, int bit) const { return (hi(k) >> bit) & 1; }
  uint8_t variant() const { return r[1]; }
  Tensor& dst() { return slot[r[2] % kSlots]; }
  Tensor& A() { return slot[r[3] % kSlots]; }
  Tensor& B() { return slot[r[4] % kSlots]; }
  Tensor& C() { return slot[r[5] % kSlots]; }
  DimVector S() const {
    DimVector s;
    for (int k = 0; k < hi(0) % 5; ++k) s.push_back(I(k));
    return s;
  }
  DimVector dims(int n) const {  // n <= 4 dims from I(0..)
    DimVector s;
    for (int k = 0; k < n; ++k) s.push_back(I(k));
    return s;
  }
  std::optional<int64_t> opt_int(int k) const { return flag(k, 3) ? std::nullopt : std::optional<int64_t>(I(k)); }
  std::optional<double> opt_double(int k) const { return flag(k, 3) ? std::nullopt : std::optional<double>(D(k)); }
  std::optional<bool> retain(int k) const {
    switch (hi(k) % 3) {
      case 0: return std::nullopt;
      case 1: return true;
      default: return false;
    }
  }
  ag::Options options(int k) const {  // hi(k): bit 0 dtype given, bits 1-2 dtype, bit 3 requires_grad
    ag::Options o = flag(k, 0) ? ag::Options(kDTypes[(hi(k) >> 1) & 3]) : ag::Options();
    return o.requires_grad(flag(k, 3));
  }

  void set(Tensor t) {
    touch(t);
    dst() = std::move(t);
  }

  void step(const uint8_t* rec) {
    r = rec;
    const uint8_t v = variant();
    if (r[0] >= kTranslateByte) return translate(v);
    switch (static_cast<Op>(r[0] % kNumOps)) {
      case kCreate: create(v); break;
      case kLiteral: literal(v); break;
      case kView: view(v); break;
      case kSlice: slice(v); break;
      case kIndex: index(v); break;
      case kReduce: reduce(v); break;
      case kBinary: binary(v); break;
      case kUnary: unary(v); break;
      case kConvert: set(small(A()).to(kDTypes[v & 3])); break;
      case kInplace: inplace(v); break;
      case kGradMeta: grad_meta(v); break;
      case kBackward: backward(); break;
      case kGrad: grad(); break;
      case kOptim: optim(v); break;
      case kLinear: linear(v); break;
      case kAssign: assign(v); break;
      case kTouch: touch_ops(v); break;
      case kLoss: loss(v); break;
      case kNumOps: break;
    }
  }

  void create(uint8_t v) {
    const DimVector s = S();
    const ag::Options o = options(4);
    switch (v % 12) {
      case 0: set(ag::zeros(s, o)); break;
      case 1: set(ag::ones(s, o)); break;
      case 2: set(ag::full(s, D(5), o)); break;
      case 3: set(ag::empty(s, o)); break;
      case 4: set(ag::randn(s, o)); break;
      case 5: set(ag::rand(s, o)); break;
      case 6: set(ag::arange(D(5), o)); break;
      case 7: set(ag::arange(D(4), D(5), kDoubles[hi(5)], o)); break;
      case 8: set(ag::linspace(D(4), D(5), I(0), o)); break;
      case 9: set(ag::eye(I(0), I(1), o)); break;
      case 10: set(ag::zeros_like(small(A()))); break;
      default: set(ag::full_like(small(A()), D(5))); break;
    }
  }

  void literal(uint8_t v) {
    const ag::Options o = flag(5, 0) ? ag::Options(kDTypes[(hi(5) >> 1) & 3]) : ag::Options();
    const int n = (v >> 4) % 7;  // values for the vector forms
    switch ((v & 15) % 10) {
      case 0: set(ag::tensor(D(0), o)); break;
      case 1: set(ag::tensor({D(0), D(1), D(2)}, o)); break;
      case 2: set(ag::tensor({static_cast<long>(I(0)), static_cast<long>(I(1))}, o)); break;
      case 3: set(ag::tensor({{D(0), D(1)}, {D(2)}}, o)); break;  // ragged
      case 4: set(ag::tensor({{D(0), D(1)}, {D(2), D(3)}}, o)); break;
      case 5: set(ag::tensor({flag(0, 0), flag(1, 0), flag(2, 0)}, o)); break;
      case 6: {
        std::vector<int64_t> vals;
        for (int k = 0; k < n; ++k) vals.push_back(I(k));
        set(ag::tensor(vals, o));
        break;
      }
      case 7: {
        std::vector<double> vals;
        for (int k = 0; k < n; ++k) vals.push_back(D(k));
        set(ag::tensor(vals, o));
        break;
      }
      case 8: set(ag::from_vector(std::vector<double>(static_cast<std::size_t>(n), 1.5), S())); break;
      default: set(ag::from_vector(std::vector<int64_t>(static_cast<std::size_t>(n), 1), S())); break;
    }
  }

  void view(uint8_t v) {
    const Tensor& x = A();
    switch (v % 18) {
      case 0: set(x.view(S())); break;
      case 1: set(small(x).reshape(S())); break;
      case 2: set(x.expand(S())); break;
      case 3: set(x.transpose(I(4), I(5))); break;
      case 4: set(x.permute(S())); break;
      case 5: set(x.squeeze()); break;
      case 6: set(x.squeeze(I(4))); break;
      case 7: set(x.unsqueeze(I(4))); break;
      case 8: set(small(x).flatten(I(4), I(5))); break;
      case 9: set(x.unflatten(I(4), S())); break;
      case 10: set(x.t()); break;
      case 11: set(x.T()); break;
      case 12: set(small(x).contiguous()); break;
      case 13: set(small(x).clone()); break;
      case 14: set(x.detach()); break;
      case 15: set(small(x).repeat(S())); break;
      case 16: set(small(x).flip(S())); break;
      default: set(small(x).roll(dims(2), dims(hi(4) % 3))); break;
    }
  }

  void slice(uint8_t v) {
    const Tensor& x = A();
    switch (v % 8) {
      case 0: set(x.slice(I(4), opt_int(0), opt_int(1), I(2))); break;
      case 1: set(x.narrow(I(0), I(1), I(2))); break;
      case 2: set(x.select(I(0), I(1))); break;
      case 3: set(x[I(0)]); break;
      case 4: {
        // chunk of an empty dim gives `chunks` empty tensors (PyTorch's rule): 2^32 of them is a
        // legitimately huge result, not one to ask for
        if (I(0) > kSmall && x.defined() && x.dim() > 0 && -x.dim() <= I(1) && I(1) < x.dim() && x.size(I(1)) == 0)
          throw Skip{};
        const std::vector<Tensor> parts = small_dims(x).chunk(I(0), I(1));
        if (!parts.empty()) set(parts[static_cast<std::size_t>(hi(5)) % parts.size()]);
        break;
      }
      case 5: {
        const std::vector<Tensor> parts = small_dims(x).split(I(0), I(1));
        if (!parts.empty()) set(parts[static_cast<std::size_t>(hi(5)) % parts.size()]);
        break;
      }
      case 6: {
        const std::vector<Tensor> parts = small_dims(x).split(std::vector<int64_t>{I(0), I(1)}, I(2));
        if (!parts.empty()) set(parts[static_cast<std::size_t>(hi(5)) % parts.size()]);
        break;
      }
      default: set(x.slice(I(4), opt_int(0), opt_int(1))); break;
    }
  }

  void index(uint8_t v) {
    const Tensor& x = small(A());
    const Tensor& idx = small(B());
    const Tensor& src = small(C());
    switch (v % 11) {
      case 0: set(x.index_select(I(0), idx)); break;
      case 1: set(x.gather(I(0), idx)); break;
      case 2: set(x.scatter_add(I(0), idx, src)); break;
      case 3: set(x.masked_fill(idx, D(1))); break;
      case 4: set(x.masked_select(idx)); break;
      case 5: set(ag::index_add(x, I(0), idx, src, D(1))); break;
      case 6: set(ag::embedding(x, idx)); break;
      case 7: set(ag::where(idx, x, src)); break;
      case 8: set(ag::cat({x, idx}, I(0))); break;
      case 9: set(ag::stack({x, idx, src}, I(0))); break;
      default: set(ag::where(idx, x, D(1))); break;
    }
  }

  // What a translator reaches for (issue 26): libtorch's indexing API, rounding and sampling.
  // Index tensors are int64 literals from kInts (sizes, negatives and hostile values) or B as a
  // mask; the samplers draw from a generator seeded by the record, so a run is reproducible.
  void translate(uint8_t v) {
    using namespace ag::indexing;
    const Tensor idx = ag::tensor(std::vector<int64_t>{I(0), I(1)});
    const Tensor idx2 = ag::tensor(std::vector<int64_t>{I(2)});
    const ag::indexing::Slice sl(opt_int(0), opt_int(1), opt_int(2));
    ag::Generator gen(hi(5));
    switch (v % 14) {
      case 0: set(A().index({I(0), sl})); break;  // basic indices: views, any size
      case 1: set(A().index({Ellipsis, None, sl, I(3)})); break;
      case 2: set(A().index({flag(0, 0), None, sl})); break;
      case 3: set(small(A()).index({idx})); break;
      case 4: set(small(A()).index({sl, idx, idx2})); break;
      case 5: set(small(A()).index({idx, Slice(), idx2})); break;
      case 6: set(small(A())[small(B())]); break;  // B as a mask (or refused)
      case 7: {
        Tensor& x = A();
        small(x);
        x.index_put_({idx}, small(C()), flag(0, 0));
        break;
      }
      case 8: {
        Tensor& x = A();
        small(x);
        x.index_put_({sl, small(B())}, D(3), flag(0, 0));
        break;
      }
      case 9: small(A())[small(B())] = D(3); break;  // Python's x[mask] = v, written into A
      case 10: small(A()).index({Slice(), idx}) += small(C()); break;
      case 11:
        switch (hi(1) % 6) {
          case 0: set(small(A()).round()); break;
          case 1: set(small(A()).round(I(3))); break;
          case 2: set(small(A()).floor()); break;
          case 3: set(small(A()).ceil()); break;
          case 4: set(small(A()).trunc()); break;
          default: set(small(A()).frac()); break;
        }
        break;
      case 12: set(ag::multinomial(small(A()), I(3), flag(0, 0), &gen)); break;
      default: {
        set(ag::bernoulli(small(A()), &gen));
        Tensor& x = B();
        small(x);
        ag::exponential_(x, D(3), &gen);
        break;
      }
    }
  }

  void reduce(uint8_t v) {
    const Tensor& x = small(A());
    const DimVector ds = dims(hi(0) % 3);
    const bool keep = flag(1, 0);
    switch (v % 22) {
      case 0: set(x.sum()); break;
      case 1: set(x.sum(ds, keep)); break;
      case 2: set(x.mean(ds, keep)); break;
      case 3: set(x.max(I(0), keep).first); break;
      case 4: set(x.max(I(0), keep).second); break;
      case 5: set(x.min(I(0), keep).first); break;
      case 6: set(x.argmax(I(0), keep)); break;
      case 7: set(x.argmin(I(0), keep)); break;
      case 8: set(x.prod(I(0), keep)); break;
      case 9: set(x.var(ds, flag(2, 0), keep)); break;
      case 10: set(x.std(ds, flag(2, 0), keep)); break;
      case 11: set(ag::var(x, std::optional<DimVector>(ds), std::optional<int64_t>(I(3)), keep)); break;
      case 12: set(x.logsumexp(ds, keep)); break;
      case 13: set(x.cumsum(I(0))); break;
      case 14: set(x.norm(D(3), ds, keep)); break;
      case 15: set(x.norm(D(3))); break;
      case 16: set(x.max()); break;
      case 17: set(x.min()); break;
      case 18: set(x.softmax(I(0))); break;
      case 19: set(x.log_softmax(I(0))); break;
      case 20: set(x.prod()); break;
      default: set(x.mean()); break;
    }
  }

  void binary(uint8_t v) {
    const Tensor& x = small(A());
    const Tensor& y = small(B());
    switch (v % 18) {
      case 0: set(x + y); break;
      case 1: set(x - y); break;
      case 2: set(x * y); break;
      case 3: set(x / y); break;
      case 4: set(x.pow(y)); break;
      case 5: set(x.matmul(y)); break;
      case 6: set(x.eq(y)); break;
      case 7: set(ag::gt(x, y)); break;
      case 8: set(ag::lt(x, y)); break;
      case 9: set(ag::minimum(x, y)); break;
      case 10: set(ag::maximum(x, y)); break;
      case 11: set(x + D(0)); break;
      case 12: set(x * D(0)); break;
      case 13: set(x.pow(D(0))); break;
      case 14: set(x / D(0)); break;
      case 15: set(D(0) / x); break;
      case 16: set(ag::logical_and(x, y)); break;
      default: set(x.gt(D(0))); break;
    }
  }

  void unary(uint8_t v) {
    const Tensor& x = small(A());
    switch (v % 16) {
      case 0: set(-x); break;
      case 1: set(x.exp()); break;
      case 2: set(x.log()); break;
      case 3: set(x.sqrt()); break;
      case 4: set(x.tanh()); break;
      case 5: set(x.sigmoid()); break;
      case 6: set(x.relu()); break;
      case 7: set(ag::abs(x)); break;
      case 8: set(ag::sign(x)); break;
      case 9: set(ag::square(x)); break;
      case 10: set(ag::clamp(x, opt_double(0), opt_double(1))); break;
      case 11: set(x.triu(I(0))); break;
      case 12: set(x.tril(I(0))); break;
      case 13: set(ag::gelu(x, flag(0, 0) ? "tanh" : "none")); break;
      case 14: set(ag::reciprocal(x)); break;
      default: set(x.logical_not()); break;
    }
  }

  void inplace(uint8_t v) {
    Tensor& x = A();
    small(x);
    const Tensor& y = small(B());
    switch (v % 13) {
      case 0: x.add_(y, D(0)); break;
      case 1: x.add_(D(0)); break;
      case 2: x.sub_(y); break;
      case 3: x.mul_(y); break;
      case 4: x.mul_(D(0)); break;
      case 5: x.div_(y); break;
      case 6: x.div_(D(0)); break;
      case 7: x.fill_(D(0)); break;
      case 8: x.zero_(); break;
      case 9: x.copy_(y); break;
      case 10: x.clamp_(opt_double(0), opt_double(1)); break;
      case 11: x.masked_fill_(y, D(0)); break;
      default: x += y; break;
    }
    touch(x);
  }

  void grad_meta(uint8_t v) {
    Tensor& x = A();
    switch (v % 8) {
      case 0: x.set_grad(detached(B())); break;
      case 1: x.set_grad(Tensor()); break;
      case 2: x.requires_grad_(flag(0, 0)); break;
      case 3: x.retain_grad(); break;
      case 4: set(x.grad()); break;
      case 5: {  // a hook that replaces the gradient with whatever B holds now
        const Tensor replacement = detached(B());
        x.register_hook([replacement](const Tensor&) { return replacement; });
        break;
      }
      case 6: x.register_hook([](const Tensor& g) { return g * 2.0; }); break;
      default: set(ag::nn::Parameter(small(x), flag(0, 0))); break;
    }
  }

  void backward() {
    const Tensor& x = small(A());
    const Tensor gradient = flag(0, 0) ? small(B()) : Tensor();
    x.backward(gradient, retain(1));
    if (flag(3, 0)) x.backward(gradient, retain(1));  // twice
  }

  void grad() {
    std::vector<Tensor> inputs{B()};
    if (flag(0, 0)) inputs.push_back(C());
    std::vector<Tensor> grad_outputs;
    if (flag(1, 0)) grad_outputs.push_back(small(slot[hi(5) % kSlots]));
    const std::vector<Tensor> g = ag::grad({small(A())}, inputs, grad_outputs, retain(2), flag(3, 0), flag(4, 0));
    if (!g.empty()) set(g[0]);
  }

  void optim(uint8_t v) {
    std::vector<Tensor> params{small(A())};
    if (flag(5, 0)) params.push_back(small(B()));
    switch (v % 8) {
      case 0: {
        ag::optim::SGDOptions o;
        o.lr = D(0);
        o.momentum = D(1);
        o.nesterov = flag(1, 0);
        o.weight_decay = D(2);
        opt = std::make_unique<ag::optim::SGD>(params, o);
        break;
      }
      case 1: {
        ag::optim::AdamOptions o;
        o.lr = D(0);
        o.betas = {D(1), D(2)};
        o.eps = D(3);
        o.amsgrad = flag(1, 0);
        opt = std::make_unique<ag::optim::Adam>(params, o);
        break;
      }
      case 2: {
        ag::optim::AdamWOptions o;
        o.lr = D(0);
        o.weight_decay = D(2);
        opt = std::make_unique<ag::optim::AdamW>(params, o);
        break;
      }
      case 3: {
        ag::optim::RMSpropOptions o;
        o.lr = D(0);
        o.momentum = D(1);
        o.centered = flag(1, 0);
        opt = std::make_unique<ag::optim::RMSprop>(params, o);
        break;
      }
      case 4: {
        ag::optim::AdagradOptions o;
        o.lr = D(0);
        o.lr_decay = D(1);
        opt = std::make_unique<ag::optim::Adagrad>(params, o);
        break;
      }
      case 5: opt = std::make_unique<ag::optim::SGD>(params, ag::optim::SGDOptions{0.1}); break;
      case 6:
        if (opt) opt->zero_grad(flag(1, 0));
        break;
      default: break;
    }
    if (opt && flag(4, 0)) opt->step();
    if (opt && flag(4, 1)) opt->step();
  }

  void linear(uint8_t v) {
    switch (v % 5) {
      case 0:  // a new small Linear; its weight goes to dst, so later steps can train it
        lin = std::make_shared<ag::nn::Linear>(r[6] & 3, r[7] & 3, flag(0, 0));
        set(lin->weight);
        break;
      case 1: {
        if (!lin) lin = std::make_shared<ag::nn::Linear>(2, 3);
        ag::nn::NamedTensors dict;
        const Tensor* sources[3] = {&A(), &B(), &C()};
        for (int k = 0; k < hi(2) % 4; ++k) dict.emplace_back(kKeys[hi(3 + k) & 7], *sources[k % 3]);
        lin->load_state_dict(dict, flag(1, 0));
        touch(lin->weight);
        touch(lin->bias);
        break;
      }
      case 2:
        if (lin) set((*lin)(small(A())));
        break;
      case 3:
        if (lin) set(lin->bias);
        break;
      default:
        if (lin) lin->to(kDTypes[v >> 4 & 3]);
        break;
    }
  }

  void assign(uint8_t v) {
    const Tensor& x = small(A());
    const Tensor& t = small(B());
    switch (v % 3) {
      case 0: assign_tensor(x[I(0)], t, x); break;
      case 1: assign_scalar(x[I(0)], kAssignValues[hi(1) & 3]); break;
      default: assign_tensor(x.select(I(1), I(0)), t, x); break;
    }
  }

  void touch_ops(uint8_t v) {
    const Tensor& x = small(A());
    switch (v % 6) {
      case 0: (void)ag::repr(x); break;
      case 1: (void)x.item(); break;
      case 2: (void)x.size(I(0)); (void)x.stride(I(1)); break;
      case 3: (void)x.is_contiguous(); (void)x.is_leaf(); (void)x.requires_grad(); break;
      case 4: set(x.detach()); break;
      default: set(x.to(kDTypes[hi(0) & 3]).contiguous()); break;
    }
  }

  void loss(uint8_t v) {
    const Tensor& x = small(A());
    const Tensor& y = small(B());
    const std::string red = kReductions[hi(0) & 3];
    switch (v % 9) {
      case 0: set(ag::cross_entropy(x, y, I(1), red, D(2))); break;
      case 1: set(ag::nll_loss(x, y, I(1), red)); break;
      case 2: set(ag::mse_loss(x, y, red)); break;
      case 3: set(ag::l1_loss(x, y, red)); break;
      case 4: set(ag::binary_cross_entropy(x, y, small(C()), red)); break;
      case 5: set(ag::kl_div(x, y, red, flag(1, 0))); break;
      case 6: set(ag::layer_norm(x, std::vector<int64_t>{I(1)}, small(C()))); break;
      case 7: set(ag::dropout(x, D(2), flag(1, 0))); break;
      default: set(ag::log_softmax(x, I(1))); break;
    }
  }
};

const char* const kOpNames[kNumOps] = {"create", "literal", "view",     "slice",    "index", "reduce",
                                       "binary", "unary",   "convert",  "inplace",  "gradmeta", "backward",
                                       "grad",   "optim",   "linear",   "assign",   "touch", "loss"};

}  // namespace

// ASan's options unless ASAN_OPTIONS overrides them: see "Memory" at the top.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1:max_allocation_size_mb=256"; }

// AG_FUZZ_TRACE=1 ./api_fuzzer FILE prints each step and what it threw (to decode a crash).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const bool trace = std::getenv("AG_FUZZ_TRACE") != nullptr;
  ag::manual_seed(0);  // randn and dropout draw the same numbers each time the input runs
  Program p;
  uint8_t rec[kRecord];
  for (int step = 0; step < kMaxSteps && static_cast<std::size_t>(step) * kRecord < size; ++step) {
    const std::size_t at = static_cast<std::size_t>(step) * kRecord;
    for (std::size_t k = 0; k < kRecord; ++k) rec[k] = at + k < size ? data[at + k] : 0;
    if (trace) {
      std::fprintf(stderr, "step %d: %s variant %d dst %d a %d b %d c %d p", step, rec[0] >= kTranslateByte ? "translate" : kOpNames[rec[0] % kNumOps], rec[1],
                   rec[2] % kSlots, rec[3] % kSlots, rec[4] % kSlots, rec[5] % kSlots);
      for (int k = 6; k < 12; ++k) std::fprintf(stderr, " %02x", rec[k]);
      std::fprintf(stderr, "\n");
    }
    try {
      p.step(rec);
    } catch (const Skip&) {
      if (trace) std::fprintf(stderr, "  skipped: an operand over %lld elements\n", static_cast<long long>(kSmall));
    } catch (const std::exception& e) {
      // rejected with an exception: the contract holds; go on with the next step
      if (trace) std::fprintf(stderr, "  threw: %s\n", e.what());
    }
    if (trace) {  // the slots' shapes after the step
      for (int k = 0; k < kSlots; ++k) {
        if (p.slot[k].defined()) std::fprintf(stderr, "  slot %d: %s\n", k, p.slot[k].shape().str().c_str());
      }
    }
  }
  return 0;
}
