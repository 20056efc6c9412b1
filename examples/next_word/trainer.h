// The next-word experiment of ../shared/reference/next_word.py: data, model, training loop and
// evaluation, shared by the command-line program and the tests.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace next_word {

inline const char* kSentence = "Life is short, eat dessert first";

struct Config {
  int64_t dim = 16;
  int64_t heads = 2;
  int64_t epochs = 200;
  double lr = 0.01;
  uint64_t seed = 123;
  double dropout = 0.0;
  std::string optimizer = "adam";  // adam | adamw | sgd (momentum 0.9)
  std::string dtype = "float32";   // float32 | float64
  std::string load_path;           // start from this checkpoint
  std::string save_path;           // write the trained model here
  std::string dot_path;            // write the graph of one training step here
  std::string html_path;           // write the tape explorer page of one training step here
};

// Throws std::invalid_argument with a message naming the flag.
void validate(const Config& c);

struct Result {
  std::vector<std::string> words;        // the sentence without its comma
  std::vector<std::string> vocab;        // sorted words, id = position
  std::vector<double> losses;            // one per epoch
  std::vector<std::string> predictions;  // predicted next word for each context
  int correct = 0, T = 0;
  double accuracy = 0;
  std::vector<std::vector<std::vector<double>>> attention;  // weights[0]: (heads, T, T)
};

// Runs the experiment; `on_epoch(epoch, loss)` is called after every step.
Result run(const Config& c, const std::function<void(int64_t, double)>& on_epoch = {});

// The reference's --json line: {"losses": [...], "predictions": [...], "accuracy": ..., "attention": [...]}
std::string to_json(const Result& r);

}  // namespace next_word
