// The next-word model of ../shared/reference/next_word.py, module for module: token and position
// embeddings, one fused causal multi-head attention (built query, key, value, out_proj), a
// residual, and a linear head. Parameter names match the reference (tok.weight,
// attn.W_query.weight, head.bias, ...), so checkpoints load into the PyTorch model by name.
#pragma once

#include <cmath>
#include <memory>
#include <utility>

#include <ag/ag.h>

namespace next_word {

using ag::Tensor;

// The reference's MultiHeadAttention: like nn::MultiHeadAttention, but built in the order
// query, key, value, out_proj and returning the attention weights too.
class MultiHeadAttention : public ag::nn::Module {
 public:
  MultiHeadAttention(int64_t d_in, int64_t d_out, int64_t context_length, double dropout, int64_t num_heads);
  // x (B, T, d_in) -> (out (B, T, d_out), weights (B, heads, T, T))
  std::pair<Tensor, Tensor> forward2(const Tensor& x);
  int64_t d_out, num_heads, head_dim;
  std::shared_ptr<ag::nn::Linear> W_query, W_key, W_value, out_proj;
  std::shared_ptr<ag::nn::Dropout> dropout;
  Tensor mask;
};

class TinyCausalLM : public ag::nn::Module {
 public:
  TinyCausalLM(int64_t vocab, int64_t context, int64_t dim, int64_t heads, double dropout);
  // idx (B, T) int64 -> (logits (B, T, vocab), attention weights (B, heads, T, T))
  std::pair<Tensor, Tensor> forward2(const Tensor& idx);
  std::shared_ptr<ag::nn::Embedding> tok, pos;
  std::shared_ptr<MultiHeadAttention> attn;
  std::shared_ptr<ag::nn::Linear> head;
  Tensor positions;
};

}  // namespace next_word
