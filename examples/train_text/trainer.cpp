#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>

#include <ag/ag.h>

#include "model.h"

namespace train_text {

using namespace ag;

void validate(const Config& c) {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  auto at_least = [&](const char* flag, int64_t v, int64_t lo) {
    if (v < lo) bad(std::string(flag) + " must be >= " + std::to_string(lo) + ", got " + std::to_string(v));
  };
  at_least("--context", c.context, 2);
  at_least("--layers", c.layers, 1);
  at_least("--dim", c.dim, 1);
  at_least("--heads", c.heads, 1);
  at_least("--steps", c.steps, 0);
  at_least("--batch", c.batch, 1);
  at_least("--sample", c.sample, 0);
  at_least("--save-every", c.save_every, 0);
  if (c.dtype != "float32" && c.dtype != "float64") bad("--dtype must be float32 or float64, got " + c.dtype);
  if (c.distributed) {
    if (!dist::is_initialized()) bad("--distributed: the MPI process group is not initialized");
    const int n = dist::world_size();
    if (c.batch % n != 0) {
      bad("--batch " + std::to_string(c.batch) + " (the global batch) is not a multiple of the " + std::to_string(n) +
          " processes");
    }
  }
  if (c.dim % c.heads != 0) bad("--heads " + std::to_string(c.heads) + " does not divide --dim " + std::to_string(c.dim));
  if (!(c.lr > 0) || !std::isfinite(c.lr)) bad("--lr must be a positive number, got " + py_float_repr(c.lr));
  if (!(c.temperature > 0) || !std::isfinite(c.temperature)) bad("--temperature must be a positive number, got " + py_float_repr(c.temperature));
  if (!std::filesystem::is_regular_file(c.file)) bad("--file: cannot open " + c.file + " (no such file)");
  if (!c.load_path.empty() && !std::filesystem::is_regular_file(c.load_path)) bad("--load: cannot open " + c.load_path + " (no such file)");
  if (!c.save_path.empty()) {
    const auto dir = std::filesystem::path(c.save_path).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir)) bad("--save: directory " + dir.string() + " does not exist");
  }
}

namespace {

// A random batch of windows: x (B, T) and y = x shifted by one character.
std::pair<Tensor, Tensor> batch_of(const std::vector<int64_t>& data, int64_t B, int64_t T) {
  Tensor starts = randint(0, static_cast<int64_t>(data.size()) - T, {B});
  std::vector<int64_t> xs, ys;
  for (int64_t s : starts.to_vector<int64_t>()) {
    for (int64_t t = 0; t < T; ++t) {
      xs.push_back(data[static_cast<std::size_t>(s + t)]);
      ys.push_back(data[static_cast<std::size_t>(s + t + 1)]);
    }
  }
  return {from_vector(xs, {B, T}), from_vector(ys, {B, T})};
}

// Mean loss over consecutive windows covering `data` (deterministic). Distributed, rank r takes
// every n-th window from the r-th and the sums are all-reduced.
double evaluate(CharTransformer& m, const std::vector<int64_t>& data, int64_t T, bool distributed) {
  NoGradGuard g;
  const int64_t n = distributed ? dist::world_size() : 1, r = distributed ? dist::rank() : 0;
  double total = 0;
  int64_t count = 0, window = 0;
  for (int64_t s = 0; s + T + 1 <= static_cast<int64_t>(data.size()); s += T, ++window) {
    if (window % n != r) continue;
    std::vector<int64_t> xs(data.begin() + s, data.begin() + s + T), ys(data.begin() + s + 1, data.begin() + s + T + 1);
    Tensor logits = m.forward(from_vector(xs, {1, T}));
    total += cross_entropy(logits.view({T, -1}), from_vector(ys, {T})).item() * static_cast<double>(T);
    count += T;
  }
  if (distributed) {
    Tensor sums = from_vector(std::vector<double>{total, static_cast<double>(count)}, {2}, kFloat64);
    dist::all_reduce(sums);
    const auto v = sums.to_vector<double>();
    total = v[0];
    count = static_cast<int64_t>(v[1]);
  }
  return count ? total / static_cast<double>(count) : NAN;
}

}  // namespace

Report run(const Config& c, const std::function<void(int64_t, double, double)>& on_step) {
  validate(c);
  std::ifstream f(c.file, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  if (static_cast<int64_t>(text.size()) < 4 * (c.context + 1)) {
    throw std::invalid_argument("--file " + c.file + " has " + std::to_string(text.size()) + " characters; it needs at least " +
                                std::to_string(4 * (c.context + 1)) + " for --context " + std::to_string(c.context));
  }
  std::vector<char> chars(text.begin(), text.end());
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  std::map<char, int64_t> id;
  for (std::size_t i = 0; i < chars.size(); ++i) id[chars[i]] = static_cast<int64_t>(i);
  std::vector<int64_t> all;
  for (char ch : text) all.push_back(id[ch]);
  const auto split = static_cast<std::ptrdiff_t>(all.size() * 9 / 10);  // last 10% for validation
  const std::vector<int64_t> train(all.begin(), all.begin() + split), val(all.begin() + split, all.end());

  Report r;
  r.vocab = static_cast<int64_t>(chars.size());
  r.train_chars = static_cast<int64_t>(train.size());
  r.val_chars = static_cast<int64_t>(val.size());
  // unigram baseline: -mean log p_train(c) over val (add-one smoothing for unseen characters)
  std::vector<double> freq(chars.size(), 1.0);
  for (int64_t t : train) freq[static_cast<std::size_t>(t)] += 1;
  const double total = static_cast<double>(train.size() + chars.size());
  for (int64_t t : val) r.unigram_val_loss -= std::log(freq[static_cast<std::size_t>(t)] / total);
  r.unigram_val_loss /= static_cast<double>(val.size());

  manual_seed(c.seed);
  CharTransformer model(r.vocab, c.context, c.dim, c.heads, c.layers);
  if (c.dtype == "float64") model.to(kFloat64);
  model.checkpoint_blocks = c.checkpoint;
  if (!c.load_path.empty()) nn::load(model, c.load_path);
  // Distributed: rank 0's parameters everywhere, gradients averaged after each backward.
  std::unique_ptr<dist::DistributedDataParallel> ddp;
  const int world = c.distributed ? dist::world_size() : 1, me = c.distributed ? dist::rank() : 0;
  if (c.distributed) ddp = std::make_unique<dist::DistributedDataParallel>(model, dist::DDPOptions{.overlap = c.overlap});
  r.world_size = world;
  const int64_t local = c.batch / world;  // this rank's windows of each global batch
  auto save = [&] {
    if (!c.save_path.empty() && me == 0) nn::save(model, c.save_path);
  };
  optim::AdamW opt(model.parameters(), {.lr = c.lr});
  const int64_t T = std::min<int64_t>(c.context, static_cast<int64_t>(val.size()) - 1);
  r.first_val_loss = evaluate(model, val, T, c.distributed);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < c.steps; ++step) {
    auto [x, y] = batch_of(train, c.batch, c.context);  // the same global batch on every rank
    if (world > 1) {
      x = x.narrow(0, me * local, local);
      y = y.narrow(0, me * local, local);
    }
    opt.zero_grad(true);
    Tensor logits = ddp ? ddp->forward(x) : model.forward(x);
    Tensor loss = cross_entropy(logits.view({local * c.context, r.vocab}), y.reshape({-1}));
    loss.backward();
    if (ddp) r.all_reduce_seconds += std::chrono::duration<double>(ddp->last_wait_time()).count();
    opt.step();
    r.final_train_loss = loss.item();
    const bool eval_now = (step + 1) % 100 == 0 || step + 1 == c.steps;
    if (world > 1 && eval_now) {  // the mean over the global batch, as one process reports it
      Tensor l = from_vector(std::vector<double>{r.final_train_loss / world}, {1}, kFloat64);
      dist::all_reduce(l);
      r.final_train_loss = l.item();
    }
    if (c.save_every > 0 && (step + 1) % c.save_every == 0) save();
    const double vl = eval_now ? evaluate(model, val, T, c.distributed) : NAN;
    if (on_step) on_step(step, r.final_train_loss, vl);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (world > 1) {
    Tensor t = from_vector(std::vector<double>{secs}, {1}, kFloat64);
    dist::all_reduce(t, dist::ReduceOp::MAX);
    secs = t.item();
  }
  r.train_seconds = secs;
  r.tokens_per_second = secs > 0 ? static_cast<double>(c.steps * c.batch * c.context) / secs : 0;
  r.final_val_loss = evaluate(model, val, T, c.distributed);
  r.final_state = model.state_dict();
  if (me != 0) return r;  // only rank 0 samples and saves

  // Sampling: start from the text's first character, draw each next character from
  // softmax(logits / temperature) by inverting the CDF at one uniform draw.
  std::vector<int64_t> ctx{all[0]};
  r.sample.push_back(chars[static_cast<std::size_t>(all[0])]);
  NoGradGuard g;
  for (int64_t i = 0; i < c.sample; ++i) {
    const int64_t from = std::max<int64_t>(0, static_cast<int64_t>(ctx.size()) - c.context);
    std::vector<int64_t> window(ctx.begin() + from, ctx.end());
    const auto n = static_cast<int64_t>(window.size());
    Tensor logits = model.forward(from_vector(window, {1, n}))[0][n - 1];
    const std::vector<double> p = softmax(logits / c.temperature, -1).to_vector<double>();
    double u = default_generator().unit_double(), acc = 0;
    int64_t next = r.vocab - 1;
    for (int64_t k = 0; k < r.vocab; ++k) {
      acc += p[static_cast<std::size_t>(k)];
      if (u < acc) {
        next = k;
        break;
      }
    }
    ctx.push_back(next);
    r.sample.push_back(chars[static_cast<std::size_t>(next)]);
  }
  save();
  return r;
}

}  // namespace train_text
