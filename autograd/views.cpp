// View ops: new shape/strides/offset over the same storage, no copy. The backward of each view
// maps the gradient back to the input's layout.
#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

using detail::shape_error;

// `jvp` is the same view of t's tangent (JvpFn::view), so the tangent of a view is a view of its
// base's tangent.
static Tensor make_view(const Tensor& t, Size shape, Strides strides, int64_t offset, const char* name,
                        BackwardFn fn, JvpFn jvp) {
  // An empty view addresses no element: it keeps its input's offset, so a wrapped offset of an
  // empty tensor with huge dims ({2^31, 0, 2^31}[1]) never reaches pointer arithmetic.
  if (shape.numel() == 0) offset = t.storage_offset();
  Tensor v = detail::alias(t, std::move(shape), std::move(strides), offset);
  v.impl()->is_view = true;
  v.impl()->view_version = t.impl()->storage->version;
  v.impl()->view_base = t.impl()->view_base ? t.impl()->view_base : t.impl_ptr();
  v.impl()->no_fw_view = t.impl()->no_fw_view;  // a view of unpack_dual's primal reads no tangent either
  if (needs_grad(t)) record(v, name, {t}, std::move(fn), jvp);
  return v;
}

// Resolves one -1 in a requested shape against numel.
static Size infer_shape(const DimVector& req, int64_t numel, const char* op, const Size& from) {
  Size s(req);
  int64_t known = 1, infer = -1;
  for (int64_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) shape_error(op, "only one dimension can be inferred in shape " + s.str());
      infer = i;
    } else if (s[i] < 0) {
      shape_error(op, "invalid shape dimension " + std::to_string(s[i]) + " in " + s.str());
    } else {
      known = detail::checked_mul(known, s[i], op);
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) {
      shape_error(op, "shape " + s.str() + " is invalid for input of shape " + from.str());
    }
    s[infer] = numel / known;
  }
  if (detail::check_shape(s, op) != numel) shape_error(op, "shape " + s.str() + " is invalid for input of shape " + from.str());
  return s;
}

// Strides that let `to` view memory laid out as (from, st), if any: dims of `from` that are
// contiguous with each other may be split or merged, others must map one to one.
static std::optional<Strides> view_strides(const Size& from, const Strides& st, const Size& to) {
  Strides out(static_cast<std::size_t>(to.size()), 1);
  if (from.numel() == 0 || from.size() == 0) return contiguous_strides(to);
  int64_t view_d = to.size() - 1;
  int64_t chunk_stride = st.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = from.size() - 1; d >= 0; --d) {
    tensor_numel *= from[d];
    bool chunk_ends = d == 0 || (from[d - 1] != 1 && st[static_cast<std::size_t>(d - 1)] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || to[view_d] == 1)) {
      out[static_cast<std::size_t>(view_d)] = view_numel * chunk_stride;
      view_numel *= to[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = st[static_cast<std::size_t>(d - 1)];
      tensor_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

static Tensor view_as_shape(const Tensor& t, const Size& s, const char* name) {
  auto st = view_strides(t.shape(), t.strides(), s);
  if (!st) {
    shape_error("view", "view size is not compatible with input tensor's size and stride (shape " + t.shape().str() +
                            ", strides " + Size(t.strides()).str() + " -> " + s.str() +
                            "); use reshape or contiguous() first");
  }
  // y = t.view(s)  =>  dt = dy.reshape(t.shape)
  return make_view(t, s, *st, t.storage_offset(), name,
                   [from = t.shape()](const Tensor& g) -> Grads { return {reshape(g, from.vec())}; },
                   JvpFn::view([&](const Tangents& d) { return reshape(d[0], s.vec()); }));
}

Tensor view(const Tensor& t, const DimVector& shape) {
  detail::check_defined(t, "view");
  return view_as_shape(t, infer_shape(shape, t.numel(), "view", t.shape()), "ViewBackward0");
}

Tensor reshape(const Tensor& t, const DimVector& shape) {
  detail::check_defined(t, "reshape");
  Size s = infer_shape(shape, t.numel(), "reshape", t.shape());
  if (view_strides(t.shape(), t.strides(), s)) return view_as_shape(t, s, "ReshapeAliasBackward0");
  // a reshape that has to copy: PyTorch's _unsafe_view of the clone
  return view_as_shape(clone(t, MemoryFormat::Contiguous), s, "UnsafeViewBackward0");
}

Tensor detail::unsafe_view(const Tensor& t, const Size& s) { return view_as_shape(t, s, "UnsafeViewBackward0"); }

static Tensor transpose_named(const Tensor& t, int64_t d0, int64_t d1, const char* name) {
  // a 0-dim tensor takes dims -1 and 0 (and is its own transpose), as in PyTorch
  d0 = wrap_dim(d0, t.dim(), "transpose", t.shape());
  d1 = wrap_dim(d1, t.dim(), "transpose", t.shape());
  Size s = t.shape();
  Strides st = t.strides();
  if (t.dim() > 0) {
    std::swap(s[d0], s[d1]);
    std::swap(st[static_cast<std::size_t>(d0)], st[static_cast<std::size_t>(d1)]);
  }
  // y = t.transpose(d0, d1)  =>  dt = dy.transpose(d0, d1)
  return make_view(t, s, st, t.storage_offset(), name, [d0, d1](const Tensor& g) -> Grads { return {transpose(g, d0, d1)}; },
                   JvpFn::view([&](const Tangents& d) { return transpose(d[0], d0, d1); }));
}

Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) {
  detail::check_defined(t, "transpose");
  return transpose_named(t, d0, d1, "TransposeBackward0");
}

Tensor t(const Tensor& x) {
  detail::check_defined(x, "t");
  if (x.dim() > 2) shape_error("t", "expects a tensor with <= 2 dimensions, but got shape " + x.shape().str());
  // a 0-D or 1-D tensor is its own transpose, still through a TBackward0 node as in PyTorch
  return transpose_named(x, 0, x.dim() < 2 ? 0 : 1, "TBackward0");
}

Tensor permute(const Tensor& t, const DimVector& dims) {
  detail::check_defined(t, "permute");
  const int64_t n = t.dim();
  if (static_cast<int64_t>(dims.size()) != n) {
    shape_error("permute", "number of dims " + Size(dims).str() + " doesn't match the tensor's shape " + t.shape().str());
  }
  std::vector<int64_t> d(dims.size()), inv(dims.size());
  std::vector<bool> seen(dims.size(), false);
  Size s;
  Strides st;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    d[i] = wrap_dim(dims[i], n, "permute", t.shape());
    if (seen[static_cast<std::size_t>(d[i])]) shape_error("permute", "repeated dim in " + Size(dims).str());
    seen[static_cast<std::size_t>(d[i])] = true;
    inv[static_cast<std::size_t>(d[i])] = static_cast<int64_t>(i);
    s.vec().push_back(t.shape()[d[i]]);
    st.push_back(t.strides()[static_cast<std::size_t>(d[i])]);
  }
  // y = t.permute(d)  =>  dt = dy.permute(inverse of d)
  return make_view(t, s, st, t.storage_offset(), "PermuteBackward0",
                   [inv](const Tensor& g) -> Grads { return {permute(g, inv)}; },
                   JvpFn::view([&](const Tangents& dt) { return permute(dt[0], dims); }));
}

Tensor unsqueeze(const Tensor& t, int64_t dim) {
  detail::check_defined(t, "unsqueeze");
  dim = wrap_dim(dim, t.dim() + 1, "unsqueeze", t.shape());
  Size s = t.shape();
  Strides st = t.strides();
  int64_t new_stride = dim < t.dim() ? detail::wrapping_mad(st[static_cast<std::size_t>(dim)], s[dim]) : 1;
  s.vec().insert(s.vec().begin() + dim, 1);
  st.insert(st.begin() + dim, new_stride);
  // y = t.unsqueeze(dim)  =>  dt = dy.squeeze(dim)
  return make_view(t, s, st, t.storage_offset(), "UnsqueezeBackward0",
                   [dim](const Tensor& g) -> Grads { return {squeeze(g, dim)}; },
                   JvpFn::view([&](const Tangents& d) { return unsqueeze(d[0], dim); }));
}

static Tensor squeeze_dims(const Tensor& t, const std::vector<bool>& drop, const char* name) {
  Size s;
  Strides st;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (drop[static_cast<std::size_t>(i)]) continue;
    s.vec().push_back(t.shape()[i]);
    st.push_back(t.strides()[static_cast<std::size_t>(i)]);
  }
  // y = t.squeeze(...)  =>  dt = dy.reshape(t.shape)
  return make_view(t, s, st, t.storage_offset(), name,
                   [from = t.shape()](const Tensor& g) -> Grads { return {reshape(g, from.vec())}; },
                   JvpFn::view([&](const Tangents& d) { return reshape(d[0], s.vec()); }));
}

Tensor squeeze(const Tensor& t) {
  detail::check_defined(t, "squeeze");
  std::vector<bool> drop(static_cast<std::size_t>(t.dim()));
  for (int64_t i = 0; i < t.dim(); ++i) drop[static_cast<std::size_t>(i)] = t.shape()[i] == 1;
  return squeeze_dims(t, drop, "SqueezeBackward0");
}

Tensor squeeze(const Tensor& t, int64_t dim) {
  detail::check_defined(t, "squeeze");
  dim = wrap_dim(dim, t.dim(), "squeeze", t.shape());  // a 0-dim tensor takes dims -1 and 0
  if (t.dim() == 0) return squeeze_dims(t, {}, "SqueezeBackward1");
  std::vector<bool> drop(static_cast<std::size_t>(t.dim()), false);
  drop[static_cast<std::size_t>(dim)] = t.shape()[dim] == 1;
  return squeeze_dims(t, drop, "SqueezeBackward1");
}

Tensor expand(const Tensor& t, const DimVector& shape) {
  detail::check_defined(t, "expand");
  const int64_t n = static_cast<int64_t>(shape.size()), m = t.dim();
  if (n < m) {
    shape_error("expand", "the number of sizes provided " + Size(shape).str() +
                              " must be greater or equal to the number of dimensions of shape " + t.shape().str());
  }
  Size s(shape);
  Strides st(static_cast<std::size_t>(n), 0);
  for (int64_t i = n - 1; i >= 0; --i) {
    int64_t j = i - (n - m);
    int64_t have = j >= 0 ? t.shape()[j] : 1;
    if (s[i] == -1) {
      if (j < 0) shape_error("expand", "-1 is not allowed in a leading, non-existing dimension: " + Size(shape).str());
      s[i] = have;
    }
    if (s[i] < 0) {
      shape_error("expand", "the expanded size " + std::to_string(s[i]) + " is invalid (sizes are non-negative, or -1 "
                            "to keep a dim): cannot expand shape " + t.shape().str() + " to " + Size(shape).str());
    }
    if (j >= 0 && have == s[i]) st[static_cast<std::size_t>(i)] = t.strides()[static_cast<std::size_t>(j)];
    else if (have != 1) {
      shape_error("expand", "the expanded size " + std::to_string(s[i]) + " must match the existing size " +
                                std::to_string(have) + " at non-singleton dimension " + std::to_string(i) +
                                ": cannot expand shape " + t.shape().str() + " to " + Size(shape).str());
    }
  }
  detail::check_shape(s, "expand");
  // y = t.expand(s)  =>  dt = dy summed over the broadcast dims
  return make_view(t, s, st, t.storage_offset(), "ExpandBackward0",
                   [from = t.shape()](const Tensor& g) -> Grads { return {sum_to(g, from)}; },
                   JvpFn::view([&](const Tangents& d) { return expand(d[0], s.vec()); }));
}

// Gradient of a view that picks part of t, as one copy: zeros of t's shape with g written into
// that part (the fast path of slice's and select's rules).
static Tensor scatter_into_zeros(const Tensor& g, const Size& shape, const std::function<Tensor(const Tensor&)>& part) {
  Tensor z = zeros(shape.vec(), g.dtype());
  detail::copy_into(part(z), g);
  return z;
}

Tensor slice(const Tensor& t, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  detail::check_defined(t, "slice");
  if (t.dim() == 0) shape_error("slice", "cannot slice a 0-dim tensor");
  dim = wrap_dim(dim, t.dim(), "slice", t.shape());
  if (step <= 0) shape_error("slice", "step must be positive, got " + std::to_string(step));
  const int64_t n = t.shape()[dim];
  int64_t b = start.value_or(0), e = end.value_or(n);
  if (b < 0) b += n;
  if (e < 0) e += n;
  b = std::clamp<int64_t>(b, 0, n);
  e = std::clamp<int64_t>(e, b, n);
  Size s = t.shape();
  Strides st = t.strides();
  s[dim] = e == b ? 0 : (e - b - 1) / step + 1;  // ceil((e - b) / step) without overflow for a huge step
  const int64_t off = detail::wrapping_mad(b, st[static_cast<std::size_t>(dim)], t.storage_offset());
  // the new stride only matters past the first element, where it lies within the span too
  if (s[dim] > 1) st[static_cast<std::size_t>(dim)] = detail::wrapping_mad(st[static_cast<std::size_t>(dim)], step);
  // y = t[b:e:step] along dim  =>  dt = zeros with dt[b:e:step] = dy, i.e.
  //   dt = index_add(zeros like t, dim, arange(b, e, step), dy)
  return make_view(t, s, st, off, "SliceBackward0", [from = t.shape(), dim, b, e, step](const Tensor& g) -> Grads {
    if (!needs_grad(g)) return {scatter_into_zeros(g, from, [&](const Tensor& z) { return slice(z, dim, b, e, step); })};
    const Tensor positions = arange(static_cast<double>(b), static_cast<double>(e), static_cast<double>(step));
    return {index_add(zeros(from.vec(), g.dtype()), dim, positions, g)};
  }, JvpFn::view([&](const Tangents& d) { return slice(d[0], dim, b, e, step); }));
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  detail::check_defined(t, "narrow");
  if (t.dim() == 0) shape_error("narrow", "cannot narrow a 0-dim tensor");
  const int64_t d = wrap_dim(dim, t.dim(), "narrow", t.shape());
  const int64_t n = t.shape()[d];
  if (start < -n || start > n) {
    throw std::out_of_range("[narrow] start out of range (expected to be in range of [" + std::to_string(-n) + ", " +
                            std::to_string(n) + "], but got " + std::to_string(start) + ") for shape " + t.shape().str());
  }
  if (start < 0) start += n;
  if (length < 0) shape_error("narrow", "narrow(): length must be non-negative, got " + std::to_string(length));
  if (length > n - start) {  // start + length > n, without overflow
    shape_error("narrow", "start (" + std::to_string(start) + ") + length (" + std::to_string(length) +
                              ") exceeds dimension size (" + std::to_string(n) + ") of shape " + t.shape().str());
  }
  return slice(t, d, start, start + length, 1);
}

Tensor select(const Tensor& t, int64_t dim, int64_t index) {
  detail::check_defined(t, "select");
  if (t.dim() == 0) shape_error("select", "cannot select on a 0-dim tensor");
  dim = wrap_dim(dim, t.dim(), "select", t.shape());
  const int64_t n = t.shape()[dim];
  if (index < -n || index >= n) {
    throw std::out_of_range("[select] index " + std::to_string(index) + " is out of bounds for dimension " +
                            std::to_string(dim) + " with size " + std::to_string(n) + " (shape " + t.shape().str() + ")");
  }
  if (index < 0) index += n;
  Size s = t.shape();
  Strides st = t.strides();
  const int64_t off = detail::wrapping_mad(index, st[static_cast<std::size_t>(dim)], t.storage_offset());
  s.vec().erase(s.vec().begin() + dim);
  st.erase(st.begin() + dim);
  // y = t.select(dim, i)  =>  dt = zeros with dt.select(dim, i) = dy, i.e.
  //   dt = index_add(zeros like t, dim, [i], dy.unsqueeze(dim))
  return make_view(t, s, st, off, "SelectBackward0", [from = t.shape(), dim, index](const Tensor& g) -> Grads {
    if (!needs_grad(g)) return {scatter_into_zeros(g, from, [&](const Tensor& z) { return select(z, dim, index); })};
    return {index_add(zeros(from.vec(), g.dtype()), dim, full({1}, static_cast<double>(index), kInt64), unsqueeze(g, dim))};
  }, JvpFn::view([&](const Tangents& d) { return select(d[0], dim, index); }));
}

}  // namespace ag
