// The ops of tools/golden/make_golden.py, written with this library, keyed by the same names.
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autograd/autograd.h"

namespace optable {

using ag::Tensor;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;


inline const std::map<std::string, Fn>& ops() {
  using namespace ag;
  static const std::map<std::string, Fn> table = {
      {"add_bcast", [](auto& x) { return x[0] + x[1]; }},
      {"sub_bcast", [](auto& x) { return x[0] - x[1]; }},
      {"mul_bcast", [](auto& x) { return x[0] * x[1]; }},
      {"div_bcast", [](auto& x) { return x[0] / x[1]; }},
      {"scalar_ops", [](auto& x) { return (2.0 - x[0]) * 3.0 / 4.0 + 1.5 - 2.0 / (x[0] + 3.0); }},
      {"pow_scalar", [](auto& x) { return pow(x[0], 2.5); }},
      {"pow_tensor", [](auto& x) { return pow(x[0], x[1]); }},
      {"neg", [](auto& x) { return -x[0]; }},
      {"exp", [](auto& x) { return exp(x[0]); }},
      {"log", [](auto& x) { return log(x[0]); }},
      {"sqrt", [](auto& x) { return sqrt(x[0]); }},
      {"tanh", [](auto& x) { return tanh(x[0]); }},
      {"sigmoid", [](auto& x) { return sigmoid(x[0]); }},
      {"relu", [](auto& x) { return relu(x[0]); }},
      {"gelu", [](auto& x) { return gelu(x[0]); }},
      {"gelu_tanh", [](auto& x) { return gelu(x[0], "tanh"); }},
      {"sum_all", [](auto& x) { return sum(x[0]); }},
      {"sum_dim", [](auto& x) { return sum(x[0], {1}); }},
      {"sum_dims_keepdim", [](auto& x) { return sum(x[0], {0, 2}, true); }},
      {"mean_all", [](auto& x) { return mean(x[0]); }},
      {"mean_dim", [](auto& x) { return mean(x[0], {-1}); }},
      {"max_all", [](auto& x) { return max(x[0]); }},
      {"max_dim", [](auto& x) { return max(x[0], 1).first; }},
      {"max_dim_keepdim", [](auto& x) { return max(x[0], 0, true).first; }},
      {"matmul_2d", [](auto& x) { return matmul(x[0], x[1]); }},
      {"matmul_1d_2d", [](auto& x) { return matmul(x[0], x[1]); }},
      {"matmul_2d_1d", [](auto& x) { return matmul(x[0], x[1]); }},
      {"matmul_1d_1d", [](auto& x) { return matmul(x[0], x[1]); }},
      {"matmul_batched", [](auto& x) { return matmul(x[0], x[1]); }},
      {"matmul_bcast", [](auto& x) { return matmul(x[0], x[1]); }},
      {"matmul_transposed", [](auto& x) { return matmul(x[0].t(), x[1].transpose(0, 1)); }},
      {"softmax_last", [](auto& x) { return softmax(x[0], -1); }},
      {"softmax_dim0", [](auto& x) { return softmax(x[0], 0); }},
      {"log_softmax_last", [](auto& x) { return log_softmax(x[0], -1); }},
      {"log_softmax_dim1", [](auto& x) { return log_softmax(x[0], 1); }},
      {"masked_fill", [](auto& x) { return masked_fill(x[0], tensor({{true, false, true}, {false, false, true}}), -1e9); }},
      {"masked_fill_bcast", [](auto& x) { return masked_fill(x[0], tensor({true, false, true}), 0.5); }},
      {"masked_softmax_causal",
       [](auto& x) { return softmax(masked_fill(x[0], triu(ones({4, 4}), 1).bool_(), -INFINITY), -1); }},
      {"cat_dim1", [](auto& x) { return cat({x[0], x[1]}, 1); }},
      {"stack_dim0", [](auto& x) { return stack({x[0], x[1]}, 0); }},
      {"index_select_repeat", [](auto& x) { return index_select(x[0], 0, tensor({2, 0, 2, 1, 2})); }},
      {"index_select_dim1", [](auto& x) { return index_select(x[0], 1, tensor({2, 0, 2, 1, 2})); }},
      {"embedding_repeat", [](auto& x) { return embedding(x[0], tensor({{0, 2}, {2, 2}}, kInt64)); }},
      {"cross_entropy", [](auto& x) { return cross_entropy(x[0], tensor({1, 0, 3, 1})); }},
      {"cross_entropy_ignore", [](auto& x) { return cross_entropy(x[0], tensor({1, 0, 3, 1}), 1); }},
      {"cross_entropy_shifted", [](auto& x) { return cross_entropy(x[0] + 1e8, tensor({1, 0, 3, 1})); }},
      {"layer_norm_affine", [](auto& x) { return layer_norm(x[0], {4}, x[1], x[2]); }},
      {"layer_norm_plain", [](auto& x) { return layer_norm(x[0], {3, 4}); }},
      {"mse_loss", [](auto& x) { return mse_loss(x[0], x[1]); }},
      {"view_transpose", [](auto& x) { return x[0].view({3, 4}).transpose(0, 1).contiguous().view({-1}) * 2.0; }},
      {"permute_reshape", [](auto& x) { return x[0].permute({2, 0, 1}).reshape({4, 6}); }},
      {"slice_select", [](auto& x) { return x[0].slice(0, 1, std::nullopt).slice(1, std::nullopt, std::nullopt, 2)[0] * 3.0; }},
      {"expand_unsqueeze", [](auto& x) { return x[0].unsqueeze(1).expand({3, 4, 2}) * 1.0; }},
      {"triu_tril", [](auto& x) { return triu(x[0], 1) + tril(x[0], -1) * 2.0; }},
      {"to_float32_and_back", [](auto& x) { return x[0].to(kFloat32).to(kFloat64) * 1.0; }},
      {"reused_node", [](auto& x) { return sum(x[0] * x[0], {0}) + sum(exp(x[0]), {0}); }},
      {"max_dim0_3d", [](auto& x) { return max(x[0], 0).first; }},
  };
  return table;
}

// Cases finite differences cannot check: adding 1e8 rounds every step of 1e-6 to a multiple of
// 1.5e-8, and a float32 round trip quantizes the step. Their gradients are still compared with
// PyTorch's in test_ops_golden.cpp.
inline bool finite_differences_unusable(const std::string& name) {
  return name == "cross_entropy_shifted" || name == "to_float32_and_back";
}

struct Case {
  std::string name;
  std::vector<golden::Data> inputs, grads;
  golden::Data output, weight;
};

inline std::vector<Case> load_cases() {
  auto f = golden::open("op_cases.txt");
  std::vector<Case> cases;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream head(line);
    std::string kw;
    Case c;
    int n = 0;
    head >> kw >> c.name >> n;
    for (int i = 0; i < n; ++i) c.inputs.push_back(golden::parse(golden::expect_keyword(f, "input")));
    c.output = golden::parse(golden::expect_keyword(f, "output"));
    c.weight = golden::parse(golden::expect_keyword(f, "weight"));
    for (int i = 0; i < n; ++i) c.grads.push_back(golden::parse(golden::expect_keyword(f, "grad")));
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace optable
