// PyTorch-identical random numbers (torch-rng.md). This file is compiled with
// -ffp-contract=off: every multiply-add below is rounded twice unless written as std::fma/fmaf,
// exactly where PyTorch's kernels fuse them.
#include "autograd/random.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "autograd/inplace.h"
#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace {

Generator& pick(Generator* g) { return g ? *g : default_generator(); }

// Every function below holds its generator's mutex while it draws (generator.h). Tensors are
// made before it is taken and wrapped after: the lock covers only the draws and nothing else is
// locked inside it (no storage from the block cache), so fork()'s handlers, which take both
// locks, cannot deadlock against a draw.
using GenLock = std::lock_guard<std::mutex>;

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Storage offsets of t's elements in the order they sit in memory: the order PyTorch's serial
// random kernels visit a strided tensor (row-major order when contiguous).
std::vector<int64_t> memory_order(const Tensor& t) {
  std::vector<int64_t> offs;
  offs.reserve(static_cast<std::size_t>(t.numel()));
  detail::walk<1>(t.shape(), {&t.strides()}, {t.storage_offset()}, [&](const std::array<int64_t, 1>& o) { offs.push_back(o[0]); });
  if (!t.is_contiguous()) std::sort(offs.begin(), offs.end());
  return offs;
}

// ---- normal: scalar path (section 3.2) ----

// One normal_distribution<double> sample: Box-Muller over two 53-bit uniforms, the second value
// cached in the generator. Returned as v, before the affine map.
double scalar_normal(Generator& g) {
  if (g.next_double_normal) {
    const double v = *g.next_double_normal;
    g.next_double_normal.reset();
    return v;
  }
  const double u1 = g.unit_double();
  const double u2 = g.unit_double();
  const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
  const double theta = 6.283185307179586 * u1;
  g.next_double_normal = r * std::sin(theta);
  return r * std::cos(theta);
}

// ---- normal: block path, float32 lanes (section 3.4) ----

constexpr uint32_t kLogP[9] = {0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A, 0xBDFE5D4F, 0x3E11E9BF,
                               0xBE2AAE50, 0x3E4CCEAC, 0xBE7FFFFC, 0x3EAAAAAA};

// u1 (16 lanes in p[0..7] and p[8..15]) -> 16 normals, lane j paired with lane j + 8.
void box_muller16_f32(float* p, float mean, float std) {
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - p[j];
    const float u2 = p[j + 8];
    const float radius = std::sqrt(-2.0f * avx_log(u1));
    const float theta = from_bits(0x40C90FDB) * u2;
    float s, c;
    avx_sincos(theta, s, c);
    const float n1 = radius * c;
    const float n2 = radius * s;
    p[j] = std::fmaf(n1, std, mean);
    p[j + 8] = std::fmaf(n2, std, mean);
  }
}

// ---- normal: block path, float64 lanes (section 3.5) ----
void box_muller16_f64(double* p, double mean, double std) {
  for (int j = 0; j < 8; ++j) {
    const double u1 = 1.0 - p[j];
    const double u2 = p[j + 8];
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double theta = 6.283185307179586 * u2;
    const double a = radius * std::cos(theta);
    const double b = radius * std::sin(theta);
    p[j] = std::fma(a, std, mean);
    p[j + 8] = std::fma(b, std, mean);
  }
}

// n >= 16 contiguous values: n uniforms, every full block of 16 transformed, then (if n is not a
// multiple of 16) the last 16 elements redrawn and transformed again (section 3.3).
template <class T>
void block_normal(T* d, int64_t n, double mean, double std, Generator& g) {
  auto unit = [&g]() -> T {
    if constexpr (std::is_same_v<T, float>) return g.unit_float();
    else return g.unit_double();
  };
  auto block = [&](T* p) {
    if constexpr (std::is_same_v<T, float>) box_muller16_f32(p, static_cast<float>(mean), static_cast<float>(std));
    else box_muller16_f64(p, mean, std);
  };
  for (int64_t i = 0; i < n; ++i) d[i] = unit();
  for (int64_t k = 0; k + 16 <= n; k += 16) block(d + k);
  if (n % 16 != 0) {
    T* tail = d + n - 16;
    for (int k = 0; k < 16; ++k) tail[k] = unit();
    block(tail);
  }
}

Tensor finish(Tensor t, const Options& o) {
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}

// Integers in [low, high) into t's elements in memory order (section 7): low + (one draw % range),
// two draws (random64) when the range needs 33 bits or more.
void random_from_to(const Tensor& t, int64_t low, int64_t high, Generator& g, const char* op) {
  if (!(low < high)) {
    throw std::invalid_argument(std::string("[") + op + "] expects low < high, but got low=" + std::to_string(low) +
                                " high=" + std::to_string(high));
  }
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  const std::vector<int64_t> offs = memory_order(t);
  GenLock lock(g.mutex());
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* d = static_cast<T*>(t.impl()->storage->data);
    for (int64_t o : offs) {
      const uint64_t v = range >= (1ULL << 32) ? g.random64() % range : g.random() % range;
      d[o] = static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + v));
    }
  });
}

// PyTorch's empty_like (preserve_format): t's strides if its elements (the dims of size > 1,
// ordered by stride) tile memory with no gap or overlap, else contiguous.
Tensor empty_like_layout(const Tensor& t, const Options& o) {
  const DType dt = o.dtype_set ? o.dtype_ : t.dtype();
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) != 1) dims.emplace_back(t.stride(d), t.size(d));
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  bool dense = t.numel() > 0;
  for (const auto& [stride, size] : dims) {
    dense = dense && stride == expected;
    expected *= size;
  }
  if (!dense || t.is_contiguous()) return detail::make_tensor(t.shape(), dt);
  return detail::alias(detail::make_tensor(Size{t.numel()}, dt), t.shape(), t.strides(), 0);
}

// A number as PyTorch's messages print it: -1, 1.5.
std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// One Exp(lambd) sample: (-1 / lambd) log(1 - u), u of 53 bits, in double (one random64).
double exponential_sample(Generator& g, double lambd) { return (-1.0 / lambd) * std::log(1.0 - g.unit_double()); }

// multinomial without replacement, PyTorch 1.13's way (the Gumbel-max trick): every row is checked
// first, then q ~ Exp(1) is drawn for all elements at once (memory order, as empty_like(p)), and
// each row's samples are the indices of the largest p / q: argmax for one sample (the first
// maximum; NaN counts as the largest), else topk's selection. topk keeps (value, index) pairs and
// breaks no ties by index: partial_sort when 64 n <= C, else nth_element then a sort of the first
// n - 1. Equal values come out in the order libstdc++'s algorithms leave them, which is the order
// PyTorch's (built with the same library) gives.
template <class T>
void multinomial_without_replacement(const Tensor& p, int64_t n, int64_t* out, Generator& g) {
  const int64_t rows = p.dim() == 2 ? p.size(0) : 1, cats = p.size(-1);
  const std::vector<T> pv = p.to_vector<T>();
  for (T v : pv)
    if (!(v < std::numeric_limits<T>::infinity()) || !(v >= 0))
      throw std::invalid_argument("[multinomial] probability tensor contains either `inf`, `nan` or element < 0");
  for (int64_t r = 0; r < rows; ++r)
    if (std::all_of(pv.begin() + r * cats, pv.begin() + (r + 1) * cats, [](T v) { return v == 0; }))
      throw std::invalid_argument("[multinomial] invalid multinomial distribution (sum of probabilities <= 0)");
  Tensor q = empty_like_layout(p, p.dtype());
  {
    GenLock lock(g.mutex());
    T* d = q.data_ptr<T>();
    for (int64_t o : memory_order(q)) d[o] = static_cast<T>(exponential_sample(g, 1.0));
  }
  const std::vector<T> qv = q.to_vector<T>();
  using Pair = std::pair<T, int64_t>;
  auto before = [](const Pair& a, const Pair& b) { return (std::isnan(a.first) && !std::isnan(b.first)) || a.first > b.first; };
  std::vector<Pair> row(static_cast<std::size_t>(cats));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cats; ++j) row[j] = {static_cast<T>(pv[r * cats + j] / qv[r * cats + j]), j};
    int64_t* o = out + r * n;
    if (n == 1) {
      int64_t best = 0;
      for (int64_t j = 1; j < cats && !std::isnan(row[best].first); ++j)
        if (std::isnan(row[j].first) || row[j].first > row[best].first) best = j;
      o[0] = best;
      continue;
    }
    if (n * 64 <= cats) {
      std::partial_sort(row.begin(), row.begin() + n, row.end(), before);
    } else {
      std::nth_element(row.begin(), row.begin() + (n - 1), row.end(), before);
      std::sort(row.begin(), row.begin() + (n - 1), before);
    }
    for (int64_t k = 0; k < n; ++k) o[k] = row[k].second;
  }
}

// multinomial with replacement, PyTorch 1.13's way, row by row: the cumulative distribution in
// p's dtype (each entry checked), divided by its sum, its last entry set to 1; then each sample
// is the first j with cum[j] >= u for a 53-bit uniform u (a binary search). A zero-probability
// category after the first is never drawn. A bad row throws after the rows before it have drawn.
template <class T>
void multinomial_with_replacement(const Tensor& p, int64_t n, int64_t* out, Generator& g) {
  const int64_t rows = p.dim() == 2 ? p.size(0) : 1, cats = p.size(-1);
  const std::vector<T> pv = p.to_vector<T>();
  std::vector<T> cum(static_cast<std::size_t>(cats));
  GenLock lock(g.mutex());
  for (int64_t r = 0; r < rows; ++r) {
    T sum = 0;
    for (int64_t j = 0; j < cats; ++j) {
      const T v = pv[r * cats + j];
      if (!(v >= 0))
        throw std::invalid_argument("[multinomial] invalid multinomial distribution (encountering probability entry < 0)");
      if (!std::isfinite(v))
        throw std::invalid_argument("[multinomial] invalid multinomial distribution (encountering probability entry = infinity or NaN)");
      sum += v;
      cum[j] = sum;
    }
    if (!(sum > 0)) throw std::invalid_argument("[multinomial] invalid multinomial distribution (sum of probabilities <= 0)");
    for (T& c : cum) c /= sum;
    cum[cats - 1] = 1;
    for (int64_t k = 0; k < n; ++k) {
      const double u = g.unit_double();
      int64_t lo = 0, hi = cats;
      while (hi > lo) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (static_cast<double>(cum[mid]) < u) lo = mid + 1;
        else hi = mid;
      }
      out[r * n + k] = lo;
    }
  }
}

}  // namespace

Tensor& exponential_(Tensor& t, double lambd, Generator* gen) {
  if (!(lambd >= 0.0)) {
    throw std::invalid_argument("[exponential_] exponential_ expects lambda >= 0.0, but found lambda=" + number_text(lambd));
  }
  detail::check_defined(t, "exponential_");
  if (!is_floating(t.dtype()))
    throw std::invalid_argument(std::string("[exponential_] \"exponential_cpu\" not implemented for '") +
                                (t.dtype() == kBool ? "Bool" : "Long") + "'");
  Generator& g = pick(gen);
  detail::begin_inplace(t, "exponential_", false);
  if (detail::inplace_has_tangent(t)) detail::set_inplace_tangent(t, Tensor());  // random values: dt = 0
  const std::vector<int64_t> offs = memory_order(t);
  GenLock lock(g.mutex());
  dispatch_float(t.dtype(), "exponential_", [&]<typename T>() {
    T* d = static_cast<T*>(t.impl()->storage->data);
    for (int64_t o : offs) d[o] = static_cast<T>(exponential_sample(g, lambd));
  });
  return t;
}

Tensor bernoulli(const Tensor& p, Generator* gen) {
  detail::check_defined(p, "bernoulli");
  if (!is_floating(p.dtype()))
    throw std::invalid_argument(std::string("[bernoulli] \"bernoulli_tensor_cpu_p_\" not implemented for '") +
                                (p.dtype() == kBool ? "Bool" : "Long") + "'");
  Tensor y = detail::make_tensor(p.shape(), p.dtype(), "bernoulli");
  Generator& g = pick(gen);
  dispatch_float(p.dtype(), "bernoulli", [&]<typename T>() {
    const std::vector<T> pv = p.to_vector<T>();
    T* d = y.data_ptr<T>();
    GenLock lock(g.mutex());
    for (std::size_t i = 0; i < pv.size(); ++i) {
      if (!(pv[i] >= 0 && pv[i] <= 1))
        throw std::invalid_argument("[bernoulli] Expected p_in >= 0 && p_in <= 1 to be true, but got false (p has shape " +
                                    p.shape().str() + ")");
      // float32 p: 24 bits of one draw against p in float; float64 p: 53 bits of two, in double
      if constexpr (std::is_same_v<T, float>) d[i] = g.unit_float() < pv[i] ? 1.0f : 0.0f;
      else d[i] = g.unit_double() < pv[i] ? 1.0 : 0.0;
    }
  });
  // y ~ Bernoulli(p) is piecewise constant in p  =>  dp = 0 (PyTorch's BernoulliBackward0)
  // jvp: dy = 0, a zero tangent that is materialised, as PyTorch's (its auto_element_wise rule)
  if (needs_grad(p))
    record(y, "BernoulliBackward0", {p}, [](const Tensor& g) -> Grads { return {zeros_like(g)}; },
           [&](const Tangents& d) { return zeros_like(d[0]); });
  return y;
}

Tensor bernoulli(const Tensor& t, double p, Generator* gen) {
  detail::check_defined(t, "bernoulli");
  Tensor y = detail::make_tensor(t.shape(), t.dtype(), "bernoulli");
  bernoulli_(y, p, gen);
  y.impl()->storage->version = 0;
  return y;
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  detail::check_defined(probs, "multinomial");
  if (probs.dim() != 1 && probs.dim() != 2)
    throw std::invalid_argument("[multinomial] prob_dist must be 1 or 2 dim (got shape " + probs.shape().str() + ")");
  if (!is_floating(probs.dtype()))
    throw std::invalid_argument(std::string("[multinomial] multinomial only supports floating-point dtypes for input, got: ") +
                                (probs.dtype() == kBool ? "Bool" : "Long"));
  if (num_samples <= 0) throw std::invalid_argument("[multinomial] cannot sample n_sample <= 0 samples");
  const int64_t cats = probs.size(-1);
  if (!replacement && num_samples > cats) {
    throw std::invalid_argument("[multinomial] cannot sample n_sample > prob_dist.size(-1) samples without replacement (" +
                                std::to_string(num_samples) + " > " + std::to_string(cats) + ")");
  }
  if (cats > (int64_t{1} << 24)) throw std::invalid_argument("[multinomial] number of categories cannot exceed 2^24");
  const int64_t rows = probs.dim() == 2 ? probs.size(0) : 1;
  Tensor out = detail::make_tensor(probs.dim() == 2 ? Size{rows, num_samples} : Size{num_samples}, kInt64, "multinomial");
  if (out.numel() == 0) return out;
  Generator& g = pick(gen);
  const Tensor p = probs.detach();
  dispatch_float(p.dtype(), "multinomial", [&]<typename T>() {
    if (replacement) multinomial_with_replacement<T>(p, num_samples, out.data_ptr<int64_t>(), g);
    else multinomial_without_replacement<T>(p, num_samples, out.data_ptr<int64_t>(), g);
  });
  return out;
}

float avx_log(float x) {
  if (!(x > 0.0f)) return std::nanf("");
  x = std::max(x, from_bits(0x00800000));  // smallest normal float
  const uint32_t b = bits_of(x);
  float e = static_cast<float>(static_cast<int32_t>(b >> 23) - 127) + 1.0f;
  x = from_bits((b & 0x807FFFFFu) | 0x3F000000u);  // mantissa scaled into [0.5, 1)
  if (x < from_bits(0x3F3504F3)) {                  // sqrt(1/2)
    e = e - 1.0f;
    const float t = x - 1.0f;
    x = t + x;
  } else {
    x = x - 1.0f;
  }
  const float z = x * x;
  float y = from_bits(kLogP[0]);
  for (int i = 1; i < 9; ++i) y = std::fmaf(y, x, from_bits(kLogP[i]));
  y = y * x;
  const float eq1 = e * from_bits(0xB95E8083);  // Q1
  y = std::fmaf(y, z, eq1);
  y = y - z * 0.5f;
  const float xy = x + y;
  return std::fmaf(e, from_bits(0x3F318000), xy);  // Q2
}

void avx_sincos(float t, float& s_out, float& c_out) {
  uint32_t sgn_s = bits_of(t) & 0x80000000u;
  float x = std::fabs(t);
  const float scaled = x * from_bits(0x3FA2F983);  // 4 / pi
  int32_t j = static_cast<int32_t>(scaled);        // truncation
  j = (j + 1) & ~1;
  const float y = static_cast<float>(j);
  const uint32_t swap = static_cast<uint32_t>(j & 4) << 29;
  const bool use_a = (j & 2) == 0;
  x = std::fmaf(y, from_bits(0xBF490000), x);  // DP1
  x = std::fmaf(y, from_bits(0xB97DA000), x);  // DP2
  x = std::fmaf(y, from_bits(0xB3222169), x);  // DP3
  const uint32_t sgn_c = (static_cast<uint32_t>(~(j - 2)) & 4u) << 29;
  sgn_s ^= swap;
  const float z = x * x;
  // cos polynomial
  float a = std::fmaf(from_bits(0x37CCF5CE), z, from_bits(0xBAB6061A));
  a = std::fmaf(a, z, from_bits(0x3D2AAAA5));
  a = a * z;
  const float half_z = z * 0.5f;
  a = std::fmaf(a, z, -half_z);
  a = a + 1.0f;
  // sin polynomial
  float b = std::fmaf(from_bits(0xB94CA1F9), z, from_bits(0x3C08839E));
  b = std::fmaf(b, z, from_bits(0xBE2AAAA3));
  b = b * z;
  b = std::fmaf(b, x, x);
  const float sv = use_a ? b : a;
  const float cv = use_a ? a : b;
  s_out = from_bits(bits_of(sv) ^ sgn_s);
  c_out = from_bits(bits_of(cv) ^ sgn_c);
}

Tensor rand(const DimVector& shape, Options o, Generator* gen) {
  Tensor t = detail::make_tensor(Size(shape), o.dtype_);
  uniform_(t, 0.0, 1.0, gen);
  t.impl()->storage->version = 0;
  return finish(t, o);
}

Tensor randn(const DimVector& shape, Options o, Generator* gen) {
  Tensor t = detail::make_tensor(Size(shape), o.dtype_);
  normal_(t, 0.0, 1.0, gen);
  t.impl()->storage->version = 0;
  return finish(t, o);
}

Tensor& uniform_(Tensor& t, double from, double to, Generator* gen) {
  if (!(from <= to)) {
    throw std::invalid_argument("[uniform_] expects from <= to, but got from=" + std::to_string(from) +
                                " to=" + std::to_string(to));
  }
  Generator& g = pick(gen);
  detail::begin_inplace(t, "uniform_", false);
  if (detail::inplace_has_tangent(t)) detail::set_inplace_tangent(t, Tensor());  // random values: dt = 0
  const std::vector<int64_t> offs = memory_order(t);
  GenLock lock(g.mutex());
  dispatch_float(t.dtype(), "uniform_", [&]<typename T>() {
    T* p = static_cast<T*>(t.impl()->storage->data);
    if constexpr (std::is_same_v<T, float>) {
      // out = fmaf(x, f32(f32(to) - f32(from)), f32(from))
      const float lo = static_cast<float>(from), hi = static_cast<float>(to);
      const float range = hi - lo;
      for (int64_t o : offs) p[o] = std::fmaf(g.unit_float(), range, lo);
    } else {
      const double range = to - from;
      for (int64_t o : offs) p[o] = std::fma(g.unit_double(), range, from);
    }
  });
  return t;
}

Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  if (!(std >= 0.0)) throw std::invalid_argument("[normal_] expects std >= 0.0, but found std " + std::to_string(std));
  Generator& g = pick(gen);
  detail::begin_inplace(t, "normal_", false);
  if (detail::inplace_has_tangent(t)) detail::set_inplace_tangent(t, Tensor());  // random values: dt = 0
  GenLock lock(g.mutex());
  dispatch_float(t.dtype(), "normal_", [&]<typename T>() {
    T* base = static_cast<T*>(t.impl()->storage->data);
    const int64_t n = t.numel();
    if (n >= 16 && t.is_contiguous()) {
      block_normal<T>(base + t.storage_offset(), n, mean, std, g);
      return;
    }
    for (int64_t o : memory_order(t)) base[o] = static_cast<T>(std::fma(scalar_normal(g), std, mean));
  });
  return t;
}

Tensor& bernoulli_(Tensor& t, double p, Generator* gen) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw std::invalid_argument("[bernoulli_] bernoulli_ expects p to be in [0, 1], but got p=" + number_text(p));
  }
  Generator& g = pick(gen);
  detail::begin_inplace(t, "bernoulli_", false);
  if (detail::inplace_has_tangent(t)) detail::set_inplace_tangent(t, Tensor());  // random values: dt = 0
  const std::vector<int64_t> offs = memory_order(t);
  GenLock lock(g.mutex());
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* d = static_cast<T*>(t.impl()->storage->data);
    for (int64_t o : offs) d[o] = static_cast<T>(g.unit_double() < p ? 1 : 0);
  });
  return t;
}

Tensor randint(int64_t low, int64_t high, const DimVector& shape, Options o, Generator* gen) {
  Tensor t = detail::make_tensor(Size(shape), o.dtype_);
  random_from_to(t, low, high, pick(gen), "randint");
  return finish(t, o);
}

Tensor randint(int64_t high, const DimVector& shape, Options o, Generator* gen) {
  return randint(0, high, shape, o, gen);
}

Tensor rand_like(const Tensor& t, Options o, Generator* gen) {
  Tensor r = empty_like_layout(t, o);
  uniform_(r, 0.0, 1.0, gen);
  r.impl()->storage->version = 0;
  return finish(r, o);
}

Tensor randn_like(const Tensor& t, Options o, Generator* gen) {
  Tensor r = empty_like_layout(t, o);
  normal_(r, 0.0, 1.0, gen);
  r.impl()->storage->version = 0;
  return finish(r, o);
}

Tensor randint_like(const Tensor& t, int64_t low, int64_t high, Options o, Generator* gen) {
  Tensor r = empty_like_layout(t, o);
  random_from_to(r, low, high, pick(gen), "randint_like");
  return finish(r, o);
}

Tensor randint_like(const Tensor& t, int64_t high, Options o, Generator* gen) { return randint_like(t, 0, high, o, gen); }

Tensor randperm(int64_t n, Options o, Generator* gen) {
  if (n < 0) throw std::invalid_argument("[randperm] n must be non-negative, got " + std::to_string(n));
  Generator& g = pick(gen);
  std::vector<int64_t> r(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = i;
  {
    GenLock lock(g.mutex());
    for (int64_t i = 0; i + 1 < n; ++i) {
      const auto z = static_cast<int64_t>(g.random() % static_cast<uint64_t>(n - i));
      std::swap(r[static_cast<std::size_t>(i)], r[static_cast<std::size_t>(i + z)]);
    }
  }
  return finish(from_vector(r, {n}, o.dtype_), o);
}

}  // namespace ag
