// The attention family of the seed tutorials, each written in the tutorial's own terms
// (constructor arguments, parameter names and their construction order, masking, what forward
// returns), so that after the tutorial's manual_seed the module prints the tutorial's numbers.
//
//   seed 000: SelfAttention, MultiHeadAttentionWrapper, CrossAttention (rand() Parameters)
//   seed 001: LinearSelfAttention (the seed's SelfAttention(d_model, row_dim, col_dim))
//   seed 003: SelfAttentionV1, SelfAttentionV2, CausalAttention, MultiHeadAttention
//             (MultiHeadAttention is also examples/next_word's, built in next_word.py's order)
//
// The causal modules say which ops they record in their `attention` member (AttentionImpl::Fused,
// ag's causal ops, or AttentionImpl::Composed, PyTorch's ops node for node), set where the module
// is built; nothing is decided from the mask buffer's contents.
#pragma once

#include <utility>

#include "layers.h"

namespace ag::nn {

// Which ops a causal attention module records for
//   weights = dropout(softmax(masked_fill(q @ k^T, mask[:T, :T].bool(), -inf) / divisor, -1))
//   context = weights @ v
enum class AttentionImpl {
  // ag's causal ops (causal_qk_softmax, causal_matmul; while the dropout is the identity, both as
  // one causal_attention node): the masked half of the softmax is never computed, and from T = 65
  // on whole GEMM blocks above the diagonal are skipped. The mask is the causal triangle by
  // construction; the module's mask buffer is only checked to hold it (an edited or loaded mask
  // that does not is an error, never silently ignored). In the one node the context's gradient
  // goes straight to q, k and v, not through the weights: a hook or retain_grad() on the weights
  // sees no gradient from the context (PyTorch's graph passes it through them).
  Fused,
  // matmul, masked_fill with the mask buffer as it is, softmax, dropout, matmul: the graph is
  // PyTorch's node for node (next_functions, to_dot). Slower; the same numbers to rounding.
  Composed,
};

struct CausalAttentionResult {
  Tensor context;  // (..., T, E_v)
  Tensor weights;  // (..., T, T), after dropout
};

// The attention core of the seeds' causal modules, q, k, v (..., T, E) and the module's registered
// mask buffer, computed as `impl` says. Throws, naming `who`, if T exceeds context_length (and,
// for Fused, if q and k have different lengths -- the causal triangle needs square scores -- or
// the buffer's T x T corner is not triu(ones, 1)).
CausalAttentionResult causal_attention(const std::string& who, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& mask, int64_t context_length, double divisor, Dropout& dropout,
                                       AttentionImpl impl);

// The same, choosing for the caller: Fused while the buffer's T x T corner holds triu(ones, 1)
// (read from its storage on every call) and fused_attention_enabled(), Composed otherwise.
// For code that holds an arbitrary mask; the modules choose with their `attention` member.
CausalAttentionResult causal_attention(const std::string& who, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& mask, int64_t context_length, double divisor, Dropout& dropout);

// A process-wide debugging switch, like PyTorch's torch.backends flags that turn fused attention
// kernels off: while false, every causal attention module (and the 8-argument causal_attention)
// records the Composed ops, whatever the module's `attention` says (to walk or draw PyTorch's
// graph of a model built Fused). True by default, and then each module's own choice holds.
void set_fused_attention(bool enabled);
bool fused_attention_enabled();

// softmax(q k^T / sqrt(d)) v over the last two dims. `attn_mask` is a bool tensor broadcast to
// the scores where true means "may attend" (PyTorch's convention); `is_causal` masks the upper
// triangle. A query row with nothing to attend to gives zeros (not NaN) and zero gradients.
// dropout_p > 0 applies dropout to the attention weights, as F.scaled_dot_product_attention does.
// is_causal with no attn_mask and no dropout (q, k, v of one dtype and batch shape) is one fused
// node that never holds the weights (ag::causal_attention_output, PyTorch's CPU flash attention).
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
  AttentionImpl attention = AttentionImpl::Fused;  // which ops forward records
  std::shared_ptr<Linear> W_K, W_Q, W_V;
  std::shared_ptr<Dropout> dropout;
  Tensor mask;
};

// The order MultiHeadAttention builds its three projections in: the order they draw their initial
// weights from the generator, and their order in parameters(), state_dict() and repr().
enum class ProjectionOrder {
  QueryValueKey,  // W_query, W_value, W_key: seed 003's
  QueryKeyValue,  // W_query, W_key, W_value: ../shared/reference/next_word.py's (and PyTorch's usual)
};

struct MultiHeadAttentionOptions {
  bool qkv_bias = false;
  ProjectionOrder projection_order = ProjectionOrder::QueryValueKey;
  AttentionImpl attention = AttentionImpl::Fused;
};

// seed 003. Causal multi-head attention with out_proj: x (B, T, d_in) -> (B, T, d_out),
// T <= context_length. Built W_query, W_value, W_key, out_proj (the seed's order) unless the
// options say otherwise; registered buffer "mask" = triu(ones(ctx, ctx), 1).
// forward, Fused, with projections without bias (plain nn::Linear) and the dropout the identity,
// records the projections, heads and attention as one node (ag::causal_self_attention).
class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(int64_t d_in, int64_t d_out, int64_t context_length, double dropout, int64_t num_heads,
                     bool qkv_bias = false);
  MultiHeadAttention(int64_t d_in, int64_t d_out, int64_t context_length, double dropout, int64_t num_heads,
                     const MultiHeadAttentionOptions& options);
  Tensor forward(const Tensor& x) override;
  // x (B, T, d_in) -> {out (B, T, d_out), attention weights (B, heads, T, T), after dropout},
  // as PyTorch's nn.MultiheadAttention returns (attn_output, attn_output_weights)
  std::pair<Tensor, Tensor> forward_with_weights(const Tensor& x);
  int64_t d_out, num_heads, head_dim, context_length;
  AttentionImpl attention;  // which ops forward records (options.attention)
  std::shared_ptr<Linear> W_query, W_value, W_key, out_proj;
  std::shared_ptr<Dropout> dropout;
  Tensor mask;
};

}  // namespace ag::nn
