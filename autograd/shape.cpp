#include "autograd/shape.h"

#include <sstream>
#include <stdexcept>

namespace ag {

std::string Size::str() const {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < dims_.size(); ++i) os << (i ? ", " : "") << dims_[i];
  os << ']';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Size& s) { return os << "torch.Size(" << s.str() << ")"; }

Strides contiguous_strides(const Size& shape) {
  Strides st(static_cast<std::size_t>(shape.size()));
  int64_t acc = 1;
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    st[static_cast<std::size_t>(i)] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return st;
}

void dim_out_of_range(int64_t dim, int64_t n, const char* op, const Size& shape) {
  throw std::out_of_range(std::string("[") + op + "] dim " + std::to_string(dim) + " out of range for a tensor of shape " +
                          shape.str() + " (expected in [" + std::to_string(-n) + ", " + std::to_string(n - 1) + "])");
}

Size broadcast_shapes(const Size& a, const Size& b, const char* op) {
  if (a == b) return a;
  int64_t n = std::max(a.size(), b.size());
  DimVector out(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw std::invalid_argument(std::string("[") + op + "] shapes " + a.str() + " and " + b.str() +
                                  " cannot be broadcast together (dim " + std::to_string(i) + ": " +
                                  std::to_string(da) + " vs " + std::to_string(db) + ")");
    }
    out[static_cast<std::size_t>(i)] = da == 1 ? db : da;
  }
  return Size(out);
}

}  // namespace ag
