// train_text: character-level training on any text file, then sampling.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <ag/ag.h>

namespace train_text {

struct Config {
  std::string file;       // the text (defaults to the one shipped with the example)
  int64_t context = 32;   // characters seen at once
  int64_t layers = 2;
  int64_t dim = 64;
  int64_t heads = 4;
  int64_t steps = 400;
  int64_t batch = 16;
  double lr = 3e-3;
  int64_t sample = 300;   // characters to generate after training
  double temperature = 0.8;
  uint64_t seed = 0;
  std::string save_path, load_path;
  int64_t save_every = 0;       // also save every this many steps (0: only at the end)
  std::string dtype = "float32";  // or "float64"
  bool checkpoint = false;        // recompute each block in backward instead of keeping its activations
  // Data parallel over MPI (ag::dist must be initialized): every rank draws the same global batch
  // of `batch` windows and trains on its 1/N share; DistributedDataParallel averages the
  // gradients, so N ranks take the steps one process takes. Only rank 0 samples and saves.
  bool distributed = false;
  bool overlap = true;  // DDPOptions::overlap: all-reduce buckets during backward
};

void validate(const Config& c);  // throws std::invalid_argument naming the flag

struct Report {
  int64_t vocab = 0, train_chars = 0, val_chars = 0;
  double unigram_val_loss = 0;   // cross-entropy of the training set's character frequencies on val
  double first_val_loss = 0, final_val_loss = 0, final_train_loss = 0;
  double tokens_per_second = 0;  // of the whole job
  std::string sample;             // empty on ranks other than 0
  int world_size = 1;
  double train_seconds = 0;       // the training loop (the slowest rank's)
  double all_reduce_seconds = 0;  // of which backward waited for gradient all-reduces (this rank)
  std::vector<std::pair<std::string, ag::Tensor>> final_state;  // the trained model's state_dict
};

// on_step(step, train_loss, val_loss or NaN) is called after every step (val every 100 steps and
// at the last; distributed, train_loss is the global batch's at those steps, this rank's share's
// at the others, which saves a collective per step).
Report run(const Config& c, const std::function<void(int64_t, double, double)>& on_step = {});

}  // namespace train_text
