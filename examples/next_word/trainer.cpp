#include "trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <ag/ag.h>

#include "model.h"

namespace next_word {

using namespace ag;

void validate(const Config& c) {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  if (c.dim < 1) bad("--dim must be >= 1, got " + std::to_string(c.dim));
  if (c.heads < 1) bad("--heads must be >= 1, got " + std::to_string(c.heads));
  if (c.dim % c.heads != 0) bad("--heads " + std::to_string(c.heads) + " does not divide --dim " + std::to_string(c.dim));
  if (c.epochs < 0) bad("--epochs must be >= 0, got " + std::to_string(c.epochs));
  if (!(c.lr > 0) || !std::isfinite(c.lr)) bad("--lr must be a positive number, got " + py_float_repr(c.lr));
  if (!(c.dropout >= 0 && c.dropout < 1)) bad("--dropout must be in [0, 1), got " + py_float_repr(c.dropout));
  if (c.optimizer != "adam" && c.optimizer != "adamw" && c.optimizer != "sgd") {
    bad("--optimizer must be adam, adamw or sgd, got '" + c.optimizer + "'");
  }
  if (c.dtype != "float32" && c.dtype != "float64") bad("--dtype must be float32 or float64, got '" + c.dtype + "'");
  // Output files are checked before training so a typo does not cost a run.
  for (const auto& [flag, path] : {std::pair<std::string, std::string>{"--save", c.save_path}, {"--dot", c.dot_path}, {"--html", c.html_path}}) {
    if (path.empty()) continue;
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir)) bad(flag + ": directory " + dir.string() + " does not exist");
  }
  if (!c.load_path.empty() && !std::filesystem::is_regular_file(c.load_path)) bad("--load: cannot open " + c.load_path + " (no such file)");
}

Result run(const Config& c, const std::function<void(int64_t, double)>& on_epoch) {
  validate(c);
  Result r;
  // words and vocabulary, as seed 000: {'Life': 0, 'dessert': 1, 'eat': 2, 'first': 3, 'is': 4, 'short': 5}
  std::string s = kSentence;
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  std::istringstream is(s);
  for (std::string w; is >> w;) r.words.push_back(w);
  r.vocab = r.words;
  std::sort(r.vocab.begin(), r.vocab.end());
  r.vocab.erase(std::unique(r.vocab.begin(), r.vocab.end()), r.vocab.end());
  std::vector<int64_t> ids;
  for (const auto& w : r.words) ids.push_back(std::find(r.vocab.begin(), r.vocab.end(), w) - r.vocab.begin());
  const auto n = static_cast<int64_t>(ids.size());
  // "Life" -> "is", "Life is" -> "short", ...: inputs ids[:-1], targets ids[1:], batch of one
  Tensor all = from_vector(ids, {n});
  Tensor inputs = all.slice(0, 0, n - 1).unsqueeze(0), targets = all.slice(0, 1, n).unsqueeze(0);
  const int64_t T = inputs.size(1), V = static_cast<int64_t>(r.vocab.size());
  r.T = static_cast<int>(T);

  manual_seed(c.seed);
  TinyCausalLM model(V, T, c.dim, c.heads, c.dropout);
  model.to(c.dtype == "float64" ? kFloat64 : kFloat32);
  if (!c.load_path.empty()) nn::load(model, c.load_path);
  std::unique_ptr<optim::Optimizer> opt;
  if (c.optimizer == "adam") opt = std::make_unique<optim::Adam>(model.parameters(), optim::AdamOptions{.lr = c.lr});
  else if (c.optimizer == "adamw") opt = std::make_unique<optim::AdamW>(model.parameters(), optim::AdamWOptions{.lr = c.lr});
  else opt = std::make_unique<optim::SGD>(model.parameters(), optim::SGDOptions{.lr = c.lr, .momentum = 0.9});

  auto loss_of = [&]() {
    Tensor logits = model.forward(inputs);
    return cross_entropy(logits.view({-1, V}), targets.view({-1}));
  };
  auto write_dot = [&](const Tensor& loss) {
    std::ofstream f(c.dot_path);
    if (!f) throw std::runtime_error("cannot write --dot file " + c.dot_path);
    f << to_dot(loss, model.named_parameters());
  };
  // --html: the first step's forward keeps its values (KeepValuesGuard) for the tape explorer
  auto first_loss = [&]() {
    if (c.html_path.empty()) return loss_of();
    Tensor loss;
    {
      KeepValuesGuard keep;
      loss = loss_of();
    }
    to_html(loss, c.html_path, model.named_parameters());  // leaves .grad and the graph as they were
    return loss;
  };
  model.train();
  for (int64_t epoch = 0; epoch < c.epochs; ++epoch) {
    opt->zero_grad();
    Tensor loss = epoch == 0 ? first_loss() : loss_of();
    if (epoch == 0 && !c.dot_path.empty()) write_dot(loss);
    loss.backward();
    opt->step();
    r.losses.push_back(loss.item());
    if (on_epoch) on_epoch(epoch, r.losses.back());
  }
  if (c.epochs == 0 && !c.dot_path.empty()) write_dot(loss_of());
  if (c.epochs == 0 && !c.html_path.empty()) first_loss();

  model.eval();
  NoGradGuard no_grad;
  auto [logits, weights] = model.forward_with_weights(inputs);
  const std::vector<int64_t> pred = argmax(logits, -1)[0].to_vector<int64_t>();
  const std::vector<int64_t> tgt = targets[0].to_vector<int64_t>();
  for (int64_t i = 0; i < T; ++i) {
    r.predictions.push_back(r.vocab[static_cast<std::size_t>(pred[static_cast<std::size_t>(i)])]);
    r.correct += pred[static_cast<std::size_t>(i)] == tgt[static_cast<std::size_t>(i)];
  }
  r.accuracy = static_cast<double>(r.correct) / static_cast<double>(T);
  Tensor w0 = weights[0];  // (heads, T, T)
  for (int64_t h = 0; h < w0.size(0); ++h) {
    std::vector<std::vector<double>> rows;
    for (int64_t i = 0; i < T; ++i) rows.push_back(w0[h][i].to_vector<double>());
    r.attention.push_back(rows);
  }
  if (!c.save_path.empty()) nn::save(model, c.save_path);
  return r;
}

namespace {

std::string json_str(const std::string& s) {  // the words are plain ASCII
  return "\"" + s + "\"";
}

template <class T, class F>
std::string json_list(const std::vector<T>& v, F f) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + f(v[i]);
  return out + "]";
}

}  // namespace

std::string to_json(const Result& r) {
  // Python's json.dumps: ", " and ": " separators, floats as repr()
  auto num = [](double v) {
    if (std::isnan(v)) return std::string("NaN");
    if (std::isinf(v)) return std::string(v > 0 ? "Infinity" : "-Infinity");
    return py_float_repr(v);
  };
  auto row = [&](const std::vector<double>& v) { return json_list(v, num); };
  auto mat = [&](const std::vector<std::vector<double>>& m) { return json_list(m, row); };
  return "{\"losses\": " + json_list(r.losses, num) + ", \"predictions\": " + json_list(r.predictions, json_str) +
         ", \"accuracy\": " + num(r.accuracy) + ", \"attention\": " + json_list(r.attention, mat) + "}";
}

}  // namespace next_word
