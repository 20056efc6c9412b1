// Kernels of nll_loss and cross_entropy (loss.cpp): loops over the rows and their targets, no
// history. The forward kernels compute the losses; the *_backward kernels are the fast paths of
// the rules written in loss.cpp, used when no graph of the backward is recorded, and must equal
// those rules to rounding (FastKernels.EqualTheRulesTheyStandInFor in tests/test_higher_order.cpp
// holds them to it).
//
// A loss's rows are (n, c) (or one row (c)); ids[i] is row i's target class, or -1 where the
// target is ignore_index; count is the number of rows that count (ids[i] >= 0).
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/tensor.h"

namespace ag::kernels {

// -(1/count) times the sum of logp[i, ids[i]] over the rows that count, summed in double; NaN if
// no row counts.
Tensor nll_loss(const Tensor& logp, const std::vector<int64_t>& ids, int64_t count);
// dlogp = -g / count at (i, ids[i]) for the rows that count, 0 elsewhere (shape (n, c) or (c)).
Tensor nll_loss_backward(const Tensor& g, const std::vector<int64_t>& ids, int64_t count, const Size& shape);
// True at (i, ids[i]) for the rows that count, false elsewhere: the mask of nll_loss's rule.
Tensor target_mask(const std::vector<int64_t>& ids, const Size& shape);

// nll_loss(log_softmax(logits)) with log_softmax's arithmetic, the same bits; `stats` (2, n) gets
// the per-row shift and log-sum of log_softmax, for the backward.
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& ids, int64_t count, Tensor& stats);
// dx = log_softmax's backward of nll_loss's -g/count at the targets, from the forward's stats.
Tensor cross_entropy_backward(const Tensor& g, const Tensor& logits, const Tensor& stats, const std::vector<int64_t>& ids,
                              int64_t count);

// dloss = nll_loss(dlogp) with dlogp = dx - sum(softmax(x) * dx) (log_softmax's jvp), for a
// tangent dx of the logits, from the forward's stats: the fast path of cross_entropy's jvp rule.
Tensor cross_entropy_jvp(const Tensor& dlogits, const Tensor& logits, const Tensor& stats, const std::vector<int64_t>& ids,
                         int64_t count);

}  // namespace ag::kernels
