#include "model.h"

namespace next_word {

using namespace ag;

TinyCausalLM::TinyCausalLM(int64_t vocab, int64_t context, int64_t dim, int64_t heads, double dropout)
    : Module("TinyCausalLM") {
  tok = register_module("tok", std::make_shared<nn::Embedding>(vocab, dim));
  pos = register_module("pos", std::make_shared<nn::Embedding>(context, dim));
  // The reference's MultiHeadAttention builds W_query, W_key, W_value (so they draw its initial
  // weights in that order). Fused: ag's causal attention ops, which skip the masked half of the
  // scores; AttentionImpl::Composed would record the reference's matmul, masked_fill, softmax,
  // dropout and matmul node for node (slower, the same numbers to rounding).
  attn = register_module("attn", std::make_shared<nn::MultiHeadAttention>(
                                     dim, dim, context, dropout, heads,
                                     nn::MultiHeadAttentionOptions{.projection_order = nn::ProjectionOrder::QueryKeyValue,
                                                                   .attention = nn::AttentionImpl::Fused}));
  head = register_module("head", std::make_shared<nn::Linear>(dim, vocab));
  positions = register_buffer("positions", arange(static_cast<double>(context)));
}

// training's forward: the attention module's, which holds no weights (fused: causal_attention_output)
Tensor TinyCausalLM::forward(const Tensor& idx) {
  const int64_t t = idx.size(1);
  const Tensor x = tok->forward(idx) + pos->forward(positions.slice(0, 0, t));
  return head->forward(x + attn->forward(x));
}

std::pair<Tensor, Tensor> TinyCausalLM::forward_with_weights(const Tensor& idx) {
  const int64_t t = idx.size(1);
  Tensor x = tok->forward(idx) + pos->forward(positions.slice(0, 0, t));
  auto [a, weights] = attn->forward_with_weights(x);
  return {head->forward(x + a), weights};
}

}  // namespace next_word
