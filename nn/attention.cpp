#include "nn/attention.h"

#include <cmath>
#include <stdexcept>
#include <typeinfo>

namespace ag::nn {

namespace {

void expect_rank(const std::string& who, const Tensor& x, int64_t rank, const char* layout) {
  if (x.dim() != rank) {
    throw std::invalid_argument("[" + who + "] expected input of rank " + std::to_string(rank) + " " + layout +
                                ", got shape " + x.shape().str());
  }
}

void expect_last(const std::string& who, const Tensor& x, int64_t d_in) {
  if (x.size(-1) != d_in) {
    throw std::invalid_argument("[" + who + "] input of shape " + x.shape().str() + " does not end in d_in=" + std::to_string(d_in));
  }
}

void expect_within(const std::string& who, int64_t t, int64_t context_length) {
  if (t > context_length) {
    throw std::invalid_argument("[" + who + "] sequence length " + std::to_string(t) + " exceeds context_length " +
                                std::to_string(context_length));
  }
}

// The causal mask buffer sliced to T x T as bool, with a clear error past context_length.
Tensor causal_mask(const std::string& who, const Tensor& mask, int64_t t, int64_t context_length) {
  expect_within(who, t, context_length);
  return mask.slice(0, 0, t).slice(1, 0, t).bool_();
}

}  // namespace

static bool g_fused_attention = true;

// A module's choice, unless set_fused_attention(false) has switched the fused ops off everywhere.
static AttentionImpl impl_for(AttentionImpl chosen) { return g_fused_attention ? chosen : AttentionImpl::Composed; }

// True if the t x t corner of `mask` is the causal pattern: nonzero exactly where key j > query i.
// (A T x T check per call, small next to the B x heads x T x T attention itself.)
static bool is_causal_pattern(const Tensor& mask, int64_t t) {
  if (mask.size(0) < t || mask.size(1) < t) return false;
  return dispatch_all(mask.dtype(), [&]<typename T>() {
    const T* p = static_cast<const T*>(mask.impl()->storage->data) + mask.storage_offset();
    const int64_t s0 = mask.stride(0), s1 = mask.stride(1);
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < t; ++j)
        if ((p[i * s0 + j * s1] != T(0)) != (j > i)) return false;
    return true;
  });
}

void set_fused_attention(bool enabled) { g_fused_attention = enabled; }
bool fused_attention_enabled() { return g_fused_attention; }

namespace {

// The fused ops compute the causal triangle themselves; the buffer is only checked, so that a
// mask edited or loaded from elsewhere is an error here, never silently ignored.
void check_fused_mask(const std::string& who, const Tensor& mask, int64_t t) {
  if (mask.dim() != 2 || !is_causal_pattern(mask, t)) {
    throw std::invalid_argument("[" + who + "] fused causal attention (AttentionImpl::Fused) computes the causal mask "
                                "triu(ones(T, T), 1) itself, but the mask buffer of shape " + mask.shape().str() +
                                " is not that pattern; choose AttentionImpl::Composed to apply another mask");
  }
}

// nn::causal_attention; need_weights false (a module's forward, which returns no weights): the fused
// path without dropout records causal_attention_output, which never holds the weights.
CausalAttentionResult causal_attention_impl(const std::string& who, const Tensor& q, const Tensor& k, const Tensor& v,
                                            const Tensor& mask, int64_t context_length, double divisor, Dropout& dropout,
                                            AttentionImpl impl, bool need_weights) {
  const int64_t t = k.size(-2);
  if (impl == AttentionImpl::Composed) {
    Tensor scores = matmul(q, k.transpose(-2, -1));
    Tensor weights = dropout.forward(softmax(masked_fill(scores, causal_mask(who, mask, t, context_length), -INFINITY) / divisor, -1));
    return {matmul(weights, v), weights};
  }
  expect_within(who, t, context_length);
  if (q.size(-2) != t) {
    throw std::invalid_argument("[" + who + "] fused causal attention needs as many queries as keys, got " + q.shape().str() +
                                " and " + k.shape().str());
  }
  check_fused_mask(who, mask, t);
  if (dropout.p == 0.0 || !dropout.is_training()) {  // dropout is the identity: both products in one op
    if (!need_weights) return {causal_attention_output(q, k, v, divisor), Tensor()};
    auto [context, weights] = ag::causal_attention(q, k, v, divisor);
    return {context, weights};
  }
  // dropout keeps the weights' zeros above the diagonal, so causal_matmul reads them in place
  Tensor weights = dropout.forward(causal_qk_softmax(q, k, divisor));
  return {causal_matmul(weights, v), weights};
}

}  // namespace

CausalAttentionResult causal_attention(const std::string& who, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& mask, int64_t context_length, double divisor, Dropout& dropout,
                                       AttentionImpl impl) {
  return causal_attention_impl(who, q, k, v, mask, context_length, divisor, dropout, impl, /*need_weights=*/true);
}

CausalAttentionResult causal_attention(const std::string& who, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& mask, int64_t context_length, double divisor, Dropout& dropout) {
  const int64_t t = k.size(-2);
  const bool fused = g_fused_attention && t <= context_length && q.size(-2) == t && mask.dim() == 2 && is_causal_pattern(mask, t);
  return causal_attention(who, q, k, v, mask, context_length, divisor, dropout, fused ? AttentionImpl::Fused : AttentionImpl::Composed);
}

namespace {

// The unbatched attention the seed classes share: softmax(q k^T / sqrt(d_k), -1) v, with
// queries (T1, d_k), keys (T2, d_k), values (T2, d_v) -> (T1, d_v).
Tensor attend(const Tensor& queries, const Tensor& keys, const Tensor& values) {
  Tensor attn_scores = matmul(queries, keys.T());  // unnormalized attention weights
  Tensor attn_weights = softmax(attn_scores / std::pow(static_cast<double>(keys.size(-1)), 0.5), -1);
  return matmul(attn_weights, values);
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    bool is_causal, double dropout_p, Generator* gen) {
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2 || q.size(-1) != k.size(-1) || k.size(-2) != v.size(-2)) {
    throw std::invalid_argument("[scaled_dot_product_attention] expected q (..., L, E), k (..., S, E), v (..., S, Ev), got " +
                                q.shape().str() + ", " + k.shape().str() + ", " + v.shape().str());
  }
  const int64_t L = q.size(-2), S = k.size(-2);
  // causal, no other mask, no dropout: the fused node that never holds the (..., L, S) weights
  // (causal_attention_output; the composed ops below are its reference)
  if (is_causal && !attn_mask.defined() && dropout_p == 0.0 && S > 0 && q.is_floating_point() && q.dim() == k.dim() &&
      k.dim() == v.dim() && q.dtype() == k.dtype() && k.dtype() == v.dtype() &&
      std::equal(q.shape().begin(), q.shape().end() - 2, k.shape().begin()) &&
      std::equal(k.shape().begin(), k.shape().end() - 2, v.shape().begin())) {
    return causal_attention_output(q, k, v, std::sqrt(static_cast<double>(q.size(-1))));
  }
  // scores (..., L, S) = q k^T / sqrt(E)
  Tensor scores = matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  Tensor allowed;  // bool (..., L, S): true where a query may attend
  if (attn_mask.defined()) {
    if (attn_mask.dtype() != kBool) throw std::invalid_argument("[scaled_dot_product_attention] attn_mask must be bool (true = attend), got " + dtype_name(attn_mask.dtype()));
    allowed = attn_mask;
  }
  if (is_causal) {
    Tensor causal = tril(ones({L, S}, kBool));
    allowed = allowed.defined() ? logical_and(allowed, causal) : causal;
  }
  if (!allowed.defined()) {
    Tensor w = softmax(scores, -1);
    if (dropout_p > 0) w = dropout(w, dropout_p, true, gen);
    return matmul(w, v);
  }
  const Size shape = broadcast_shapes(scores.shape(), allowed.shape(), "scaled_dot_product_attention");
  if (shape != scores.shape()) {
    throw std::invalid_argument("[scaled_dot_product_attention] attn_mask of shape " + allowed.shape().str() +
                                " does not broadcast to the scores' shape " + scores.shape().str());
  }
  // A row with no allowed key would be softmax of all -inf (NaN). Such rows are left unmasked
  // for the softmax (finite) and zeroed afterwards, so values and gradients there are 0.
  Tensor blocked = logical_not(allowed);
  Tensor empty_row = eq(sum(allowed.to(kInt64), {-1}, true), 0.0);  // (..., L, 1)
  Tensor fill = logical_and(blocked, logical_not(empty_row));
  Tensor w = softmax(masked_fill(scores, fill, -INFINITY), -1);
  w = masked_fill(w, empty_row, 0.0);
  if (dropout_p > 0) w = dropout(w, dropout_p, true, gen);
  return matmul(w, v);
}

// ---- seed 000 ----

SelfAttention::SelfAttention(int64_t d_in, int64_t kq, int64_t dv) : Module("SelfAttention"), d_out_kq(kq) {
  W_query = register_parameter("W_query", rand({d_in, kq}));
  W_key = register_parameter("W_key", rand({d_in, kq}));
  W_value = register_parameter("W_value", rand({d_in, dv}));
}

Tensor SelfAttention::forward(const Tensor& x) {
  expect_rank(type_name(), x, 2, "(seq, d_in)");
  expect_last(type_name(), x, W_query.size(0));
  Tensor keys = matmul(x, W_key);
  Tensor queries = matmul(x, W_query);
  Tensor values = matmul(x, W_value);
  return attend(queries, keys, values);  // keys.size(-1) is d_out_kq
}

MultiHeadAttentionWrapper::MultiHeadAttentionWrapper(int64_t d_in, int64_t kq, int64_t dv, int64_t num_heads)
    : Module("MultiHeadAttentionWrapper") {
  if (num_heads < 1) throw std::invalid_argument("[MultiHeadAttentionWrapper] num_heads must be >= 1, got " + std::to_string(num_heads));
  heads = register_module("heads", std::make_shared<ModuleList<SelfAttention>>());
  for (int64_t h = 0; h < num_heads; ++h) heads->push_back(std::make_shared<SelfAttention>(d_in, kq, dv));
}

Tensor MultiHeadAttentionWrapper::forward(const Tensor& x) {
  std::vector<Tensor> outs;
  for (const auto& head : *heads) outs.push_back(head->forward(x));
  return cat(outs, -1);
}

CrossAttention::CrossAttention(int64_t d_in, int64_t kq, int64_t dv) : Module("CrossAttention"), d_out_kq(kq) {
  W_query = register_parameter("W_query", rand({d_in, kq}));
  W_key = register_parameter("W_key", rand({d_in, kq}));
  W_value = register_parameter("W_value", rand({d_in, dv}));
}

Tensor CrossAttention::forward(const Tensor& x_1, const Tensor& x_2) {
  expect_rank(type_name(), x_1, 2, "(seq_1, d_in)");
  expect_rank(type_name(), x_2, 2, "(seq_2, d_in)");
  expect_last(type_name(), x_1, W_query.size(0));
  expect_last(type_name(), x_2, W_query.size(0));
  Tensor queries_1 = matmul(x_1, W_query);
  Tensor keys_2 = matmul(x_2, W_key);
  Tensor values_2 = matmul(x_2, W_value);
  return attend(queries_1, keys_2, values_2);
}

// ---- seed 001 ----

LinearSelfAttention::LinearSelfAttention(int64_t d_model, int64_t row, int64_t col)
    : Module("SelfAttention"), row_dim(row), col_dim(col) {
  W_q = register_module("W_q", std::make_shared<Linear>(d_model, d_model, false));
  W_k = register_module("W_k", std::make_shared<Linear>(d_model, d_model, false));
  W_v = register_module("W_v", std::make_shared<Linear>(d_model, d_model, false));
}

Tensor LinearSelfAttention::forward(const Tensor& token_encodings, const Tensor& mask) {
  Tensor q = W_q->forward(token_encodings);
  Tensor k = W_k->forward(token_encodings);
  Tensor v = W_v->forward(token_encodings);
  Tensor sims = matmul(q, k.transpose(row_dim, col_dim));
  Tensor scaled_sims = sims / std::pow(static_cast<double>(k.size(col_dim)), 0.5);
  if (mask.defined()) scaled_sims = masked_fill(scaled_sims, mask, -1e9);
  Tensor attention_percents = softmax(scaled_sims, col_dim);
  return matmul(attention_percents, v);
}

// ---- seed 003 ----

SelfAttentionV1::SelfAttentionV1(int64_t d_in, int64_t d_out) : Module("SelfAttentionV1") {
  W_query = register_parameter("W_query", rand({d_in, d_out}));
  W_key = register_parameter("W_key", rand({d_in, d_out}));
  W_value = register_parameter("W_value", rand({d_in, d_out}));
}

Tensor SelfAttentionV1::forward(const Tensor& x) {
  expect_rank(type_name(), x, 2, "(seq, d_in)");
  expect_last(type_name(), x, W_query.size(0));
  Tensor keys = matmul(x, W_key);
  Tensor values = matmul(x, W_value);
  Tensor queries = matmul(x, W_query);
  return attend(queries, keys, values);
}

SelfAttentionV2::SelfAttentionV2(int64_t d_in, int64_t d_out, bool qkv_bias) : Module("SelfAttentionV2") {
  W_query = register_module("W_query", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_key = register_module("W_key", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_value = register_module("W_value", std::make_shared<Linear>(d_in, d_out, qkv_bias));
}

Tensor SelfAttentionV2::forward(const Tensor& x) {
  expect_rank(type_name(), x, 2, "(seq, d_in)");
  Tensor keys = W_key->forward(x);
  Tensor values = W_value->forward(x);
  Tensor queries = W_query->forward(x);
  return attend(queries, keys, values);
}

CausalAttention::CausalAttention(int64_t d_in, int64_t d_out, int64_t ctx, double p, bool qkv_bias)
    : Module("CausalAttention"), context_length(ctx) {
  W_K = register_module("W_K", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_Q = register_module("W_Q", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_V = register_module("W_V", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  mask = register_buffer("mask", triu(ones({ctx, ctx}), 1));
}

Tensor CausalAttention::forward(const Tensor& x) {
  expect_rank(type_name(), x, 3, "(batch, seq, d_in)");
  Tensor keys = W_K->forward(x);
  Tensor values = W_V->forward(x);
  Tensor queries = W_Q->forward(x);
  // softmax(masked_fill(queries @ keys^T, mask, -inf) / sqrt(d), -1), dropout, @ values
  return causal_attention(type_name(), queries, keys, values, mask, context_length,
                          std::pow(static_cast<double>(keys.size(-1)), 0.5), *dropout, impl_for(attention))
      .context;
}

MultiHeadAttention::MultiHeadAttention(int64_t d_in, int64_t d_out_, int64_t ctx, double p, int64_t heads, bool qkv_bias)
    : MultiHeadAttention(d_in, d_out_, ctx, p, heads, MultiHeadAttentionOptions{.qkv_bias = qkv_bias}) {}

MultiHeadAttention::MultiHeadAttention(int64_t d_in, int64_t d_out_, int64_t ctx, double p, int64_t heads,
                                       const MultiHeadAttentionOptions& options)
    : Module("MultiHeadAttention"), d_out(d_out_), num_heads(heads), head_dim(0), context_length(ctx), attention(options.attention) {
  if (heads < 1 || d_out % heads != 0) {
    throw std::invalid_argument("[MultiHeadAttention] d_out must be divisible by num_heads (d_out=" + std::to_string(d_out) +
                                ", num_heads=" + std::to_string(heads) + ")");
  }
  head_dim = d_out / heads;
  auto projection = [&](const char* name) { return register_module(name, std::make_shared<Linear>(d_in, d_out, options.qkv_bias)); };
  W_query = projection("W_query");
  if (options.projection_order == ProjectionOrder::QueryValueKey) {
    W_value = projection("W_value");
    W_key = projection("W_key");
  } else {
    W_key = projection("W_key");
    W_value = projection("W_value");
  }
  out_proj = register_module("out_proj", std::make_shared<Linear>(d_out, d_out));
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  mask = register_buffer("mask", triu(ones({ctx, ctx}), 1));
}

namespace {

// MultiHeadAttention's forward; without need_weights (forward) the fused ops hold no weights.
std::pair<Tensor, Tensor> mha_forward(MultiHeadAttention& m, const Tensor& x, bool need_weights) {
  expect_rank(m.type_name(), x, 3, "(batch, seq, d_in)");
  const int64_t b = x.size(0), t = x.size(1);
  const double divisor = std::pow(static_cast<double>(m.head_dim), 0.5);
  // Fused, no weights asked for, the dropout the identity and plain projections without bias: the
  // projections, heads and attention in one node (causal_self_attention), the same numbers
  auto plain = [](const std::shared_ptr<Linear>& l) { return typeid(*l) == typeid(Linear) && !l->bias.defined(); };
  if (!need_weights && impl_for(m.attention) == AttentionImpl::Fused && (m.dropout->p == 0.0 || !m.dropout->is_training()) &&
      plain(m.W_query) && plain(m.W_key) && plain(m.W_value) && x.size(-1) == m.W_query->in_features) {
    expect_within(m.type_name(), t, m.context_length);
    check_fused_mask(m.type_name(), m.mask, t);
    const Tensor context = causal_self_attention(x, m.W_query->weight, m.W_key->weight, m.W_value->weight, m.num_heads, divisor);
    return {m.out_proj->forward(context), Tensor()};
  }
  // (B, T, d_out) -> (B, T, heads, head_dim) -> (B, heads, T, head_dim)
  Tensor keys = m.W_key->forward(x).view({b, t, m.num_heads, m.head_dim}).transpose(1, 2);
  Tensor values = m.W_value->forward(x).view({b, t, m.num_heads, m.head_dim}).transpose(1, 2);
  Tensor queries = m.W_query->forward(x).view({b, t, m.num_heads, m.head_dim}).transpose(1, 2);
  // softmax(masked_fill(queries @ keys^T, mask, -inf) / sqrt(head_dim), -1), dropout, @ values
  auto [context, weights] = causal_attention_impl(m.type_name(), queries, keys, values, m.mask, m.context_length, divisor,
                                                  *m.dropout, impl_for(m.attention), need_weights);
  // (B, heads, T, head_dim) -> (B, T, heads, head_dim) -> (B, T, d_out)
  context = context.transpose(1, 2).contiguous().view({b, t, m.d_out});
  return {m.out_proj->forward(context), weights};
}

}  // namespace

Tensor MultiHeadAttention::forward(const Tensor& x) { return mha_forward(*this, x, /*need_weights=*/false).first; }

std::pair<Tensor, Tensor> MultiHeadAttention::forward_with_weights(const Tensor& x) { return mha_forward(*this, x, true); }

}  // namespace ag::nn
