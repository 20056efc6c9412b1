// Seed 001 (self-attention built on nn.Linear, with an optional mask), replayed cell by cell.
#include <cmath>

#include "cell.h"

using namespace ag;
using seeds::cell;
using seeds::print;

int main(int argc, char** argv) {
  if (seeds::reject_arguments(argc, argv)) return 2;
  cell("None");
  Tensor encodings_matrix = tensor({{1.16, 0.23}, {0.57, 1.36}, {4.41, -2.16}});
  manual_seed(42);
  nn::LinearSelfAttention selfAttention(/*d_model=*/2, /*row_dim=*/0, /*col_dim=*/1);
  selfAttention.forward(encodings_matrix);
  Tensor mask = tril(ones({3, 3}));
  mask = eq(mask, 0.0);
  print(selfAttention.forward(encodings_matrix, mask));  // the cell's last expression

  cell("5");
  print(selfAttention.W_q->weight.transpose(0, 1));
  cell("6");
  print(selfAttention.W_k->weight.transpose(0, 1));
  cell("7");
  print(selfAttention.W_v->weight.transpose(0, 1));
  cell("8");
  print(selfAttention.W_q->forward(encodings_matrix));
  cell("9");
  print(selfAttention.W_k->forward(encodings_matrix));
  cell("11");
  print(selfAttention.W_v->forward(encodings_matrix));
  cell("12");
  Tensor q = selfAttention.W_q->forward(encodings_matrix);
  print(q);
  cell("13");
  Tensor k = selfAttention.W_k->forward(encodings_matrix);
  print(k);
  cell("14");
  Tensor sims = matmul(q, k.transpose(0, 1));
  print(sims);
  cell("15");
  Tensor scaled_sims = sims / std::pow(2.0, 0.5);  // sims / (torch.tensor(2)**0.5)
  print(scaled_sims);
  cell("16");
  Tensor attention_percents = softmax(scaled_sims, 1);
  print(attention_percents);
  cell("17");
  print(matmul(attention_percents, selfAttention.W_v->forward(encodings_matrix)));
  return 0;
}
