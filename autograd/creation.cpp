// Creation functions: zeros, ones, full, arange, linspace, logspace, eye, tensor(...) from nested
// lists, triu/tril. The loops that write the elements are in kernels/creation.cpp.
#include <cmath>
#include <stdexcept>

#include "autograd/kernels/common.h"
#include "autograd/kernels/creation.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

using detail::make_tensor;

static Tensor finish(Tensor t, const Options& o) {
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}

Tensor empty(const DimVector& shape, Options o) { return finish(make_tensor(Size(shape), o.dtype_, "empty"), o); }

// full, zeros and ones: a new tensor of `shape` with every element `value`.
static Tensor filled(const DimVector& shape, double value, const Options& o, const char* op) {
  Tensor t = make_tensor(Size(shape), o.dtype_, op);
  {
    NoGradGuard g;
    t.fill_(value);
  }
  t.impl()->storage->version = 0;
  return finish(t, o);
}

Tensor full(const DimVector& shape, double value, Options o) { return filled(shape, value, o, "full"); }

Tensor full(const DimVector& shape, bool value, Options o) {
  if (!o.dtype_set) o = o.dtype(kBool);
  return filled(shape, value ? 1.0 : 0.0, o, "full");
}

Tensor full_int(const DimVector& shape, int64_t value, Options o) {
  if (!o.dtype_set) o = o.dtype(kInt64);
  Tensor t = make_tensor(Size(shape), o.dtype_, "full");
  dispatch_all(t.dtype(), [&]<typename T>() {
    // an integer converts exactly to int64, to bool as value != 0, to a float rounded
    const T v = std::is_same_v<T, int64_t> ? static_cast<T>(value) : detail::checked_scalar<T>(static_cast<double>(value), "full");
    detail::for_each_inplace<T>(t, [&](T& x) { x = v; });
  });
  return finish(t, o);
}
Tensor zeros(const DimVector& shape, Options o) { return filled(shape, 0.0, o, "zeros"); }
Tensor ones(const DimVector& shape, Options o) { return filled(shape, 1.0, o, "ones"); }

// t's dtype unless o gives one
static Options like(const Tensor& t, Options o) {
  detail::check_defined(t, "_like");
  return o.dtype_set ? o : o.dtype(t.dtype());
}
Tensor empty_like(const Tensor& t, Options o) { return empty(t.shape().vec(), like(t, o)); }
Tensor zeros_like(const Tensor& t, Options o) { return full(t.shape().vec(), 0.0, like(t, o)); }
Tensor ones_like(const Tensor& t, Options o) { return full(t.shape().vec(), 1.0, like(t, o)); }
Tensor full_like(const Tensor& t, double value, Options o) { return full(t.shape().vec(), value, like(t, o)); }

Tensor arange(double end, Options o) { return arange(0.0, end, 1.0, o); }
Tensor arange(double start, double end, Options o) { return arange(start, end, 1.0, o); }

Tensor arange(double start, double end, double step, Options o) {
  if (step == 0) throw std::invalid_argument("[arange] step must be nonzero");
  if (!std::isfinite(start) || !std::isfinite(end)) {
    throw std::invalid_argument("[arange] unsupported range: " + std::to_string(start) + " -> " + std::to_string(end));
  }
  if ((end - start) / step < 0) {
    throw std::invalid_argument("[arange] upper bound and larger bound inconsistent with step sign");
  }
  const double count = std::ceil((end - start) / step);
  if (!(count < 9223372036854775808.0)) throw std::length_error("[arange] invalid size, possible overflow?");
  auto n = static_cast<int64_t>(count);
  const bool integral = is_whole_number(start) && is_whole_number(end) && is_whole_number(step);
  const DType dtype = o.dtype_set ? o.dtype_ : integral ? kInt64 : kFloat32;
  if (dtype == kBool) throw std::invalid_argument("[arange] \"arange_cpu\" not implemented for 'Bool'");
  if (dtype == kInt64) {  // every value must fit
    detail::checked_scalar<int64_t>(start, "arange");
    detail::checked_scalar<int64_t>(start + static_cast<double>(n) * step, "arange");
  }
  return finish(kernels::arange(start, step, n, dtype), o);
}

Tensor linspace(double start, double end, int64_t steps, Options o) {
  if (steps < 0) throw std::invalid_argument("[linspace] number of steps must be non-negative");
  if (steps == 1) return full({1}, start, o);
  if (steps == 0) return empty({0}, o);
  return finish(kernels::linspace(start, end, steps, o.dtype_), o);
}

Tensor logspace(double start, double end, int64_t steps, double base, Options o) {
  if (steps < 0) throw std::invalid_argument("[logspace] number of steps must be non-negative");
  if (steps == 1) return full({1}, std::pow(base, start), o);  // start is not rounded to the dtype first
  if (steps == 0) return empty({0}, o);
  return finish(kernels::logspace(start, end, steps, base, o.dtype_), o);
}

Tensor eye(int64_t n, Options o) { return eye(n, n, o); }

Tensor eye(int64_t n, int64_t m, Options o) {
  if (n < 0) throw std::invalid_argument("[eye] n must be greater or equal to 0, got " + std::to_string(n));
  if (m < 0) throw std::invalid_argument("[eye] m must be greater or equal to 0, got " + std::to_string(m));
  return finish(kernels::eye(n, m, o.dtype_), o);
}

Tensor from_vector(const std::vector<double>& data, const DimVector& shape, Options o) {
  Size s(shape);
  if (detail::check_shape(s, "from_vector") != static_cast<int64_t>(data.size())) {
    throw std::invalid_argument("[from_vector] " + std::to_string(data.size()) +
                                " values cannot fill a tensor of shape " + s.str());
  }
  return finish(kernels::from_vector(data, s, o.dtype_), o);
}

Tensor from_vector(const std::vector<float>& data, const DimVector& shape, Options o) {
  return from_vector(std::vector<double>(data.begin(), data.end()), shape, o);
}

Tensor from_vector(const std::vector<int64_t>& data, const DimVector& shape, Options o) {
  Size s(shape);
  if (detail::check_shape(s, "from_vector") != static_cast<int64_t>(data.size())) {
    throw std::invalid_argument("[from_vector] " + std::to_string(data.size()) +
                                " values cannot fill a tensor of shape " + s.str());
  }
  return finish(kernels::from_vector(data, s, o.dtype_), o);
}

namespace {

// Walks a nested list: its shape is read along the first elements, then every sub-list is
// checked against it; leaves are flattened and PyTorch's dtype inferred (all bool -> bool,
// all integral -> int64, else float32).
struct Flattener {
  std::vector<int64_t> shape;
  std::vector<const NestedList*> leaves;
  bool all_int = true, all_bool = true;

  explicit Flattener(const NestedList& root) {
    for (const NestedList* n = &root; n->is_list(); n = &n->children().front()) {
      shape.push_back(static_cast<int64_t>(n->children().size()));
      if (n->children().empty()) break;
    }
    visit(root, 0);
  }

  void visit(const NestedList& n, std::size_t depth) {
    if (depth == shape.size()) {
      if (n.is_list()) mismatch(depth);
      leaves.push_back(&n);
      all_int = all_int && n.kind() != kFloat32;
      all_bool = all_bool && n.kind() == kBool;
      return;
    }
    if (!n.is_list() || static_cast<int64_t>(n.children().size()) != shape[depth]) mismatch(depth);
    for (const NestedList& c : n.children()) visit(c, depth + 1);
  }

  [[noreturn]] static void mismatch(std::size_t depth) {
    throw std::invalid_argument("[tensor] nested lists are not rectangular: sub-lists at depth " + std::to_string(depth) +
                                " have different lengths or depths");
  }
};

}  // namespace

Tensor tensor(const NestedList& data, Options o) {
  Flattener f(data);
  if (f.leaves.empty()) f.all_int = f.all_bool = false;  // tensor({}) is float32, as in PyTorch
  const DType dt = o.dtype_set ? o.dtype_ : f.all_bool ? kBool : f.all_int ? kInt64 : kFloat32;
  return finish(kernels::from_leaves(f.leaves, Size(f.shape), dt), o);
}

// triu/tril keep elements on one side of a diagonal of the last two dims and zero the rest.
// Their backward applies the same mask to the gradient.
static Tensor tri(const Tensor& t, int64_t diagonal, bool upper, const char* op, const char* grad_name) {
  if (t.dim() < 2) detail::shape_error(op, "expects a tensor with at least 2 dims, got shape " + t.shape().str());
  Tensor out = kernels::tri(t, diagonal, upper);
  if (needs_grad(t)) {
    // out = tri(t)  =>  dt = tri(dout)
    record(out, grad_name, {t},
           [diagonal, upper](const Tensor& g) -> Grads { return {upper ? triu(g, diagonal) : tril(g, diagonal)}; },
           [&](const Tangents& d) { return upper ? triu(d[0], diagonal) : tril(d[0], diagonal); });  // jvp: dout = tri(dt)
  }
  return out;
}

Tensor triu(const Tensor& t, int64_t diagonal) { return tri(t, diagonal, true, "triu", "TriuBackward0"); }
Tensor tril(const Tensor& t, int64_t diagonal) { return tri(t, diagonal, false, "tril", "TrilBackward0"); }

}  // namespace ag
