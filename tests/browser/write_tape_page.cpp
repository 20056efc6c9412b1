// Writes the pages test_tape_page.py loads in Chromium, and beside them what ag itself computes,
// for the test to compare with the numbers the pages show:
//   OUT/tape.html           a small MLP's loss, forward under KeepValuesGuard
//   OUT/tape_novalues.html  the same graph without the guard (the page says values are missing)
//   OUT/expected.json       {"steps": nodes below the loss, "names": their grad_fn names (sorted),
//                            "leaf_grads": {name: .grad after loss.backward()},
//                            "retained": {"name": grad_fn of h, "grad": h.grad}, "loss": value,
//                            "saved": {"count", "bytes"}: ag::saved_tensors(loss), its rows and total}
// The expected values come from ag's ordinary backward, run after to_html on the same graph.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include <ag/ag.h>

using namespace ag;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_tape_page OUT_DIR\n";
    return 2;
  }
  const std::string out = argv[1];
  manual_seed(0);
  const Tensor x = randn({4, 3});
  const Tensor y = from_vector(std::vector<int64_t>{0, 2, 1, 2}, {4});
  Tensor w1 = (randn({5, 3}) * 0.5).requires_grad_(), b1 = zeros({5}).requires_grad_();
  Tensor w2 = (randn({3, 5}) * 0.5).requires_grad_();
  const std::vector<std::pair<std::string, Tensor>> names{{"w1", w1}, {"b1", b1}, {"w2", w2}};

  // w1 is used twice (in the layer and in the penalty): its .grad sums two paths
  auto forward = [&](Tensor& h) {
    h = tanh(linear(x, w1, b1));
    h.retain_grad();
    return cross_entropy(linear(h, w2), y) + (w1 * w1).sum() * 0.01;
  };
  Tensor h, loss;
  {
    KeepValuesGuard keep;
    loss = forward(h);
  }
  to_html(loss, out + "/tape.html", names);
  {
    Tensor h2;
    to_html(forward(h2), out + "/tape_novalues.html", names);
  }

  // every node below the loss, by walking next_functions
  std::vector<std::shared_ptr<Node>> todo{loss.grad_fn()};
  std::set<const Node*> seen{loss.grad_fn().get()};
  std::vector<std::string> node_names;
  while (!todo.empty()) {
    std::shared_ptr<Node> n = todo.back();
    todo.pop_back();
    node_names.push_back(n->name());
    for (const auto& [next, nr] : n->next_functions())
      if (next && !next->variable().defined() && seen.insert(next.get()).second) todo.push_back(next);
  }
  std::sort(node_names.begin(), node_names.end());

  // what the graph keeps for backward (the page's start shows the total, each step its node's)
  int64_t saved_bytes = 0;
  const std::vector<SavedTensorInfo> saved = saved_tensors(loss);
  for (const SavedTensorInfo& s : saved) saved_bytes += s.bytes;

  loss.backward();  // to_html retained the graph and left .grad alone
  nlohmann::json j;
  j["steps"] = node_names.size();
  j["names"] = node_names;
  for (const auto& [name, t] : names) j["leaf_grads"][name] = t.grad().to_vector<double>();
  j["retained"] = {{"name", h.grad_fn()->name()}, {"grad", h.grad().to_vector<double>()}};
  j["loss"] = loss.item();
  j["saved"] = {{"count", saved.size()}, {"bytes", saved_bytes}};
  std::ofstream(out + "/expected.json") << j.dump(1) << "\n";
  return 0;
}
