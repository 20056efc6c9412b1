// Random tensors, drawn exactly as PyTorch 1.13 draws them on the CPU (the AVX2 kernels, which
// PyTorch picks on every x86-64 CPU with AVX2): same seed, same bits. Spec and test vectors:
// ../shared/docs/torch-rng.md. Every function takes an optional generator; the default
// generator (manual_seed) is used otherwise.
#pragma once

#include <cstdint>
#include <vector>

#include "generator.h"
#include "tensor.h"

namespace ag {

// torch.rand: uniform [0, 1). float32 uses 24 bits of one draw, float64 53 bits of two.
Tensor rand(const DimVector& shape, Options o = {}, Generator* gen = nullptr);
// torch.randn: standard normal (scalar Box-Muller below 16 elements, the 16-lane block
// algorithm from 16 elements on).
Tensor randn(const DimVector& shape, Options o = {}, Generator* gen = nullptr);
// torch.randint(low, high, shape): integers in [low, high), int64 unless another dtype is given.
Tensor randint(int64_t low, int64_t high, const DimVector& shape, Options o = kInt64, Generator* gen = nullptr);
Tensor randint(int64_t high, const DimVector& shape, Options o = kInt64, Generator* gen = nullptr);
// torch.rand_like, randn_like, randint_like: random values of t's shape and dtype (unless o gives
// a dtype), drawn as PyTorch draws them: into an uninitialized tensor with t's strides when t's
// elements tile memory densely (a transposed matrix, for one; PyTorch's empty_like), else a
// contiguous one, filled in memory order.
Tensor rand_like(const Tensor& t, Options o = {}, Generator* gen = nullptr);
Tensor randn_like(const Tensor& t, Options o = {}, Generator* gen = nullptr);
Tensor randint_like(const Tensor& t, int64_t high, Options o = {}, Generator* gen = nullptr);
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, Options o = {}, Generator* gen = nullptr);
// torch.randperm(n): a random permutation of 0..n-1.
Tensor randperm(int64_t n, Options o = kInt64, Generator* gen = nullptr);

// torch.bernoulli(p): 1 with probability p (a floating tensor, each entry in [0, 1]), else 0, in
// p's dtype. Drawn in row-major order: float32 p compares 24 bits of one draw with p in float,
// float64 p 53 bits of two (as PyTorch 1.13). Gradient zero (BernoulliBackward0).
Tensor bernoulli(const Tensor& p, Generator* gen = nullptr);
// torch.bernoulli(t, p): a tensor of t's shape and dtype, 1 with probability p (bernoulli_(p));
// no gradient.
Tensor bernoulli(const Tensor& t, double p, Generator* gen = nullptr);
// torch.multinomial: num_samples category indices (int64) per row of probs (1-D (C) or 2-D (N,
// C); non-negative weights, normalized here), drawn as PyTorch 1.13 draws them (the same samples
// from the same seed). Without replacement: the Gumbel-max trick (Exp(1) noise for every entry,
// then the largest p / q); with replacement: a binary search of the cumulative distribution.
// Errors are PyTorch's: "cannot sample n_sample > prob_dist.size(-1) samples without
// replacement", "invalid multinomial distribution (sum of probabilities <= 0)", ...
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false, Generator* gen = nullptr);

// In place, filling elements in memory order (as PyTorch does for strided tensors).
Tensor& uniform_(Tensor& t, double from = 0.0, double to = 1.0, Generator* gen = nullptr);
Tensor& normal_(Tensor& t, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
Tensor& bernoulli_(Tensor& t, double p = 0.5, Generator* gen = nullptr);  // 1 with probability p
// Exp(lambd) samples: (-1 / lambd) log(1 - u) for a 53-bit uniform u, in double, then rounded to
// t's dtype (floating only).
Tensor& exponential_(Tensor& t, double lambd = 1.0, Generator* gen = nullptr);

// The float32 log and sincos of PyTorch's AVX2 normal kernel (avx_mathfun polynomials), exposed
// for their unit tests.
float avx_log(float x);
void avx_sincos(float t, float& s, float& c);

}  // namespace ag
