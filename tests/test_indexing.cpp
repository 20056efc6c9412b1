// libtorch's indexing API (issue 26) against PyTorch 1.13: each Python expression of
// tools/golden/make_indexing_golden.py (tests/golden/indexing.json) spelled with x.index({...}) /
// x.index_put_({...}) / assignment to the temporary, checked for its shape, values, whether it is
// a view, the gradient of sum(result * w), and for PyTorch's error where PyTorch raises one.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "golden_json.h"

using namespace ag;
using namespace ag::indexing;

namespace {

const nlohmann::json& golden(const std::string& key) { return testutil::golden_json("indexing.json").at(key); }

Tensor T(std::initializer_list<int64_t> v) { return from_vector(std::vector<int64_t>(v), {static_cast<int64_t>(v.size())}); }
Tensor T2(std::initializer_list<std::initializer_list<int64_t>> rows) {
  std::vector<int64_t> v;
  for (const auto& r : rows) v.insert(v.end(), r.begin(), r.end());
  return from_vector(v, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows.begin()->size())});
}
Tensor B(std::initializer_list<bool> v) { return tensor(std::vector<bool>(v)); }

Tensor arange24() { return arange(24.0, kFloat64).reshape({2, 3, 4}); }
Tensor weights(const Size& s) { return (arange(static_cast<double>(s.numel()), kFloat64) * 0.25 + 1.0).reshape(s.vec()); }

std::vector<double> numbers(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

using Read = std::function<Tensor(const Tensor&)>;
const std::vector<std::pair<std::string, Read>>& reads() {
  static const std::vector<std::pair<std::string, Read>> r = {
      {"x[1]", [](const Tensor& x) { return x.index({1}); }},
      {"x[-1]", [](const Tensor& x) { return x.index({-1}); }},
      {"x[1, 2]", [](const Tensor& x) { return x.index({1, 2}); }},
      {"x[1, 2, 3]", [](const Tensor& x) { return x[{1, 2, 3}]; }},
      {"x[:, 1]", [](const Tensor& x) { return x.index({Slice(), 1}); }},
      {"x[..., 2]", [](const Tensor& x) { return x.index({Ellipsis, 2}); }},
      {"x[1:]", [](const Tensor& x) { return x.index({Slice(1, None)}); }},
      {"x[:, ::2]", [](const Tensor& x) { return x.index({Slice(), Slice(None, None, 2)}); }},
      {"x[:, 1:3, 1::2]", [](const Tensor& x) { return x.index({Slice(), Slice(1, 3), Slice(1, None, 2)}); }},
      {"x[None]", [](const Tensor& x) { return x.index({None}); }},
      {"x[:, None]", [](const Tensor& x) { return x.index({Slice(), None}); }},
      {"x[..., None]", [](const Tensor& x) { return x.index({"...", None}); }},
      {"x[1, ..., None]", [](const Tensor& x) { return x.index({1, Ellipsis, None}); }},
      {"x[-2:, -1]", [](const Tensor& x) { return x.index({Slice(-2, None), -1}); }},
      {"x[:, -5:10]", [](const Tensor& x) { return x.index({Slice(), Slice(-5, 10)}); }},
      {"x[0, 3:1]", [](const Tensor& x) { return x.index({0, Slice(3, 1)}); }},
      {"x[...]", [](const Tensor& x) { return x.index({Ellipsis}); }},
      {"x[None, ..., None, 1]", [](const Tensor& x) { return x.index({None, Ellipsis, None, 1}); }},
      {"x[1, None, :, 0]", [](const Tensor& x) { return x.index({1, None, Slice(), 0}); }},
      {"x[:, :, 5:]", [](const Tensor& x) { return x.index({Slice(), Slice(), Slice(5, None)}); }},
      {"x[T([1, 0, 1])]", [](const Tensor& x) { return x.index({T({1, 0, 1})}); }},
      {"x[T([[0, 1], [1, 1]])]", [](const Tensor& x) { return x[T2({{0, 1}, {1, 1}})]; }},
      {"x[:, T([2, 0])]", [](const Tensor& x) { return x.index({Slice(), T({2, 0})}); }},
      {"x[:, :, T([3, 3, 0])]", [](const Tensor& x) { return x.index({Slice(), Slice(), T({3, 3, 0})}); }},
      {"x[T([0, 1]), T([2, 0])]", [](const Tensor& x) { return x.index({T({0, 1}), T({2, 0})}); }},
      {"x[:, T([0, 2]), T([1, 3])]", [](const Tensor& x) { return x.index({Slice(), T({0, 2}), T({1, 3})}); }},
      {"x[T([0, 1]), :, T([3, 1])]", [](const Tensor& x) { return x.index({T({0, 1}), Slice(), T({3, 1})}); }},
      {"x[T([1, 0]), T([2, 1]), T([0, 3])]", [](const Tensor& x) { return x.index({T({1, 0}), T({2, 1}), T({0, 3})}); }},
      {"x[T([[1], [0]]), T([2, 1, 0])]", [](const Tensor& x) { return x.index({T2({{1}, {0}}), T({2, 1, 0})}); }},
      {"x[T([[0], [1]]), :, T([[0, 1, 2]])]", [](const Tensor& x) { return x.index({T2({{0}, {1}}), Slice(), T2({{0, 1, 2}})}); }},
      {"x[1, T([0, 2])]", [](const Tensor& x) { return x.index({1, T({0, 2})}); }},
      {"x[T([0, 1]), 1]", [](const Tensor& x) { return x.index({T({0, 1}), 1}); }},
      {"x[T([0, 1]), 1, T([2, 3])]", [](const Tensor& x) { return x.index({T({0, 1}), 1, T({2, 3})}); }},
      {"x[1:, T([0, 2])]", [](const Tensor& x) { return x.index({Slice(1, None), T({0, 2})}); }},
      {"x[None, T([1])]", [](const Tensor& x) { return x.index({None, T({1})}); }},
      {"x[..., T([0, -1])]", [](const Tensor& x) { return x.index({Ellipsis, T({0, -1})}); }},
      {"x[T(1)]", [](const Tensor& x) { return x.index({tensor(1)}); }},
      {"x[:, T([], dtype=torch.long)]", [](const Tensor& x) { return x.index({Slice(), from_vector(std::vector<int64_t>{}, {0})}); }},
      {"x[T([-1, -2])]", [](const Tensor& x) { return x[T({-1, -2})]; }},
      {"x[0][T([1, 1, 2])]", [](const Tensor& x) { return x[0][T({1, 1, 2})]; }},
      {"x[T([[0, 1], [1, 0]]), T([[2], [1]])]", [](const Tensor& x) { return x.index({T2({{0, 1}, {1, 0}}), T2({{2}, {1}})}); }},
      {"x[:, T([1, 2]), None]", [](const Tensor& x) { return x.index({Slice(), T({1, 2}), None}); }},
      {"x[None, :, T([0, 2]), T([1, 1])]", [](const Tensor& x) { return x.index({None, Slice(), T({0, 2}), T({1, 1})}); }},
      {"x[x > 10]", [](const Tensor& x) { return x[x > 10.0]; }},
      {"x[T([True, False])]", [](const Tensor& x) { return x.index({B({true, false})}); }},
      {"x[:, T([True, False, True])]", [](const Tensor& x) { return x.index({Slice(), B({true, false, true})}); }},
      {"x[T([[True, False, True], [False, False, True]])]",
       [](const Tensor& x) { return x.index({tensor({{true, false, true}, {false, false, true}})}); }},
      {"x[..., T([False, True, True, False])]", [](const Tensor& x) { return x.index({Ellipsis, B({false, true, true, false})}); }},
      {"x[T([True, False]), T([2, 0])]", [](const Tensor& x) { return x.index({B({true, false}), T({2, 0})}); }},
      {"x[True]", [](const Tensor& x) { return x.index({true}); }},
      {"x[False]", [](const Tensor& x) { return x.index({false}); }},
      {"x[T(True)]", [](const Tensor& x) { return x.index({tensor(true)}); }},
      {"x[1, True]", [](const Tensor& x) { return x.index({1, true}); }},
      {"x[:, T([False, False, False])]", [](const Tensor& x) { return x.index({Slice(), B({false, false, false})}); }},
      {"x[x > 100]", [](const Tensor& x) { return x.index({x > 100.0}); }},
      {"x[2]", [](const Tensor& x) { return x.index({2}); }},
      {"x[:, 3]", [](const Tensor& x) { return x.index({Slice(), 3}); }},
      {"x[..., -5]", [](const Tensor& x) { return x.index({Ellipsis, -5}); }},
      {"x[T([2])]", [](const Tensor& x) { return x.index({T({2})}); }},
      {"x[:, T([-4])]", [](const Tensor& x) { return x.index({Slice(), T({-4})}); }},
      {"x[T([True, False, True])]", [](const Tensor& x) { return x.index({B({true, false, true})}); }},
      {"x[0, 0, 0, 0]", [](const Tensor& x) { return x.index({0, 0, 0, 0}); }},
      {"x[T([0.0])]", [](const Tensor& x) { return x.index({tensor({0.0})}); }},
      {"x[::-1]", [](const Tensor& x) { return x.index({Slice(None, None, -1)}); }},
      {"x[T([0, 1]), T([0, 1, 2])]", [](const Tensor& x) { return x.index({T({0, 1}), T({0, 1, 2})}); }},
  };
  return r;
}

using Write = std::function<void(Tensor& y, const Tensor& v)>;
const std::vector<std::pair<std::string, Write>>& writes() {
  static const std::vector<std::pair<std::string, Write>> w = {
      {"y[1] = v", [](Tensor& y, const Tensor& v) { y.index({1}) = v; }},
      {"y[:, 1:3] = v", [](Tensor& y, const Tensor& v) { y.index({Slice(), Slice(1, 3)}) = v; }},
      {"y[T([1, 0])] = v", [](Tensor& y, const Tensor& v) { y.index_put_({T({1, 0})}, v); }},
      {"y[:, T([0, 2]), T([1, 3])] = v", [](Tensor& y, const Tensor& v) { y.index({Slice(), T({0, 2}), T({1, 3})}) = v; }},
      {"y[T([0, 1]), :, T([3, 1])] = v", [](Tensor& y, const Tensor& v) { y.index_put_({T({0, 1}), Slice(), T({3, 1})}, v); }},
      {"y[y > 10] = v", [](Tensor& y, const Tensor& v) { y[y > 10.0] = v; }},
      {"y[T([0, 0])] = v", [](Tensor& y, const Tensor& v) { y.index_put_({T({0, 0})}, v); }},
      {"y[..., T([True, False, True, False])] = v",
       [](Tensor& y, const Tensor& v) { y.index_put_({Ellipsis, B({true, false, true, false})}, v); }},
      {"y[1, T([2, 0])] = v", [](Tensor& y, const Tensor& v) { y.index({1, T({2, 0})}) = v; }},
      {"y[T([1]), 2] = v", [](Tensor& y, const Tensor& v) { y.index_put_({T({1}), 2}, v); }},
      {"y.index_put_((T([0, 0, 1]),), v, accumulate=True)", [](Tensor& y, const Tensor& v) { y.index_put_({T({0, 0, 1})}, v, true); }},
      {"y.index_put_((T([1, 1]), T([2, 2])), v, accumulate=True)",
       [](Tensor& y, const Tensor& v) { y.index_put_({T({1, 1}), T({2, 2})}, v, true); }},
      {"y.index_put_((T([1]),), v, accumulate=True)", [](Tensor& y, const Tensor& v) { y.index_put_({T({1})}, v, true); }},
      {"y[T([0])] = v", [](Tensor& y, const Tensor& v) { y.index_put_({T({0})}, v); }},
      {"y[T([5])] = v", [](Tensor& y, const Tensor& v) { y.index_put_({T({5})}, v); }},
  };
  return w;
}

// PyTorch's error as ag raises it: IndexError is std::out_of_range, ValueError std::invalid_argument;
// the message carries PyTorch's words up to the first number that names a dim.
void expect_error(const std::string& key, const nlohmann::json& want, const std::function<void()>& f) {
  std::string got;
  bool out_of_range = false;
  try {
    f();
    ADD_FAILURE() << key << ": no error; PyTorch raises " << want.at("message");
    return;
  } catch (const std::out_of_range& e) {
    got = e.what();
    out_of_range = true;
  } catch (const std::exception& e) {
    got = e.what();
  }
  const std::string type = want.at("error");
  if (type == "IndexError") EXPECT_TRUE(out_of_range) << key << ": " << got;
  std::string words = want.at("message");
  const std::size_t dimension = words.find(" for dimension ");
  if (dimension != std::string::npos) {  // PyTorch numbers the dim of advanced indices its own way
    EXPECT_NE(got.find(words.substr(0, dimension)), std::string::npos) << key << ": " << got;
    EXPECT_NE(got.find(words.substr(words.find(" with size "))), std::string::npos) << key << ": " << got;
  } else {
    EXPECT_NE(got.find(words), std::string::npos) << key << ": got " << got << "\nPyTorch: " << words;
  }
}

}  // namespace

TEST(Indexing, EveryReadMatchesPyTorch) {
  int checked = 0;
  for (const auto& [key, f] : reads()) {
    SCOPED_TRACE(key);
    const nlohmann::json& want = golden(key);
    Tensor x = arange24().requires_grad_();
    if (want.contains("error")) {
      expect_error(key, want, [&] { f(x); });
      ++checked;
      continue;
    }
    const Tensor r = f(x);
    EXPECT_EQ(r.shape().vec(), want.at("shape").get<std::vector<int64_t>>());
    EXPECT_EQ(r.to_vector<double>(), numbers(want.at("values")));
    EXPECT_EQ(r.shares_storage(x), want.at("view").get<bool>()) << "view";
    sum(r * weights(r.shape())).backward();
    EXPECT_EQ(x.grad().to_vector<double>(), numbers(want.at("grad")));
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(reads().size()));
  EXPECT_GE(checked, 60);
}

TEST(Indexing, EveryWriteMatchesPyTorch) {
  for (const auto& [key, f] : writes()) {
    SCOPED_TRACE(key);
    const nlohmann::json& want = golden(key);
    Tensor x = arange24().requires_grad_();
    Tensor y = x * 1.0;
    std::vector<int64_t> vshape = want.contains("v_shape") ? want.at("v_shape").get<std::vector<int64_t>>() : std::vector<int64_t>{};
    if (want.contains("error")) {  // the v shapes of the error cases: [3] and [4]
      vshape = key == "y[T([0])] = v" ? std::vector<int64_t>{3} : std::vector<int64_t>{4};
      const Tensor v = arange(3.0, kFloat64);
      expect_error(key, want, [&] { f(y, (arange(static_cast<double>(vshape[0]), kFloat64) + 100.0)); });
      (void)v;
      continue;
    }
    const Size vs(DimVector(vshape.begin(), vshape.end()));
    Tensor v = (arange(static_cast<double>(vs.numel()), kFloat64) + 100.0).reshape(vs.vec()).requires_grad_();
    f(y, v);
    EXPECT_EQ(y.to_vector<double>(), numbers(want.at("values")));
    sum(y * weights(y.shape())).backward();
    EXPECT_EQ(x.grad().to_vector<double>(), numbers(want.at("grad")));
    EXPECT_EQ(v.grad().to_vector<double>(), numbers(want.at("grad_v")));
  }
}

TEST(Indexing, GradcheckAndGradgradcheckOfReadsAndWrites) {
  const Tensor x = randn({3, 4}, kFloat64).requires_grad_();
  const Tensor v = randn({2, 4}, kFloat64).requires_grad_();
  auto read = [](const std::vector<Tensor>& in) {
    return in[0].index({T({2, 0, 2}), Slice(1, None)}) * in[0].index({Slice(None, None, 2), T({0, 3, 3})}).sum();
  };
  EXPECT_TRUE(gradcheck(read, {x}));
  EXPECT_TRUE(gradgradcheck(read, {x}));
  for (const bool accumulate : {false, true}) {
    auto write = [accumulate](const std::vector<Tensor>& in) {
      Tensor y = in[0] * in[0];
      // repeated positions only with accumulate: PyTorch's rule gives every repeated value the
      // gradient of its position, although only the last one is written (no true derivative)
      y.index_put_({accumulate ? T({1, 1}) : T({2, 0})}, in[1] * 2.0, accumulate);
      return y * in[0];
    };
    EXPECT_TRUE(gradcheck(write, {x, v})) << accumulate;
    EXPECT_TRUE(gradgradcheck(write, {x, v})) << accumulate;
  }
}

TEST(Indexing, AssigningToTheResultWritesIntoTheTensorAsPython) {
  Tensor x = arange(6.0, kFloat64).reshape({2, 3});
  x[x > 3.0] = 0.0;  // Python's x[x > 3] = 0
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 0, 0}));
  x.index({Slice(), T({0, 2})}) += 10.0;  // x[:, [0, 2]] += 10
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{10, 1, 12, 13, 0, 10}));
  x[T({1})] = tensor({1, 2, 3});  // an int64 value is taken as x's dtype, as Python's setitem
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{10, 1, 12, 1, 2, 3}));
  x.index({0, T({1, 1})}) *= 3.0;  // x[0, [1, 1]] *= 3: read, multiply, write once per position
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{10, 3, 12, 1, 2, 3}));
  Tensor copy = x[T({0})];  // a named result is a copy: assigning to it rebinds it, x is unchanged
  copy = zeros({1, 3}, kFloat64);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{10, 3, 12, 1, 2, 3}));
  Tensor mask = zeros({4}, kBool);  // index_put_ of bools: mask[idx] = True
  mask.index_put_({T({1, 3, 1})}, 1.0);
  EXPECT_EQ(mask.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0, 1}));
  // the accumulated sum adds in index order (PyTorch's order; float sums depend on it)
  Tensor s = zeros({1}, kFloat32);
  s.index_put_({T({0, 0, 0})}, tensor({1e8f, 1.0f, -1e8f}), true);
  EXPECT_EQ(s.item(), 0.0);
}

TEST(Indexing, IndexPutRefusesWhatPyTorchRefuses) {
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Tensor leaf = zeros({3}, kFloat64).requires_grad_();
  EXPECT_NE(message([&] { leaf.index_put_({T({0})}, 1.0); }).find("a leaf Variable that requires grad is being used in an in-place operation"),
            std::string::npos);
  EXPECT_NE(message([&] { leaf[T({0})] = 1.0; }).find("a leaf Variable that requires grad"), std::string::npos);
  EXPECT_NE(message([&] { leaf.index({0}) = 1.0; }).find("leaf Variable that requires grad"), std::string::npos);
  Tensor y = zeros({3, 4});
  EXPECT_NE(message([&] { y.index_put_({T({0})}, ones({4}, kFloat64)); })
                .find("Index put requires the source and destination dtypes match, got Float for the destination and Double for the source."),
            std::string::npos);
  EXPECT_NE(message([&] { y.index({"..", 0}); }).find("\"...\""), std::string::npos);
  EXPECT_NE(message([&] { y.index({Slice(None, None, 0)}); }).find("slice step cannot be zero"), std::string::npos);
  // nothing was written by the refused calls
  EXPECT_EQ(y.sum().item(), 0.0);
  EXPECT_FALSE(leaf.grad().defined());
}

// api_corpus/IndexPutIntoAnEmptyTensorWithHugeDims (fuzzer): x of shape (2^31, 2^31, 0, 3) indexed
// along its first dim: the flat positions over the indexed dims multiplied past int64 and a
// scratch of 2^31 entries was allocated, for a tensor with nothing in it. PyTorch reads and writes
// nothing there.
TEST(Indexing, EmptyTensorsWithHugeDims) {
  const int64_t h = int64_t{1} << 31;
  Tensor x = zeros({h, h, 0, 3});
  x.index_put_({T({0, 1})}, ones({3}));
  x.index_put_({T({0, 1}), T({1, 0})}, ones({3}), true);
  EXPECT_EQ(x.index({T({0, 1}), T({1, 0})}).shape(), (Size{2, 0, 3}));
  EXPECT_EQ(x.index({Slice(), T({1, 1, 0})}).shape(), (Size{h, 3, 0, 3}));
  EXPECT_THROW(x.index({T({h})}), std::out_of_range);
  Tensor g = zeros({0, 3}, kFloat64).requires_grad_();
  Tensor r = g.index({T({}), T({})});
  EXPECT_EQ(r.shape(), (Size{0}));
  r.sum().backward();
  EXPECT_EQ(g.grad().shape(), g.shape());
}

// x[true] would select row 1 (a bool converts to an integer); Python's x[True] adds a dim.
template <class T, class I>
concept Subscriptable = requires(const T& t, I i) { t[i]; };
static_assert(Subscriptable<Tensor, int>);
static_assert(Subscriptable<Tensor, int64_t>);
static_assert(Subscriptable<Tensor, std::size_t>);
static_assert(Subscriptable<Tensor, Tensor>);
static_assert(!Subscriptable<Tensor, bool>);
