#include "autograd/anomaly.h"

#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>

#include "autograd/node.h"

namespace ag {

namespace detail {
bool g_anomaly_enabled = false;
}  // namespace detail

namespace {
std::atomic<uint64_t> g_nodes{0};      // nodes recorded since anomaly mode was last turned on
thread_local std::string g_label;      // the innermost AnomalyLabel, with its file:line
std::string g_first_bad;               // the first forward op whose output held a NaN

// Whether t holds a NaN. Only NaN, as PyTorch's anomaly mode checks (an infinite gradient, e.g.
// sqrt's at 0, or a -inf attention mask in the forward pass, is legal).
bool has_nan(const Tensor& t) {
  if (!t.defined() || !t.is_floating_point()) return false;
  for (double v : t.to_vector<double>())
    if (std::isnan(v)) return true;
  return false;
}
}  // namespace

void set_detect_anomaly(bool on) {
  if (on && !detail::g_anomaly_enabled) {
    g_nodes = 0;
    g_first_bad.clear();
  }
  detail::g_anomaly_enabled = on;
}
bool is_anomaly_enabled() { return detail::g_anomaly_enabled; }

DetectAnomalyGuard::DetectAnomalyGuard() : prev_(detail::g_anomaly_enabled) { set_detect_anomaly(true); }
DetectAnomalyGuard::~DetectAnomalyGuard() { set_detect_anomaly(prev_); }

AnomalyLabel::AnomalyLabel(std::string label, const char* file, unsigned line) : prev_(std::move(g_label)) {
  g_label = "\"" + label + "\" (" + file + ":" + std::to_string(line) + ")";
}
AnomalyLabel::~AnomalyLabel() { g_label = std::move(prev_); }

namespace detail {

void anomaly_record(Node& node, const std::vector<Tensor>& outs) {
  if (!node.meta) node.meta = std::make_unique<NodeMeta>();
  std::string& created = node.meta->created;
  created = "node #" + std::to_string(++g_nodes) + " of the forward pass (" + node.name() + ")";
  if (!g_label.empty()) created += ", recorded under the label " + g_label;
  if (!g_first_bad.empty()) return;
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (has_nan(outs[k])) {
      g_first_bad = created + ": its output " + std::to_string(k) + " of shape " + outs[k].shape().str() + " held nan values";
      return;
    }
  }
}

void anomaly_check(const Node& node, const Grads& grads) {
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!has_nan(grads[i])) continue;
    // PyTorch's words: "Function 'SqrtBackward0' returned nan values in its 0th output."
    std::string msg = "Function '" + node.name() + "' returned nan values in its " + std::to_string(i) + "th output.";
    msg += node.meta && !node.meta->created.empty() ? " It was made by " + node.meta->created + "."
                                                    : " It was made before anomaly mode was turned on.";
    msg += g_first_bad.empty() ? " No forward op output held a NaN while anomaly mode was on."
                               : " The first forward op whose output held a NaN: " + g_first_bad + ".";
    const DerivativeRule rule = node.rule();  // the rule that ran, which the name may not say
    if (!rule.op.empty()) msg += " Its rule (docs/derivatives.md): " + rule.op + ": " + rule.backward + ".";
    throw std::runtime_error(msg);
  }
}

}  // namespace detail

}  // namespace ag
