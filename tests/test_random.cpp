// Random numbers bit for bit equal to PyTorch 1.13's: the spec's test vectors
// (../shared/docs/torch-rng.md section 9, literal below), the larger generated cases in
// tests/golden/rng_cases.txt (tools/golden/make_rng_golden.py), and the seed tutorials' values.
#include <gtest/gtest.h>

#include <cstring>
#include <iomanip>

#include "golden_io.h"
#include "nn/init.h"

using namespace ag;

namespace {

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
uint64_t bits(double f) {
  uint64_t b;
  std::memcpy(&b, &f, 8);
  return b;
}

// Element i of a float tensor as a hex bit pattern ("3EACBBC9" / 16 digits for float64), or an
// integer tensor's element in decimal: the encoding of the golden file.
std::vector<std::string> encode(const Tensor& t) {
  std::vector<std::string> out;
  std::ostringstream os;
  if (t.dtype() == kFloat32) {
    for (float v : t.to_vector<float>()) {
      os.str("");
      os << std::uppercase << std::hex << std::setw(8) << std::setfill('0') << bits(v);
      out.push_back(os.str());
    }
  } else if (t.dtype() == kFloat64) {
    for (double v : t.to_vector<double>()) {
      os.str("");
      os << std::uppercase << std::hex << std::setw(16) << std::setfill('0') << bits(v);
      out.push_back(os.str());
    }
  } else {
    for (int64_t v : t.to_vector<int64_t>()) out.push_back(std::to_string(v));
  }
  return out;
}

std::vector<int64_t> dims(const std::string& s) {
  std::vector<int64_t> d;
  std::istringstream is(s);
  std::string part;
  while (std::getline(is, part, ',')) d.push_back(std::stoll(part));
  return d;
}

DType dtype_of(const std::string& s) { return s == "float64" ? kFloat64 : kFloat32; }

// Runs one op line of the golden file with this library, on the default generator.
Tensor run(const std::string& line) {
  std::istringstream is(line);
  std::string k, a, b, c, d;
  is >> k >> a >> b >> c >> d;
  if (k == "rand") return rand(dims(b), dtype_of(a));
  if (k == "randn") return randn(dims(b), dtype_of(a));
  if (k == "normal") {
    Tensor t = empty(dims(b), dtype_of(a));
    return normal_(t, std::stod(c), std::stod(d));
  }
  if (k == "normal_t") {
    Tensor t = empty(dims(b), dtype_of(a)).t();
    return normal_(t);
  }
  if (k == "uniform") {
    Tensor t = empty(dims(b), dtype_of(a));
    return uniform_(t, std::stod(c), std::stod(d));
  }
  if (k == "bernoulli") {
    Tensor t = empty(dims(b), dtype_of(a));
    return bernoulli_(t, std::stod(c));
  }
  if (k == "randint") return randint(std::stoll(a), std::stoll(b), dims(c));
  if (k == "randperm") return randperm(std::stoll(a));
  if (k == "linear") {  // nn.Linear(in, out): weight (out, in), then bias (out)
    Tensor w = empty({std::stoll(b), std::stoll(a)}), bias = empty({std::stoll(b)});
    nn::init::linear_reset_parameters(w, &bias);
    return cat({w.reshape({-1}), bias});
  }
  if (k == "embedding") {
    Tensor w = empty({std::stoll(a), std::stoll(b)});
    nn::init::embedding_reset_parameters(w);
    return w;
  }
  if (k == "dropout") return dropout(ones(dims(b)), std::stod(a));
  if (k == "dropout_randn") return dropout(randn(dims(b)), std::stod(a));
  if (k == "multinomial") {  // multinomial DT shape n replacement kind (see make_rng_golden.py)
    std::string kind;
    is >> kind;
    const std::vector<int64_t> shape = dims(b);
    Tensor p = kind == "t" ? rand({shape[1], shape[0]}, dtype_of(a)).t() : rand(shape, dtype_of(a));
    if (kind == "sparse") p = p * gt(p, 0.7);
    if (kind == "ties") p = floor(p * 3.0);
    return multinomial(p, std::stoll(c), d == "1");
  }
  if (k == "multinomial_list") {
    std::vector<double> v;
    std::istringstream vs(d);
    for (std::string x; std::getline(vs, x, ',');) v.push_back(std::stod(x));
    return multinomial(from_vector(v, {static_cast<int64_t>(v.size())}, dtype_of(a)), std::stoll(b), c == "1");
  }
  if (k == "bernoulli_p") return bernoulli(rand(dims(b), dtype_of(a)));
  if (k == "bernoulli_scalar") return bernoulli(zeros(dims(b), dtype_of(a)), std::stod(c));
  if (k == "exponential") {
    Tensor t = empty(dims(b), dtype_of(a));
    return exponential_(t, std::stod(c));
  }
  throw std::runtime_error("unknown golden op " + k);
}

}  // namespace

TEST(Generator, SpecRawDrawVectors) {
  Generator g(123);
  for (uint32_t want : {2991312382u, 3062119789u, 1228959102u, 1840268610u, 974319580u}) EXPECT_EQ(g.random(), want);
  g.manual_seed(0);
  for (uint32_t want : {2357136044u, 2546248239u, 3071714933u}) EXPECT_EQ(g.random(), want);
  g.manual_seed(123);
  EXPECT_EQ(g.random64(), 0xB24BCDFEB6843D6DULL);
  EXPECT_EQ(g.random64(), 0x49406D7E6DB04542ULL);
}

TEST(Generator, SeedUsesLow32BitsAndNegativeSeedsWrap) {
  Generator a(5), b((1ULL << 32) + 5);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.random(), b.random());
  Generator c(static_cast<uint64_t>(-1));
  EXPECT_EQ(c.initial_seed(), 0xFFFFFFFFFFFFFFFFULL);
  Generator d(0xFFFFFFFFULL);
  EXPECT_EQ(c.random(), d.random());
  // the 10000th output for seed 5489 is the standard MT19937 check value
  Generator e(5489);
  uint32_t v = 0;
  for (int i = 0; i < 10000; ++i) v = e.random();
  EXPECT_EQ(v, 4123659995u);
}

TEST(Random, SpecTableVectorsBitForBit) {
  manual_seed(123);
  auto r = rand({3, 3}).to_vector<float>();
  EXPECT_EQ(bits(r[0]), 0x3E979BFCu);
  EXPECT_EQ(bits(r[1]), 0x3F043D6Du);
  EXPECT_EQ(bits(r[2]), 0x3E80DAFCu);
  EXPECT_EQ(bits(r[3]), 0x3F304542u);
  manual_seed(123);
  auto rd = rand({2}, kFloat64).to_vector<double>();
  EXPECT_EQ(bits(rd[0]), 0x3FD79BFD6D087ADAULL);
  EXPECT_EQ(bits(rd[1]), 0x3F8B5F9B6C115080ULL);
  manual_seed(123);
  auto n4 = randn({4}).to_vector<float>();
  EXPECT_EQ(bits(n4[0]), 0xBDE448DFu);
  EXPECT_EQ(bits(n4[1]), 0x3DF680D9u);
  EXPECT_EQ(bits(n4[2]), 0xBEBD40BCu);
  EXPECT_EQ(bits(n4[3]), 0xBE763021u);
  manual_seed(123);
  auto n2d = randn({2}, kFloat64).to_vector<double>();
  EXPECT_EQ(bits(n2d[0]), 0xBFBC891BE348E115ULL);
  EXPECT_EQ(bits(n2d[1]), 0x3FBED01B1C608467ULL);
  manual_seed(123);
  auto n16 = randn({16}).to_vector<float>();
  EXPECT_EQ(bits(n16[0]), 0x3EACBBC9u);
  EXPECT_EQ(bits(n16[1]), 0xBE360B3Bu);
  EXPECT_EQ(bits(n16[8]), 0x3F446121u);
  EXPECT_EQ(bits(n16[15]), 0x3E89D465u);
  manual_seed(123);
  auto n17 = randn({17}).to_vector<float>();
  EXPECT_EQ(bits(n17[0]), 0x3EACBBC9u);
  EXPECT_EQ(bits(n17[1]), 0xBF829ED3u);
  EXPECT_EQ(bits(n17[16]), 0xBF48EC26u);
  manual_seed(0);
  auto big = randn({150000}).to_vector<float>();
  EXPECT_EQ(bits(big[0]), 0xBF901B85u);
  EXPECT_EQ(bits(big[149999]), 0x3FA12050u);
  manual_seed(123);
  auto n16d = randn({16}, kFloat64).to_vector<double>();
  EXPECT_EQ(bits(n16d[0]), 0x3FED1CBBD4045FB5ULL);
  EXPECT_EQ(bits(n16d[8]), 0xBFD38208123838DCULL);
  manual_seed(123);
  Tensor u = empty({3});
  auto uv = uniform_(u, -0.5, 0.5).to_vector<float>();
  EXPECT_EQ(bits(uv[0]), 0xBE50C808u);
  EXPECT_EQ(bits(uv[1]), 0x3C87ADA0u);
  EXPECT_EQ(bits(uv[2]), 0xBE7E4A08u);
  manual_seed(123);
  Tensor nm = empty({2});
  auto nv = normal_(nm, 0.5, 2.5).to_vector<float>();
  EXPECT_EQ(bits(nv[0]), 0x3E62A4E9u);
  EXPECT_EQ(bits(nv[1]), 0x3F4D0844u);
  manual_seed(123);
  Tensor w = empty({2, 3}), b = empty({2});
  nn::init::linear_reset_parameters(w, &b);
  const uint32_t wbits[] = {0xBE711478u, 0x3C9CAAEFu, 0xBE92D05Du, 0x3E5EF3BAu, 0xBEFBDECDu, 0x3ED8B0B2u};
  auto wv = w.to_vector<float>();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(bits(wv[static_cast<std::size_t>(i)]), wbits[i]) << i;
  EXPECT_EQ(bits(b.to_vector<float>()[0]), 0xBED6DB3Du);
  EXPECT_EQ(bits(b.to_vector<float>()[1]), 0xBEEB045Du);
  manual_seed(123);
  Tensor w2 = empty({256, 784}), b2 = empty({256});
  nn::init::linear_reset_parameters(w2, &b2);
  EXPECT_EQ(bits(w2.to_vector<float>().front()), 0xBC6E9B78u);
  EXPECT_EQ(bits(w2.to_vector<float>().back()), 0x3CB7C393u);
  EXPECT_EQ(bits(b2.to_vector<float>()[0]), 0x3CF6026Cu);
  manual_seed(123);
  Tensor e44 = empty({4, 4});
  nn::init::embedding_reset_parameters(e44);
  EXPECT_EQ(bits(e44.to_vector<float>()[0]), 0x3EACBBC9u);
  EXPECT_EQ(bits(e44.to_vector<float>()[1]), 0xBE360B3Bu);
  EXPECT_EQ(bits(e44.to_vector<float>()[15]), 0x3E89D465u);
  manual_seed(123);
  Tensor e35 = empty({3, 5});
  nn::init::embedding_reset_parameters(e35);
  EXPECT_EQ(bits(e35.to_vector<float>()[0]), 0xBDE448DFu);
  EXPECT_EQ(bits(e35.to_vector<float>()[1]), 0x3DF680D9u);
  manual_seed(123);
  auto dv = dropout(ones({6, 6}), 0.3).to_vector<float>();
  for (std::size_t i = 0; i < dv.size(); ++i) {
    EXPECT_EQ(bits(dv[i]), (i == 8 || i == 10 || i == 16 || i == 26) ? 0u : 0x3FB6DB6Eu) << i;
  }
  manual_seed(123);
  EXPECT_EQ(randint(0, 10, {8}).to_vector<int64_t>(), (std::vector<int64_t>{2, 9, 2, 0, 0, 2, 6, 7}));
  manual_seed(123);
  EXPECT_EQ(randperm(8).to_vector<int64_t>(), (std::vector<int64_t>{6, 2, 1, 3, 4, 7, 0, 5}));
}

TEST(Random, AvxMathfunUnitVectors) {
  EXPECT_EQ(bits(avx_log(0.5f)), 0xBF317218u);
  EXPECT_EQ(bits(avx_log(0x1p-24f)), 0xC1851592u);
  EXPECT_EQ(bits(avx_log(1.0f)), 0u);
  float s, c;
  avx_sincos(1.0f, s, c);
  EXPECT_EQ(bits(s), 0x3F576AA4u);
  EXPECT_EQ(bits(c), 0x3F0A5140u);
  float t;
  const uint32_t tb = 0x40C90FDAu;
  std::memcpy(&t, &tb, 4);
  avx_sincos(t, s, c);
  EXPECT_EQ(bits(s), 0xB4A22169u);
  EXPECT_EQ(bits(c), 0x3F800000u);
}

TEST(Random, GoldenSequencesBitForBit) {
  auto f = golden::open("rng_cases.txt");
  std::string line;
  int cases = 0;
  int64_t compared = 0;
  while (std::getline(f, line)) {
    std::istringstream head(line);
    std::string kw, name;
    uint64_t seed = 0;
    int n_ops = 0;
    head >> kw >> name >> seed >> n_ops;
    ASSERT_EQ(kw, "case");
    manual_seed(seed);  // the generator (and its normal cache) carries over between the ops
    for (int i = 0; i < n_ops; ++i) {
      const std::string op = golden::expect_keyword(f, "op");
      SCOPED_TRACE(name + ": " + op);
      const std::vector<std::string> got = encode(run(op));
      std::getline(f, line);
      std::istringstream is(line);
      std::string mode, tok;
      std::size_t count = 0;
      is >> mode >> count;
      ASSERT_EQ(got.size(), count);
      std::size_t next = 0;
      int mismatches = 0;
      while (is >> tok) {
        std::size_t idx = next++;
        if (mode == "pick") {
          const auto colon = tok.find(':');
          idx = std::stoul(tok.substr(0, colon));
          tok = tok.substr(colon + 1);
        }
        if (got[idx] != tok && ++mismatches <= 3) ADD_FAILURE() << "element " << idx << ": got " << got[idx] << ", PyTorch " << tok;
        ++compared;
      }
      EXPECT_EQ(mismatches, 0);
    }
    ++cases;
  }
  EXPECT_GE(cases, 35);
  EXPECT_GE(compared, 3000);
}

TEST(Random, SeedTutorialsValues) {
  // seed 000: torch.manual_seed(123); W_query = torch.rand(3, 3)
  manual_seed(123);
  EXPECT_EQ(repr(rand({3, 3})),
            "tensor([[0.2961, 0.5166, 0.2517],\n        [0.6886, 0.0740, 0.8665],\n        [0.1366, 0.1025, 0.1841]])");
  // seed 000: torch.manual_seed(123); embed = torch.nn.Embedding(50000, 3); embed(sentence_int)
  manual_seed(123);
  Tensor w = empty({50000, 3});
  nn::init::embedding_reset_parameters(w);
  EXPECT_EQ(repr(embedding(w, tensor({0, 4, 5, 2, 1, 3}))),
            "tensor([[ 0.3374, -0.1778, -0.3035],\n"
            "        [ 0.1794,  1.8951,  0.4954],\n"
            "        [ 0.2692, -0.0770, -1.0205],\n"
            "        [-0.2196, -0.3792,  0.7671],\n"
            "        [-0.5880,  0.3486,  0.6603],\n"
            "        [-1.1925,  0.6984, -1.4097]])");
}

TEST(Random, ExplicitGeneratorLeavesTheDefaultOneAlone) {
  manual_seed(1);
  const auto a = rand({4}).to_vector<float>();
  manual_seed(1);
  Generator g(99);
  Tensor other = rand({10}, {}, &g);
  EXPECT_EQ(rand({4}).to_vector<float>(), a);
  Generator h(99);
  EXPECT_EQ(rand({10}, {}, &h).to_vector<float>(), other.to_vector<float>());
}

TEST(Random, BadArgumentsAreClearErrors) {
  EXPECT_THROW(randint(5, 5, {2}), std::invalid_argument);
  Tensor t = empty({2});
  EXPECT_THROW(uniform_(t, 1.0, 0.0), std::invalid_argument);
  EXPECT_THROW(normal_(t, 0.0, -1.0), std::invalid_argument);
  EXPECT_THROW(bernoulli_(t, 1.5), std::invalid_argument);
  EXPECT_THROW(randperm(-1), std::invalid_argument);
  Tensor p = ones({2}).requires_grad_();
  EXPECT_THROW(normal_(p), std::runtime_error);  // a leaf that requires grad: use nn::init (no-grad)
}
