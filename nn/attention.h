// The attention family of the seed tutorials, each written in the tutorial's own terms
// (constructor arguments, parameter names and their construction order, masking, what forward
// returns), so that after the tutorial's manual_seed the module prints the tutorial's numbers.
//
//   seed 000: SelfAttention, MultiHeadAttentionWrapper, CrossAttention (rand() Parameters)
//   seed 001: LinearSelfAttention (the seed's SelfAttention(d_model, row_dim, col_dim))
//   seed 003: SelfAttentionV1, SelfAttentionV2, CausalAttention, MultiHeadAttention
#pragma once

#include "layers.h"

namespace ag::nn {

// The attention core of the seeds' causal modules, with the module's registered mask buffer:
//   weights = dropout(softmax(masked_fill(q @ k^T, mask[:T, :T].bool(), -inf) / divisor, -1))
//   context = weights @ v
// for q, k, v (..., T, E). While the buffer holds triu(ones, 1), as it does unless changed, the
// fused ops compute the same (causal_qk_softmax, causal_matmul: the masked half of the softmax is
// never computed, and from T = 65 on whole GEMM blocks above the diagonal are skipped; while the
// dropout is the identity, both as one causal_attention node); otherwise the composed ops with
// the buffer as it is. In that one node the context's gradient goes straight to q, k and v, not
// through the weights: a hook or retain_grad() on the returned weights sees no gradient from the
// context (PyTorch's graph would pass it through them). To look at it, call
// set_fused_attention(false) before the forward pass. Throws, naming `who`, if T exceeds context_length.
struct CausalAttentionResult {
  Tensor context;  // (..., T, E_v)
  Tensor weights;  // (..., T, T), after dropout
};
// Whether causal_attention takes the fused ops (the default). Off, it records the composed ops,
// so the graph of seed 003's CausalAttention and MultiHeadAttention is PyTorch's node for node
// (next_functions, to_dot): slower, the same numbers to rounding.
void set_fused_attention(bool enabled);
bool fused_attention_enabled();

CausalAttentionResult causal_attention(const std::string& who, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& mask, int64_t context_length, double divisor, Dropout& dropout);

// softmax(q k^T / sqrt(d)) v over the last two dims. `attn_mask` is a bool tensor broadcast to
// the scores where true means "may attend" (PyTorch's convention); `is_causal` masks the upper
// triangle. A query row with nothing to attend to gives zeros (not NaN) and zero gradients.
// dropout_p > 0 applies dropout to the attention weights, as F.scaled_dot_product_attention does.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask = {},
                                    bool is_causal = false, double dropout_p = 0.0, Generator* gen = nullptr);

// seed 000. x (T, d_in) -> (T, d_out_v). W_query, W_key, W_value = Parameter(rand(d_in, d_out)).
class SelfAttention : public Module {
 public:
  SelfAttention(int64_t d_in, int64_t d_out_kq, int64_t d_out_v);
  Tensor forward(const Tensor& x) override;
  int64_t d_out_kq;
  Tensor W_query, W_key, W_value;
};

// seed 000. num_heads SelfAttention heads in a ModuleList "heads"; outputs concatenated.
class MultiHeadAttentionWrapper : public Module {
 public:
  MultiHeadAttentionWrapper(int64_t d_in, int64_t d_out_kq, int64_t d_out_v, int64_t num_heads);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<ModuleList<SelfAttention>> heads;
};

// seed 000. Queries from x_1 (T1, d_in), keys and values from x_2 (T2, d_in) -> (T1, d_out_v).
class CrossAttention : public Module {
 public:
  CrossAttention(int64_t d_in, int64_t d_out_kq, int64_t d_out_v);
  using Module::forward;  // the single-input form throws: cross-attention takes two sequences
  Tensor forward(const Tensor& x_1, const Tensor& x_2);
  int64_t d_out_kq;
  Tensor W_query, W_key, W_value;
};

// seed 001's SelfAttention(d_model=2, row_dim=0, col_dim=1): bias-free Linear W_q, W_k, W_v;
// forward(token_encodings, mask) fills masked (true) scores with -1e9.
class LinearSelfAttention : public Module {
 public:
  explicit LinearSelfAttention(int64_t d_model = 2, int64_t row_dim = 0, int64_t col_dim = 1);
  Tensor forward(const Tensor& token_encodings) override { return forward(token_encodings, Tensor()); }
  Tensor forward(const Tensor& token_encodings, const Tensor& mask);
  int64_t row_dim, col_dim;
  std::shared_ptr<Linear> W_q, W_k, W_v;
};

// seed 003. x (T, d_in) -> (T, d_out), Parameters from rand().
class SelfAttentionV1 : public Module {
 public:
  SelfAttentionV1(int64_t d_in, int64_t d_out);
  Tensor forward(const Tensor& x) override;
  Tensor W_query, W_key, W_value;
};

// seed 003. The same with Linear projections.
class SelfAttentionV2 : public Module {
 public:
  SelfAttentionV2(int64_t d_in, int64_t d_out, bool qkv_bias = false);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Linear> W_query, W_key, W_value;
};

// seed 003. Batched causal attention: x (B, T, d_in) -> (B, T, d_out), T <= context_length.
// Construction order W_K, W_Q, W_V; registered buffer "mask" = triu(ones(ctx, ctx), 1).
class CausalAttention : public Module {
 public:
  CausalAttention(int64_t d_in, int64_t d_out, int64_t context_length, double dropout, bool qkv_bias = false);
  Tensor forward(const Tensor& x) override;
  int64_t context_length;
  std::shared_ptr<Linear> W_K, W_Q, W_V;
  std::shared_ptr<Dropout> dropout;
  Tensor mask;
};

// seed 003. Fused causal multi-head attention with out_proj: x (B, T, d_in) -> (B, T, d_out).
// Construction order W_query, W_value, W_key, out_proj (the seed's).
class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(int64_t d_in, int64_t d_out, int64_t context_length, double dropout, int64_t num_heads,
                     bool qkv_bias = false);
  Tensor forward(const Tensor& x) override;
  int64_t d_out, num_heads, head_dim, context_length;
  std::shared_ptr<Linear> W_query, W_value, W_key, out_proj;
  std::shared_ptr<Dropout> dropout;
  Tensor mask;
};

}  // namespace ag::nn
