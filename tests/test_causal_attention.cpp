// causal_qk_softmax and causal_matmul, the block-skipping GEMMs of causal attention, against
// their composed references:
//   causal_qk_softmax(q, k, d) == causal_softmax(matmul(q, k^T), d)
//   causal_matmul(w, v)        == matmul(tril(w), v)
// Forward values and both gradients must agree to rounding (the GEMMs have other shapes, and
// OpenBLAS's result bits depend on the shape), with the exact zeros and the same inf/NaN, for
// sequence lengths below, at and across the kernel's block size (64), rectangular, strided and
// with inf/NaN where a skipped term would otherwise have hidden them; and both backwards must
// pass gradcheck on their own.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "nn/attention.h"
#include "test_util.h"

using namespace ag;
using testutil::bit_mismatches;

namespace {

// Rounding-level agreement: a wrong block, a missed row or a skipped nonzero term is off by far more.
template <class T>
int64_t mismatches(const Tensor& a, const Tensor& b) {
  return std::is_same_v<T, float> ? testutil::close_mismatches<T>(a, b, 1e-4, 1e-5)
                                  : testutil::close_mismatches<T>(a, b, 1e-11, 1e-12);
}

// (B, heads, T, E) as the attention modules make them: a transposed view of (B, T, heads, E).
Tensor heads_view(int64_t b, int64_t t, int64_t h, int64_t e, DType dt) { return randn({b, t, h, e}, dt).transpose(1, 2); }

Tensor leaf(const Tensor& t) { return t.detach().requires_grad_(); }

// What f throws as std::invalid_argument.
template <class F>
std::string message(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  return std::string("no exception");
}

// Both versions of the scores softmax on the same q, k and upstream gradient.
template <class T>
void expect_qk_match(const Tensor& q0, const Tensor& k0, double divisor) {
  const Tensor upstream = randn({q0.size(0), q0.size(1), q0.size(2), k0.size(2)}, q0.dtype());
  Tensor q1 = leaf(q0), k1 = leaf(k0), q2 = leaf(q0), k2 = leaf(k0);
  Tensor y1 = causal_qk_softmax(q1, k1, divisor);
  Tensor y2 = causal_softmax(matmul(q2, k2.transpose(-2, -1)), divisor);
  const std::string where = "q " + q0.shape().str() + ", k " + k0.shape().str();
  EXPECT_EQ(y1.grad_fn()->name(), "CausalQKSoftmaxBackward0");
  EXPECT_EQ(mismatches<T>(y1, y2), 0) << "forward, " << where;
  if (!std::isnan(y2.sum().item()))  // (a NaN score makes its whole row NaN, as in softmax)
    EXPECT_EQ(bit_mismatches<T>(y1, tril(y1)), 0) << "weights above the diagonal, " << where;
  (y1 * upstream).sum().backward();
  (y2 * upstream).sum().backward();
  EXPECT_EQ(mismatches<T>(q1.grad(), q2.grad()), 0) << "dq, " << where;
  EXPECT_EQ(mismatches<T>(k1.grad(), k2.grad()), 0) << "dk, " << where;
}

// Both versions of weights @ values on the same w, v and upstream gradient.
template <class T>
void expect_wv_match(const Tensor& w0, const Tensor& v0, const Tensor& upstream) {
  Tensor w1 = leaf(w0), v1 = leaf(v0), w2 = leaf(w0), v2 = leaf(v0);
  Tensor y1 = causal_matmul(w1, v1);
  Tensor y2 = matmul(tril(w2), v2);
  const std::string where = "w " + w0.shape().str() + ", v " + v0.shape().str();
  EXPECT_EQ(y1.grad_fn()->name(), "UnsafeViewBackward0");  // what PyTorch shows for weights @ values
  EXPECT_EQ(mismatches<T>(y1, y2), 0) << "forward, " << where;
  (y1 * upstream).sum().backward();
  (y2 * upstream).sum().backward();
  EXPECT_EQ(mismatches<T>(w1.grad(), w2.grad()), 0) << "dw, " << where;
  EXPECT_EQ(bit_mismatches<T>(w1.grad(), tril(w1.grad())), 0) << "dw above the diagonal, " << where;
  EXPECT_EQ(mismatches<T>(v1.grad(), v2.grad()), 0) << "dv, " << where;
}

template <class T>
void expect_wv_match(const Tensor& w0, const Tensor& v0) {
  DimVector shape(w0.shape().begin(), w0.shape().end() - 1);
  shape.push_back(v0.size(-1));
  expect_wv_match<T>(w0, v0, randn(shape, w0.dtype()));
}

}  // namespace

TEST(CausalQKSoftmax, MatchesTheComposedOpsAcrossBlockSizes) {
  manual_seed(0);
  // below, at, across and several blocks of 32 query rows; E of 1, 8 and 32
  for (int64_t t : {1, 5, 31, 64, 65, 100, 130}) {
    for (int64_t e : {1, 8, 32}) {
      expect_qk_match<float>(heads_view(2, t, 2, e, kFloat32), heads_view(2, t, 2, e, kFloat32), std::sqrt(double(e)));
    }
    expect_qk_match<double>(heads_view(1, t, 3, 16, kFloat64), heads_view(1, t, 3, 16, kFloat64), 4.0);
  }
}

TEST(CausalQKSoftmax, MatchesWithMoreQueriesOrMoreKeysAndContiguousInputs) {
  manual_seed(1);
  expect_qk_match<float>(heads_view(2, 40, 2, 8, kFloat32), heads_view(2, 70, 2, 8, kFloat32), 3.0);   // Tq < Tk
  expect_qk_match<float>(heads_view(2, 70, 2, 8, kFloat32), heads_view(2, 40, 2, 8, kFloat32), 3.0);   // Tq > Tk
  expect_qk_match<float>(randn({1, 2, 45, 16}), randn({1, 2, 45, 16}), 2.0);                          // contiguous
  expect_qk_match<float>(randn({1, 2, 16, 45}).transpose(2, 3), randn({1, 2, 45, 16}), 2.0);          // q column-major
}

TEST(CausalQKSoftmax, NonFiniteQueriesAndKeysGiveTheComposedNaNs) {
  // an inf key is seen by the queries after it only; in the backward, dq's skipped terms multiply
  // the keys and dk's the queries, so a non-finite one must turn the GEMM back to full
  manual_seed(2);
  Tensor q = heads_view(1, 70, 2, 8, kFloat32).contiguous(), k = heads_view(1, 70, 2, 8, kFloat32).contiguous();
  k.data_ptr<float>()[(0 * 70 + 50) * 8 + 3] = INFINITY;
  q.data_ptr<float>()[(1 * 70 + 3) * 8 + 1] = -INFINITY;
  q.data_ptr<float>()[(1 * 70 + 60) * 8 + 2] = std::numeric_limits<float>::quiet_NaN();
  expect_qk_match<float>(q, k, 2.0);
}

TEST(CausalMatmul, MatchesMatmulOfTrilAcrossBlockSizes) {
  manual_seed(3);
  for (int64_t t : {1, 5, 31, 64, 65, 100, 130}) {
    // attention weights (exactly 0 above the diagonal: read in place) and dense weights (the
    // op must ignore what is above the diagonal: a masked copy)
    Tensor att = causal_softmax(randn({2, 2, t, t}), 1.0);
    expect_wv_match<float>(att, heads_view(2, t, 2, 16, kFloat32));
    expect_wv_match<float>(randn({2, 2, t, t}), heads_view(2, t, 2, 16, kFloat32));
    expect_wv_match<double>(randn({1, 3, t, t}, kFloat64), heads_view(1, t, 3, 8, kFloat64));
  }
}

TEST(CausalMatmul, MatchesWhenRectangularOrStrided) {
  manual_seed(4);
  expect_wv_match<float>(randn({1, 2, 40, 70}), randn({1, 2, 70, 8}));                 // more keys than queries
  expect_wv_match<float>(randn({1, 2, 70, 40}), randn({1, 2, 40, 8}));                 // more queries than keys
  expect_wv_match<float>(randn({1, 2, 50, 50}).transpose(2, 3), randn({1, 2, 50, 8}));  // w column-major
  expect_wv_match<float>(randn({3, 37, 37}).slice(0, 0, 3, 2), randn({2, 37, 5}));     // a batch stride of 2
}

TEST(CausalMatmul, NonFiniteValuesAndGradientsGiveTheComposedNaNs) {
  // 0 * inf is NaN in matmul(tril(w), v): a skipped term with an inf value, or with an inf
  // upstream gradient in dv, must not be skipped
  manual_seed(5);
  Tensor w = causal_softmax(randn({1, 2, 70, 70}), 1.0);
  Tensor v = randn({1, 2, 70, 8});
  v.data_ptr<float>()[(1 * 70 + 65) * 8 + 4] = INFINITY;
  expect_wv_match<float>(w, v);
  Tensor upstream = randn({1, 2, 70, 8});
  upstream.data_ptr<float>()[(0 * 70 + 2) * 8 + 0] = std::numeric_limits<float>::quiet_NaN();
  expect_wv_match<float>(w, randn({1, 2, 70, 8}), upstream);
}

TEST(CausalAttention, GradientsArrivingAsViewsAtAnOffset) {
  // cat's backward hands each input a slice of the output gradient: the second one starts at an
  // offset into its storage
  manual_seed(10);
  Tensor q = randn({2, 3, 70, 8}).requires_grad_(), k = randn({2, 3, 70, 8}).requires_grad_();
  Tensor w = randn({2, 3, 70, 70}).requires_grad_(), v = randn({2, 3, 70, 8}).requires_grad_();
  Tensor up1 = randn({4, 3, 70, 70}), up2 = randn({4, 3, 70, 8});
  (cat({causal_qk_softmax(q, k, 2.0), causal_qk_softmax(q, k, 2.0)}, 0) * up1).sum().backward();
  (cat({causal_matmul(w, v), causal_matmul(w, v)}, 0) * up2).sum().backward();
  Tensor q2 = q.detach().requires_grad_(), k2 = k.detach().requires_grad_(), w2 = w.detach().requires_grad_(),
         v2 = v.detach().requires_grad_();
  Tensor y = causal_softmax(matmul(q2, k2.transpose(-2, -1)), 2.0);
  (cat({y, y}, 0) * up1).sum().backward();
  Tensor c = matmul(tril(w2), v2);
  (cat({c, c}, 0) * up2).sum().backward();
  EXPECT_EQ(mismatches<float>(q.grad(), q2.grad()), 0);
  EXPECT_EQ(mismatches<float>(k.grad(), k2.grad()), 0);
  EXPECT_EQ(mismatches<float>(w.grad(), w2.grad()), 0);
  EXPECT_EQ(mismatches<float>(v.grad(), v2.grad()), 0);
}

TEST(CausalAttention, OutputsAndGradientsTakeTheLayoutOfDenseInputs) {
  // values as the modules make them, (B, heads, T, E) views of (B, T, heads, E): the context comes
  // back in that layout, so transpose(1, 2) is contiguous and the module's .contiguous() copies
  // nothing; likewise q's gradient, so its view's backward copies nothing
  manual_seed(11);
  Tensor q = leaf(heads_view(2, 70, 2, 8, kFloat32)), k = leaf(heads_view(2, 70, 2, 8, kFloat32));
  Tensor v = leaf(heads_view(2, 70, 2, 8, kFloat32));
  Tensor w = causal_qk_softmax(q, k, 2.0);
  Tensor ctx = causal_matmul(w, v);
  EXPECT_EQ(ctx.strides(), v.strides());
  EXPECT_TRUE(ctx.transpose(1, 2).is_contiguous());
  // the gradients as the nodes hand them on (a leaf's .grad is a contiguous copy), run as the
  // engine runs them when no graph of the backward is recorded (grad mode off: the fast path)
  NoGradGuard fast_path;
  Grads gw = ctx.grad_fn()->backward(ones_like(ctx));
  EXPECT_EQ(gw[1].strides(), v.strides());
  Grads gqk = w.grad_fn()->backward(ones_like(w));
  EXPECT_EQ(gqk[0].strides(), q.strides());
  EXPECT_EQ(gqk[1].strides(), k.strides());
  EXPECT_EQ(mismatches<float>(ctx, matmul(causal_softmax(matmul(q, k.transpose(2, 3)), 2.0), v)), 0);
  // a strided input that does not tile memory: a contiguous output
  Tensor v2 = randn({2, 2, 140, 8}).slice(2, 0, 140, 2);
  EXPECT_TRUE(causal_matmul(randn({2, 2, 70, 70}), v2).is_contiguous());
}

TEST(CausalAttentionGrad, BothOpsMatchFiniteDifferences) {
  manual_seed(6);
  // 35 rows: two blocks, the second partial; the second case has more keys than queries
  Tensor q = randn({1, 35, 3}, kFloat64).requires_grad_(), k = randn({1, 35, 3}, kFloat64).requires_grad_();
  auto qk = [](const std::vector<Tensor>& in) { return causal_qk_softmax(in[0], in[1], 1.3) * in[0].sum(); };
  EXPECT_NO_THROW(gradcheck(qk, {q, k}));
  Tensor q2 = randn({2, 6, 2}, kFloat64).requires_grad_(), k2 = randn({2, 9, 2}, kFloat64).requires_grad_();
  EXPECT_NO_THROW(gradcheck(qk, {q2, k2}));
  Tensor w = randn({1, 35, 35}, kFloat64).requires_grad_(), v = randn({1, 35, 2}, kFloat64).requires_grad_();
  auto wv = [](const std::vector<Tensor>& in) { return causal_matmul(in[0], in[1]); };
  EXPECT_NO_THROW(gradcheck(wv, {w, v}));
  EXPECT_NO_THROW(gradcheck(wv, {testutil::strided_leaf(w.detach()), testutil::strided_leaf(v.detach())}));
}

TEST(CausalAttention, OneInputWithoutGradAndEmptyShapes) {
  manual_seed(7);
  Tensor q = randn({2, 40, 4}).requires_grad_(), k = randn({2, 40, 4});
  causal_qk_softmax(q, k).sum().backward();
  EXPECT_TRUE(q.grad().defined());
  EXPECT_FALSE(k.grad().defined());
  Tensor w = randn({2, 40, 40}), v = randn({2, 40, 4}).requires_grad_();
  causal_matmul(w, v).sum().backward();
  EXPECT_FALSE(w.grad().defined());
  EXPECT_EQ(mismatches<float>(v.grad(), matmul(tril(w).transpose(1, 2), ones({2, 40, 4}))), 0);
  // no queries, no keys, no features: the composed ops' shapes and values
  EXPECT_EQ(causal_qk_softmax(randn({2, 0, 4}), randn({2, 3, 4})).shape(), Size({2, 0, 3}));
  EXPECT_EQ(causal_qk_softmax(randn({2, 3, 4}), randn({2, 0, 4})).shape(), Size({2, 3, 0}));
  EXPECT_EQ(bit_mismatches<float>(causal_qk_softmax(randn({2, 3, 0}), randn({2, 3, 0})), causal_softmax(zeros({2, 3, 3}))), 0);
  EXPECT_EQ(bit_mismatches<float>(causal_matmul(randn({2, 3, 0}), randn({2, 0, 4})), zeros({2, 3, 4})), 0);
  EXPECT_EQ(causal_matmul(randn({2, 3, 3}), randn({2, 3, 0})).shape(), Size({2, 3, 0}));
}

TEST(CausalAttention, RejectsMismatchedShapesAndDtypes) {
  EXPECT_EQ(message([] { causal_qk_softmax(randn({2, 5, 4}), randn({2, 5, 3})); }),
            "[causal_qk_softmax] expects queries (..., Tq, E) and keys (..., Tk, E) of one floating point dtype with the same "
            "batch dims, got torch.float32 [2, 5, 4] and torch.float32 [2, 5, 3]");
  EXPECT_EQ(message([] { causal_matmul(randn({3, 5, 5}), randn({2, 5, 4})); }),
            "[causal_matmul] expects weights (..., Tq, Tk) and values (..., Tk, E) of one floating point dtype with the same "
            "batch dims, got torch.float32 [3, 5, 5] and torch.float32 [2, 5, 4]");
  EXPECT_NE(message([] { causal_matmul(randn({5, 5}), randn({4, 4})); }).find("[causal_matmul]"), std::string::npos);
  EXPECT_NE(message([] { causal_qk_softmax(randn({5}), randn({5})); }).find("[causal_qk_softmax]"), std::string::npos);
  EXPECT_NE(message([] { causal_qk_softmax(randn({5, 2}), randn({5, 2}, kFloat64)); }).find("float64"), std::string::npos);
  EXPECT_NE(message([] { causal_matmul(zeros({5, 5}, kInt64), zeros({5, 2}, kInt64)); }).find("int64"), std::string::npos);
}

TEST(NnCausalAttention, FusedWhileTheMaskBufferIsCausalComposedOtherwise) {
  manual_seed(8);
  Tensor q = leaf(heads_view(2, 40, 2, 8, kFloat32)), k = leaf(heads_view(2, 40, 2, 8, kFloat32)),
         v = leaf(heads_view(2, 40, 2, 8, kFloat32));
  Tensor mask = triu(ones({48, 48}), 1);
  nn::Dropout dropout(0.0);
  auto fused = nn::causal_attention("MultiHeadAttention", q, k, v, mask, 48, 2.0, dropout);
  EXPECT_EQ(fused.weights.grad_fn()->name(), "CausalQKSoftmaxBackward0");
  // dropout 0: one node from q, k and v, with PyTorch's name for weights @ values
  EXPECT_EQ(fused.context.grad_fn()->name(), "UnsafeViewBackward0");
  EXPECT_EQ(fused.context.grad_fn()->next_functions().size(), 3u);
  Tensor weights = softmax(masked_fill(matmul(q, k.transpose(2, 3)), triu(ones({40, 40}), 1).bool_(), -INFINITY) / 2.0, -1);
  EXPECT_EQ(mismatches<float>(fused.weights, weights), 0);
  EXPECT_EQ(mismatches<float>(fused.context, matmul(weights, v)), 0);
  // a user-changed buffer: the composed ops honour it as it is
  {
    NoGradGuard g;
    mask.fill_(0.0);
  }
  auto plain = nn::causal_attention("MultiHeadAttention", q, k, v, mask, 48, 2.0, dropout);
  EXPECT_EQ(plain.weights.grad_fn()->name(), "SoftmaxBackward0");
  EXPECT_EQ(bit_mismatches<float>(plain.weights, softmax(matmul(q, k.transpose(2, 3)) / 2.0, -1)), 0);
  EXPECT_EQ(plain.context.grad_fn()->name(), "UnsafeViewBackward0");
  try {
    nn::causal_attention("MultiHeadAttention", randn({7, 4}), randn({7, 4}), randn({7, 4}), triu(ones({6, 6}), 1), 6, 1.0, dropout);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[MultiHeadAttention] sequence length 7 exceeds context_length 6");
  }
}

TEST(NnCausalAttention, DropoutBetweenTheFusedOpsDrawsAsTheComposedOps) {
  // the same generator state gives the same dropout mask, so weights and context match
  Tensor q = randn({1, 2, 33, 4}), k = randn({1, 2, 33, 4}), v = randn({1, 2, 33, 4});
  nn::Dropout dropout(0.3);
  manual_seed(9);
  auto fused = nn::causal_attention("CausalAttention", q, k, v, triu(ones({33, 33}), 1), 33, 2.0, dropout);
  // with dropout, causal_matmul's node (from the weights and v); in eval mode, the one node (from q, k, v)
  auto edges = [&] {
    Tensor c = nn::causal_attention("CausalAttention", leaf(q), k, v, triu(ones({33, 33}), 1), 33, 2.0, dropout).context;
    return c.grad_fn()->next_functions().size();
  };
  EXPECT_EQ(edges(), 2u);
  dropout.eval();
  EXPECT_EQ(edges(), 3u);
  dropout.train();
  manual_seed(9);
  Tensor weights = dropout.forward(causal_softmax(matmul(q, k.transpose(2, 3)), 2.0));
  EXPECT_EQ(mismatches<float>(fused.weights, weights), 0);
  EXPECT_EQ(mismatches<float>(fused.context, matmul(weights, v)), 0);
}

// The modules' explicit choice: AttentionImpl::Fused records ag's causal ops and never reads the
// mask buffer (the triangle is causal by construction); Composed records PyTorch's ops with the
// buffer as it is; set_fused_attention(false) switches every module to Composed.
TEST(NnCausalAttention, TheModuleSaysWhichOpsItRecords) {
  manual_seed(4);
  nn::MultiHeadAttention mha(8, 8, 40, 0.0, 2);
  EXPECT_EQ(mha.attention, nn::AttentionImpl::Fused);  // the default
  Tensor x = randn({2, 40, 8});
  auto [out, weights] = mha.forward_with_weights(x);
  EXPECT_EQ(weights.grad_fn()->name(), "CausalQKSoftmaxBackward0");
  EXPECT_EQ(weights.shape().str(), "[2, 2, 40, 40]");
  EXPECT_EQ(bit_mismatches<float>(out, mha.forward(x)), 0);
  mha.attention = nn::AttentionImpl::Composed;
  auto [out_c, weights_c] = mha.forward_with_weights(x);
  EXPECT_EQ(weights_c.grad_fn()->name(), "SoftmaxBackward0");
  EXPECT_EQ(mismatches<float>(weights_c, weights), 0);
  EXPECT_EQ(mismatches<float>(out_c, out), 0);
  // a changed buffer: Composed honours it, Fused refuses it (never a silently different result)
  {
    NoGradGuard g;
    mha.mask.fill_(0.0);
  }
  EXPECT_GT(mha.forward_with_weights(x).second[0][0][0][1].item(), 0.0);  // the first query sees the second key
  mha.attention = nn::AttentionImpl::Fused;
  EXPECT_EQ(message([&] { mha.forward(x); }),
            "[MultiHeadAttention] fused causal attention (AttentionImpl::Fused) computes the causal mask triu(ones(T, T), 1) "
            "itself, but the mask buffer of shape [40, 40] is not that pattern; choose AttentionImpl::Composed to apply "
            "another mask");
  {
    NoGradGuard g;
    mha.mask.copy_(triu(ones({40, 40}), 1));
  }
  EXPECT_EQ(bit_mismatches<float>(mha.forward(x), out), 0);
  // the process-wide switch overrides a Fused module's choice
  nn::set_fused_attention(false);
  Tensor off = mha.forward_with_weights(x).second;
  nn::set_fused_attention(true);
  EXPECT_EQ(off.grad_fn()->name(), "SoftmaxBackward0");
  nn::CausalAttention ca(8, 4, 40, 0.0);
  EXPECT_EQ(ca.attention, nn::AttentionImpl::Fused);
  Tensor fused = ca.forward(x);
  ca.attention = nn::AttentionImpl::Composed;
  EXPECT_EQ(mismatches<float>(ca.forward(x), fused), 0);
  EXPECT_EQ(message([&] { mha.forward(randn({1, 41, 8})); }), "[MultiHeadAttention] sequence length 41 exceeds context_length 40");
  nn::Dropout dropout(0.0);
  EXPECT_EQ(message([&] {
              nn::causal_attention("CausalAttention", randn({3, 4}), randn({5, 4}), randn({5, 4}), triu(ones({6, 6}), 1), 6, 1.0,
                                   dropout, nn::AttentionImpl::Fused);
            }),
            "[CausalAttention] fused causal attention needs as many queries as keys, got [3, 4] and [5, 4]");
}

// The projections are built in the order the options say: that is the order they draw their
// weights from the generator and their order in parameters().
TEST(NnCausalAttention, MultiHeadAttentionBuildsItsProjectionsInTheOrderAsked) {
  manual_seed(5);
  nn::MultiHeadAttention seed(3, 4, 6, 0.0, 2);
  manual_seed(5);
  nn::MultiHeadAttention next_word(3, 4, 6, 0.0, 2, nn::MultiHeadAttentionOptions{.projection_order = nn::ProjectionOrder::QueryKeyValue});
  std::vector<std::string> names;
  for (const auto& [n, t] : next_word.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(bit_mismatches<float>(next_word.W_query->weight, seed.W_query->weight), 0);
  EXPECT_EQ(bit_mismatches<float>(next_word.W_key->weight, seed.W_value->weight), 0);  // the second drawn
  EXPECT_EQ(bit_mismatches<float>(next_word.W_value->weight, seed.W_key->weight), 0);  // the third
  EXPECT_EQ(bit_mismatches<float>(next_word.out_proj->weight, seed.out_proj->weight), 0);
  nn::MultiHeadAttention biased(3, 4, 6, 0.0, 2, nn::MultiHeadAttentionOptions{.qkv_bias = true, .attention = nn::AttentionImpl::Composed});
  EXPECT_EQ(biased.parameters().size(), 8u);
  EXPECT_EQ(biased.attention, nn::AttentionImpl::Composed);
}

// The kernels split the batch's matrices over get_num_threads() threads, each matrix computed by
// one thread: 1, 2, 3 and 16 threads (more threads than matrices too) give the same bits, forward and
// both gradients, including a batch count that does not divide evenly and inf/NaN in one matrix.
namespace {
std::vector<Tensor> attention_results(int threads, const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& up) {
  const int before = get_num_threads();
  set_num_threads(threads);
  Tensor q = leaf(q0), k = leaf(k0), v = leaf(v0);
  Tensor w = causal_qk_softmax(q, k, 3.0);
  Tensor out = causal_matmul(w, v);
  (out * up).sum().backward();
  set_num_threads(before);
  return {w, out, q.grad(), k.grad(), v.grad()};
}
}  // namespace

TEST(CausalAttention, SameBitsForEveryThreadCount) {
  manual_seed(7);
  for (DType dt : {kFloat32, kFloat64}) {
    for (int64_t b : {1, 3}) {
      // 7 heads of 200 x 200 x 64: enough work per call to be split (kMinParallelFlops), unevenly
      const Tensor q = heads_view(b, 200, 7, 64, dt), k = heads_view(b, 200, 7, 64, dt), v = heads_view(b, 200, 7, 64, dt);
      const Tensor up = randn({b, 7, 200, 64}, dt);
      if (b == 3) {
        NoGradGuard no_grad;
        v.select(0, 1).select(0, 2).select(0, 5).fill_(std::numeric_limits<double>::infinity());
      }
      const std::vector<Tensor> one = attention_results(1, q, k, v, up);
      for (int threads : {2, 3, 16}) {
        const std::vector<Tensor> many = attention_results(threads, q, k, v, up);
        for (std::size_t i = 0; i < one.size(); ++i) {
          const bool f32 = dt == kFloat32;
          EXPECT_EQ(f32 ? bit_mismatches<float>(one[i], many[i]) : bit_mismatches<double>(one[i], many[i]), 0)
              << "result " << i << ", batch " << b << ", " << threads << " threads";
        }
      }
    }
  }
}

TEST(Threads, SetAndGetNumThreadsLikePyTorch) {
  const int before = get_num_threads();
  EXPECT_GE(before, 1);
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  set_num_threads(before);
  EXPECT_EQ(get_num_threads(), before);
  EXPECT_THROW(
      try { set_num_threads(0); } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("set_num_threads"), std::string::npos) << e.what();
        throw;
      },
      std::invalid_argument);
}

// ---------------------------------------------------------------- causal_attention: both in one node
// causal_attention(q, k, v, d) runs the same GEMM calls as causal_matmul(causal_qk_softmax(q, k,
// d), v), forward and backward, so the out, the weights and all three gradients are the same bits.
namespace {

struct AttentionRun {
  std::vector<Tensor> results;  // out, weights, dq, dk, dv (undefined if not asked for)
};

AttentionRun run_attention(bool fused, const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& up, double d,
                           std::array<bool, 3> grads = {true, true, true}) {
  Tensor q = grads[0] ? leaf(q0) : q0.detach(), k = grads[1] ? leaf(k0) : k0.detach(), v = grads[2] ? leaf(v0) : v0.detach();
  Tensor out, w;
  if (fused) {
    auto r = causal_attention(q, k, v, d);
    out = r.out;
    w = r.weights;
    if (grads[0] || grads[1] || grads[2]) {  // PyTorch's name for weights @ values, edges to q, k, v
      EXPECT_EQ(out.grad_fn()->name(), std::string(q.dim() == 2 ? "MmBackward0" : "UnsafeViewBackward0"));
      EXPECT_EQ(out.grad_fn()->next_functions().size(), 3u);
    }
  } else {
    w = causal_qk_softmax(q, k, d);
    out = causal_matmul(w, v);
  }
  if (grads[0] || grads[1] || grads[2]) (out * up).sum().backward();
  return {{out, w, q.grad(), k.grad(), v.grad()}};
}

template <class T>
void expect_same_bits_as_two_ops(const Tensor& q, const Tensor& k, const Tensor& v, double d, const std::string& where,
                                 std::array<bool, 3> grads = {true, true, true}) {
  DimVector up_shape(q.shape().begin(), q.shape().end() - 1);
  up_shape.push_back(v.size(-1));
  const Tensor up = randn(up_shape, q.dtype());
  const AttentionRun a = run_attention(true, q, k, v, up, d, grads), b = run_attention(false, q, k, v, up, d, grads);
  const char* names[] = {"out", "weights", "dq", "dk", "dv"};
  for (std::size_t i = 0; i < a.results.size(); ++i) {
    ASSERT_EQ(a.results[i].defined(), b.results[i].defined()) << names[i] << ", " << where;
    if (i < 2) EXPECT_EQ(a.results[i].requires_grad(), b.results[i].requires_grad()) << names[i] << ", " << where;
    if (!a.results[i].defined()) continue;
    EXPECT_EQ(a.results[i].shape(), b.results[i].shape()) << names[i] << ", " << where;
    EXPECT_EQ(bit_mismatches<T>(a.results[i], b.results[i]), 0) << names[i] << ", " << where;
  }
}

}  // namespace

// (under every row kernel the CPU runs: the fused backward sums the softmax's g * y over the kept
// part of each row only, the two ops over the whole row)
TEST(CausalAttentionOp, SameBitsAsTheTwoOpsAcrossBlockSizes) {
  manual_seed(20);
  testutil::for_each_row_kernel([](const std::string& rows) {
    for (int64_t t : {1, 5, 63, 64, 65, 130, 200}) {
      const std::string where = rows + ", T " + std::to_string(t);
      expect_same_bits_as_two_ops<float>(heads_view(2, t, 2, 8, kFloat32), heads_view(2, t, 2, 8, kFloat32),
                                         heads_view(2, t, 2, 5, kFloat32), std::sqrt(8.0), where + ", float32 heads views");
      expect_same_bits_as_two_ops<double>(heads_view(1, t, 3, 4, kFloat64), heads_view(1, t, 3, 4, kFloat64),
                                          heads_view(1, t, 3, 6, kFloat64), 2.0, where + ", float64 heads views");
      expect_same_bits_as_two_ops<float>(randn({3, t, 16}), randn({3, t, 16}), randn({3, t, 16}), 4.0, where + ", contiguous");
    }
  });
}

TEST(CausalAttentionOp, SameBitsWhenRectangularStridedOrPartlyDifferentiated) {
  manual_seed(21);
  expect_same_bits_as_two_ops<float>(randn({2, 40, 8}), randn({2, 70, 8}), randn({2, 70, 3}), 2.0, "Tq < Tk");
  expect_same_bits_as_two_ops<float>(randn({2, 70, 8}), randn({2, 40, 8}), randn({2, 40, 3}), 2.0, "Tq > Tk");
  expect_same_bits_as_two_ops<float>(randn({2, 8, 70}).transpose(1, 2), randn({2, 70, 8}), randn({2, 3, 70}).transpose(1, 2),
                                     2.0, "q and v column-major");
  expect_same_bits_as_two_ops<double>(randn({5, 66, 4}, kFloat64).slice(0, 0, 5, 2), randn({3, 66, 4}, kFloat64),
                                      randn({3, 132, 4}, kFloat64).slice(1, 0, 132, 2), 1.5, "batch and row strides");
  expect_same_bits_as_two_ops<float>(randn({2, 70, 8}), randn({2, 70, 8}), randn({2, 70, 3}), 2.0, "only v", {false, false, true});
  expect_same_bits_as_two_ops<float>(randn({2, 70, 8}), randn({2, 70, 8}), randn({2, 70, 3}), 2.0, "only q", {true, false, false});
  expect_same_bits_as_two_ops<float>(randn({2, 70, 8}), randn({2, 70, 8}), randn({2, 70, 3}), 2.0, "k and v", {false, true, true});
  expect_same_bits_as_two_ops<float>(randn({2, 70, 8}), randn({2, 70, 8}), randn({2, 70, 3}), 2.0, "no grad", {false, false, false});
}

TEST(CausalAttentionOp, SameBitsWithInfAndNaNInEveryInputAndTheGradient) {
  manual_seed(22);
  for (int which = 0; which < 4; ++which) {
    Tensor q = randn({1, 2, 70, 8}), k = randn({1, 2, 70, 8}), v = randn({1, 2, 70, 8});
    Tensor& t = which == 0 ? q : which == 1 ? k : v;
    if (which < 3) {
      t.data_ptr<float>()[(1 * 70 + 50) * 8 + 3] = INFINITY;
      t.data_ptr<float>()[(0 * 70 + 2) * 8 + 1] = std::numeric_limits<float>::quiet_NaN();
      expect_same_bits_as_two_ops<float>(q, k, v, 2.0, "inf and NaN in input " + std::to_string(which));
      continue;
    }
    // a NaN in the upstream gradient: dv's skipped terms multiply it
    const Tensor up = randn({1, 2, 70, 8});
    up.data_ptr<float>()[(0 * 70 + 2) * 8 + 0] = std::numeric_limits<float>::quiet_NaN();
    const AttentionRun a = run_attention(true, q, k, v, up, 2.0), b = run_attention(false, q, k, v, up, 2.0);
    for (std::size_t i = 0; i < a.results.size(); ++i) EXPECT_EQ(bit_mismatches<float>(a.results[i], b.results[i]), 0) << i;
  }
}

TEST(CausalAttentionOp, EmptyAndZeroWidthShapesAsTheTwoOps) {
  manual_seed(23);
  expect_same_bits_as_two_ops<float>(randn({2, 3, 0}), randn({2, 3, 0}), randn({2, 3, 4}), 1.0, "E = 0");
  expect_same_bits_as_two_ops<float>(randn({2, 3, 4}), randn({2, 3, 4}), randn({2, 3, 0}), 1.0, "Ev = 0");
  expect_same_bits_as_two_ops<float>(randn({2, 0, 4}), randn({2, 3, 4}), randn({2, 3, 2}), 1.0, "Tq = 0");
  expect_same_bits_as_two_ops<float>(randn({2, 3, 4}), randn({2, 0, 4}), randn({2, 0, 2}), 1.0, "Tk = 0");
  expect_same_bits_as_two_ops<float>(randn({0, 3, 4}), randn({0, 3, 4}), randn({0, 3, 2}), 1.0, "no matrices");
}

TEST(CausalAttentionOp, TheWeightsKeepTheirOwnNodeForALossThatUsesThemToo) {
  manual_seed(24);
  const Tensor q0 = randn({2, 70, 8}, kFloat64), k0 = randn({2, 70, 8}, kFloat64), v0 = randn({2, 70, 3}, kFloat64);
  const Tensor up = randn({2, 70, 3}, kFloat64), upw = randn({2, 70, 70}, kFloat64);
  Tensor q = leaf(q0), k = leaf(k0), v = leaf(v0);
  auto r = causal_attention(q, k, v, 2.0);
  EXPECT_EQ(r.weights.grad_fn()->name(), "CausalQKSoftmaxBackward0");
  const auto next = r.out.grad_fn()->next_functions();
  ASSERT_EQ(next.size(), 3u);
  for (const auto& [node, nr] : next) EXPECT_EQ(node->name(), "AccumulateGrad");
  ((r.out * up).sum() + (r.weights * upw).sum()).backward();
  Tensor q2 = leaf(q0), k2 = leaf(k0), v2 = leaf(v0);
  Tensor w2 = causal_softmax(matmul(q2, k2.transpose(1, 2)), 2.0);
  ((matmul(w2, v2) * up).sum() + (w2 * upw).sum()).backward();
  EXPECT_EQ(mismatches<double>(q.grad(), q2.grad()), 0);
  EXPECT_EQ(mismatches<double>(k.grad(), k2.grad()), 0);
  EXPECT_EQ(mismatches<double>(v.grad(), v2.grad()), 0);
}

TEST(CausalAttentionOp, MatchesFiniteDifferencesToSecondOrder) {
  manual_seed(25);
  // 70 rows: a full block of 64 and a partial one; then more keys than queries
  auto f = [](const std::vector<Tensor>& in) { return causal_attention(in[0], in[1], in[2], 1.3).out; };
  auto both = [](const std::vector<Tensor>& in) {
    auto r = causal_attention(in[0], in[1], in[2], 1.3);
    return sum(r.out, {-1}, true) * r.weights;
  };
  std::vector<Tensor> in = {randn({1, 70, 2}, kFloat64).requires_grad_(), randn({1, 70, 2}, kFloat64).requires_grad_(),
                            randn({1, 70, 2}, kFloat64).requires_grad_()};
  EXPECT_NO_THROW(gradcheck(f, in));
  EXPECT_NO_THROW(gradcheck(both, in));
  std::vector<Tensor> small = {randn({2, 5, 3}, kFloat64).requires_grad_(), randn({2, 7, 3}, kFloat64).requires_grad_(),
                               randn({2, 7, 2}, kFloat64).requires_grad_()};
  EXPECT_NO_THROW(gradcheck(f, small));
  EXPECT_NO_THROW(gradgradcheck(f, small));
  EXPECT_NO_THROW(gradgradcheck(both, small));
  std::vector<Tensor> strided;
  for (const Tensor& t : small) strided.push_back(testutil::strided_leaf(t.detach()));
  EXPECT_NO_THROW(gradcheck(f, strided));
}

TEST(CausalAttentionOp, SameBitsForEveryThreadCount) {
  manual_seed(26);
  const Tensor q = heads_view(3, 200, 7, 64, kFloat32), k = heads_view(3, 200, 7, 64, kFloat32),
               v = heads_view(3, 200, 7, 64, kFloat32), up = randn({3, 7, 200, 64});
  {
    NoGradGuard no_grad;
    v.select(0, 1).select(0, 2).select(0, 5).fill_(std::numeric_limits<double>::infinity());
  }
  const int before = get_num_threads();
  std::vector<AttentionRun> runs;
  for (int threads : {1, 2, 3, 16}) {
    set_num_threads(threads);
    runs.push_back(run_attention(true, q, k, v, up, 8.0));
  }
  set_num_threads(before);
  for (std::size_t r = 1; r < runs.size(); ++r)
    for (std::size_t i = 0; i < runs[0].results.size(); ++i)
      EXPECT_EQ(bit_mismatches<float>(runs[0].results[i], runs[r].results[i]), 0) << "result " << i << ", run " << r;
}

TEST(CausalAttentionOp, RejectsMismatchedShapesAndDtypes) {
  EXPECT_EQ(message([] { causal_attention(randn({2, 5, 4}), randn({2, 6, 4}), randn({2, 5, 4})); }),
            "[causal_attention] expects keys (..., Tk, E) and values (..., Tk, Ev) of one floating point dtype with the same "
            "batch dims, got torch.float32 [2, 6, 4] and torch.float32 [2, 5, 4]");
  EXPECT_NE(message([] { causal_attention(randn({2, 5, 4}), randn({2, 5, 3}), randn({2, 5, 4})); }).find("[causal_attention] expects queries"),
            std::string::npos);
  EXPECT_NE(message([] { causal_attention(randn({2, 5, 4}), randn({2, 5, 4}), randn({2, 5, 4}, kFloat64)); }).find("float64"),
            std::string::npos);
  EXPECT_NE(message([] { causal_attention(randn({5}), randn({5}), randn({5})); }).find("[causal_attention]"), std::string::npos);
}

// ---- causal_attention_output: the out alone, no weights held (nn::scaled_dot_product_attention's
// causal path) ----

namespace {

// out and the three gradients (of sum(out * up)) by nn::scaled_dot_product_attention with
// is_causal (the fused node), and by the composed definition
// softmax(masked_fill(q k^T, above, -inf) / sqrt(E)) v
std::array<Tensor, 4> sdpa_run(bool fused, const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& up) {
  Tensor q = leaf(q0), k = leaf(k0), v = leaf(v0), out;
  if (fused) {
    out = nn::scaled_dot_product_attention(q, k, v, {}, true);
    EXPECT_EQ(out.grad_fn()->name(), "ScaledDotProductFlashAttentionForCpuBackward0");
  } else {
    const Tensor above = triu(ones({q.size(-2), k.size(-2)}), 1).bool_();
    out = matmul(softmax(masked_fill(matmul(q, k.transpose(-2, -1)), above, -INFINITY) / std::sqrt(double(q.size(-1))), -1), v);
  }
  (out * up).sum().backward();
  return {out, q.grad(), k.grad(), v.grad()};
}

template <class T>
void expect_sdpa_matches_composed(const Tensor& q, const Tensor& k, const Tensor& v, const std::string& where) {
  DimVector up_shape(q.shape().begin(), q.shape().end() - 1);
  up_shape.push_back(v.size(-1));
  const Tensor up = randn(up_shape, q.dtype());
  const auto a = sdpa_run(true, q, k, v, up), b = sdpa_run(false, q, k, v, up);
  const char* names[] = {"out", "dq", "dk", "dv"};
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(mismatches<T>(a[i], b[i]), 0) << names[i] << ", " << where;
}

}  // namespace

TEST(CausalAttentionOutput, MatchesTheComposedDefinitionAcrossBlockSizesForwardAndBackward) {
  manual_seed(40);
  for (int64_t t : {1, 7, 17, 63, 64, 65, 130}) {
    const std::string where = "T " + std::to_string(t);
    expect_sdpa_matches_composed<float>(heads_view(2, t, 2, 8, kFloat32), heads_view(2, t, 2, 8, kFloat32),
                                        heads_view(2, t, 2, 5, kFloat32), where + ", float32 heads views");
    expect_sdpa_matches_composed<double>(heads_view(1, t, 3, 4, kFloat64), heads_view(1, t, 3, 4, kFloat64),
                                         heads_view(1, t, 3, 6, kFloat64), where + ", float64 heads views");
  }
  expect_sdpa_matches_composed<float>(randn({2, 40, 8}), randn({2, 70, 8}), randn({2, 70, 3}), "L < S");
  expect_sdpa_matches_composed<double>(randn({3, 8, 70}, kFloat64).transpose(1, 2), randn({3, 70, 8}, kFloat64),
                                       randn({3, 3, 70}, kFloat64).transpose(1, 2), "q and v column-major");
}

// The same kernels with the weights in scratch, given again in the backward from the forward's
// per-row stats (shift and 1 / sum) in one pass: the same bits as causal_attention's kept weights,
// NaN and inf included (a NaN row, a row whose only score is -inf: sum 0, the row NaN), in both
// dtypes, at lengths around the vectors' and under every row kernel the CPU runs.
template <class T>
void expect_output_bits_as_kept_weights(int64_t t, const std::string& where) {
  const DType dt = std::is_same_v<T, float> ? kFloat32 : kFloat64;
  Tensor q = randn({1, 2, t, 8}, dt), k = randn({1, 2, t, 8}, dt), v = randn({1, 2, t, 8}, dt);
  v.data_ptr<T>()[(1 * t + t / 2) * 8 + 3] = std::numeric_limits<T>::infinity();
  q.data_ptr<T>()[(0 * t + 2) * 8 + 1] = std::numeric_limits<T>::quiet_NaN();
  q.data_ptr<T>()[(1 * t + 0) * 8 + 4] = T(1);  // head 1, query 0: its only score is -inf
  k.data_ptr<T>()[(1 * t + 0) * 8 + 4] = -std::numeric_limits<T>::infinity();
  const Tensor up = randn({1, 2, t, 8}, dt);
  Tensor q1 = leaf(q), k1 = leaf(k), v1 = leaf(v), q2 = leaf(q), k2 = leaf(k), v2 = leaf(v);
  const Tensor a = causal_attention_output(q1, k1, v1, 2.0), b = causal_attention(q2, k2, v2, 2.0).out;
  (a * up).sum().backward();
  (b * up).sum().backward();
  EXPECT_EQ(bit_mismatches<T>(a, b), 0) << where;
  EXPECT_EQ(bit_mismatches<T>(q1.grad(), q2.grad()), 0) << where;
  EXPECT_EQ(bit_mismatches<T>(k1.grad(), k2.grad()), 0) << where;
  EXPECT_EQ(bit_mismatches<T>(v1.grad(), v2.grad()), 0) << where;
  EXPECT_TRUE(std::isnan(a.to_vector<T>()[(1 * t + 0) * 8])) << where << ": the -inf row";
}

TEST(CausalAttentionOutput, SameBitsAsCausalAttentionsOutWithInfAndNaN) {
  manual_seed(44);
  testutil::for_each_row_kernel([](const std::string& rows) {
    for (int64_t t : {5, 17, 70}) {
      const std::string where = rows + ", T " + std::to_string(t);
      expect_output_bits_as_kept_weights<float>(t, where + ", float32");
      expect_output_bits_as_kept_weights<double>(t, where + ", float64");
    }
  });
}

TEST(CausalAttentionOutput, OneNodeStraightToQKAndV) {
  manual_seed(41);
  const Tensor q = leaf(randn({2, 3, 70, 8})), k = leaf(randn({2, 3, 70, 8})), v = leaf(randn({2, 3, 70, 8}));
  const Tensor out = causal_attention_output(q, k, v, 2.0);
  EXPECT_EQ(out.grad_fn()->name(), "ScaledDotProductFlashAttentionForCpuBackward0");
  ASSERT_EQ(out.grad_fn()->next_functions().size(), 3u);  // no weights node between
  for (const auto& [node, nr] : out.grad_fn()->next_functions()) EXPECT_EQ(node->name(), "AccumulateGrad");
  // with a mask or dropout, nn's scaled_dot_product_attention is the composed ops
  EXPECT_EQ(nn::scaled_dot_product_attention(q, k, v).grad_fn()->name(), "UnsafeViewBackward0");
  EXPECT_EQ(message([] { causal_attention_output(randn({2, 5, 4}), randn({2, 6, 4}), randn({2, 5, 4})); }),
            "[causal_attention_output] expects keys (..., Tk, E) and values (..., Tk, Ev) of one floating point dtype with the "
            "same batch dims, got torch.float32 [2, 6, 4] and torch.float32 [2, 5, 4]");
}

namespace {

// gradcheck (forward mode too) and gradgradcheck (reverse over reverse, and forward over reverse)
// of f at the float64 leaves `small`, then gradcheck (forward mode too) at strided copies of them
template <class F>
void expect_both_modes_to_second_order(const F& f, const std::vector<Tensor>& small) {
  EXPECT_NO_THROW(gradcheck(f, small, GradcheckOptions{.check_forward_ad = true}));
  EXPECT_NO_THROW(gradgradcheck(f, small));
  GradgradcheckOptions both_orders;
  both_orders.check_fwd_over_rev = true;
  EXPECT_NO_THROW(gradgradcheck(f, small, {}, both_orders));
  std::vector<Tensor> strided;
  for (const Tensor& t : small) strided.push_back(testutil::strided_leaf(t.detach()));
  EXPECT_NO_THROW(gradcheck(f, strided, GradcheckOptions{.check_forward_ad = true}));
}

}  // namespace

TEST(CausalAttentionOutput, MatchesFiniteDifferencesToSecondOrderInBothModes) {
  manual_seed(43);
  auto f = [](const std::vector<Tensor>& in) { return causal_attention_output(in[0], in[1], in[2], 1.3); };
  std::vector<Tensor> rows70 = {randn({1, 70, 2}, kFloat64).requires_grad_(), randn({1, 70, 2}, kFloat64).requires_grad_(),
                                randn({1, 70, 2}, kFloat64).requires_grad_()};
  EXPECT_NO_THROW(gradcheck(f, rows70, GradcheckOptions{.check_forward_ad = true}));
  expect_both_modes_to_second_order(f, {randn({2, 5, 3}, kFloat64).requires_grad_(), randn({2, 7, 3}, kFloat64).requires_grad_(),
                                        randn({2, 7, 2}, kFloat64).requires_grad_()});
}

// ---- causal_self_attention: the three projections, the heads and causal_attention_output in one
// node (nn::MultiHeadAttention's fused forward) ----

namespace {

// out and the four gradients (of sum(out * up)) by the one node, and by the ops it stands for:
// linear, view, transpose, causal_attention_output, transpose, reshape
std::array<Tensor, 5> self_attention_run(bool fused, const Tensor& x0, const std::array<Tensor, 3>& w0, int64_t heads,
                                         double divisor, const Tensor& up) {
  Tensor x = leaf(x0), wq = leaf(w0[0]), wk = leaf(w0[1]), wv = leaf(w0[2]), out;
  const int64_t b = x.size(0), t = x.size(1), d = wq.size(0);
  if (fused) {
    out = causal_self_attention(x, wq, wk, wv, heads, divisor);
    EXPECT_EQ(out.grad_fn()->name(), "CausalSelfAttentionBackward0");
  } else {
    auto split = [&](const Tensor& r) { return r.view({b, t, heads, d / heads}).transpose(1, 2); };
    out = causal_attention_output(split(linear(x, wq)), split(linear(x, wk)), split(linear(x, wv)), divisor)
              .transpose(1, 2)
              .reshape({b, t, d});
  }
  (out * up).sum().backward();
  return {out, x.grad(), wq.grad(), wk.grad(), wv.grad()};
}

template <class T>
void expect_self_attention_matches_ops(const Tensor& x, int64_t d, int64_t heads, const std::string& where) {
  const std::array<Tensor, 3> w{randn({d, x.size(2)}, x.dtype()), randn({d, x.size(2)}, x.dtype()), randn({d, x.size(2)}, x.dtype())};
  const Tensor up = randn({x.size(0), x.size(1), d}, x.dtype());
  const auto a = self_attention_run(true, x, w, heads, 1.7, up), b = self_attention_run(false, x, w, heads, 1.7, up);
  const char* names[] = {"out", "dx", "dwq", "dwk", "dwv"};
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(mismatches<T>(a[i], b[i]), 0) << names[i] << ", " << where;
}

}  // namespace

TEST(CausalSelfAttention, MatchesTheOpsItStandsForForwardAndBackward) {
  manual_seed(50);
  for (int64_t t : {1, 7, 17, 65}) {
    const std::string where = "T " + std::to_string(t);
    expect_self_attention_matches_ops<float>(randn({2, t, 16}), 16, 2, where + ", float32");
    expect_self_attention_matches_ops<double>(randn({1, t, 6}, kFloat64), 12, 3, where + ", float64, d_in != d");
    expect_self_attention_matches_ops<float>(randn({3, t, 8}), 8, 1, where + ", one head");
  }
  // a strided input (its rows copied for the GEMMs), no input features, no output features, an
  // empty batch
  expect_self_attention_matches_ops<double>(randn({10, 2, 5}, kFloat64).transpose(0, 1), 8, 4, "transposed x");
  expect_self_attention_matches_ops<float>(randn({2, 4, 0}), 8, 2, "d_in 0");
  expect_self_attention_matches_ops<float>(randn({2, 4, 3}), 0, 2, "d 0");
  const Tensor empty = causal_self_attention(randn({0, 4, 6}), randn({8, 6}), randn({8, 6}), randn({8, 6}), 2);
  EXPECT_EQ(empty.shape(), Size({0, 4, 8}));
}

TEST(CausalSelfAttention, OneNodeToXAndTheWeightsOnlyWhereAsked) {
  manual_seed(51);
  const Tensor x = leaf(randn({2, 5, 6})), wq = leaf(randn({4, 6})), wk = randn({4, 6}), wv = leaf(randn({4, 6}));
  const Tensor out = causal_self_attention(x, wq, wk, wv, 2);
  ASSERT_EQ(out.grad_fn()->next_functions().size(), 4u);
  EXPECT_EQ(out.grad_fn()->next_functions()[0].first->name(), "AccumulateGrad");
  EXPECT_EQ(out.grad_fn()->next_functions()[2].first, nullptr) << "wk needs no gradient";
  out.sum().backward();
  EXPECT_TRUE(x.grad().defined() && wq.grad().defined() && wv.grad().defined());
  EXPECT_FALSE(wk.grad().defined());
  // nothing requires grad: no node
  EXPECT_EQ(causal_self_attention(x.detach(), wq.detach(), wk, wv.detach(), 2).grad_fn(), nullptr);
  EXPECT_EQ(message([] { causal_self_attention(randn({2, 5, 6}), randn({4, 6}), randn({4, 5}), randn({4, 6}), 2); }),
            "[causal_self_attention] expects x (batch, T, d_in) and weights wq, wk, wv (d, d_in) of one floating point dtype, got "
            "torch.float32 [2, 5, 6], torch.float32 [4, 6], torch.float32 [4, 5] and torch.float32 [4, 6]");
  EXPECT_EQ(message([] { causal_self_attention(randn({2, 5, 6}), randn({4, 6}), randn({4, 6}), randn({4, 6}), 3); }),
            "[causal_self_attention] d = 4 must be divisible by heads = 3");
  EXPECT_EQ(message([] { causal_self_attention(randn({2, 5, 6}), randn({4, 6}), randn({4, 6}), randn({4, 6}), 0); }),
            "[causal_self_attention] heads must be at least 1, got 0");
  EXPECT_NE(message([] { causal_self_attention(randn({5, 6}), randn({4, 6}), randn({4, 6}), randn({4, 6}), 2); }).find("(batch, T, d_in)"),
            std::string::npos);
}

TEST(CausalSelfAttention, MatchesFiniteDifferencesToSecondOrderInBothModes) {
  manual_seed(52);
  auto f = [](const std::vector<Tensor>& in) { return causal_self_attention(in[0], in[1], in[2], in[3], 2, 1.3); };
  expect_both_modes_to_second_order(f, {randn({2, 5, 3}, kFloat64).requires_grad_(), randn({4, 3}, kFloat64).requires_grad_(),
                                        randn({4, 3}, kFloat64).requires_grad_(), randn({4, 3}, kFloat64).requires_grad_()});
}
