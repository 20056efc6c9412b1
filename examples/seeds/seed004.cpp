// Seed 004 (a blog post): its code run in order. The post prints no values and sets no seed,
// so this uses manual_seed(0) and is compared with tools/golden/seed004.py's PyTorch output.
#include <cmath>

#include "cell.h"

using namespace ag;
using seeds::cell;
using seeds::print;

// The post's MultiHeadSelfAttention: per-head Parameters _wq_h{h}, _wk_h{h}, _wv_h{h} from randn,
// then _wo; heads concatenated along dim 1 and projected by _wo.
class MultiHeadSelfAttention : public nn::Module {
 public:
  MultiHeadSelfAttention(int64_t D, int64_t kdim, int64_t vdim, int64_t heads)
      : Module("MultiHeadSelfAttention"), D_(D), heads_(heads), kdim_(kdim ? kdim : D / heads), vdim_(vdim ? vdim : D / heads) {
    for (int64_t h = 0; h < heads_; ++h) {
      register_parameter("_wq_h" + std::to_string(h), randn({D_, kdim_}));
      register_parameter("_wk_h" + std::to_string(h), randn({D_, kdim_}));
      register_parameter("_wv_h" + std::to_string(h), randn({D_, vdim_}));
    }
    wo_ = register_parameter("_wo", randn({heads_ * vdim_, D_}));
  }
  Tensor forward(const Tensor& X) override {
    const auto p = named_parameters(false);
    Tensor out;
    for (int64_t h = 0; h < heads_; ++h) {
      const Tensor& wq = p[static_cast<std::size_t>(3 * h)].second;
      const Tensor& wk = p[static_cast<std::size_t>(3 * h + 1)].second;
      const Tensor& wv = p[static_cast<std::size_t>(3 * h + 2)].second;
      Tensor Q = matmul(X, wq), K = matmul(X, wk), V = matmul(X, wv);
      Tensor head = matmul(Q, K.t()) / std::sqrt(static_cast<double>(kdim_));
      head = matmul(softmax(head, -1), V);
      out = h == 0 ? head : cat({out, head}, 1);
    }
    return matmul(out, wo_);
  }

 private:
  int64_t D_, heads_, kdim_, vdim_;
  Tensor wo_;
};

int main(int argc, char** argv) {
  if (seeds::reject_arguments(argc, argv)) return 2;
  manual_seed(0);
  const int64_t D = 4, L = 3;
  cell("self-attention");
  Tensor wq = nn::Parameter(randn({D, D})), wk = nn::Parameter(randn({D, D})), wv = nn::Parameter(randn({D, D}));
  auto forward = [&](const Tensor& X) {
    Tensor Q = matmul(X, wq), K = matmul(X, wk), V = matmul(X, wv);
    Tensor out = matmul(Q, K.t()) / std::sqrt(static_cast<double>(D));
    out = softmax(out, 1);
    return matmul(out, V);
  };
  Tensor X = randn({L, D});
  print(forward(X));

  cell("multi-head");
  MultiHeadSelfAttention attn(D, 0, 0, 2);
  print(attn.forward(X));

  cell("mask");
  Tensor mask = ones({L + 1, L + 1});
  mask = tril(mask * -1.0 * INFINITY, -1);
  mask = mask.t();
  print(mask);
  return 0;
}
