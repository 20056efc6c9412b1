// makemore, part 2 (an MLP, after Bengio et al. 2003) -- translated line by line from
// pytorch/makemore_mlp.py: a character-level language model that reads three characters and
// predicts the next, trained on data/names.txt, then sampled. tests/test_tutorials.cpp checks that
// it prints what the PyTorch script prints: the same losses and the same sampled names.
//
// The Python lines it translates, where the C++ reads differently:
//   C[Xtr[ix]]                         C.index({Xtr.index({ix})})
//   torch.tensor([context])            tensor(context).view({1, -1})
//   p.grad = None                      p.set_grad({})
//   p.data += -lr * p.grad             p.data() += -lr * p.grad()
//   torch.multinomial(probs, num_samples=1, generator=g).item()
//                                      multinomial(probs, 1, false, &g).item<int64_t>()
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <ag/ag.h>

using namespace ag;

// The vocabulary of characters and mappings to/from integers.
std::map<char, int64_t> stoi;
std::map<int64_t, char> itos;

const int64_t block_size = 3;  // context length: how many characters do we take to predict the next one?

// build the dataset
std::pair<Tensor, Tensor> build_dataset(const std::vector<std::string>& words) {
  std::vector<int64_t> X, Y;
  for (const std::string& w : words) {
    std::vector<int64_t> context(block_size, 0);
    for (char ch : w + '.') {
      const int64_t ix = stoi[ch];
      X.insert(X.end(), context.begin(), context.end());
      Y.push_back(ix);
      context.erase(context.begin());  // crop and append
      context.push_back(ix);
    }
  }
  Tensor Xt = tensor(X).view({-1, block_size});
  Tensor Yt = tensor(Y);
  std::cout << "dataset: " << Xt.size(0) << " examples of " << Xt.size(1) << " characters\n";
  return {Xt, Yt};
}

int main(int argc, char** argv) {
  // read in all the words
  std::ifstream file(argc > 1 ? argv[1] : AG_TUTORIAL_DATA_DIR "/names.txt");
  if (!file) {
    std::cerr << "cannot open names.txt (give its path as the first argument)\n";
    return 1;
  }
  std::vector<std::string> words;
  for (std::string line; std::getline(file, line);) words.push_back(line);
  std::cout << words.size() << " words; the first three: " << words[0] << " " << words[1] << " " << words[2] << "\n";

  std::set<char> chars;  // sorted
  for (const std::string& w : words) chars.insert(w.begin(), w.end());
  int64_t i = 0;
  for (char s : chars) stoi[s] = ++i;
  stoi['.'] = 0;
  for (const auto& [s, ix] : stoi) itos[ix] = s;
  const auto vocab_size = static_cast<int64_t>(itos.size());
  std::cout << "vocabulary: " << vocab_size << " characters\n";

  Generator g(42);
  const std::vector<int64_t> perm = randperm(static_cast<int64_t>(words.size()), kInt64, &g).to_vector<int64_t>();
  std::vector<std::string> shuffled;
  for (int64_t k : perm) shuffled.push_back(words[k]);
  words = shuffled;
  const auto n1 = static_cast<std::ptrdiff_t>(0.8 * static_cast<double>(words.size()));
  const auto n2 = static_cast<std::ptrdiff_t>(0.9 * static_cast<double>(words.size()));
  const auto [Xtr, Ytr] = build_dataset({words.begin(), words.begin() + n1});          // 80%
  const auto [Xdev, Ydev] = build_dataset({words.begin() + n1, words.begin() + n2});  // 10%
  const auto [Xte, Yte] = build_dataset({words.begin() + n2, words.end()});           // 10%

  // the model: a 10-dimensional embedding of each character, a hidden layer of 200 tanh units
  g = Generator(2147483647);  // for reproducibility
  Tensor C = randn({vocab_size, 10}, {}, &g);
  Tensor W1 = randn({30, 200}, {}, &g) * 0.2;
  Tensor b1 = randn({200}, {}, &g) * 0.01;
  Tensor W2 = randn({200, vocab_size}, {}, &g) * 0.01;
  Tensor b2 = randn({vocab_size}, {}, &g) * 0;
  std::vector<Tensor> parameters = {C, W1, b1, W2, b2};
  int64_t nelement = 0;
  for (const Tensor& p : parameters) nelement += p.numel();
  std::cout << "parameters: " << nelement << "\n";  // number of parameters in total
  for (Tensor& p : parameters) p.requires_grad_(true);

  const int max_steps = 10000;
  const int64_t batch_size = 32;
  for (int step = 0; step < max_steps; ++step) {
    // minibatch construct
    Tensor ix = randint(0, Xtr.size(0), {batch_size}, kInt64, &g);

    // forward pass
    Tensor emb = C.index({Xtr.index({ix})});  // (32, 3, 10)
    Tensor h = tanh(emb.view({-1, 30}).matmul(W1) + b1);  // (32, 200)
    Tensor logits = h.matmul(W2) + b2;  // (32, 27)
    Tensor loss = cross_entropy(logits, Ytr.index({ix}));

    // backward pass
    for (Tensor& p : parameters) p.set_grad({});
    loss.backward();

    // update
    const double lr = step < 7000 ? 0.1 : 0.01;
    for (Tensor& p : parameters) p.data() += -lr * p.grad();

    // track stats
    if (step % 500 == 0) std::cout << step << " " << py_float_repr(loss.item()) << "\n";
  }

  // the loss on each split, with the final parameters
  auto split_loss = [&](const std::string& split) {
    NoGradGuard no_grad;  // this guard disables gradient tracking
    const std::map<std::string, std::pair<Tensor, Tensor>> splits = {
        {"train", {Xtr, Ytr}}, {"val", {Xdev, Ydev}}, {"test", {Xte, Yte}}};
    const auto& [x, y] = splits.at(split);
    Tensor emb = C.index({x});  // (N, block_size, n_embd)
    Tensor h = tanh(emb.view({-1, 30}).matmul(W1) + b1);  // (N, 200)
    Tensor logits = h.matmul(W2) + b2;  // (N, vocab_size)
    Tensor loss = cross_entropy(logits, y);
    std::cout << split << " loss: " << py_float_repr(loss.item()) << "\n";
  };
  split_loss("train");
  split_loss("val");

  // sample from the model
  g = Generator(2147483647LL + 10);  // LL: the sum is past int

  for (int n = 0; n < 20; ++n) {
    std::string out;
    std::vector<int64_t> context(block_size, 0);  // initialize with all ...
    while (true) {
      Tensor emb = C.index({tensor(context).view({1, -1})});  // (1, block_size, n_embd)
      Tensor h = tanh(emb.view({1, -1}).matmul(W1) + b1);
      Tensor logits = h.matmul(W2) + b2;
      Tensor probs = softmax(logits, 1);
      const int64_t ix = multinomial(probs, 1, false, &g).item<int64_t>();
      context.erase(context.begin());
      context.push_back(ix);
      out += itos[ix];
      if (ix == 0) break;
    }
    std::cout << "sample: " << out << "\n";
  }
}
