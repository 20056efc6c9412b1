// Seed 000 ("Life is short, eat dessert first"), replayed cell by cell in C++.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <vector>

#include "cell.h"

using namespace ag;
using seeds::cell;
using seeds::print;

int main(int argc, char** argv) {
  if (seeds::reject_arguments(argc, argv)) return 2;
  cell("42");
  const std::string sentence = "Life is short, eat dessert first";
  std::string no_comma = sentence;
  no_comma.erase(std::remove(no_comma.begin(), no_comma.end(), ','), no_comma.end());
  std::vector<std::string> words;
  std::istringstream is(no_comma);
  for (std::string w; is >> w;) words.push_back(w);
  std::vector<std::string> sorted = words;
  std::sort(sorted.begin(), sorted.end());
  std::map<std::string, int64_t> dc;
  std::string shown = "{";
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    dc[sorted[i]] = static_cast<int64_t>(i);
    shown += (i ? ", '" : "'") + sorted[i] + "': " + std::to_string(i);
  }
  print(shown + "}");

  cell("43");
  std::vector<int64_t> ids;
  for (const auto& w : words) ids.push_back(dc[w]);
  Tensor sentence_int = from_vector(ids, {static_cast<int64_t>(ids.size())});
  print(sentence_int);

  cell("44");
  const int64_t vocab_size = 50'000;
  manual_seed(123);
  nn::Embedding embed(vocab_size, 3);
  Tensor embedded_sentence = embed.forward(sentence_int).detach();
  print(embedded_sentence);
  print(embedded_sentence.shape());

  cell("45");
  manual_seed(123);
  const int64_t d = embedded_sentence.size(1);
  print(d);
  const int64_t d_q = 3, d_k = 3, d_v = 3;
  Tensor W_query = nn::Parameter(rand({d, d_q}));
  Tensor W_key = nn::Parameter(rand({d, d_k}));
  Tensor W_value = nn::Parameter(rand({d, d_v}));
  print(W_query.shape());
  print(W_key.shape());
  print(W_value.shape());

  cell("46");
  print(W_query);

  cell("47");
  Tensor x_2 = embedded_sentence[1];
  Tensor query_2 = matmul(x_2, W_query);
  Tensor key_2 = matmul(x_2, W_key);
  Tensor value_2 = matmul(x_2, W_value);
  print(x_2);
  print(query_2.shape());
  print(key_2.shape());
  print(value_2.shape());

  cell("48");
  print(query_2);

  cell("49");
  Tensor keys = matmul(embedded_sentence, W_key);
  Tensor values = matmul(embedded_sentence, W_value);
  print("keys.shape:", keys.shape());
  print("values.shape:", values.shape());

  cell("50");
  print(keys);
  cell("51");
  print(values);

  cell("52");
  Tensor omega_2 = matmul(query_2, keys.T());
  print(omega_2);

  cell("53");
  Tensor attention_weights_2 = softmax(omega_2 / std::pow(static_cast<double>(d_k), 0.5), 0);
  print(attention_weights_2);

  cell("54");
  Tensor context_vector_2 = matmul(attention_weights_2, values);
  print(context_vector_2.shape());
  print(context_vector_2);

  cell("55");
  manual_seed(123);
  nn::SelfAttention sa(3, 3, 4);
  print(sa.forward(embedded_sentence));
  print("----");
  print(embedded_sentence);

  cell("56");
  manual_seed(123);
  int64_t d_in = 3, d_out_kq = 2, d_out_v = 1;
  nn::SelfAttention sa1(d_in, d_out_kq, d_out_v);
  print(sa1.forward(embedded_sentence));

  cell("58");
  manual_seed(123);
  nn::MultiHeadAttentionWrapper mha(d_in, d_out_kq, d_out_v, /*num_heads=*/4);
  Tensor context_vecs = mha.forward(embedded_sentence);
  print(context_vecs);
  print("context_vecs.shape:", context_vecs.shape());

  cell("61");
  manual_seed(123);
  d_in = 3, d_out_kq = 2, d_out_v = 4;
  nn::CrossAttention crossattn(d_in, d_out_kq, d_out_v);
  Tensor first_input = embedded_sentence;
  Tensor second_input = rand({8, d_in});
  print("First input shape:", first_input.shape());
  print("Second input shape:", second_input.shape());

  cell("62");
  Tensor context_vectors = crossattn.forward(first_input, second_input);
  print(context_vectors);
  print("Output shape:", context_vectors.shape());

  cell("63");
  manual_seed(123);
  W_query = nn::Parameter(rand({d_in, d_out_kq}));
  W_key = nn::Parameter(rand({d_in, d_out_kq}));
  W_value = nn::Parameter(rand({d_in, d_out_v}));
  Tensor x = embedded_sentence;
  keys = matmul(x, W_key);
  Tensor queries = matmul(x, W_query);
  values = matmul(x, W_value);
  Tensor attn_scores = matmul(queries, keys.T());
  print(attn_scores);
  print(attn_scores.shape());

  cell("64");
  Tensor attn_weights = softmax(attn_scores / std::pow(static_cast<double>(d_out_kq), 0.5), 1);
  print(attn_weights);

  cell("65");
  const int64_t block_size = attn_scores.size(0);
  Tensor mask = triu(ones({block_size, block_size}), 1);
  Tensor masked = masked_fill(attn_scores, mask.bool_(), -INFINITY);
  print(masked);

  cell("66");
  attn_weights = softmax(masked / std::pow(static_cast<double>(d_out_kq), 0.5), 1);
  print(attn_weights);
  return 0;
}
