// Anomaly mode: finding the op that made a NaN. While it is on, every recorded node remembers
// where it was made (its number in the forward pass and the innermost AnomalyLabel scope, with that
// scope's file and line), the first forward op whose output held a NaN is noted, and backward
// throws on the first NaN a backward rule returns, as PyTorch's does:
//   Function 'SqrtBackward0' returned nan values in its 0th output. ...
// naming the node, where it was made, and the first forward op that produced a NaN (often the real
// cause, far from where backward noticed). An infinite gradient is legal, as in PyTorch (sqrt's at
// 0 is inf): only NaN is checked. Off (the default) it costs one flag test per op.
#pragma once

#include <string>

namespace ag {

void set_detect_anomaly(bool on);  // torch.autograd.set_detect_anomaly
bool is_anomaly_enabled();

// RAII: anomaly mode on in its scope (torch.autograd.detect_anomaly()), restored after.
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard();
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

// RAII: names the nodes recorded in its scope, for anomaly mode's messages ("attention of block 2").
// Where the scope was opened (file:line, filled in at the call by __builtin_FILE/__builtin_LINE,
// which g++ and clang 14 both have) is noted too. Scopes nest; the innermost label is used.
class AnomalyLabel {
 public:
  explicit AnomalyLabel(std::string label, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE());
  ~AnomalyLabel();
  AnomalyLabel(const AnomalyLabel&) = delete;
  AnomalyLabel& operator=(const AnomalyLabel&) = delete;

 private:
  std::string prev_;
};

}  // namespace ag
