// A small character-level causal transformer: token and position embeddings, N pre-norm blocks
// (causal multi-head attention and a GELU MLP, each with a residual), a final LayerNorm and a
// linear head.
#pragma once

#include <memory>

#include <ag/ag.h>

namespace train_text {

using ag::Tensor;

// x + attn(ln_1(x)), then x + mlp(ln_2(x)); x (B, T, dim)
class Block : public ag::nn::Module {
 public:
  Block(int64_t dim, int64_t heads, int64_t context);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<ag::nn::LayerNorm> ln_1, ln_2;
  std::shared_ptr<ag::nn::MultiHeadAttention> attn;
  std::shared_ptr<ag::nn::Sequential> mlp;
};

class CharTransformer : public ag::nn::Module {
 public:
  CharTransformer(int64_t vocab, int64_t context, int64_t dim, int64_t heads, int64_t layers);
  // idx (B, T) int64 -> logits (B, T, vocab)
  Tensor forward(const Tensor& idx) override;
  int64_t context;
  // Activation checkpointing (ag::checkpoint, autograd/saved.h): each block keeps only its input
  // in the forward and runs again when backward needs what it saved (train_text --checkpoint).
  bool checkpoint_blocks = false;
  std::shared_ptr<ag::nn::Embedding> tok, pos;
  std::shared_ptr<ag::nn::ModuleList<Block>> blocks;
  std::shared_ptr<ag::nn::LayerNorm> ln_f;
  std::shared_ptr<ag::nn::Linear> head;
  Tensor positions;
};

}  // namespace train_text
