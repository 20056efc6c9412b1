// The next-word model of ../shared/reference/next_word.py, module for module: token and position
// embeddings, one causal nn::MultiHeadAttention (built query, key, value, out_proj, as the
// reference builds it), a residual, and a linear head. Parameter names match the reference
// (tok.weight, attn.W_query.weight, head.bias, ...), so checkpoints load into the PyTorch model by
// name.
#pragma once

#include <memory>
#include <utility>

#include <ag/ag.h>

namespace next_word {

using ag::Tensor;

class TinyCausalLM : public ag::nn::Module {
 public:
  TinyCausalLM(int64_t vocab, int64_t context, int64_t dim, int64_t heads, double dropout);
  // idx (B, T) int64 -> logits (B, T, vocab)
  Tensor forward(const Tensor& idx) override;
  // idx (B, T) int64 -> {logits (B, T, vocab), attention weights (B, heads, T, T)}, as the
  // reference's forward returns (logits, weights)
  std::pair<Tensor, Tensor> forward_with_weights(const Tensor& idx);
  std::shared_ptr<ag::nn::Embedding> tok, pos;
  std::shared_ptr<ag::nn::MultiHeadAttention> attn;
  std::shared_ptr<ag::nn::Linear> head;
  Tensor positions;
};

}  // namespace next_word
