#include "model.h"

namespace train_text {

using namespace ag;

Block::Block(int64_t dim, int64_t heads, int64_t context) : Module("Block") {
  ln_1 = register_module("ln_1", std::make_shared<nn::LayerNorm>(dim));
  attn = register_module("attn", std::make_shared<nn::MultiHeadAttention>(dim, dim, context, 0.0, heads));
  ln_2 = register_module("ln_2", std::make_shared<nn::LayerNorm>(dim));
  mlp = register_module("mlp", std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
                                   std::make_shared<nn::Linear>(dim, 4 * dim), std::make_shared<nn::GELU>(),
                                   std::make_shared<nn::Linear>(4 * dim, dim)}));
}

Tensor Block::forward(const Tensor& x) {
  Tensor h = x + attn->forward(ln_1->forward(x));
  return h + mlp->forward(ln_2->forward(h));
}

CharTransformer::CharTransformer(int64_t vocab, int64_t ctx, int64_t dim, int64_t heads, int64_t layers)
    : Module("CharTransformer"), context(ctx) {
  tok = register_module("tok", std::make_shared<nn::Embedding>(vocab, dim));
  pos = register_module("pos", std::make_shared<nn::Embedding>(ctx, dim));
  blocks = register_module("blocks", std::make_shared<nn::ModuleList<Block>>());
  for (int64_t i = 0; i < layers; ++i) blocks->push_back(std::make_shared<Block>(dim, heads, ctx));
  ln_f = register_module("ln_f", std::make_shared<nn::LayerNorm>(dim));
  head = register_module("head", std::make_shared<nn::Linear>(dim, vocab));
  positions = register_buffer("positions", arange(static_cast<double>(ctx)));
}

Tensor CharTransformer::forward(const Tensor& idx) {
  const int64_t t = idx.size(1);
  Tensor x = tok->forward(idx) + pos->forward(positions.slice(0, 0, t));
  for (const auto& b : *blocks) {
    if (checkpoint_blocks && ag::grad_enabled()) {
      x = ag::checkpoint([b](const std::vector<Tensor>& in) { return std::vector<Tensor>{b->forward(in[0])}; }, {x})[0];
    } else {
      x = b->forward(x);
    }
  }
  return head->forward(ln_f->forward(x));
}

}  // namespace train_text
