// handwritten_toy: the toy TinyCausalLM training step of bench/train_step written by hand, llm.c
// style (train_gpt2.c): forward, backward and Adam as plain loops over float arrays, no graph, no
// allocation in the timed loop. It is the floor of what the toy step can cost, to set train_step's
// time against. The initial weights and data come from ag exactly as train_step builds them
// (manual_seed(0), TinyCausalLM, randint), so loss_first is the same and loss_last agrees to
// float32 summation order. Same CLI and --json keys as train_step; only --size toy.
//
// The model, B batches of T tokens, C = d channels, NH heads of HS = C / NH, vocabulary V:
//   x      = tok[idx] + pos[0..T-1]                                  (B,T,C)
//   q,k,v  = x Wq^T, x Wk^T, x Wv^T                                  (B,T,C) each, no bias
//   att    = softmax(q k^T / sqrt(HS), causal: -inf where key > query) (B,NH,T,T) per head
//   ctx    = att @ v                                                 (B,T,C), heads side by side
//   a      = ctx Wo^T + bo                                           (B,T,C)
//   r      = x + a                                                   (B,T,C)
//   logits = r Wh^T + bh                                             (B,T,V)
//   loss   = mean over B*T of -log softmax(logits)[target]
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "next_word/model.h"
#include "step_bench.h"

namespace {

// ---------------------------------------------------------------------------------------------
// parameters: one flat float array, named views into it (llm.c's ParameterTensors)

struct Dims {
  int B, T, C, NH, V;
};

constexpr int kNumParams = 9;

struct Params {
  float* tok;  // (V,C)
  float* pos;  // (T,C)
  float* wq;   // (C,C)
  float* wk;   // (C,C)
  float* wv;   // (C,C)
  float* wo;   // (C,C)
  float* bo;   // (C)
  float* wh;   // (V,C)
  float* bh;   // (V)
};

// sizes in the order of Params' fields (and of TinyCausalLM::parameters())
std::array<size_t, kNumParams> param_sizes(const Dims& d) {
  const size_t V = d.V, T = d.T, C = d.C;
  return {V * C, T * C, C * C, C * C, C * C, C * C, C, V * C, V};
}

// points each field at the next sizes[i] floats of `memory`
template <size_t N>
void point_fields(float* memory, const std::array<float**, N>& fields, const std::array<size_t, N>& sizes) {
  for (size_t i = 0; i < N; ++i) {
    *fields[i] = memory;
    memory += sizes[i];
  }
}

Params point_params(float* memory, const Dims& d) {
  Params p{};
  point_fields<kNumParams>(memory, {&p.tok, &p.pos, &p.wq, &p.wk, &p.wv, &p.wo, &p.bo, &p.wh, &p.bh}, param_sizes(d));
  return p;
}

// activations (llm.c's ActivationTensors): what the backward needs from the forward
struct Acts {
  float* x;       // (B,T,C) embeddings
  float* q;       // (B,T,C)
  float* k;       // (B,T,C)
  float* v;       // (B,T,C)
  float* att;     // (B,NH,T,T) softmax weights, 0 above the diagonal
  float* ctx;     // (B,T,C)
  float* a;       // (B,T,C) attention output
  float* r;       // (B,T,C) residual x + a
  float* logits;  // (B,T,V)
  float* probs;   // (B,T,V) softmax(logits)
};

constexpr int kNumActs = 10;

std::array<size_t, kNumActs> act_sizes(const Dims& d) {
  const size_t BTC = static_cast<size_t>(d.B) * d.T * d.C, BTV = static_cast<size_t>(d.B) * d.T * d.V;
  return {BTC, BTC, BTC, BTC, static_cast<size_t>(d.B) * d.NH * d.T * d.T, BTC, BTC, BTC, BTV, BTV};
}

Acts point_acts(float* memory, const Dims& d) {
  Acts s{};
  point_fields<kNumActs>(memory, {&s.x, &s.q, &s.k, &s.v, &s.att, &s.ctx, &s.a, &s.r, &s.logits, &s.probs}, act_sizes(d));
  return s;
}

// ---------------------------------------------------------------------------------------------
// layers: each forward, then its backward restating the line it differentiates. Backward passes
// accumulate (+=) into gradients the caller zeroed.

// x[b,t,:] = tok[idx[b,t],:] + pos[t,:]      idx (B,T), tok (V,C), pos (T,C) -> x (B,T,C)
void encoder_forward(float* x, const int64_t* idx, const float* tok, const float* pos, int B, int T, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      float* xo = x + (b * T + t) * C;
      const float* te = tok + idx[b * T + t] * C;
      const float* pe = pos + t * C;
      for (int c = 0; c < C; ++c) xo[c] = te[c] + pe[c];
    }
}

// x = tok[idx] + pos  =>  dtok[idx[b,t]] += dx[b,t], dpos[t] += dx[b,t]
void encoder_backward(float* dtok, float* dpos, const float* dx, const int64_t* idx, int B, int T, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const float* g = dx + (b * T + t) * C;
      float* dte = dtok + idx[b * T + t] * C;
      float* dpe = dpos + t * C;
      for (int c = 0; c < C; ++c) {
        dte[c] += g[c];
        dpe[c] += g[c];
      }
    }
}

// out = inp W^T + bias      inp (N,C), W (OC,C), bias (OC) or null -> out (N,OC), N = B*T
void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) {
  for (int n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    for (int o = 0; o < OC; ++o) {
      const float* wrow = w + o * C;
      float s = bias ? bias[o] : 0.0f;
      for (int c = 0; c < C; ++c) s += x[c] * wrow[c];
      out[n * OC + o] = s;
    }
  }
}

// out = inp W^T + bias  =>  dinp += dout W, dW += dout^T inp, dbias += sum over rows of dout
void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w, int N, int C,
                     int OC) {
  for (int n = 0; n < N; ++n) {
    const float* g = dout + n * OC;
    const float* x = inp + n * C;
    float* dx = dinp + n * C;
    for (int o = 0; o < OC; ++o) {
      const float* wrow = w + o * C;
      float* dwrow = dw + o * C;
      for (int c = 0; c < C; ++c) {
        dx[c] += g[o] * wrow[c];
        dwrow[c] += g[o] * x[c];
      }
      if (dbias) dbias[o] += g[o];
    }
  }
}

// per batch b and head h (columns h*HS .. h*HS+HS-1 of q, k, v, ctx):
//   att[b,h,t,:] = softmax_{t2 <= t}(q[b,t] . k[b,t2] / sqrt(HS)), 0 for t2 > t (the causal mask)
//   ctx[b,t]     = sum_{t2 <= t} att[b,h,t,t2] v[b,t2]
// q, k, v (B,T,C) -> att (B,NH,T,T), ctx (B,T,C)
void attention_forward(float* ctx, float* att, const float* q, const float* k, const float* v, int B, int T, int C, int NH) {
  const int HS = C / NH;
  const float divisor = std::sqrt(static_cast<float>(HS));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const float* qt = q + (b * T + t) * C + h * HS;
        float* row = att + ((b * NH + h) * T + t) * T;
        float maxval = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* kt2 = k + (b * T + t2) * C + h * HS;
          float s = 0.0f;
          for (int i = 0; i < HS; ++i) s += qt[i] * kt2[i];
          row[t2] = s / divisor;
          maxval = std::max(maxval, row[t2]);
        }
        float sum = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          row[t2] = std::exp(row[t2] - maxval);
          sum += row[t2];
        }
        for (int t2 = 0; t2 <= t; ++t2) row[t2] /= sum;
        for (int t2 = t + 1; t2 < T; ++t2) row[t2] = 0.0f;  // exp(-inf) of the masked scores
        float* out = ctx + (b * T + t) * C + h * HS;
        for (int i = 0; i < HS; ++i) out[i] = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* vt2 = v + (b * T + t2) * C + h * HS;
          for (int i = 0; i < HS; ++i) out[i] += row[t2] * vt2[i];
        }
      }
}

// ctx[t]  = sum_t2 att[t,t2] v[t2]               =>  datt[t,t2] = dctx[t] . v[t2],  dv[t2] += att[t,t2] dctx[t]
// att[t]  = softmax(s[t])                         =>  ds[t,t2] = att[t,t2] (datt[t,t2] - sum_j att[t,j] datt[t,j])
// s[t,t2] = q[t] . k[t2] / sqrt(HS)               =>  dq[t] += ds[t,t2] k[t2] / sqrt(HS),  dk[t2] += ds[t,t2] q[t] / sqrt(HS)
// datt (T) is scratch for one row.
void attention_backward(float* dq, float* dk, float* dv, float* datt, const float* dctx, const float* att, const float* q,
                        const float* k, const float* v, int B, int T, int C, int NH) {
  const int HS = C / NH;
  const float divisor = std::sqrt(static_cast<float>(HS));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const float* row = att + ((b * NH + h) * T + t) * T;
        const float* g = dctx + (b * T + t) * C + h * HS;
        float dot = 0.0f;  // sum_j att[t,j] datt[t,j]
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* vt2 = v + (b * T + t2) * C + h * HS;
          float* dvt2 = dv + (b * T + t2) * C + h * HS;
          float s = 0.0f;
          for (int i = 0; i < HS; ++i) {
            s += g[i] * vt2[i];
            dvt2[i] += row[t2] * g[i];
          }
          datt[t2] = s;
          dot += row[t2] * s;
        }
        const float* qt = q + (b * T + t) * C + h * HS;
        float* dqt = dq + (b * T + t) * C + h * HS;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float ds = row[t2] * (datt[t2] - dot) / divisor;
          const float* kt2 = k + (b * T + t2) * C + h * HS;
          float* dkt2 = dk + (b * T + t2) * C + h * HS;
          for (int i = 0; i < HS; ++i) {
            dqt[i] += ds * kt2[i];
            dkt2[i] += ds * qt[i];
          }
        }
      }
}

// out = a + b      (N)
void residual_forward(float* out, const float* a, const float* b, int N) {
  for (int i = 0; i < N; ++i) out[i] = a[i] + b[i];
}

// out = a + b  =>  da += dout, db += dout
void residual_backward(float* da, float* db, const float* dout, int N) {
  for (int i = 0; i < N; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

// probs[n] = softmax(logits[n]),  loss = mean_n -log probs[n, target[n]]      logits (N,V) -> scalar
// (the log-probability as (l - max) - log sum exp(l - max), as log_softmax computes it)
float crossentropy_forward(float* probs, const float* logits, const int64_t* targets, int N, int V) {
  double total = 0.0;
  for (int n = 0; n < N; ++n) {
    const float* l = logits + n * V;
    float* p = probs + n * V;
    float maxval = -INFINITY;
    for (int i = 0; i < V; ++i) maxval = std::max(maxval, l[i]);
    float sum = 0.0f;
    for (int i = 0; i < V; ++i) {
      p[i] = std::exp(l[i] - maxval);
      sum += p[i];
    }
    for (int i = 0; i < V; ++i) p[i] /= sum;
    total -= (l[targets[n]] - maxval) - std::log(sum);
  }
  return static_cast<float>(total / N);
}

// loss = mean_n -log softmax(logits[n])[target[n]]  =>  dlogits[n] = (probs[n] - onehot(target[n])) / N
void crossentropy_backward(float* dlogits, const float* probs, const int64_t* targets, int N, int V) {
  const float inv_n = 1.0f / static_cast<float>(N);
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < V; ++i) dlogits[n * V + i] = (probs[n * V + i] - (i == targets[n] ? 1.0f : 0.0f)) * inv_n;
}

// torch.optim.Adam (no weight decay, no amsgrad), step t (from 1) for every parameter:
//   m = b1 m + (1-b1) g,  v = b2 v + (1-b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
void adam_update(float* p, const float* g, float* m, float* v, size_t n, int t, double lr, double b1, double b2, double eps) {
  const float step_size = static_cast<float>(lr / (1 - std::pow(b1, t)));
  const float bc2_sqrt = static_cast<float>(std::sqrt(1 - std::pow(b2, t)));
  const float beta1 = static_cast<float>(b1), beta2 = static_cast<float>(b2);
  const float one_m_b1 = static_cast<float>(1 - b1), one_m_b2 = static_cast<float>(1 - b2), epsf = static_cast<float>(eps);
  for (size_t i = 0; i < n; ++i) {
    m[i] = m[i] * beta1 + one_m_b1 * g[i];
    v[i] = v[i] * beta2 + one_m_b2 * (g[i] * g[i]);
    p[i] -= step_size * (m[i] / (std::sqrt(v[i]) / bc2_sqrt + epsf));
  }
}

// ---------------------------------------------------------------------------------------------
// the model: all memory allocated once in the constructor

struct ToyModel {
  Dims d;
  size_t n_params = 0, n_acts = 0;
  std::vector<float> param_mem, grad_mem, m_mem, v_mem, act_mem, dact_mem, datt_row;
  Params params{}, grads{};
  Acts acts{}, dacts{};
  int adam_t = 0;

  explicit ToyModel(const Dims& dims) : d(dims) {
    for (size_t s : param_sizes(d)) n_params += s;
    for (size_t s : act_sizes(d)) n_acts += s;
    param_mem.assign(n_params, 0.0f);
    grad_mem.assign(n_params, 0.0f);
    m_mem.assign(n_params, 0.0f);
    v_mem.assign(n_params, 0.0f);
    act_mem.assign(n_acts, 0.0f);
    dact_mem.assign(n_acts, 0.0f);
    datt_row.assign(d.T, 0.0f);
    params = point_params(param_mem.data(), d);
    grads = point_params(grad_mem.data(), d);
    acts = point_acts(act_mem.data(), d);
    dacts = point_acts(dact_mem.data(), d);
  }
  ToyModel(const ToyModel&) = delete;  // params, grads, acts point into this object's vectors
  ToyModel& operator=(const ToyModel&) = delete;

  float forward(const int64_t* idx, const int64_t* targets) {
    const int N = d.B * d.T, C = d.C;
    const Params& p = params;
    const Acts& s = acts;
    encoder_forward(s.x, idx, p.tok, p.pos, d.B, d.T, C);
    matmul_forward(s.q, s.x, p.wq, nullptr, N, C, C);
    matmul_forward(s.k, s.x, p.wk, nullptr, N, C, C);
    matmul_forward(s.v, s.x, p.wv, nullptr, N, C, C);
    attention_forward(s.ctx, s.att, s.q, s.k, s.v, d.B, d.T, C, d.NH);
    matmul_forward(s.a, s.ctx, p.wo, p.bo, N, C, C);
    residual_forward(s.r, s.x, s.a, N * C);
    matmul_forward(s.logits, s.r, p.wh, p.bh, N, C, d.V);
    return crossentropy_forward(s.probs, s.logits, targets, N, d.V);
  }

  // the forward's lines in reverse; dacts.probs is unused (the cross entropy goes straight to dlogits)
  void backward(const int64_t* idx, const int64_t* targets) {
    const int N = d.B * d.T, C = d.C;
    const Params &p = params, &gp = grads;
    const Acts &s = acts, &g = dacts;
    std::fill(dact_mem.begin(), dact_mem.end(), 0.0f);
    crossentropy_backward(g.logits, s.probs, targets, N, d.V);
    matmul_backward(g.r, gp.wh, gp.bh, g.logits, s.r, p.wh, N, C, d.V);
    residual_backward(g.x, g.a, g.r, N * C);
    matmul_backward(g.ctx, gp.wo, gp.bo, g.a, s.ctx, p.wo, N, C, C);
    attention_backward(g.q, g.k, g.v, datt_row.data(), g.ctx, s.att, s.q, s.k, s.v, d.B, d.T, C, d.NH);
    matmul_backward(g.x, gp.wq, nullptr, g.q, s.x, p.wq, N, C, C);
    matmul_backward(g.x, gp.wk, nullptr, g.k, s.x, p.wk, N, C, C);
    matmul_backward(g.x, gp.wv, nullptr, g.v, s.x, p.wv, N, C, C);
    encoder_backward(gp.tok, gp.pos, g.x, idx, d.B, d.T, C);
  }

  void adam_step(double lr) {
    ++adam_t;
    adam_update(param_mem.data(), grad_mem.data(), m_mem.data(), v_mem.data(), n_params, adam_t, lr, 0.9, 0.999, 1e-8);
  }

  void zero_grad() { std::fill(grad_mem.begin(), grad_mem.end(), 0.0f); }
};

// copies a float32 ag tensor's elements (row-major) to dst, checking the count
void copy_tensor(float* dst, const ag::Tensor& t, size_t expected, const std::string& name) {
  const ag::Tensor c = t.contiguous();
  if (static_cast<size_t>(c.numel()) != expected) {
    throw std::runtime_error("parameter " + name + " has " + std::to_string(c.numel()) + " elements, expected " +
                             std::to_string(expected));
  }
  std::memcpy(dst, c.data_ptr<float>(), expected * sizeof(float));
}

}  // namespace

int main(int argc, char** argv) {
  step_bench::Cli cli;
  const int rc =
      step_bench::parse(argc, argv, "handwritten_toy",
                        "Time the toy TinyCausalLM Adam step written by hand (plain loops, no graph), to set train_step against",
                        {{"toy", {500, 50}}}, cli, [](const step_bench::Cli& c) {
                          if (c.threads != 1)
                            throw std::invalid_argument("--threads must be 1 (the hand-written step is single-threaded loops)");
                        });
  if (rc >= 0) return rc;
  const Dims d{.B = 1, .T = 5, .C = 16, .NH = 2, .V = 6};

  // initial weights and data from ag, as train_step makes them; no ag after this block
  ToyModel model(d);
  std::vector<int64_t> idx(d.B * d.T), targets(d.B * d.T);
  try {
    using namespace ag;
    manual_seed(0);
    next_word::TinyCausalLM init(d.V, d.T, d.C, d.NH, 0.0);
    const Tensor idx_t = randint(0, d.V, {d.B, d.T}).contiguous();
    const Tensor targets_t = randint(0, d.V, {d.B, d.T}).contiguous();
    std::copy_n(idx_t.data_ptr<int64_t>(), idx.size(), idx.begin());
    std::copy_n(targets_t.data_ptr<int64_t>(), targets.size(), targets.begin());
    const auto named = init.named_parameters();
    const char* names[kNumParams] = {"tok.weight",         "pos.weight",          "attn.W_query.weight",
                                     "attn.W_key.weight",  "attn.W_value.weight", "attn.out_proj.weight",
                                     "attn.out_proj.bias", "head.weight",         "head.bias"};
    if (named.size() != kNumParams)
      throw std::runtime_error("TinyCausalLM has " + std::to_string(named.size()) + " parameters, expected 9");
    const auto sizes = param_sizes(d);
    float* dst = model.param_mem.data();
    for (int i = 0; i < kNumParams; ++i) {
      if (named[i].first != names[i])
        throw std::runtime_error("parameter " + std::to_string(i) + " is " + named[i].first + ", expected " + names[i]);
      copy_tensor(dst, named[i].second, sizes[i], names[i]);
      dst += sizes[i];
    }
  } catch (const std::exception& e) {  // a changed TinyCausalLM no longer fits the loops
    std::fprintf(stderr, "handwritten_toy: %s\n", e.what());
    return 1;
  }

  auto step = [&]() {
    model.zero_grad();
    const float loss = model.forward(idx.data(), targets.data());
    model.backward(idx.data(), targets.data());
    model.adam_step(1e-3);
    return static_cast<double>(loss);
  };
  const step_bench::Times times = step_bench::time_steps(cli.warmup, cli.steps, step);
  step_bench::report("TinyCausalLM by hand", cli, {d.V, d.T, d.C, d.NH, d.B}, times, static_cast<int64_t>(model.n_params));
  return 0;
}
