// train_text learns: validation loss falls well below the unigram baseline on the shipped text,
// and samples are made of the text's characters. Also its command-line errors.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>

#include "test_util.h"
#include "train_text/trainer.h"

TEST(TrainText, ValidationLossFallsWellBelowTheUnigramBaseline) {
  train_text::Config c;
  c.file = AG_TRAIN_TEXT_DEFAULT;
  c.steps = 300;
  c.dim = 48;
  c.heads = 4;
  c.batch = 12;
  c.sample = 200;
  const train_text::Report r = train_text::run(c);
  std::printf("unigram %.4f  untrained %.4f  trained %.4f  (%.0f tokens/s)\n", r.unigram_val_loss, r.first_val_loss,
              r.final_val_loss, r.tokens_per_second);
  EXPECT_GT(r.first_val_loss, r.unigram_val_loss);         // an untrained model is worse than counting
  EXPECT_LT(r.final_val_loss, 0.75 * r.unigram_val_loss);  // and training beats counting by far
  EXPECT_EQ(r.sample.size(), 201u);
  int spaces = 0;
  for (char ch : r.sample) spaces += ch == ' ';
  EXPECT_GT(spaces, 15) << r.sample;  // words, not noise
}

// --checkpoint recomputes each block in backward: the same gradients, so the same run, bit for bit
// (losses, sample and final weights).
TEST(TrainText, CheckpointedBlocksTrainTheSameModel) {
  train_text::Config c{.file = AG_TRAIN_TEXT_DEFAULT, .layers = 3, .dim = 32, .heads = 4, .steps = 12, .batch = 4, .sample = 40};
  const train_text::Report plain = train_text::run(c);
  c.checkpoint = true;
  const train_text::Report ckpt = train_text::run(c);
  EXPECT_EQ(ckpt.final_train_loss, plain.final_train_loss);
  EXPECT_EQ(ckpt.final_val_loss, plain.final_val_loss);
  EXPECT_EQ(ckpt.sample, plain.sample);
  ASSERT_EQ(ckpt.final_state.size(), plain.final_state.size());
  int64_t differ = 0;
  for (std::size_t i = 0; i < plain.final_state.size(); ++i)
    differ += testutil::bit_mismatches<float>(ckpt.final_state[i].second, plain.final_state[i].second);
  EXPECT_EQ(differ, 0);
}

TEST(TrainTextCli, BadArgumentsGiveOneLineAndNonZeroExit) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--file /nonexistent.txt", "--file: cannot open /nonexistent.txt"},
      {"--heads 5", "--heads 5 does not divide --dim 64"},
      {"--context 1", "--context must be >= 2"},
      {"--temperature 0", "--temperature must be a positive number"},
      {"--batch 0", "--batch must be >= 1"},
      {"--steps x", "failed to parse"},
      {"--load /nonexistent.safetensors", "--load: cannot open"},
      {"--file /etc/hostname --context 64", "characters; it needs at least 260"},
  };
  for (const auto& [args, expect] : cases) {
    SCOPED_TRACE(args);
    const auto [status, out] = testutil::run_command(std::string(TRAIN_TEXT_BIN) + " " + args + " 2>&1 >/dev/null");
    EXPECT_NE(status, 0);
    EXPECT_NE(out.find(expect), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  }
}

TEST(ExamplesCli, DemoTourAndSeedReplaysRejectBadArguments) {
  const std::string dir = EXAMPLES_BIN_DIR;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir + "/demo --lr -1", "--lr must be a positive number"},
      {dir + "/demo --steps -3", "--steps must be >= 0"},
      {dir + "/demo --hidden 0", "--hidden must be >= 1"},
      {dir + "/demo --nope", "does not exist"},
      {dir + "/tour extra", "takes no arguments, got 'extra'"},
      {dir + "/seed000 --help", "takes no arguments, got '--help'"},
      {dir + "/seed003 x", "takes no arguments, got 'x'"},
  };
  for (const auto& [cmd, expect] : cases) {
    SCOPED_TRACE(cmd);
    const auto [status, out] = testutil::run_command(cmd + " 2>&1 >/dev/null");
    EXPECT_NE(status, 0);
    EXPECT_NE(out.find(expect), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  }
}
