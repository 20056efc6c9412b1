// Printing matches PyTorch's repr character for character (golden data from PyTorch 1.13).
#include <gtest/gtest.h>

#include "autograd/autograd.h"
#include "golden_io.h"

using namespace ag;

namespace {

DType parse_dtype(const std::string& s) {
  if (s == "float32") return kFloat32;
  if (s == "float64") return kFloat64;
  if (s == "int64") return kInt64;
  if (s == "bool") return kBool;
  throw std::runtime_error("unknown dtype " + s);
}

}  // namespace

TEST(Print, MatchesPyTorchReprOnEveryGoldenCase) {
  auto f = golden::open("print_cases.txt");
  int cases = 0;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream head(line);
    std::string kw, name, dtype, grad_fn;
    int requires_grad = 0;
    head >> kw >> name >> dtype >> requires_grad >> grad_fn;
    ASSERT_EQ(kw, "case");
    std::getline(f, line);
    golden::Data d = golden::parse(line);
    int n = std::stoi(golden::expect_keyword(f, "expect"));
    std::string expected;
    for (int i = 0; i < n; ++i) {
      std::getline(f, line);
      expected += (i ? "\n" : "") + line;
    }
    Tensor t = d.make(parse_dtype(dtype));
    if (requires_grad) t.requires_grad_();
    if (grad_fn != "-") {  // give the tensor a history node with that name
      Tensor leaf = zeros(d.shape, t.dtype()).requires_grad_();
      Tensor out = t.detach();
      record(out, grad_fn.c_str(), {leaf}, [](const Tensor& g) -> Grads { return {g}; });
      t = out;
    }
    SCOPED_TRACE("case " + name);
    EXPECT_EQ(repr(t), expected);
    ++cases;
  }
  EXPECT_GE(cases, 30);
}

TEST(Print, ParameterAndShapeLikePyTorch) {
  Tensor w = tensor({{0.2961, 0.5166}, {0.6886, 0.0740}}).requires_grad_();
  w.impl()->is_parameter = true;
  EXPECT_EQ(repr(w), "Parameter containing:\ntensor([[0.2961, 0.5166],\n        [0.6886, 0.0740]], requires_grad=True)");
  std::ostringstream os;
  os << zeros({6, 3}).shape();
  EXPECT_EQ(os.str(), "torch.Size([6, 3])");
  std::ostringstream os0;
  os0 << zeros({}).shape();
  EXPECT_EQ(os0.str(), "torch.Size([])");
}

TEST(Print, RealGradFnNamesFromOps) {
  Tensor x = tensor({{0.3374, -0.1778, -0.3035}, {0.1794, 1.8951, 0.4954}});
  Tensor w = tensor({{0.2961, 0.5166, 0.2517}, {0.6886, 0.0740, 0.8665}, {0.1366, 0.1025, 0.1841}}).requires_grad_();
  EXPECT_EQ(repr(matmul(x, w)).substr(repr(matmul(x, w)).find("grad_fn")), "grad_fn=<MmBackward0>)");
  EXPECT_EQ(matmul(x[1], w).grad_fn()->name(), "SqueezeBackward4");
  EXPECT_EQ(softmax(matmul(x, w), 1).grad_fn()->name(), "SoftmaxBackward0");
}
