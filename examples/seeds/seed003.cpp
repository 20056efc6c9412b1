// Seed 003 (naive attention, SelfAttentionV1/V2, dropout, CausalAttention, MultiHeadAttention),
// replayed cell by cell.
#include <cmath>

#include "cell.h"

using namespace ag;
using seeds::cell;
using seeds::print;

int main(int argc, char** argv) {
  if (seeds::reject_arguments(argc, argv)) return 2;
  Tensor inputs = tensor({{0.43, 0.15, 0.89}, {0.55, 0.87, 0.66}, {0.57, 0.85, 0.64}, {0.22, 0.58, 0.33},
                          {0.77, 0.25, 0.10}, {0.05, 0.80, 0.55}});
  cell("3");
  Tensor attn_scores = matmul(inputs, inputs.T());
  print(attn_scores);
  cell("4");
  Tensor attn_weights = softmax(attn_scores, -1);
  print(attn_weights);
  cell("5");
  Tensor context_vec = matmul(attn_weights, inputs);
  print(context_vec);

  Tensor x_2 = inputs[1];
  const int64_t d_in = x_2.size(0), d_out = x_2.size(0) - 1;
  manual_seed(123);
  Tensor w_q = nn::Parameter(rand({d_in, d_out}), /*requires_grad=*/false);
  Tensor w_k = nn::Parameter(rand({d_in, d_out}), false);
  Tensor w_v = nn::Parameter(rand({d_in, d_out}), false);
  Tensor x_q = matmul(x_2, w_q), x_v = matmul(x_2, w_v), x_k = matmul(x_2, w_k);
  Tensor keys = matmul(inputs, w_k), values = matmul(inputs, w_v);
  cell("9");
  print(x_k);
  print(x_q);
  print(x_v);
  cell("10");
  print(keys);
  print(values);
  Tensor attn_scores_2 = matmul(x_q, keys.T());
  const int64_t d_k = keys.size(-1);
  Tensor attn_weights_2 = softmax(attn_scores_2 / std::pow(static_cast<double>(d_k), 0.5), -1);
  cell("12");
  print(attn_weights_2);
  cell("13");
  print(matmul(attn_weights_2, values));

  cell("15");
  manual_seed(123);
  nn::SelfAttentionV1 sa_v1(d_in, d_out);
  print(sa_v1.forward(inputs));
  cell("17");
  manual_seed(123);
  auto sa_v2 = std::make_shared<nn::SelfAttentionV2>(d_in, d_out);
  print(sa_v2->forward(inputs));

  sa_v2 = std::make_shared<nn::SelfAttentionV2>(d_in, d_out);  // cell 18: a second one
  Tensor wk = sa_v2->W_key->weight.T(), wq = sa_v2->W_query->weight.T();
  keys = matmul(inputs, wk);
  Tensor queries = matmul(inputs, wq);
  attn_scores = matmul(queries, keys.T());
  cell("20");
  print("torch.Size");  // type(attn_scores.shape)
  cell("21");
  Tensor mask = triu(ones({attn_scores.size(0), attn_scores.size(1)}), 1);
  Tensor masked = masked_fill(attn_scores, mask.bool_(), -INFINITY);
  Tensor attn_weight = softmax(masked / std::pow(static_cast<double>(keys.size(-1)), 0.5), 1);
  nn::Dropout dropout(0.3);
  print(dropout.forward(attn_weight));

  cell("28");
  Tensor batch = stack({inputs, inputs});
  const int64_t context_length = batch.size(1);
  nn::CausalAttention ca(d_in, d_out, context_length, 0.0);
  print(ca.forward(batch));

  cell("85");
  manual_seed(123);
  batch = stack({inputs, inputs}, 0);
  nn::MultiHeadAttention mha(batch.size(2), 2, batch.size(1), 0.0, /*num_heads=*/2);
  print(mha.forward(batch));
  return 0;
}
