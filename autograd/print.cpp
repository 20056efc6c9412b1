// Printing in PyTorch's format (torch/_tensor_str.py, default print options: precision 4,
// threshold 1000, edgeitems 3, linewidth 80), so output compares line by line with PyTorch.
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "autograd/node.h"
#include "autograd/tensor.h"

namespace ag {

namespace {

constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdge = 3;
constexpr int64_t kLineWidth = 80;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Python's "{:.4f}" / "{:.4e}" / "{:.0f}" of a float (PyTorch's default precision, 4); nan and inf spelled as Python does.
std::string py_format(double v, char mode) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (mode == 'e') return fmt("%.4e", v);
  if (mode == '0') return fmt("%.0f", v);
  return fmt("%.4f", v);
}

// Decides one format for all printed elements, as PyTorch's _Formatter does.
struct Formatter {
  bool floating = false, int_mode = true, sci_mode = false;
  std::size_t width = 1;

  Formatter(const std::vector<double>& vals, const std::vector<std::string>& plain, bool is_float) : floating(is_float) {
    if (!floating) {
      for (const auto& s : plain) width = std::max(width, s.size());
      return;
    }
    std::vector<double> nz;
    for (double v : vals)
      if (std::isfinite(v) && v != 0) nz.push_back(v);
    if (nz.empty()) return;
    double mn = std::abs(nz[0]), mx = mn;
    for (double v : nz) {
      mn = std::min(mn, std::abs(v));
      mx = std::max(mx, std::abs(v));
      if (v != std::ceil(v)) int_mode = false;
    }
    if (int_mode) {
      if (mx / mn > 1000.0 || mx > 1.0e8) {
        sci_mode = true;
        for (double v : nz) width = std::max(width, py_format(v, 'e').size());
      } else {
        for (double v : nz) width = std::max(width, py_format(v, '0').size() + 1);
      }
    } else if (mx / mn > 1000.0 || mx > 1.0e8 || mn < 1.0e-4) {
      sci_mode = true;
      for (double v : nz) width = std::max(width, py_format(v, 'e').size());
    } else {
      for (double v : nz) width = std::max(width, py_format(v, 'f').size());
    }
  }

  std::string format(double v, const std::string& plain) const {
    std::string s;
    if (!floating) s = plain;
    else if (sci_mode) s = py_format(v, 'e');
    else if (int_mode) s = py_format(v, '0') + (std::isfinite(v) ? "." : "");
    else s = py_format(v, 'f');
    return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
  }
};

struct Printer {
  const Size& shape;
  const Strides cs;  // contiguous strides: element i of the row-major value list
  bool summarize;
  std::function<double(int64_t)> value;
  std::function<std::string(int64_t)> plain;

  // The indices of dim `d` that get printed: all, or the first and last kEdge when summarizing.
  std::vector<int64_t> shown(int64_t d) const {
    std::vector<int64_t> r;
    const int64_t n = shape[d];
    for (int64_t i = 0; i < n; ++i)
      if (!summarize || n <= 2 * kEdge || i < kEdge || i >= n - kEdge) r.push_back(i);
    return r;
  }

  void collect(int64_t d, int64_t base, std::vector<int64_t>& out) const {
    if (d == shape.size()) {
      out.push_back(base);
      return;
    }
    for (int64_t i : shown(d)) collect(d + 1, base + i * cs[static_cast<std::size_t>(d)], out);
  }

  std::string str(int64_t d, int64_t base, int64_t indent, const Formatter& f) const {
    const int64_t nd = shape.size();
    if (d == nd) return f.format(value(base), plain(base));
    const int64_t n = shape[d];
    const bool cut = summarize && n > 2 * kEdge;
    std::vector<std::string> parts;
    for (int64_t i : shown(d)) {
      if (cut && i == n - kEdge) parts.push_back(d == nd - 1 ? " ..." : "...");
      parts.push_back(str(d + 1, base + i * cs[static_cast<std::size_t>(d)], indent + 1, f));
    }
    std::string out = "[";
    if (d == nd - 1) {  // a vector: as many elements per line as fit in the line width
      const auto per_line = std::max<int64_t>(1, (kLineWidth - indent) / static_cast<int64_t>(f.width + 2));
      for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i) out += i % static_cast<std::size_t>(per_line) ? ", " : ",\n" + std::string(static_cast<std::size_t>(indent + 1), ' ');
        out += parts[i];
      }
    } else {
      const std::string sep = "," + std::string(static_cast<std::size_t>(nd - d - 1), '\n') +
                              std::string(static_cast<std::size_t>(indent + 1), ' ');
      for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
    }
    return out + "]";
  }
};

std::string tuple_str(const Size& s) {
  std::string r = "(";
  for (int64_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string repr(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  const auto indent = static_cast<int64_t>(prefix.size());
  std::vector<std::string> suffixes;
  std::string body;
  if (t.numel() == 0) {
    if (t.dim() != 1) suffixes.push_back("size=" + tuple_str(t.shape()));
    if (t.dtype() != kFloat32) suffixes.push_back("dtype=" + dtype_name(t.dtype()));
    body = "[]";
  } else {
    if (t.dtype() == kFloat64) suffixes.push_back("dtype=" + dtype_name(t.dtype()));
    const bool floating = t.is_floating_point();
    std::vector<double> dv;
    std::vector<int64_t> iv;
    if (floating) dv = t.to_vector<double>();
    else iv = t.to_vector<int64_t>();
    const bool is_bool = t.dtype() == kBool;
    Printer p{t.shape(), contiguous_strides(t.shape()), t.numel() > kThreshold,
              [&](int64_t i) { return floating ? dv[static_cast<std::size_t>(i)] : 0.0; },
              [&](int64_t i) {
                if (floating) return std::string();
                const int64_t v = iv[static_cast<std::size_t>(i)];
                return is_bool ? std::string(v ? "True" : "False") : std::to_string(v);
              }};
    std::vector<int64_t> idx;
    p.collect(0, 0, idx);
    std::vector<double> vals;
    std::vector<std::string> plains;
    for (int64_t i : idx) {
      if (floating) vals.push_back(p.value(i));
      else plains.push_back(p.plain(i));
    }
    Formatter f(vals, plains, floating);
    body = p.str(0, 0, indent, f);
  }
  if (t.grad_fn()) suffixes.push_back("grad_fn=<" + std::string(t.grad_fn()->name_) + ">");
  else if (t.requires_grad()) suffixes.push_back("requires_grad=True");

  // Suffixes go on the last line if they fit in the line width, else on a new line.
  std::string out = prefix + body;
  const auto nl = out.rfind('\n');
  auto last_len = static_cast<int64_t>(out.size()) - (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const auto& s : suffixes) {
    const auto len = static_cast<int64_t>(s.size());
    if (last_len + len + 2 > kLineWidth) {
      out += ",\n" + std::string(static_cast<std::size_t>(indent), ' ') + s;
      last_len = indent + len;
    } else {
      out += ", " + s;
      last_len += len + 2;
    }
  }
  out += ")";
  if (t.impl()->is_parameter) out = "Parameter containing:\n" + out;
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << repr(t); }

}  // namespace ag
