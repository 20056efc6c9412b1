// The tape explorer (autograd/tape.h): values kept under KeepValuesGuard, one backward pass
// recorded step by step against what ag's own backward computes, the page to_html writes, and
// to_dot with values. The page's behaviour in a browser is tests/browser/test_tape_page.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "autograd/autograd.h"
#include "autograd/node.h"
#include "test_util.h"

using namespace ag;
using testutil::bit_mismatches;
using testutil::error_of;

namespace {

// A small MLP loss whose w1 reaches the loss on two paths (the layer and a penalty) and whose
// hidden layer h retains its gradient.
struct Mlp {
  Tensor x, y, w1, b1, w2, h, loss;
  std::vector<std::pair<std::string, Tensor>> names() const { return {{"w1", w1}, {"b1", b1}, {"w2", w2}}; }
  Mlp() {
    manual_seed(0);
    x = randn({4, 3});
    y = from_vector(std::vector<int64_t>{0, 2, 1, 2}, {4});
    w1 = (randn({5, 3}) * 0.5).requires_grad_();
    b1 = zeros({5}).requires_grad_();
    w2 = (randn({3, 5}) * 0.5).requires_grad_();
  }
  Tensor forward() {
    h = tanh(linear(x, w1, b1));
    h.retain_grad();
    loss = cross_entropy(linear(h, w2), y) + (w1 * w1).sum() * 0.01;
    return loss;
  }
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The JSON the page carries in <script type="application/json" id="tape-data">.
nlohmann::json page_data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"tape-data\">";
  const std::size_t b = page.find(open);
  EXPECT_NE(b, std::string::npos);
  const std::size_t e = page.find("</script>", b);
  return nlohmann::json::parse(page.substr(b + open.size(), e - b - open.size()));
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ag_test_tape_" + std::to_string(::getpid()) + "_" + name)).string();
}

}  // namespace

TEST(KeepValues, OffANodeKeepsNothing) {
  Tensor a = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor c = a * a;
  EXPECT_FALSE(detail::keep_values_on());
  EXPECT_EQ(c.grad_fn()->meta, nullptr);
}

TEST(KeepValues, ANodeKeepsCopiesOfItsInputsOutputAndSavedTensors) {
  Tensor a = tensor({1.0, 2.0, 3.0}).requires_grad_(), b = tensor({4.0, 5.0, 6.0}).requires_grad_();
  Tensor c, e;
  {
    KeepValuesGuard keep;
    EXPECT_TRUE(detail::keep_values_on());
    c = a * b;
    e = exp(a);
  }
  EXPECT_FALSE(detail::keep_values_on());
  const NodeMeta& m = *c.grad_fn()->meta;
  ASSERT_EQ(m.kept_inputs.size(), 2u);
  ASSERT_EQ(m.kept_outputs.size(), 1u);
  EXPECT_EQ(bit_mismatches<float>(m.kept_inputs[0], a), 0);
  EXPECT_EQ(bit_mismatches<float>(m.kept_inputs[1], b), 0);
  EXPECT_EQ(bit_mismatches<float>(m.kept_outputs[0], c), 0);
  // mul saves both operands (each is needed by the other's gradient)
  ASSERT_EQ(m.kept_saved.size(), 2u);
  EXPECT_EQ(m.kept_saved_from, (std::vector<int>{0, 1}));
  EXPECT_EQ(bit_mismatches<float>(m.kept_saved[0], a), 0);
  EXPECT_EQ(bit_mismatches<float>(m.kept_saved[1], b), 0);
  // exp saves its output
  const NodeMeta& me = *e.grad_fn()->meta;
  ASSERT_EQ(me.kept_saved.size(), 1u);
  EXPECT_EQ(me.kept_saved_from, std::vector<int>{-1});
  EXPECT_EQ(bit_mismatches<float>(me.kept_saved[0], e), 0);
  // copies, detached: a later in-place write changes neither them nor makes them part of a graph
  {
    NoGradGuard g;
    a.add_(100.0);
  }
  EXPECT_EQ(m.kept_inputs[0].to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(m.kept_saved[0].to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_FALSE(m.kept_inputs[0].requires_grad());
  EXPECT_FALSE(m.kept_saved[1].requires_grad());
}

TEST(KeepValues, GuardsNestAndRestoreThePreviousState) {
  Tensor a = tensor({1.0, 2.0}).requires_grad_();
  {
    KeepValuesGuard outer;
    {
      KeepValuesGuard inner;
    }
    EXPECT_TRUE(detail::keep_values_on());
    EXPECT_NE((a * 2.0).grad_fn()->meta, nullptr);
  }
  EXPECT_FALSE(detail::keep_values_on());
  EXPECT_EQ((a * 2.0).grad_fn()->meta, nullptr);
}

TEST(KeepValues, RecordMultiKeepsEveryOutputAndEachNodeOnlyItsOwnSavedTensors) {
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0}).requires_grad_();
  KeepValuesGuard keep;
  std::vector<Tensor> outs;
  {
    NoGradGuard g;
    outs = {a.slice(0, 0, 2).clone(), a.slice(0, 2, 4).clone()};
  }
  const SavedTensor saved(a);  // what a custom Function's save_for_backward does
  record_multi(outs, {true, true}, "SplitInTwoBackward0", {a}, [saved](const std::vector<Tensor>& g) -> Grads {
    return {cat({g[0], g[1]}, 0) * saved.get()};
  });
  const NodeMeta& m = *outs[0].grad_fn()->meta;
  ASSERT_EQ(m.kept_outputs.size(), 2u);
  EXPECT_EQ(m.kept_outputs[1].to_vector<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(m.kept_saved_from, std::vector<int>{0});
  // the pending list was handed over: the next node keeps only what it saved (neg saves nothing)
  Tensor n = neg(a);
  EXPECT_TRUE(n.grad_fn()->meta->kept_saved.empty());
}

TEST(Tape, RecordsEveryStepWithTheGradientsAgComputes) {
  const int64_t start = live_nodes();
  {
    Mlp m;
    {
      KeepValuesGuard keep;
      m.forward();
    }
    const BackwardTape t = record_backward(m.loss, m.names());
    // every node ran once, the root first
    ASSERT_EQ(t.steps.size(), t.nodes.size());
    EXPECT_EQ(t.steps[0].node, 0);
    std::vector<int> seen(t.nodes.size(), 0);
    for (const auto& s : t.steps) ++seen[static_cast<std::size_t>(s.node)];
    EXPECT_EQ(seen, std::vector<int>(t.nodes.size(), 1));
    EXPECT_EQ(t.leaves.size(), 3u);

    // what arrives at a node is the sum, in the engine's order, of what its consumers sent it
    std::map<std::pair<int, int>, Tensor> sent;  // (node, output) -> sum so far
    std::vector<int> step_of(t.nodes.size());
    for (std::size_t k = 0; k < t.steps.size(); ++k) step_of[static_cast<std::size_t>(t.steps[k].node)] = static_cast<int>(k);
    for (std::size_t k = 0; k < t.steps.size(); ++k) {
      const auto& s = t.steps[k];
      const auto& n = t.nodes[static_cast<std::size_t>(s.node)];
      if (k > 0) {
        ASSERT_TRUE(sent.count({s.node, 0})) << n.name;
        EXPECT_EQ(bit_mismatches<float>(s.grad_outputs[0], sent[{s.node, 0}]), 0) << n.name;
      }
      ASSERT_EQ(s.grad_inputs.size(), n.inputs.size()) << n.name;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        const auto& src = n.inputs[i];
        if (src.node < 0 || !s.grad_inputs[i].defined()) continue;
        EXPECT_LT(static_cast<std::size_t>(k), static_cast<std::size_t>(step_of[static_cast<std::size_t>(src.node)]));
        Tensor& sum = sent[{src.node, src.output}];
        sum = sum.defined() ? add(sum, s.grad_inputs[i]) : s.grad_inputs[i];
      }
    }
    // the gradient arriving at h's node is h.grad, and the leaves' sums are their .grad
    m.loss.backward({}, true);
    const Node* hn = m.h.grad_fn().get();
    bool found = false;
    for (const auto& s : t.steps) {
      if (t.nodes[static_cast<std::size_t>(s.node)].name != hn->name()) continue;
      found = true;
      EXPECT_EQ(bit_mismatches<float>(s.grad_outputs[0], m.h.grad()), 0);
    }
    EXPECT_TRUE(found);
    for (std::size_t j = 0; j < t.leaves.size(); ++j) {
      EXPECT_EQ(bit_mismatches<float>(t.leaf_grads[j], t.leaves[j].value.grad()), 0) << t.leaves[j].name;
    }
    // w1 reaches the loss on three edges (the layer, both operands of w1 * w1): three updates
    int w1_updates = 0;
    for (const auto& s : t.steps)
      for (const auto& [leaf, g] : s.leaf_grads) w1_updates += t.leaves[static_cast<std::size_t>(leaf)].name == "w1";
    EXPECT_EQ(w1_updates, 3);

    // the kept values are the forward's: the tanh node's output is h, its input the linear's output
    for (const auto& n : t.nodes) {
      if (n.name != hn->name()) continue;
      ASSERT_TRUE(n.kept);
      ASSERT_EQ(n.output_values.size(), 1u);
      ASSERT_EQ(n.saved.size(), 1u);
      ASSERT_EQ(n.input_values.size(), 1u);
      EXPECT_EQ(bit_mismatches<float>(n.output_values[0], m.h), 0);
      EXPECT_EQ(bit_mismatches<float>(n.saved[0], m.h), 0);  // tanh saves its output
      EXPECT_EQ(n.saved_from, std::vector<int>{-1});
      NoGradGuard g;
      EXPECT_EQ(bit_mismatches<float>(n.input_values[0], linear(m.x, m.w1, m.b1)), 0);
    }
    // layers: every edge goes from a lower row (larger layer) up to its consumer
    for (const auto& n : t.nodes)
      for (const auto& src : n.inputs) {
        if (src.node >= 0) EXPECT_GT(t.nodes[static_cast<std::size_t>(src.node)].layer, n.layer);
        if (src.leaf >= 0) EXPECT_GT(t.leaves[static_cast<std::size_t>(src.leaf)].layer, n.layer);
      }
  }
  EXPECT_EQ(live_nodes(), start);
}

TEST(Tape, LeavesGradAndTheGraphAsTheyWere) {
  const int64_t start = live_nodes();
  {
    Mlp m;
    m.forward();
    // a .grad already there (from an earlier step), on a leaf and on the retained non-leaf h
    m.w2.set_grad(full({3, 5}, 7.0));
    m.h.set_grad(full({4, 5}, 3.0));
    const TensorImpl* before = m.w2.grad().impl();
    const TensorImpl* before_h = m.h.grad().impl();
    const std::string path = temp_path("page.html");
    to_html(m.loss, path, m.names());
    EXPECT_EQ(m.w2.grad().impl(), before);
    EXPECT_EQ(m.w2.grad().to_vector<float>(), std::vector<float>(15, 7.0f));
    EXPECT_EQ(m.h.grad().impl(), before_h);
    EXPECT_EQ(m.h.grad().to_vector<float>(), std::vector<float>(20, 3.0f));
    EXPECT_FALSE(m.w1.grad().defined());
    EXPECT_FALSE(m.b1.grad().defined());
    m.h.set_grad(Tensor());
    to_html(m.loss, path, m.names());
    EXPECT_FALSE(m.h.grad().defined());
    std::filesystem::remove(path);

    // the graph is still there: backward gives what a fresh graph gives
    m.w2.set_grad(Tensor());
    m.loss.backward();
    Mlp fresh;
    fresh.forward();
    fresh.loss.backward();
    EXPECT_EQ(bit_mismatches<float>(m.w1.grad(), fresh.w1.grad()), 0);
    EXPECT_EQ(bit_mismatches<float>(m.w2.grad(), fresh.w2.grad()), 0);
    EXPECT_EQ(bit_mismatches<float>(m.h.grad(), fresh.h.grad()), 0);
  }
  EXPECT_EQ(live_nodes(), start);
}

TEST(Tape, WithoutKeepValuesTheGradientsAreStillRecorded) {
  Mlp m;
  m.forward();
  const BackwardTape t = record_backward(m.loss, m.names());
  EXPECT_EQ(t.steps.size(), t.nodes.size());
  for (const auto& n : t.nodes) {
    EXPECT_FALSE(n.kept);
    EXPECT_TRUE(n.output_values.empty());
  }
  m.loss.backward();
  for (std::size_t j = 0; j < t.leaves.size(); ++j)
    EXPECT_EQ(bit_mismatches<float>(t.leaf_grads[j], t.leaves[j].value.grad()), 0);
}

TEST(Tape, EachNodeListsWhatItSavesCountingEachStorageOnceInStepOrder) {
  const Tensor a = tensor({1.0, 2.0, 3.0}).requires_grad_(), b = tensor({4.0, 5.0, 6.0}).requires_grad_();
  const Tensor c = a * b;
  const Tensor y = (c * a).sum();
  const BackwardTape t = record_backward(y);
  ASSERT_EQ(t.steps.size(), 3u);
  // the pass runs sum (saves nothing), then c * a (c and a), then a * b (a again, and b)
  const auto& sum = t.nodes[static_cast<std::size_t>(t.steps[0].node)];
  const auto& outer = t.nodes[static_cast<std::size_t>(t.steps[1].node)];
  const auto& inner = t.nodes[static_cast<std::size_t>(t.steps[2].node)];
  EXPECT_TRUE(sum.saved_tensors.empty());
  ASSERT_EQ(outer.saved_tensors.size(), 2u);
  ASSERT_EQ(inner.saved_tensors.size(), 2u);
  EXPECT_EQ(outer.saved_tensors[0].bytes + outer.saved_tensors[1].bytes, 24);
  EXPECT_EQ(inner.saved_tensors[0].bytes, 0) << "a's storage is counted at the step before";
  EXPECT_EQ(inner.saved_tensors[1].bytes, 12);
  EXPECT_EQ(inner.saved_tensors[1].shape, Size({3}));
  EXPECT_EQ(inner.saved_tensors[1].node, "MulBackward0");

  // on a bigger graph the nodes' rows are saved_tensors' rows, and add up to its total
  Mlp m;
  m.forward();
  const BackwardTape mt = record_backward(m.loss, m.names());
  std::multiset<std::string> from_tape, from_view;
  int64_t tape_total = 0, view_total = 0;
  for (const auto& n : mt.nodes)
    for (const SavedTensorInfo& s : n.saved_tensors) {
      from_tape.insert(n.name + " " + s.shape.str() + (s.is_output ? " out" : " in"));
      EXPECT_EQ(s.node, n.name);
      tape_total += s.bytes;
    }
  for (const SavedTensorInfo& s : saved_tensors(m.loss)) {
    from_view.insert(s.node + " " + s.shape.str() + (s.is_output ? " out" : " in"));
    view_total += s.bytes;
  }
  EXPECT_EQ(from_tape, from_view);
  EXPECT_EQ(tape_total, view_total);
  EXPECT_GT(tape_total, 0);
  // the page carries them
  const std::string path = temp_path("keeps.html");
  to_html(m.loss, path, m.names());
  const nlohmann::json j = page_data(read_file(path));
  std::filesystem::remove(path);
  int64_t page_total = 0;
  for (const auto& n : j["nodes"])
    for (const auto& k : n["keeps"]) page_total += k["bytes"].get<int64_t>();
  EXPECT_EQ(page_total, view_total);
}

TEST(Tape, ErrorsSayWhatIsWrong) {
  Tensor w = tensor({1.0, 2.0}).requires_grad_();
  EXPECT_EQ(error_of([] { record_backward(Tensor()); }), "[record_backward] the tensor is undefined");
  EXPECT_EQ(error_of([&] { record_backward(w); }),
            "[record_backward] the tensor of shape [2] has no autograd history (no grad_fn): nothing to step through");
  EXPECT_EQ(error_of([&] { record_backward(w * 2.0); }),
            "[record_backward] expected a one-element tensor (a loss), got shape [2]");
  Tensor loss = (w * w).sum();
  loss.backward();
  EXPECT_EQ(error_of([&] { to_html(loss, temp_path("freed.html")); }),
            "[record_backward] the graph was already freed by backward (MulBackward0); record it before backward or "
            "run backward with retain_graph");
  Tensor ok = (w * w).sum();
  EXPECT_EQ(error_of([&] { to_html(ok, "/nonexistent-dir/page.html"); }), "[to_html] cannot write /nonexistent-dir/page.html");
}

TEST(Tape, DerivativeRulesAreDocsDerivativesRows) {
  const std::vector<DerivativeRule> mm = derivative_rules("MmBackward0");
  ASSERT_FALSE(mm.empty());
  EXPECT_EQ(mm[0].section, "Matrix products");
  EXPECT_EQ(mm[0].op, "`matmul(a, b)` (1-D, 2-D, batched, broadcast)");
  EXPECT_EQ(mm[0].backward, "`da = sum_to(matmul(g, b^T))`, `db = sum_to(matmul(a^T, g))`");
  // "SumBackward0/1" names both; an escaped \| is a | in its cell
  ASSERT_EQ(derivative_rules("SumBackward1").size(), 1u);
  EXPECT_EQ(derivative_rules("SumBackward1")[0].section, "Reductions");
  ASSERT_EQ(derivative_rules("NormBackward1").size(), 1u);
  EXPECT_NE(derivative_rules("NormBackward1")[0].backward.find("`|x| = x * s`"), std::string::npos)
      << derivative_rules("NormBackward1")[0].backward;
  EXPECT_TRUE(derivative_rules("NoSuchBackward0").empty());
  // every row of docs/derivatives.md with a grad_fn is embedded (the file is read here only to count)
  std::istringstream md(read_file(std::string(AG_GOLDEN_DIR) + "/../../docs/derivatives.md"));
  int rows = 0, found = 0;
  for (std::string line; std::getline(md, line);) {
    const std::size_t b = line.find("| ", 1);
    if (line.rfind("| `", 0) != 0 || b == std::string::npos) continue;
    ++rows;
    const std::size_t e = line.find_first_of(" ,/|", b + 2);
    const std::string name = line.substr(b + 2, e - b - 2);
    if (name.find("Backward") == std::string::npos) continue;
    for (const DerivativeRule& r : derivative_rules(name)) found += line.find(r.backward) != std::string::npos;
  }
  EXPECT_GT(rows, 90);
  EXPECT_GE(found, rows - 5);  // a few rows name no grad_fn ("— (int64, no gradient)", "(sum, reshape)")
}

TEST(Html, OnePageWithTheTapeAsJsonAndNothingFetched) {
  Mlp m;
  {
    KeepValuesGuard keep;
    m.forward();
  }
  const std::string path = temp_path("mlp.html");
  to_html(m.loss, path, {{"w1 </script><b>", m.w1}, {"b1", m.b1}, {"w2", m.w2}});
  const std::string page = read_file(path);
  std::filesystem::remove(path);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(page.find("{{TAPE_DATA}}"), std::string::npos);
  // self-contained: no external script, style, image or font; the one URL is SVG's namespace
  for (const char* s : {"<link", " src=", "@import", "url(", "https://"}) EXPECT_EQ(page.find(s), std::string::npos) << s;
  std::size_t urls = 0;
  for (std::size_t p = page.find("http://"); p != std::string::npos; p = page.find("http://", p + 1)) {
    EXPECT_EQ(page.compare(p, 26, "http://www.w3.org/2000/svg"), 0) << page.substr(p, 40);
    ++urls;
  }
  EXPECT_EQ(urls, 1u);
  // two scripts: the data and the one script
  std::size_t scripts = 0;
  for (std::size_t p = page.find("<script"); p != std::string::npos; p = page.find("<script", p + 1)) ++scripts;
  EXPECT_EQ(scripts, 2u);

  const nlohmann::json d = page_data(page);  // the leaf name's "</" was escaped, or this would not parse
  EXPECT_TRUE(d["values_kept"].get<bool>());
  const auto& tensors = d["tensors"];
  m.loss.backward();
  const std::map<std::string, Tensor> leaves{{"w1 </script><b>", m.w1}, {"b1", m.b1}, {"w2", m.w2}};
  ASSERT_EQ(d["leaves"].size(), 3u);
  for (const auto& l : d["leaves"]) {
    const Tensor& leaf = leaves.at(l["name"]);
    const auto& t = tensors[l["grad"].get<std::size_t>()];
    EXPECT_EQ(t["data"].get<std::vector<double>>(), leaf.grad().to_vector<double>()) << l["name"];
    EXPECT_EQ(t["shape"].get<std::vector<int64_t>>(), std::vector<int64_t>(leaf.shape().begin(), leaf.shape().end()));
    EXPECT_EQ(t["dtype"], "float32");
  }
  EXPECT_EQ(tensors[d["root"]["value"].get<std::size_t>()]["data"][0].get<double>(), m.loss.item());
  EXPECT_EQ(d["steps"].size(), d["nodes"].size());
  // each node carries its rule from docs/derivatives.md
  for (const auto& n : d["nodes"])
    if (n["name"] == "TanhBackward0") EXPECT_EQ(n["rules"][0]["backward"], "`g * (1 - y * y)`");
}

TEST(Html, NonFiniteValuesAreWrittenAsStringsJsonCanHold) {
  Tensor a = tensor({1.0, -1.0, 0.0}).requires_grad_();
  Tensor loss;
  {
    KeepValuesGuard keep;
    loss = (log(a) * 0.0).sum();  // log(-1) = nan, log(0) = -inf
  }
  const std::string path = temp_path("nan.html");
  to_html(loss, path);
  const nlohmann::json d = page_data(read_file(path));
  std::filesystem::remove(path);
  bool nan = false, inf = false;
  for (const auto& t : d["tensors"])
    for (const auto& v : t["data"]) {
      nan = nan || v == "NaN";
      inf = inf || v == "-Infinity";
    }
  EXPECT_TRUE(nan);
  EXPECT_TRUE(inf);
}

TEST(Dot, ValuesShowDataAndGradLikeMicrograd) {
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0, 5.0}).requires_grad_();
  Tensor b, loss;
  {
    KeepValuesGuard keep;
    b = a * 2.0;
    b.retain_grad();
    loss = b.sum();
  }
  loss.backward({}, true);
  const std::string dot = to_dot(loss, {{"a", a}}, DotOptions{.values = true});
  EXPECT_EQ(dot,
            "digraph autograd {\n"
            "  rankdir=BT;\n"
            "  node [fontname=\"Helvetica\", fontsize=10];\n"
            "  n0 [shape=plaintext, label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"3\">"
            "<tr><td colspan=\"2\" bgcolor=\"#dbe8fb\"><b>SumBackward0</b> []</td></tr>"
            "<tr><td>data</td><td align=\"left\">30.0000</td></tr></table>>];\n"
            "  n1 [shape=plaintext, label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"3\">"
            "<tr><td colspan=\"2\" bgcolor=\"#f4f6fa\"><b>MulBackward0</b> [5]</td></tr>"
            "<tr><td>data</td><td align=\"left\">[2.0000, 4.0000, 6.0000, 8.0000, ...]</td></tr>"
            "<tr><td>grad</td><td align=\"left\">[1.0000, 1.0000, 1.0000, 1.0000, ...]</td></tr></table>>];\n"
            "  n2 [shape=plaintext, label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"3\">"
            "<tr><td colspan=\"2\" bgcolor=\"#e4f5dc\"><b>a</b> [5]</td></tr>"
            "<tr><td>data</td><td align=\"left\">[1.0000, 2.0000, 3.0000, 4.0000, ...]</td></tr>"
            "<tr><td>grad</td><td align=\"left\">[2.0000, 2.0000, 2.0000, 2.0000, ...]</td></tr></table>>];\n"
            "  n1 -> n0;\n"
            "  n2 -> n1;\n"
            "}\n");
  // max_values, a name that needs escaping, and an op node without kept values (no data row)
  Tensor c = (a * a).sum();
  const std::string d2 = to_dot(c, {{"a<1>", a}}, DotOptions{.values = true, .max_values = 2});
  EXPECT_NE(d2.find("<b>a&lt;1&gt;</b> [5]"), std::string::npos) << d2;
  EXPECT_NE(d2.find("<td align=\"left\">[1.0000, 2.0000, ...]</td>"), std::string::npos) << d2;
  EXPECT_EQ(d2.find("<b>SumBackward0</b> []</td></tr><tr><td>data"), std::string::npos) << d2;
  // without the option, the plain boxes as before
  EXPECT_EQ(to_dot(c).find("plaintext"), std::string::npos);
}

#ifdef AG_HAVE_NEXT_WORD
TEST(Html, NextWordWritesThePageOfOneTrainingStepAndTrainsAsWithoutIt) {
  const std::string path = temp_path("next_word.html");
  const auto with = testutil::run_command(std::string(NEXT_WORD_BIN) + " --epochs 3 --json --html " + path + " 2>&1");
  const auto without = testutil::run_command(std::string(NEXT_WORD_BIN) + " --epochs 3 --json 2>&1");
  ASSERT_EQ(with.status, 0) << with.out;
  EXPECT_EQ(with.out, without.out);  // the page changes nothing in the training
  const nlohmann::json d = page_data(read_file(path));
  std::filesystem::remove(path);
  EXPECT_TRUE(d["values_kept"].get<bool>());
  EXPECT_EQ(d["root"]["name"], "NllLossBackward0");
  EXPECT_GT(d["steps"].size(), 10u);
  std::vector<std::string> names;
  for (const auto& l : d["leaves"]) names.push_back(l["name"]);
  EXPECT_NE(std::find(names.begin(), names.end(), "tok.weight"), names.end());
  const auto bad = testutil::run_command(std::string(NEXT_WORD_BIN) + " --html /nonexistent-dir/x.html 2>&1");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find("--html: directory /nonexistent-dir does not exist"), std::string::npos) << bad.out;
}
#endif
