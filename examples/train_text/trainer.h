// train_text: character-level training on any text file, then sampling.
#pragma once

#include <functional>
#include <string>
#include <vector>

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
};

void validate(const Config& c);  // throws std::invalid_argument naming the flag

struct Report {
  int64_t vocab = 0, train_chars = 0, val_chars = 0;
  double unigram_val_loss = 0;   // cross-entropy of the training set's character frequencies on val
  double first_val_loss = 0, final_val_loss = 0, final_train_loss = 0;
  double tokens_per_second = 0;
  std::string sample;
};

// on_step(step, train_loss, val_loss or NaN) is called after every step (val every 100 steps).
Report run(const Config& c, const std::function<void(int64_t, double, double)>& on_step = {});

}  // namespace train_text
