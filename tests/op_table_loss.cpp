// The op table's loss group (see op_table.h): the losses' reductions, cross_entropy's spatial,
// probability and label-smoothing forms, and the losses of issue 13 (l1, smooth_l1, huber, binary
// cross entropy with and without logits, kl_div). The first-round losses (mean reductions,
// layer_norm) are in the core group.
#include "op_table.h"

namespace optable {

namespace {

using namespace ag;

constexpr Domain kProbability{0.05, 0.95};  // binary cross entropy's input; kl_div's target

// A loss of a against a fresh target of its shape (or b when it has a's shape).
Fuzz loss_fuzz(std::function<Tensor(const Tensor&, const Tensor&)> f, std::string name, std::optional<Domain> domain = std::nullopt) {
  return [f = std::move(f), name = std::move(name), domain](std::mt19937_64& rng, const Size& sa, const Size& sb) -> std::optional<FuzzStep> {
    auto in = [domain](const Tensor& t) { return domain ? into(t, *domain) : t; };
    if (sa == sb) return FuzzStep{[f, in](const Tensor& a, const Tensor& b) { return f(in(a), in(b)); }, name + "(a, b)"};
    Tensor target = fuzz_values(rng, sa);
    return FuzzStep{[f, in, target](const Tensor& a, const Tensor&) { return f(in(a), in(target)); }, name + "(a, constant)"};
  };
}

}  // namespace

std::vector<OpInfo> loss_ops() {
  return {
      {.name = "mse_loss_sum",
       .torch = "F.mse_loss(x[0], x[1], reduction='sum')",
       .fn = [](auto& x) { return mse_loss(x[0], x[1], "sum"); },
       .samples = {{{{3, 4}, {3, 4}}}, {{{}, {}}}, {{{0, 2}, {0, 2}}}}},
      {.name = "mse_loss_none",
       .torch = "F.mse_loss(x[0], x[1], reduction='none')",
       .fn = [](auto& x) { return mse_loss(x[0], x[1], "none"); },
       .samples = {{{{3, 4}, {3, 4}}}, {{{}, {}}}},
       .fuzz = loss_fuzz([](const Tensor& a, const Tensor& b) { return mse_loss(a, b, "none"); }, "mse_loss_none")},
      {.name = "nll_loss_none",
       .torch = "F.nll_loss(x[0], torch.tensor([1, 0, 3]), reduction='none')",
       .fn = [](auto& x) { return nll_loss(x[0], tensor({1, 0, 3}), -100, "none"); },
       .samples = {{{{3, 4}}}}},
      {.name = "nll_loss_sum_ignore",
       .torch = "F.nll_loss(x[0], torch.tensor([1, 0, 3]), ignore_index=0, reduction='sum')",
       .fn = [](auto& x) { return nll_loss(x[0], tensor({1, 0, 3}), 0, "sum"); },
       .samples = {{{{3, 4}}}}},
      {.name = "cross_entropy_none",
       .torch = "F.cross_entropy(x[0], torch.tensor([1, 0, 3]), reduction='none')",
       .fn = [](auto& x) { return cross_entropy(x[0], tensor({1, 0, 3}), -100, "none"); },
       .samples = {{{{3, 4}}}}},
      {.name = "cross_entropy_sum_ignore",
       .torch = "F.cross_entropy(x[0], torch.tensor([1, 0, 3]), ignore_index=3, reduction='sum')",
       .fn = [](auto& x) { return cross_entropy(x[0], tensor({1, 0, 3}), 3, "sum"); },
       .samples = {{{{3, 4}}}}},
      {.name = "cross_entropy_1d",
       .torch = "F.cross_entropy(x[0], torch.tensor(2))",
       .fn = [](auto& x) { return cross_entropy(x[0], tensor(2)); },
       .samples = {{{{4}}}}},
      {.name = "cross_entropy_3d_ignore",
       .torch = "F.cross_entropy(x[0], torch.tensor([[0, 1, 2, -100], [2, 2, 0, 1]]))",
       .fn = [](auto& x) { return cross_entropy(x[0], tensor({{0, 1, 2, -100}, {2, 2, 0, 1}})); },
       .samples = {{{{2, 3, 4}}}}},
      {.name = "cross_entropy_4d_none",
       .torch = "F.cross_entropy(x[0], torch.tensor([[[0, 1], [2, 1]], [[2, 2], [0, 1]]]), reduction='none')",
       .fn = [](auto& x) { return cross_entropy(x[0], tensor({{{0, 1}, {2, 1}}, {{2, 2}, {0, 1}}}), -100, "none"); },
       .samples = {{{{2, 3, 2, 2}}}}},
      {.name = "cross_entropy_probs",
       .torch = "F.cross_entropy(x[0], x[1])",
       .fn = [](auto& x) { return cross_entropy(x[0], x[1]); },
       .samples = {{{{3, 4}, {3, 4}}}, {{{4}, {4}}}, {{{2, 3, 2}, {2, 3, 2}}}}},
      {.name = "cross_entropy_probs_none_smoothing",
       .torch = "F.cross_entropy(x[0], x[1], reduction='none', label_smoothing=0.2)",
       .fn = [](auto& x) { return cross_entropy(x[0], x[1], -100, "none", 0.2); },
       .samples = {{{{3, 4}, {3, 4}}}}},
      {.name = "cross_entropy_smoothing_ignore",
       .torch = "F.cross_entropy(x[0], torch.tensor([1, -100, 3]), label_smoothing=0.1)",
       .fn = [](auto& x) { return cross_entropy(x[0], tensor({1, -100, 3}), -100, "mean", 0.1); },
       .samples = {{{{3, 4}}}}},
      {.name = "cross_entropy_smoothing_sum_3d",
       .torch = "F.cross_entropy(x[0], torch.tensor([[0, 1, 2, 1], [2, 2, 0, 1]]), reduction='sum', label_smoothing=0.3)",
       .fn = [](auto& x) { return cross_entropy(x[0], tensor({{0, 1, 2, 1}, {2, 2, 0, 1}}), -100, "sum", 0.3); },
       .samples = {{{{2, 3, 4}}}}},
      {.name = "l1_loss",
       .torch = "F.l1_loss(x[0], x[1])",
       .fn = [](auto& x) { return l1_loss(x[0], x[1]); },
       .samples = {{{{3, 4}, {3, 4}}}, {{{}, {}}}},
       .fuzz = loss_fuzz([](const Tensor& a, const Tensor& b) { return l1_loss(a, b); }, "l1_loss")},
      {.name = "l1_loss_none",
       .torch = "F.l1_loss(x[0], x[1], reduction='none')",
       .fn = [](auto& x) { return l1_loss(x[0], x[1], "none"); },
       .samples = {{{{2, 3}, {2, 3}}}},
       .floating_only = false},
      {.name = "smooth_l1_loss",
       .torch = "F.smooth_l1_loss(x[0], x[1], beta=0.5)",
       .fn = [](auto& x) { return smooth_l1_loss(x[0], x[1], "mean", 0.5); },
       .samples = {{{{3, 4}, {3, 4}}}, {{{}, {}}}},
       .fuzz = loss_fuzz([](const Tensor& a, const Tensor& b) { return smooth_l1_loss(a, b); }, "smooth_l1_loss")},
      {.name = "smooth_l1_loss_none_beta0",
       .torch = "F.smooth_l1_loss(x[0], x[1], reduction='none', beta=0.0)",
       .fn = [](auto& x) { return smooth_l1_loss(x[0], x[1], "none", 0.0); },
       .samples = {{{{2, 3}, {2, 3}}}}},
      {.name = "huber_loss",
       .torch = "F.huber_loss(x[0], x[1], reduction='sum', delta=0.7)",
       .fn = [](auto& x) { return huber_loss(x[0], x[1], "sum", 0.7); },
       .samples = {{{{3, 4}, {3, 4}}}, {{{}, {}}}},
       .fuzz = loss_fuzz([](const Tensor& a, const Tensor& b) { return huber_loss(a, b, "sum", 0.7); }, "huber_loss")},
      {.name = "binary_cross_entropy",
       .torch = "F.binary_cross_entropy(x[0], x[1])",
       .fn = [](auto& x) { return binary_cross_entropy(x[0], x[1]); },
       .samples = {{{{3, 4}, {3, 4}}}, {{{}, {}}}},
       .domain = kProbability,
       .fuzz = loss_fuzz([](const Tensor& a, const Tensor& b) { return binary_cross_entropy(a, b); }, "binary_cross_entropy",
                         kProbability)},
      {.name = "binary_cross_entropy_weight_none",
       .torch = "F.binary_cross_entropy(x[0], x[1], weight=torch.tensor([0.5, 2.0, 1.0], dtype=x[0].dtype), reduction='none')",
       .fn = [](auto& x) { return binary_cross_entropy(x[0], x[1], tensor({0.5, 2.0, 1.0}, x[0].dtype()), "none"); },
       .samples = {{{{2, 3}, {2, 3}}}},
       .domain = kProbability},
      {.name = "binary_cross_entropy_with_logits",
       .torch = "F.binary_cross_entropy_with_logits(x[0], x[1])",
       .fn = [](auto& x) { return binary_cross_entropy_with_logits(x[0], x[1]); },
       .samples = {{{{3, 4}, {3, 4}}}, {{{}, {}}}},
       .fuzz = loss_fuzz([](const Tensor& a, const Tensor& b) { return binary_cross_entropy_with_logits(a, b); },
                         "binary_cross_entropy_with_logits")},
      {.name = "binary_cross_entropy_with_logits_pos_weight",
       .torch = "F.binary_cross_entropy_with_logits(x[0], x[1], weight=torch.tensor([1.5, 0.5, 1.0, 2.0], dtype=x[0].dtype), "
                "reduction='sum', pos_weight=torch.tensor([3.0, 0.5, 1.0, 2.0], dtype=x[0].dtype))",
       .fn = [](auto& x) {
         return binary_cross_entropy_with_logits(x[0], x[1], tensor({1.5, 0.5, 1.0, 2.0}, x[0].dtype()), "sum",
                                                 tensor({3.0, 0.5, 1.0, 2.0}, x[0].dtype()));
       },
       .samples = {{{{3, 4}, {3, 4}}}}},
      {.name = "kl_div_batchmean",
       .torch = "F.kl_div(x[0], x[1], reduction='batchmean')",
       .fn = [](auto& x) { return kl_div(x[0], x[1], "batchmean"); },
       .samples = {{{{3, 4}, {3, 4}}}, {{{}, {}}}},
       .domain = kProbability,
       .fuzz = loss_fuzz([](const Tensor& a, const Tensor& b) { return kl_div(a, b, "batchmean"); }, "kl_div", kProbability)},
      {.name = "kl_div_none",
       .torch = "F.kl_div(x[0], x[1], reduction='none')",
       .fn = [](auto& x) { return kl_div(x[0], x[1], "none"); },
       .samples = {{{{2, 3}, {2, 3}}}},
       .domain = kProbability},
      {.name = "kl_div_log_target_sum",
       .torch = "F.kl_div(x[0], x[1], reduction='sum', log_target=True)",
       .fn = [](auto& x) { return kl_div(x[0], x[1], "sum", true); },
       .samples = {{{{2, 3}, {2, 3}}}}},
  };
}

}  // namespace optable
