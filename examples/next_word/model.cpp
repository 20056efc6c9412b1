#include "model.h"

#include <stdexcept>

namespace next_word {

using namespace ag;

MultiHeadAttention::MultiHeadAttention(int64_t d_in, int64_t d_out_, int64_t context_length, double p, int64_t heads)
    : Module("MultiHeadAttention"), d_out(d_out_), num_heads(heads), head_dim(0) {
  if (heads < 1 || d_out % heads != 0) {
    throw std::invalid_argument("[MultiHeadAttention] d_out must be divisible by num_heads (d_out=" + std::to_string(d_out) +
                                ", num_heads=" + std::to_string(heads) + ")");
  }
  head_dim = d_out / heads;
  W_query = register_module("W_query", std::make_shared<nn::Linear>(d_in, d_out, false));
  W_key = register_module("W_key", std::make_shared<nn::Linear>(d_in, d_out, false));
  W_value = register_module("W_value", std::make_shared<nn::Linear>(d_in, d_out, false));
  out_proj = register_module("out_proj", std::make_shared<nn::Linear>(d_out, d_out));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(p));
  mask = register_buffer("mask", triu(ones({context_length, context_length}), 1));
}

std::pair<Tensor, Tensor> MultiHeadAttention::forward2(const Tensor& x) {
  const int64_t b = x.size(0), t = x.size(1);
  // (B, T, d_out) -> (B, heads, T, head_dim)
  Tensor q = W_query->forward(x).view({b, t, num_heads, head_dim}).transpose(1, 2);
  Tensor k = W_key->forward(x).view({b, t, num_heads, head_dim}).transpose(1, 2);
  Tensor v = W_value->forward(x).view({b, t, num_heads, head_dim}).transpose(1, 2);
  // the reference's q @ k^T (B, heads, T, T), masked_fill_(mask, -inf), softmax(scores /
  // sqrt(head_dim)), dropout and @ v, fused on the causal blocks
  auto [context, weights] =
      nn::causal_attention("MultiHeadAttention", q, k, v, mask, mask.size(0), std::pow(static_cast<double>(head_dim), 0.5), *dropout);
  Tensor ctx = context.transpose(1, 2).contiguous().view({b, t, d_out});
  return {out_proj->forward(ctx), weights};
}

TinyCausalLM::TinyCausalLM(int64_t vocab, int64_t context, int64_t dim, int64_t heads, double dropout)
    : Module("TinyCausalLM") {
  tok = register_module("tok", std::make_shared<nn::Embedding>(vocab, dim));
  pos = register_module("pos", std::make_shared<nn::Embedding>(context, dim));
  attn = register_module("attn", std::make_shared<MultiHeadAttention>(dim, dim, context, dropout, heads));
  head = register_module("head", std::make_shared<nn::Linear>(dim, vocab));
  positions = register_buffer("positions", arange(static_cast<double>(context)));
}

std::pair<Tensor, Tensor> TinyCausalLM::forward2(const Tensor& idx) {
  const int64_t t = idx.size(1);
  Tensor x = tok->forward(idx) + pos->forward(positions.slice(0, 0, t));
  auto [a, weights] = attn->forward2(x);
  return {head->forward(x + a), weights};
}

}  // namespace next_word
