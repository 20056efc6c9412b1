// The tape explorer's page: a BackwardTape as JSON, put into the page template
// (autograd/tape_page.html, whose one script draws the graph and steps through the pass), and
// docs/derivatives.md's rules, looked up by grad_fn name. Both the template and the markdown are
// embedded into the library when it is built (tape_assets.cpp.in), so nothing is read at run time.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>

#include "autograd/tape.h"

namespace ag {

namespace detail {
extern const char kDerivativesMarkdown[];  // docs/derivatives.md: its section titles and table rows
extern const char kTapePageHtml[];         // autograd/tape_page.html
}  // namespace detail

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The cells of a markdown table row: split at '|' but not at an escaped "\|".
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (std::size_t i = 1; i < line.size(); ++i) {  // past the leading '|'
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cur += '|';
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(trim(cur));
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return cells;
}

struct Row {
  DerivativeRule rule;
  std::vector<std::string> names;  // every grad_fn name the row's grad_fn cell gives
};

const std::vector<Row>& derivative_rows() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> out;
    const std::regex name(R"(([A-Za-z0-9]+Backward)(\d+)((?:/\d+)*))");  // "SumBackward0/1"
    std::string section;
    std::size_t start = 0;
    const std::string md = detail::kDerivativesMarkdown;
    while (start < md.size()) {
      std::size_t end = md.find('\n', start);
      if (end == std::string::npos) end = md.size();
      const std::string line = md.substr(start, end - start);
      start = end + 1;
      if (line.rfind("## ", 0) == 0) {
        section = trim(line.substr(3, line.find(" (") == std::string::npos ? std::string::npos : line.find(" (") - 3));
        continue;
      }
      if (line.rfind("|", 0) != 0 || line.rfind("|---", 0) == 0) continue;
      const std::vector<std::string> c = cells_of(line);
      if (c.size() < 3 || c[0] == "op") continue;
      Row r;
      r.rule = {section, c[0], c[1], c[2], c.size() > 3 ? c[3] : std::string()};
      for (std::sregex_iterator it(c[1].begin(), c[1].end(), name), e; it != e; ++it) {
        const std::string base = (*it)[1];
        r.names.push_back(base + (*it)[2].str());
        const std::string more = (*it)[3];
        for (std::size_t p = more.find('/'); p != std::string::npos; p = more.find('/', p + 1))
          r.names.push_back(base + more.substr(p + 1, more.find('/', p + 1) - p - 1));
      }
      out.push_back(std::move(r));
    }
    return out;
  }();
  return rows;
}

// Tensors go into the page once each, by index; past this many elements only the first are kept.
constexpr int64_t kMaxElements = 100000;

class Writer {
 public:
  int tensor(const Tensor& t) {
    if (!t.defined()) return -1;
    auto it = index_.find(t.impl());
    if (it != index_.end()) return it->second;
    nlohmann::json j;
    j["shape"] = std::vector<int64_t>(t.shape().begin(), t.shape().end());
    j["dtype"] = dtype_name(t.dtype()).substr(6);  // "float32"
    j["numel"] = t.numel();
    const Tensor flat = t.numel() > kMaxElements ? t.reshape({-1}).slice(0, 0, kMaxElements) : t;
    nlohmann::json data = nlohmann::json::array();
    for (double v : flat.to_vector<double>()) {
      // JSON has no NaN or infinity: the page reads these strings back with Number()
      if (std::isnan(v)) data.push_back("NaN");
      else if (std::isinf(v)) data.push_back(v > 0 ? "Infinity" : "-Infinity");
      else data.push_back(v);
    }
    j["data"] = std::move(data);
    j["truncated"] = t.numel() > kMaxElements;
    const int i = static_cast<int>(tensors_.size());
    tensors_.push_back(std::move(j));
    index_.emplace(t.impl(), i);
    return i;
  }
  nlohmann::json tensors() { return std::move(tensors_); }

 private:
  nlohmann::json tensors_ = nlohmann::json::array();
  std::map<const TensorImpl*, int> index_;
};

nlohmann::json shape_json(const Size& s) { return std::vector<int64_t>(s.begin(), s.end()); }

nlohmann::json to_json(const BackwardTape& t) {
  Writer w;
  nlohmann::json nodes = nlohmann::json::array(), leaves = nlohmann::json::array(), steps = nlohmann::json::array();
  bool any_kept = false;
  for (const BackwardTape::NodeInfo& n : t.nodes) {
    nlohmann::json j;
    j["name"] = n.name;
    j["shape"] = shape_json(n.shape);
    j["dtype"] = dtype_name(n.dtype).substr(6);
    j["layer"] = n.layer;
    j["order"] = n.order;
    j["kept"] = n.kept;
    any_kept = any_kept || n.kept;
    nlohmann::json inputs = nlohmann::json::array();
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const BackwardTape::Source& s = n.inputs[i];
      nlohmann::json in;
      if (s.node >= 0) in = {{"node", s.node}, {"output", s.output}};
      else if (s.leaf >= 0) in = {{"leaf", s.leaf}};
      else in = nlohmann::json::object();
      in["shape"] = shape_json(n.input_shapes[i]);
      in["value"] = i < n.input_values.size() ? w.tensor(n.input_values[i]) : -1;
      inputs.push_back(std::move(in));
    }
    j["inputs"] = std::move(inputs);
    nlohmann::json outs = nlohmann::json::array(), saved = nlohmann::json::array(), rules = nlohmann::json::array();
    for (const Tensor& o : n.output_values) outs.push_back(w.tensor(o));
    for (std::size_t k = 0; k < n.saved.size(); ++k) saved.push_back({{"tensor", w.tensor(n.saved[k])}, {"from", n.saved_from[k]}});
    // the rule the node runs; without one, every row of its grad_fn name
    for (const DerivativeRule& r : n.rule.op.empty() ? derivative_rules(n.name) : std::vector<DerivativeRule>{n.rule})
      rules.push_back({{"section", r.section}, {"op", r.op}, {"grad_fn", r.grad_fn}, {"backward", r.backward}});
    nlohmann::json keeps = nlohmann::json::array();
    for (const SavedTensorInfo& k : n.saved_tensors)
      keeps.push_back({{"shape", shape_json(k.shape)}, {"dtype", dtype_name(k.dtype).substr(6)}, {"bytes", k.bytes}, {"is_output", k.is_output}});
    j["keeps"] = std::move(keeps);
    j["outputs"] = std::move(outs);
    j["saved"] = std::move(saved);
    j["rules"] = std::move(rules);
    nodes.push_back(std::move(j));
  }
  for (std::size_t i = 0; i < t.leaves.size(); ++i) {
    const BackwardTape::LeafInfo& l = t.leaves[i];
    leaves.push_back({{"name", l.name},
                      {"shape", shape_json(l.value.shape())},
                      {"dtype", dtype_name(l.value.dtype()).substr(6)},
                      {"layer", l.layer},
                      {"order", l.order},
                      {"value", w.tensor(l.value)},
                      {"grad", w.tensor(t.leaf_grads[i])}});
  }
  for (const BackwardTape::Step& s : t.steps) {
    nlohmann::json go = nlohmann::json::array(), gi = nlohmann::json::array(), lg = nlohmann::json::array();
    for (const Tensor& g : s.grad_outputs) go.push_back(w.tensor(g));
    for (const Tensor& g : s.grad_inputs) gi.push_back(w.tensor(g));
    for (const auto& [leaf, g] : s.leaf_grads) lg.push_back({leaf, w.tensor(g)});
    steps.push_back({{"node", s.node}, {"grad_outputs", std::move(go)}, {"grad_inputs", std::move(gi)}, {"leaf_grads", std::move(lg)}});
  }
  nlohmann::json j;
  j["root"] = {{"value", w.tensor(t.root)}, {"name", t.nodes.empty() ? "" : t.nodes[0].name}};
  j["values_kept"] = any_kept;
  j["nodes"] = std::move(nodes);
  j["leaves"] = std::move(leaves);
  j["steps"] = std::move(steps);
  j["tensors"] = w.tensors();
  return j;
}

void replace_once(std::string& s, const std::string& what, const std::string& with) {
  const std::size_t p = s.find(what);
  if (p == std::string::npos) throw std::logic_error("[to_html] the page template has no " + what);
  s.replace(p, what.size(), with);
}

// The rows whose grad_fn column names `grad_fn`, in the table's order.
std::vector<const Row*> rows_named(const std::string& grad_fn) {
  std::vector<const Row*> out;
  for (const Row& r : derivative_rows())
    if (std::find(r.names.begin(), r.names.end(), grad_fn) != r.names.end()) out.push_back(&r);
  return out;
}

}  // namespace

std::vector<DerivativeRule> derivative_rules(const std::string& grad_fn) {
  std::vector<DerivativeRule> out;
  for (const Row* r : rows_named(grad_fn)) out.push_back(r->rule);
  return out;
}

std::string rule_op_name(const std::string& cell) {
  std::size_t b = cell.find('`');
  b = b == std::string::npos ? 0 : b + 1;
  std::size_t e = b;
  while (e < cell.size() && (std::isalnum(static_cast<unsigned char>(cell[e])) || cell[e] == '_')) ++e;
  return cell.substr(b, e - b);
}

DerivativeRule Node::rule() const {
  for (const Row* r : rows_named(std::string(rule_grad_fn_.empty() ? name_ : rule_grad_fn_))) {
    if (rule_op_.empty() || rule_op_name(r->rule.op) == rule_op_) return r->rule;  // the first row of the name, or the op's
  }
  return {};
}

void to_html(const Tensor& root, const std::string& path, const std::vector<std::pair<std::string, Tensor>>& names) {
  const BackwardTape tape = record_backward(root, names);
  std::string data = to_json(tape).dump();
  // inside <script>, "</" could close the element: JSON lets it be written "<\/"
  for (std::size_t p = data.find("</"); p != std::string::npos; p = data.find("</", p + 3)) data.replace(p, 2, "<\\/");
  std::string page = detail::kTapePageHtml;
  replace_once(page, "{{TAPE_DATA}}", data);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("[to_html] cannot write " + path);
  f << page;
  if (!f.flush()) throw std::runtime_error("[to_html] writing " + path + " failed");
}

}  // namespace ag
