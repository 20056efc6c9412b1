// train_text: trains a small character-level causal transformer on a text file, then samples
// from it. With no arguments it trains on the short text shipped beside it. With --distributed,
// under `mpirun -np N`, N processes share each batch (data parallel): only rank 0 prints,
// samples and saves; an error on any rank prints one line naming it and ends the whole job.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <memory>
#include <string>

#include <ag/ag.h>

#include "trainer.h"

int main(int argc, char** argv) {
  cxxopts::Options cli("train_text", "Character-level causal transformer: train on a text file, then sample");
  train_text::Config c;
  cli.add_options()
      ("file", "text file to learn", cxxopts::value<std::string>()->default_value(AG_TRAIN_TEXT_DEFAULT))
      ("context", "characters of context", cxxopts::value<int64_t>()->default_value("32"))
      ("layers", "transformer blocks", cxxopts::value<int64_t>()->default_value("2"))
      ("dim", "model width", cxxopts::value<int64_t>()->default_value("64"))
      ("heads", "attention heads (must divide --dim)", cxxopts::value<int64_t>()->default_value("4"))
      ("steps", "training steps", cxxopts::value<int64_t>()->default_value("400"))
      ("batch", "windows per step", cxxopts::value<int64_t>()->default_value("16"))
      ("lr", "AdamW learning rate", cxxopts::value<double>()->default_value("0.003"))
      ("sample", "characters to generate", cxxopts::value<int64_t>()->default_value("300"))
      ("temperature", "sampling temperature", cxxopts::value<double>()->default_value("0.8"))
      ("seed", "random seed", cxxopts::value<uint64_t>()->default_value("0"))
      ("save", "write the trained model (safetensors)", cxxopts::value<std::string>())
      ("load", "start from a checkpoint", cxxopts::value<std::string>())
      ("save-every", "also save every N steps (0: only at the end)", cxxopts::value<int64_t>()->default_value("0"))
      ("dtype", "float32 or float64", cxxopts::value<std::string>()->default_value("float32"))
      ("checkpoint", "activation checkpointing: keep each block's input only, recompute the block in backward")
      ("distributed", "data parallel over MPI: run under mpirun -np N; --batch is the global batch")
      ("overlap", "with --distributed: all-reduce gradients while backward runs (--overlap=false: after it)",
       cxxopts::value<bool>()->default_value("true"))
      ("h,help", "show this help");
  // --distributed starts MPI before anything else, so that only rank 0 reports a bad argument
  bool distributed = false;
  for (int i = 1; i < argc; ++i) distributed = distributed || std::string(argv[i]) == "--distributed";
  std::unique_ptr<ag::dist::InitGuard> mpi;
  if (distributed) {
    try {
      mpi = std::make_unique<ag::dist::InitGuard>(&argc, &argv);
    } catch (const std::exception& e) {
      std::cerr << "train_text: --distributed: " << e.what() << "\n";
      return 2;
    }
  }
  const int rank = distributed ? ag::dist::rank() : 0;
  try {
    auto a = cli.parse(argc, argv);
    if (a.count("help")) {
      std::cout << cli.help() << "\n";
      return 0;
    }
    if (!a.unmatched().empty()) throw std::invalid_argument("unexpected argument '" + a.unmatched()[0] + "'");
    c.file = a["file"].as<std::string>();
    c.context = a["context"].as<int64_t>();
    c.layers = a["layers"].as<int64_t>();
    c.dim = a["dim"].as<int64_t>();
    c.heads = a["heads"].as<int64_t>();
    c.steps = a["steps"].as<int64_t>();
    c.batch = a["batch"].as<int64_t>();
    c.lr = a["lr"].as<double>();
    c.sample = a["sample"].as<int64_t>();
    c.temperature = a["temperature"].as<double>();
    c.seed = a["seed"].as<uint64_t>();
    if (a.count("save")) c.save_path = a["save"].as<std::string>();
    if (a.count("load")) c.load_path = a["load"].as<std::string>();
    c.save_every = a["save-every"].as<int64_t>();
    c.dtype = a["dtype"].as<std::string>();
    c.checkpoint = a.count("checkpoint") > 0;
    c.distributed = distributed;
    c.overlap = a["overlap"].as<bool>();
    train_text::validate(c);
  } catch (const std::exception& e) {  // every rank sees the same arguments: all stop, rank 0 says why
    if (rank == 0) std::cerr << "train_text: " << e.what() << " (see --help)\n";
    return 2;
  }
  try {
    if (rank == 0) std::printf("training on %s%s\n", c.file.c_str(), distributed ? (" with " + std::to_string(ag::dist::world_size()) + " processes").c_str() : "");
    const auto r = train_text::run(c, [rank](int64_t step, double train_loss, double val_loss) {
      if (rank != 0 || std::isnan(val_loss)) return;
      std::printf("step %5lld  train loss %.4f  val loss %.4f\n", static_cast<long long>(step + 1), train_loss, val_loss);
      std::fflush(stdout);
    });
    if (rank != 0) return 0;
    std::printf("\n%lld characters (%lld train, %lld validation), vocabulary %lld\n",
                static_cast<long long>(r.train_chars + r.val_chars), static_cast<long long>(r.train_chars),
                static_cast<long long>(r.val_chars), static_cast<long long>(r.vocab));
    std::printf("validation loss %.4f (untrained %.4f, unigram baseline %.4f)\n", r.final_val_loss, r.first_val_loss,
                r.unigram_val_loss);
    std::printf("%.0f tokens/s", r.tokens_per_second);
    if (distributed) {
      std::printf(" (%d processes; rank 0 waited for gradient all-reduces %.1f%% of the training time)", r.world_size,
                  100.0 * r.all_reduce_seconds / std::max(r.train_seconds, 1e-9));
    }
    std::printf("\n\nsample:\n%s\n", r.sample.c_str());
  } catch (const std::exception& e) {
    if (!distributed) {
      std::cerr << "train_text: " << e.what() << "\n";
      return 1;
    }
    // the other ranks may be waiting for this one in a collective: end the whole job
    // in one write: mpirun forwards each write of a rank on its own, and may print its abort
    // banner between two of them
    std::cerr << ("train_text: rank " + std::to_string(rank) + ": " + e.what() + "\n") << std::flush;
    ag::dist::abort(1);
  }
  return 0;
}
