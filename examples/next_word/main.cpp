// next_word: trains a tiny causal attention model on the next-word pairs of
// "Life is short, eat dessert first" and shows what it learned. Same flags, seed and numbers as
// ../shared/reference/next_word.py; --json prints exactly what the reference prints.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>

#include "autograd/config.h"
#include "trainer.h"

namespace {

void progress_bar(int64_t epoch, int64_t epochs, double loss) {
  const int width = 30;
  const int done = static_cast<int>(width * (epoch + 1) / std::max<int64_t>(epochs, 1));
  std::fprintf(stdout, "\r  [%s%s] %4lld/%lld  loss %.6f", std::string(static_cast<std::size_t>(done), '#').c_str(),
               std::string(static_cast<std::size_t>(width - done), '.').c_str(), static_cast<long long>(epoch + 1),
               static_cast<long long>(epochs), loss);
  std::fflush(stdout);
}

// The attention weights of each head as a table: rows are queries (the context so far), columns
// the words attended to, with a shade per cell.
void print_attention(const next_word::Result& r) {
  static const char* shades[] = {" ", "░", "▒", "▓", "█"};
  const auto T = static_cast<std::size_t>(r.T);
  for (std::size_t h = 0; h < r.attention.size(); ++h) {
    std::printf("\nattention, head %zu (row: query word, column: word attended to)\n%10s", h, "");
    for (std::size_t j = 0; j < T; ++j) std::printf(" %8s", r.words[j].c_str());
    std::printf("\n");
    for (std::size_t i = 0; i < T; ++i) {
      std::printf("%10s", r.words[i].c_str());
      for (std::size_t j = 0; j < T; ++j) {
        const double w = r.attention[h][i][j];
        if (j > i) std::printf(" %8s", "");
        else std::printf("   %s %.2f", shades[std::min(4, static_cast<int>(w * 5))], w);
      }
      std::printf("\n");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options cli("next_word", "Train a tiny causal attention model on \"Life is short, eat dessert first\"");
  next_word::Config c;
  bool json = false;
  cli.add_options()
      ("dim", "embedding size", cxxopts::value<int64_t>()->default_value("16"))
      ("heads", "attention heads (must divide --dim)", cxxopts::value<int64_t>()->default_value("2"))
      ("epochs", "training steps", cxxopts::value<int64_t>()->default_value("200"))
      ("lr", "learning rate", cxxopts::value<double>()->default_value("0.01"))
      ("seed", "random seed (torch.manual_seed)", cxxopts::value<uint64_t>()->default_value("123"))
      ("dropout", "dropout on the attention weights", cxxopts::value<double>()->default_value("0.0"))
      ("optimizer", "adam, adamw or sgd (momentum 0.9)", cxxopts::value<std::string>()->default_value("adam"))
      ("dtype", "float32 or float64", cxxopts::value<std::string>()->default_value("float32"))
      ("save", "write the trained model (safetensors)", cxxopts::value<std::string>())
      ("load", "start from a checkpoint (with --epochs 0: just evaluate it)", cxxopts::value<std::string>())
      ("dot", "write the autograd graph of one training step (Graphviz DOT)", cxxopts::value<std::string>())
      ("html", "write the tape explorer of one training step: one HTML page that steps through backward", cxxopts::value<std::string>())
      ("json", "print one JSON object like the PyTorch reference")
      ("verbose", "first print what ag runs on this machine (ag::config(): CPU, threads, GEMM kernels)")
      ("h,help", "show this help");
  try {
    auto a = cli.parse(argc, argv);
    if (a.count("help")) {
      std::cout << cli.help() << "\n" << ag::config();
      return 0;
    }
    if (a.count("verbose")) std::cout << ag::config();
    if (!a.unmatched().empty()) throw std::invalid_argument("unexpected argument '" + a.unmatched()[0] + "'");
    c.dim = a["dim"].as<int64_t>();
    c.heads = a["heads"].as<int64_t>();
    c.epochs = a["epochs"].as<int64_t>();
    c.lr = a["lr"].as<double>();
    c.seed = a["seed"].as<uint64_t>();
    c.dropout = a["dropout"].as<double>();
    c.optimizer = a["optimizer"].as<std::string>();
    c.dtype = a["dtype"].as<std::string>();
    if (a.count("save")) c.save_path = a["save"].as<std::string>();
    if (a.count("load")) c.load_path = a["load"].as<std::string>();
    if (a.count("dot")) c.dot_path = a["dot"].as<std::string>();
    if (a.count("html")) c.html_path = a["html"].as<std::string>();
    json = a.count("json") > 0;
    next_word::validate(c);
  } catch (const std::exception& e) {
    std::cerr << "next_word: " << e.what() << " (see --help)\n";
    return 2;
  }

  try {
    const bool tty = !json && ::isatty(STDOUT_FILENO);
    const int64_t every = std::max<int64_t>(1, c.epochs / 10);
    auto on_epoch = [&](int64_t e, double loss) {
      if (json) return;
      if (tty) progress_bar(e, c.epochs, loss);
      if (e % every == 0) {
        if (tty) std::printf("\r%*s\r", 60, "");
        std::printf("epoch %4lld  loss %.6f\n", static_cast<long long>(e + 1), loss);
      }
    };
    const next_word::Result r = next_word::run(c, on_epoch);
    if (json) {
      std::cout << next_word::to_json(r) << "\n";
      return 0;
    }
    if (tty) std::printf("\r%*s\r", 60, "");
    if (!r.losses.empty()) std::printf("final loss %.6f\n", r.losses.back());
    std::printf("\n");
    for (int i = 0; i < r.T; ++i) {
      std::string ctx;
      for (int j = 0; j <= i; ++j) ctx += (j ? " " : "") + r.words[static_cast<std::size_t>(j)];
      const std::string& target = r.words[static_cast<std::size_t>(i + 1)];
      const std::string& pred = r.predictions[static_cast<std::size_t>(i)];
      std::string mark = "✓";
      if (pred != target) {
        mark = "✗ (target ";
        mark += target;
        mark += ")";
      }
      std::printf("  %-28s -> %-8s %s\n", ctx.c_str(), pred.c_str(), mark.c_str());
    }
    std::printf("\naccuracy %d/%d\n", r.correct, r.T);
    print_attention(r);
    if (!c.save_path.empty()) std::printf("\nsaved %s\n", c.save_path.c_str());
    if (!c.dot_path.empty()) std::printf("wrote the graph of one training step to %s (render: dot -Tsvg %s -o graph.svg)\n", c.dot_path.c_str(), c.dot_path.c_str());
    if (!c.html_path.empty()) std::printf("wrote the tape explorer of one training step to %s (open it in a browser)\n", c.html_path.c_str());
  } catch (const std::exception& e) {
    std::cerr << "next_word: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
