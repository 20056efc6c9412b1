// In-place ops: zero_, fill_, copy_ (data updates: optimizer steps run them under NoGradGuard) and
// the arithmetic ones add_, sub_, mul_, div_, clamp_ (and +=, -=, *=, /= in ops.h), which are
// differentiable as in PyTorch: on a tensor in a graph they record the node of their out-of-place
// op (AddBackward0, ClampBackward1, ...). masked_fill_ (masked_fill.cpp) is differentiable too.
#include "autograd/inplace.h"

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/indexing.h"
#include "autograd/ops.h"

namespace ag {

namespace detail {

bool check_inplace(const Tensor& t, const char* op, bool differentiable) {
  const bool tracked = grad_enabled() && t.requires_grad();
  if (tracked) {
    if (t.is_leaf()) {
      throw std::runtime_error(std::string("[") + op +
                               "] a leaf Variable that requires grad is being used in an in-place operation. Wrap it in "
                               "NoGradGuard (as optimizers do) or use the out-of-place op (shape " + t.shape().str() + ")");
    }
    if (!differentiable) {
      throw std::runtime_error(std::string("[") + op + "] in place on a tensor of shape " + t.shape().str() +
                               " that requires grad is only supported under NoGradGuard");
    }
    if (t.impl()->is_view) {
      throw std::runtime_error(std::string("[") + op + "] in place on a view (shape " + t.shape().str() +
                               ") of a tensor that requires grad is not supported; use the out-of-place op");
    }
  }
  return tracked;
}

bool begin_inplace(const Tensor& t, const char* op, bool differentiable) {
  const bool tracked = check_inplace(t, op, differentiable);
  bump_version(t, op);
  return tracked;
}

void bump_version(const Tensor& t, const char* op) {
  // an expanded tensor holds one element at several places: writing it is ill-defined
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.shape()[d] > 1 && t.stride(d) == 0) {
      throw std::runtime_error(std::string("[") + op + "] unsupported operation: more than one element of the written-to "
                               "tensor refers to a single memory location (shape " + t.shape().str() + ", strides " +
                               Size(t.strides()).str() + "). Please clone() the tensor before performing the operation.");
    }
  }
  ++t.impl()->storage->version;
}

bool inplace_has_tangent_at_level(const Tensor& self, const Tensor* other) {
  return tangent_of(self).defined() || (other && tangent_of(*other).defined());
}

namespace {
// dst = src (0 if src is undefined) in place. Where either has a history (reverse-over-forward: a
// tangent computed from tensors that require grad), the write is recorded as copy_ (or zero_) on
// dst, so that the tangent's gradient flows through it, as PyTorch writes self's tangent with
// copy_; otherwise it is a plain copy.
void write_tangent(const Tensor& dst, const Tensor& src) {
  const bool recorded = grad_enabled() && ((src.defined() && src.requires_grad()) || dst.requires_grad());
  if (recorded && !(dst.is_leaf() && dst.requires_grad())) {
    JvpPause pause;  // tangents carry no tangents
    Tensor d = dst;
    if (src.defined()) d.copy_(src);
    else d.zero_();
    return;
  }
  if (src.defined()) copy_into(dst, src);
  else copy_into(dst, zeros_tensor({}, dst.dtype()));
}
}  // namespace

void set_inplace_tangent(const Tensor& self, const Tensor& t) {
  TensorImpl& s = *self.impl();
  if (s.fw_grad) {
    write_tangent(Tensor(s.fw_grad), t);
    return;
  }
  if (!t.defined()) return;  // zero stays zero
  if (!s.view_base) {
    // a tangent of its own (t may be another tensor's: copy_'s src), laid out as self, so that a
    // view of self taken before reads the same view of it
    const auto span = static_cast<int64_t>(s.storage->nbytes / element_size(self.dtype()));
    const Tensor own = alias(zeros_tensor({span}, t.dtype()), self.shape(), self.strides(), self.storage_offset());
    write_tangent(own, t);
    set_tangent(self, own);
    return;
  }
  // a view: the same view of the base's tangent, laid out as the base is (made as zeros if none)
  const Tensor base(s.view_base);
  if (!base.impl()->fw_grad) {
    const auto span = static_cast<int64_t>(base.impl()->storage->nbytes / element_size(base.dtype()));
    set_tangent(base, alias(zeros_tensor({span}, t.dtype()), base.shape(), base.strides(), base.storage_offset()));
  }
  const Tensor bt(base.impl()->fw_grad);
  if (bt.strides() != base.strides() || bt.storage_offset() != base.storage_offset()) {
    throw std::runtime_error("[forward AD] an in-place write of a dual tensor into a view (shape " + self.shape().str() +
                             ") whose base's tangent is laid out otherwise than the base is not supported");
  }
  const Tensor vt = alias(bt, self.shape(), self.strides(), self.storage_offset());
  copy_into(vt, t);
  set_tangent(self, vt);
}

}  // namespace detail

static void check_broadcastable_into(const Tensor& dst, const Tensor& src, const char* op) {
  Size b = broadcast_shapes(dst.shape(), src.shape(), op);
  if (b != dst.shape()) {
    detail::shape_error(op, "cannot broadcast a tensor of shape " + src.shape().str() + " into one of shape " +
                                dst.shape().str());
  }
}

namespace {
Tensor value_before(const Tensor& self, bool copy);

// The jvp of the nodes that give an in-place op's `self` a new history: none, as the tensor keeps
// the tangent set_inplace_tangent wrote, and these nodes' outputs are aliases whose history alone
// the tensor takes. (A view refreshed after its base was written records its node with tangents
// paused instead: view_of_current_base.)
const auto kKeepsItsTangent = [](const Tangents&) { return Tensor(); };

// After an in-place write: self takes the history `from` was just given (its grad_fn and output
// index), and a gradient self retains follows it to the new node, as in PyTorch.
void take_history(const Tensor& self, const Tensor& from) {
  const std::shared_ptr<Node> old_fn = self.grad_fn();
  const uint32_t old_nr = self.impl()->output_nr;
  self.impl()->grad_fn = from.grad_fn();
  self.impl()->output_nr = from.impl()->output_nr;
  self.impl()->requires_grad = true;
  detail::rebase_retained(self, old_fn, old_nr);
  // A former leaf that requires grad (requires_grad_(false) since) may be an edge of its own new
  // history: those edges would hold it in a reference cycle, and it is a leaf no more.
  if (!old_fn && self.impl()->leaf_in_graph) detail::drop_leaf_edges(self.grad_fn(), self.impl());
}

Tensor tracked_base(const Tensor& self, bool value_requires_grad, const char* op);
void write_through_view(const Tensor& self, const Tensor& b, const Tensor& r, const char* op);

// An in-place write of values that do not depend on self's old value (fill_, zero_, copy_) on a
// tensor in a graph that is no view: self's new node `name` gives its old history a zero gradient
// and `src` (if defined) the gradient summed to src's shape, in src's dtype (PyTorch's
// FillBackward2, ZeroBackward0, CopyBackwards).
void record_overwrite(Tensor& self, const Tensor& src, const char* name) {
  const Tensor before = value_before(self, false);
  Tensor out = detail::alias(self, self.shape(), self.strides(), self.storage_offset());
  // out = src (or a constant)  =>  d self_old = 0, d src = g summed to src's shape
  if (src.defined()) {
    record(out, name, {before, src}, [ss = src.shape(), st = src.dtype()](const Tensor& g) -> Grads {
      return {zeros_like(g), sum_to(g, ss).to(st)};
    }, kKeepsItsTangent);
  } else {
    record(out, name, {before}, [](const Tensor& g) -> Grads { return {zeros_like(g)}; }, kKeepsItsTangent);
  }
  take_history(self, out);
}

// fill_ and zero_: every element `value`, recorded as `name` in a graph.
Tensor& fill_with(Tensor& self, double value, const char* op, const char* name) {
  detail::check_defined(self, op);
  if (detail::inplace_has_tangent(self)) detail::set_inplace_tangent(self, Tensor());  // a constant: dself = 0
  const auto write = [&] {
    dispatch_all(self.dtype(), [&]<typename T>() {
      const T v = detail::checked_scalar<T>(value, op);
      detail::for_each_inplace<T>(self, [&](T& x) { x = v; });
    });
  };
  if (const Tensor b = tracked_base(self, false, op); b.defined()) {
    Tensor r;
    {
      NoGradGuard no_grad;
      r = full(self.shape().vec(), value, self.dtype());
    }
    write_through_view(self, b, r, op);
    return self;
  }
  const bool tracked = grad_enabled() && self.requires_grad();
  detail::check_inplace(self, op, true);  // a leaf that requires grad: refused
  if (!tracked) {
    detail::begin_inplace(self, op, false);
    write();
    return self;
  }
  detail::begin_inplace(self, op, true);
  write();
  record_overwrite(self, Tensor(), name);
  return self;
}
}  // namespace

Tensor& Tensor::fill_(double value) { return fill_with(*this, value, "fill_", "FillBackward2"); }

Tensor& Tensor::zero_() { return fill_with(*this, 0.0, "zero_", "ZeroBackward0"); }

// A copy made by advanced indexing (x[mask] = 0) is written back into the tensor it indexed
// (indexing.h), after taking the value as the copy's dtype and shape, as Python's setitem does.
Tensor& Tensor::operator=(const Tensor& src) && {
  copy_(src);
  detail::write_back_indexed(*this);
  return *this;
}
Tensor& Tensor::operator=(Tensor&& src) && { return std::move(*this) = static_cast<const Tensor&>(src); }
Tensor& Tensor::operator=(double value) && {
  fill_(value);
  detail::write_back_indexed(*this);
  return *this;
}

namespace {

// PyTorch's spelling of a dtype in "result type Float can't be cast to the desired output type Long".
const char* type_word(DType t) {
  switch (t) {
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
    case DType::Int64: return "Long";
    case DType::Bool: return "Bool";
  }
  return "?";
}

// An in-place op writes its out-of-place result into self: the result's dtype must cast to self's
// as PyTorch's canCast allows (no floating point into an integer, nothing but bool into bool).
void check_castable(DType result, const Tensor& self, const char* op) {
  const bool ok = result == self.dtype() || (is_floating(self.dtype()) || (self.dtype() == kInt64 && !is_floating(result)));
  if (!ok) {
    throw std::runtime_error(std::string("[") + op + "] result type " + type_word(result) +
                             " can't be cast to the desired output type " + type_word(self.dtype()));
  }
}

// self's current value with its history, as the input of the node an in-place op records: an
// alias of self, or (`copy`) a copy of its values, for a rule that reads self's old value, which
// the write is about to overwrite (PyTorch saves the original self the same way).
Tensor value_before(const Tensor& self, bool copy) {
  Tensor before;
  if (copy) {
    before = detail::make_tensor(self.shape(), self.dtype());
    detail::copy_into(before, self);
  } else {
    before = detail::alias(self, self.shape(), self.strides(), self.storage_offset());
  }
  before.impl()->grad_fn = self.grad_fn();
  before.impl()->output_nr = self.impl()->output_nr;
  before.impl()->requires_grad = self.requires_grad();
  // and its tangent, as it is now (a copy with the copied value, as the write changes self's; one
  // with its history where it has one: reverse-over-forward)
  if (const Tensor t = detail::tangent_of(self); t.defined()) {
    Tensor tb = t;
    if (copy) {
      detail::JvpPause pause;  // tangents carry no tangents
      tb = clone(t);
    }
    detail::set_tangent(before, tb);
  }
  return before;
}

// The base whose history a write through view `self` rewrites, if that write must be recorded:
// self is a view, and its base or the written value takes part in a graph. Throws PyTorch's error
// for a view of a leaf that requires grad.
Tensor tracked_base(const Tensor& self, bool value_requires_grad, const char* op) {
  const std::shared_ptr<TensorImpl>& base = self.impl()->view_base;
  if (!base || !grad_enabled()) return {};
  Tensor b(base);
  if (!b.requires_grad() && !self.requires_grad() && !value_requires_grad) return {};
  if (b.is_leaf() && b.requires_grad()) {
    throw std::runtime_error(std::string("[") + op + "] a view of a leaf Variable that requires grad is being used in an "
                             "in-place operation (view shape " + self.shape().str() + ", base shape " + b.shape().str() + ")");
  }
  return b;
}

// Where view v's elements sit in its base b, as indices into b's row-major order: an int64
// tensor of v's shape. b's elements are numbered in a scratch laid out as their shared storage,
// which is then read through v's strides and offset.
Tensor positions_in_base(const Tensor& v, const Tensor& b) {
  NoGradGuard no_grad;
  const auto span = static_cast<int64_t>(b.impl()->storage->nbytes / element_size(b.dtype()));
  const Tensor scratch = full({span}, int64_t{-1});
  detail::copy_into(detail::alias(scratch, b.shape(), b.strides(), b.storage_offset()),
                    arange(0.0, static_cast<double>(b.numel()), 1.0, kInt64).view(b.shape().vec()));
  Tensor at = detail::alias(scratch, v.shape(), v.strides(), v.storage_offset()).clone();
  return at;
}

// Gives view `self` (whose elements are b's at `idx`) the history of a view of b's current
// value, as PyTorch regenerates a view's grad_fn after its base changed in place.
void view_of_current_base(const Tensor& self, const Tensor& b, const Tensor& idx) {
  Tensor v = detail::alias(b, self.shape(), self.strides(), self.storage_offset());
  // v = b.flatten()[idx]  =>  db = zeros like b with db.flatten()[idx] += dv
  // Reverse mode only: self's tangent is already the same view of b's (v, which lends self its
  // node, is dropped), and a tangent pushed here, in the middle of recording the op that reads
  // self, would take that op's saved output (record.cpp)
  detail::JvpPause no_tangent;
  record(v, "AsStridedBackward0", {b}, [idx, bshape = b.shape()](const Tensor& g) -> Grads {
    const Tensor flat = index_add(zeros({bshape.numel()}, g.dtype()), 0, reshape(idx, {-1}), reshape(g, {-1}));
    return {reshape(flat, bshape.vec())};
  });
  take_history(self, v);
  self.impl()->view_version = self.impl()->storage->version;
}

// Writes r (self's shape, self's dtype, with its history) into view `self` of base b and records
// the write on b, as PyTorch's CopySlices: b's new value is its old value with the view's elements
// replaced by r's.
void write_through_view(const Tensor& self, const Tensor& b, const Tensor& r, const char* op) {
  const Tensor idx = positions_in_base(self, b);
  Tensor keep;  // 1 where b keeps its old value, 0 on the view's elements
  {
    NoGradGuard no_grad;
    const Tensor flat_idx = reshape(idx, {-1});
    keep = reshape(index_add(ones({b.numel()}, b.dtype()), 0, flat_idx, full({flat_idx.numel()}, -1.0, b.dtype())),
                   b.shape().vec());
  }
  const Tensor b_old = value_before(b, false);
  detail::bump_version(self, op);
  detail::copy_into(self, r);
  Tensor nb = detail::alias(b, b.shape(), b.strides(), b.storage_offset());
  // b = b_old with b.flatten()[idx] = r  =>  db_old = g * keep,  dr = g.flatten()[idx]
  record(nb, "CopySlices", {b_old, r}, [idx, keep, vshape = self.shape()](const Tensor& g) -> Grads {
    return {mul(g, keep), reshape(index_select(reshape(g, {-1}), 0, reshape(idx, {-1})), vshape.vec())};
  }, kKeepsItsTangent);
  take_history(b, nb);
  view_of_current_base(self, b, idx);
}

// self = f(self) in place, where f is the out-of-place op (so values, dtype promotion and the
// recorded node are f's). `other_requires_grad`: f's other operand is a tensor that requires
// grad. `reads_self`: f's rule uses self's value (mul and div by a tensor that requires grad,
// clamp). `fast`, if given, writes the result into self directly when nothing is recorded;
// otherwise the result is computed out of place and copied in.
template <class F>
Tensor& apply_inplace(Tensor& self, const char* op, const Tensor* other, bool reads_self, F f,
                      const std::function<void()>& fast = {}) {
  detail::check_defined(self, op);
  // forward mode: f's result carries its tangent (f's jvp), which becomes self's once the value is
  // written; the write itself pushes none. f runs once, with tangents on, so the node it records
  // saves its tensors with their tangents (forward-over-reverse through the in-place op).
  const bool fw = detail::inplace_has_tangent(self, other);
  const bool other_requires_grad = other && other->defined() && other->requires_grad();
  const bool tracked = grad_enabled() && (self.requires_grad() || other_requires_grad);
  if (!tracked) {
    if (fast && !fw) {
      detail::begin_inplace(self, op, false);
      fast();
      return self;
    }
    Tensor r;
    {
      NoGradGuard g;
      r = f(self);
    }
    check_castable(r.dtype(), self, op);
    const Tensor t = detail::tangent_of(r);
    detail::begin_inplace(self, op, false);
    detail::copy_into(self, r);
    if (fw) detail::set_inplace_tangent(self, t);
    return self;
  }
  const Tensor b = tracked_base(self, other_requires_grad, op);  // a view's base: CopySlices on it
  if (!b.defined()) detail::check_inplace(self, op, true);       // a leaf that requires grad: refused
  Tensor r = f(value_before(self, reads_self));
  check_castable(r.dtype(), self, op);
  const Tensor t = detail::tangent_of(r);
  {
    detail::JvpPause pause;  // the write pushes no tangent: self takes t below
    if (b.defined()) {
      write_through_view(self, b, r.to(self.dtype()), op);
    } else {
      r = r.to(self.dtype());
      detail::begin_inplace(self, op, true);
      detail::copy_into(self, r);
      take_history(self, r);
    }
  }
  if (fw) detail::set_inplace_tangent(self, t);
  return self;
}

bool requires_grad_of(const Tensor& t) { return t.defined() && t.requires_grad(); }

// The fast loop of add_ and mul_ by a tensor of self's floating dtype: out[i] = f(out[i], other[i]).
template <class F>
std::function<void()> same_dtype_loop(Tensor& self, const Tensor& other, F f) {
  if (!is_floating(self.dtype()) || other.dtype() != self.dtype()) return {};
  return [&self, &other, f] {
    dispatch_float(self.dtype(), "in-place", [&]<typename T>() {
      T* p = static_cast<T*>(self.impl()->storage->data);
      const T* q = static_cast<const T*>(other.impl()->storage->data);
      if (self.is_contiguous() && other.is_contiguous() && other.shape() == self.shape()) {  // gradient accumulation: one flat loop
        T* pp = p + self.storage_offset();
        const T* qq = q + other.storage_offset();
        detail::parallel_elements(self.numel(), [pp, qq, &f](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) pp[i] = f(pp[i], qq[i]);
        });
        return;
      }
      if (self.dim() == 2 && other.shape() == self.shape()) {  // a weight's gradient arriving transposed: 16 x 16 blocks
        const int64_t rows = self.size(0), cols = self.size(1), ps0 = self.stride(0), ps1 = self.stride(1), qs0 = other.stride(0),
                      qs1 = other.stride(1);
        T* pp = p + self.storage_offset();
        const T* qq = q + other.storage_offset();
        for (int64_t i0 = 0; i0 < rows; i0 += 16)
          for (int64_t j0 = 0; j0 < cols; j0 += 16)
            for (int64_t i = i0; i < std::min(i0 + 16, rows); ++i)
              for (int64_t j = j0; j < std::min(j0 + 16, cols); ++j) {
                T& out = pp[i * ps0 + j * ps1];
                out = f(out, qq[i * qs0 + j * qs1]);
              }
        return;
      }
      Strides so = detail::broadcast_strides(other, self.shape());
      detail::walk<2>(self.shape(), {&self.strides(), &so}, {self.storage_offset(), other.storage_offset()},
                      [&](const std::array<int64_t, 2>& i) { p[i[0]] = f(p[i[0]], q[i[1]]); });
    });
  };
}

// The fast loop of an op with a number on self's floating dtype.
template <class F>
std::function<void()> scalar_loop(Tensor& self, F f) {
  if (!is_floating(self.dtype())) return {};
  return [&self, f] {
    dispatch_float(self.dtype(), "in-place", [&]<typename T>() { detail::for_each_inplace<T>(self, [&](T& x) { x = f(x); }); });
  };
}

}  // namespace

bool detail::inplace_through_view(const Tensor& self, bool value_requires_grad, const char* op,
                                  const std::function<Tensor(const Tensor&)>& f) {
  const Tensor b = tracked_base(self, value_requires_grad, op);
  if (!b.defined()) return false;
  write_through_view(self, b, f(value_before(self, false)).to(self.dtype()), op);
  return true;
}

void detail::refresh_view(const Tensor& v) {
  view_of_current_base(v, Tensor(v.impl()->view_base), positions_in_base(v, Tensor(v.impl()->view_base)));
}

// `other` as an in-place op may read it while writing self: a copy when it shares self's memory in
// another layout (x.add_(x.t()) would otherwise read elements it has already written); self itself
// (s *= s) as an alias with self's history, so the node the op records, which saves its operand,
// does not hold self's new node in a cycle (the saved alias goes stale with the write, and backward
// throws as PyTorch's does). In forward mode that alias carries self's tangent as it is before the
// write, as a copy: the write updates self's tangent in place.
static Tensor readable_operand(const Tensor& self, const Tensor& other) {
  if (other.impl() == self.impl()) {
    const Tensor before = value_before(self, false);
    if (const Tensor t = detail::tangent_of(self); t.defined()) {
      detail::JvpPause pause;
      detail::set_tangent(before, clone(t));
    }
    return before;
  }
  const bool same_view = other.storage_offset() == self.storage_offset() && other.shape() == self.shape() &&
                         other.strides() == self.strides();
  // A view's node keeps its base alive (view_base): an operand that is the base or another view of
  // it, saved by the op's node under the base's new CopySlices node, would be a reference cycle.
  const bool views = self.impl()->view_base || other.impl()->view_base;
  return self.shares_storage(other) && (!same_view || views) ? other.clone() : other;
}

// self += alpha other  (AddBackward0)
Tensor& Tensor::add_(const Tensor& other0, double alpha) {
  detail::check_defined(other0, "add_");
  check_broadcastable_into(*this, other0, "add_");
  const Tensor other = readable_operand(*this, other0);
  auto f = [&](const Tensor& self) { return alpha == 1.0 ? ag::add(self, other) : ag::add(self, ag::mul(other, alpha)); };
  return apply_inplace(*this, "add_", &other, false, f,
                       alpha == 1.0 ? same_dtype_loop(*this, other, [](auto x, auto y) { return x + y; })
                                    : same_dtype_loop(*this, other, [a = alpha](auto x, auto y) { return x + static_cast<decltype(x)>(a) * y; }));
}

// self -= alpha other  (SubBackward0)
Tensor& Tensor::sub_(const Tensor& other0, double alpha) {
  detail::check_defined(other0, "sub_");
  check_broadcastable_into(*this, other0, "sub_");
  const Tensor other = readable_operand(*this, other0);
  auto f = [&](const Tensor& self) { return alpha == 1.0 ? ag::sub(self, other) : ag::sub(self, ag::mul(other, alpha)); };
  return apply_inplace(*this, "sub_", &other, false, f);
}

// self *= other  (MulBackward0; other's gradient is g * self's old value)
Tensor& Tensor::mul_(const Tensor& other0) {
  detail::check_defined(other0, "mul_");
  check_broadcastable_into(*this, other0, "mul_");
  const Tensor other = readable_operand(*this, other0);
  return apply_inplace(*this, "mul_", &other, requires_grad_of(other),
                       [&](const Tensor& self) { return ag::mul(self, other); },
                       same_dtype_loop(*this, other, [](auto x, auto y) { return x * y; }));
}

// self /= other  (DivBackward0; other's gradient reads self's old value)
Tensor& Tensor::div_(const Tensor& other0) {
  detail::check_defined(other0, "div_");
  check_broadcastable_into(*this, other0, "div_");
  const Tensor other = readable_operand(*this, other0);
  return apply_inplace(*this, "div_", &other, requires_grad_of(other),
                       [&](const Tensor& self) { return ag::div(self, other); });
}

Tensor& Tensor::add_(double value) {
  return apply_inplace(*this, "add_", nullptr, false, [value](const Tensor& self) { return ag::add(self, value); },
                       scalar_loop(*this, [value](auto x) { return x + static_cast<decltype(x)>(value); }));
}

Tensor& Tensor::sub_(double value) {
  return apply_inplace(*this, "sub_", nullptr, false, [value](const Tensor& self) { return ag::sub(self, value); });
}

Tensor& Tensor::mul_(double value) {
  return apply_inplace(*this, "mul_", nullptr, false, [value](const Tensor& self) { return ag::mul(self, value); },
                       scalar_loop(*this, [value](auto x) { return x * static_cast<decltype(x)>(value); }));
}

Tensor& Tensor::div_(double value) {
  return apply_inplace(*this, "div_", nullptr, false, [value](const Tensor& self) { return ag::div(self, value); });
}

// self = clamp(self, min, max)  (ClampBackward1; the rule's mask reads self's old value)
Tensor& Tensor::clamp_(std::optional<double> min, std::optional<double> max) {
  return apply_inplace(*this, "clamp_", nullptr, true, [min, max](const Tensor& self) { return ag::clamp(self, min, max); });
}

// self = src, broadcast to self's shape and converted to self's dtype. Differentiable as PyTorch's
// copy_: on a view in a graph it records CopySlices on the base; on another tensor in a graph,
// CopyBackwards (self's old history gets a zero gradient, src the gradient summed to its shape).
Tensor& Tensor::copy_(const Tensor& src) {
  detail::check_defined(*this, "copy_");
  detail::check_defined(src, "copy_");
  check_broadcastable_into(*this, src, "copy_");
  // Copy through a temporary if src overlaps our storage, so the copy reads the old values.
  const Tensor s = shares_storage(src) ? src.clone() : src;
  if (detail::inplace_has_tangent(*this, &s)) {
    // forward mode: self's tangent becomes src's (broadcast, in self's dtype), or zero
    const Tensor st = detail::tangent_of(s);
    const Tensor t = st.defined() ? ag::expand(st.to(dtype()), shape().vec()) : Tensor();
    {
      detail::JvpPause pause;
      copy_(s);
    }
    detail::set_inplace_tangent(*this, t);
    return *this;
  }
  if (const Tensor b = tracked_base(*this, requires_grad_of(s), "copy_"); b.defined()) {
    write_through_view(*this, b, ag::expand(s.to(dtype()), shape().vec()), "copy_");
    return *this;
  }
  const bool tracked = grad_enabled() && (requires_grad() || s.requires_grad());
  detail::check_inplace(*this, "copy_", true);  // a leaf that requires grad: refused
  detail::begin_inplace(*this, "copy_", tracked);
  detail::copy_into(*this, s);
  if (tracked) record_overwrite(*this, s, "CopyBackwards");
  return *this;
}

}  // namespace ag
