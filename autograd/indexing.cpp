// libtorch's indexing API (indexing.h), composed of ag's own differentiable ops: basic indices
// are select / slice / unsqueeze views; advanced indices become one index_select over the indexed
// dims flattened together (its backward, index_add, accumulates repeated positions); index_put_
// computes the indexed part's new values out of place and copies them in through a view, so the
// base records CopySlices as any write through a view does.
//
//   y = x[..., idx, ...]  =>  dx = zeros with dx[..., idx, ...] += dy      (index_select's rule)
//   x[idx] = v            =>  dx = dy with dy[idx] zeroed, dv = sum_to(dy[idx])
//   x[idx] += v (accumulate) =>  dx = dy, dv = sum_to(dy[idx])
#include "autograd/indexing.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/inplace.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

using indexing::TensorIndex;
using Kind = TensorIndex::Kind;

indexing::TensorIndex::TensorIndex(const char* ellipsis) : kind_(Kind::Ellipsis) {
  if (ellipsis == nullptr || std::string(ellipsis) != "...") {
    throw std::invalid_argument(std::string("[index] a string index must be \"...\" (Ellipsis), got \"") +
                                (ellipsis ? ellipsis : "null") + "\"");
  }
}

indexing::TensorIndex::TensorIndex(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {
  detail::check_defined(tensor_, "index");
}

std::string indexing::TensorIndex::str() const {
  auto opt = [](std::optional<int64_t> v) { return v ? std::to_string(*v) : std::string(); };
  switch (kind_) {
    case Kind::None: return "None";
    case Kind::Ellipsis: return "...";
    case Kind::Integer: return std::to_string(integer_);
    case Kind::Boolean: return boolean_ ? "True" : "False";
    case Kind::Slice: {
      std::string s = opt(slice_.start());
      s += ':';
      s += opt(slice_.stop());
      if (slice_.step() != 1) {
        s += ':';
        s += std::to_string(slice_.step());
      }
      return s;
    }
    case Kind::Tensor: return "tensor of shape " + tensor_.shape().str() + " (" + dtype_name(tensor_.dtype()) + ")";
  }
  return "?";
}

namespace {

std::string text(const std::vector<TensorIndex>& ix) {
  std::string s = "[";
  for (std::size_t i = 0; i < ix.size(); ++i) s += (i ? ", " : "") + ix[i].str();
  return s + "]";
}

// PyTorch raises IndexError for these; std::out_of_range here, naming the op and the index.
[[noreturn]] void index_error(const char* op, const std::string& what, const std::vector<TensorIndex>& ix) {
  throw std::out_of_range(std::string("[") + op + "] " + what + " (index " + text(ix) + ")");
}

// x after its basic indices, with the advanced index tensors (int64, one per indexed dim of
// `view`, in order; bool masks already turned into positions).
struct Parsed {
  Tensor view;
  std::vector<int64_t> dims;
  std::vector<Tensor> tensors;
};

// A bool mask over dims d.. of r: one int64 tensor of positions per dim of the mask (its nonzero).
void mask_positions(const Tensor& r, int64_t d, const Tensor& mask, Parsed& p, const char* op,
                    const std::vector<TensorIndex>& ix) {
  const int64_t k = mask.dim();
  for (int64_t j = 0; j < k; ++j) {
    if (d + j >= r.dim() || mask.size(j) != r.size(d + j)) {
      index_error(op, "The shape of the mask " + mask.shape().str() + " at index " + std::to_string(j) +
                          " does not match the shape of the indexed tensor " + r.shape().str() + " at index " +
                          std::to_string(d + j), ix);
    }
  }
  const std::vector<uint8_t> m = mask.contiguous().to_vector<uint8_t>();
  std::vector<std::vector<int64_t>> pos(static_cast<std::size_t>(k));
  for (std::size_t flat = 0; flat < m.size(); ++flat) {
    if (!m[flat]) continue;
    std::size_t rem = flat;
    for (int64_t j = k - 1; j >= 0; --j) {
      const auto n = static_cast<std::size_t>(mask.size(j));
      pos[static_cast<std::size_t>(j)].push_back(static_cast<int64_t>(rem % n));
      rem /= n;
    }
  }
  for (int64_t j = 0; j < k; ++j) {
    std::vector<int64_t>& v = pos[static_cast<std::size_t>(j)];
    p.dims.push_back(d + j);
    p.tensors.push_back(from_vector(v, {static_cast<int64_t>(v.size())}));
  }
}

Parsed parse(const Tensor& x, const std::vector<TensorIndex>& ix, const char* op) {
  detail::check_defined(x, op);
  int64_t specified = 0;  // dims the indices consume (PyTorch's count, used by Ellipsis)
  for (const TensorIndex& i : ix) {
    if (i.kind() == Kind::Integer || i.kind() == Kind::Slice) ++specified;
    if (i.kind() == Kind::Tensor) specified += i.tensor().dtype() == kBool ? i.tensor().dim() : 1;
  }
  if (specified > x.dim()) index_error(op, "too many indices for tensor of dimension " + std::to_string(x.dim()), ix);
  Parsed p;
  Tensor r = x;
  int64_t d = 0;
  for (const TensorIndex& i : ix) {
    switch (i.kind()) {
      case Kind::Integer: {
        const int64_t n = r.size(d), k = i.integer();
        if (k < -n || k >= n) {
          index_error(op, "index " + std::to_string(k) + " is out of bounds for dimension " + std::to_string(d) +
                              " with size " + std::to_string(n), ix);
        }
        r = select(r, d, k);
        break;
      }
      case Kind::Slice: {
        const indexing::Slice& s = i.slice();
        if (s.step() == 0) throw std::invalid_argument(std::string("[") + op + "] slice step cannot be zero (index " + text(ix) + ")");
        if (s.step() < 0) throw std::invalid_argument(std::string("[") + op + "] step must be greater than zero (index " + text(ix) + ")");
        r = slice(r, d, s.start(), s.stop(), s.step());
        ++d;
        break;
      }
      case Kind::None:
        r = unsqueeze(r, d);
        ++d;
        break;
      case Kind::Ellipsis:
        d += x.dim() - specified;
        break;
      case Kind::Boolean:
      case Kind::Tensor: {
        const Tensor& t = i.tensor();
        if (i.kind() == Kind::Tensor && t.dtype() == kInt64 && t.dim() == 0) {  // a 0-dim integer tensor selects, as an integer (a view)
          const int64_t n = r.size(d), k = t.to_vector<int64_t>()[0];
          if (k < -n || k >= n) {
            index_error(op, "index " + std::to_string(k) + " is out of bounds for dimension " + std::to_string(d) +
                                " with size " + std::to_string(n), ix);
          }
          r = select(r, d, k);
          break;
        }
        const bool scalar_bool = i.kind() == Kind::Boolean || (t.dtype() == kBool && t.dim() == 0);
        if (scalar_bool) {  // a new dim of size 1, indexed by [0] (true) or by nothing (false)
          const bool b = i.kind() == Kind::Boolean ? i.boolean() : t.item() != 0;
          r = unsqueeze(r, d);
          p.dims.push_back(d);
          p.tensors.push_back(b ? zeros({1}, kInt64) : empty({0}, kInt64));
          ++d;
        } else if (t.dtype() == kBool) {
          mask_positions(r, d, t, p, op, ix);
          d += t.dim();
        } else if (t.dtype() == kInt64) {
          p.dims.push_back(d);
          p.tensors.push_back(t);
          ++d;
        } else {
          index_error(op, "tensors used as indices must be long, byte or bool tensors, got " +
                              std::string(dtype_name(t.dtype())), ix);
        }
        break;
      }
    }
  }
  p.view = r;
  return p;
}

// The advanced part: the index tensors broadcast to `bshape`, each position's flat offset `lin`
// into the indexed dims (row-major over their sizes, `count` of them in all), and the layout:
// view permuted by `perm` (indexed dims first) is (indexed..., rest...); the result is (B, rest)
// or, when the indexed dims are adjacent and not first, (rest before, B, rest after).
struct Advanced {
  Size bshape;
  std::vector<int64_t> lin;
  int64_t count = 1;
  DimVector perm;
  DimVector rest;  // sizes of the dims not indexed, in order
  bool moved = false;  // adjacent and not first: B goes where the indexed dims were
  int64_t first = 0;
};

Advanced advanced(const Parsed& p, const char* op, const std::vector<TensorIndex>& ix) {
  Advanced a;
  Size b = p.tensors[0].shape();
  for (std::size_t k = 1; k < p.tensors.size(); ++k) {
    try {
      b = broadcast_shapes(b, p.tensors[k].shape(), op);
    } catch (const std::exception&) {
      std::string shapes;
      for (const Tensor& t : p.tensors) shapes += (shapes.empty() ? "" : ", ") + t.shape().str();
      index_error(op, "shape mismatch: indexing tensors could not be broadcast together with shapes " + shapes, ix);
    }
  }
  a.bshape = b;
  const std::size_t n = static_cast<std::size_t>(b.numel());
  a.lin.assign(n, 0);
  // An empty view (a 0 among its dims) may have indexed dims whose sizes multiply past int64: its
  // positions are only checked, there is nothing to read or write at them.
  const bool empty = p.view.numel() == 0;
  for (std::size_t k = 0; k < p.tensors.size(); ++k) {
    const int64_t size = p.view.size(p.dims[k]);
    const std::vector<int64_t> v = expand(p.tensors[k], b.vec()).to_vector<int64_t>();
    for (std::size_t j = 0; j < n; ++j) {
      int64_t i = v[j];
      if (i < -size || i >= size) {
        index_error(op, "index " + std::to_string(i) + " is out of bounds for dimension " + std::to_string(p.dims[k]) +
                            " with size " + std::to_string(size), ix);
      }
      if (i < 0) i += size;
      if (!empty) a.lin[j] = a.lin[j] * size + i;  // sizes multiply to at most the view's numel: no overflow
    }
    if (!empty) a.count *= size;
  }
  if (empty) a.count = 0;
  std::vector<bool> indexed(static_cast<std::size_t>(p.view.dim()), false);
  for (int64_t dim : p.dims) {
    a.perm.push_back(dim);
    indexed[static_cast<std::size_t>(dim)] = true;
  }
  for (int64_t dim = 0; dim < p.view.dim(); ++dim) {
    if (indexed[static_cast<std::size_t>(dim)]) continue;
    a.perm.push_back(dim);
    a.rest.push_back(p.view.size(dim));
  }
  bool adjacent = true;
  for (std::size_t k = 1; k < p.dims.size(); ++k) adjacent = adjacent && p.dims[k] == p.dims[k - 1] + 1;
  a.first = p.dims[0];
  a.moved = adjacent && a.first > 0;
  return a;
}

// (B, rest...) -> the result's dim order, and back (to_result false).
DimVector b_order(const Advanced& a, bool to_result) {
  const int64_t nb = a.bshape.size(), nr = a.rest.size();
  DimVector order;
  if (to_result) {  // [B, before, after] -> [before, B, after]
    for (int64_t i = 0; i < a.first; ++i) order.push_back(nb + i);
    for (int64_t i = 0; i < nb; ++i) order.push_back(i);
    for (int64_t i = a.first; i < nr; ++i) order.push_back(nb + i);
  } else {  // [before, B, after] -> [B, before, after]
    for (int64_t i = 0; i < nb; ++i) order.push_back(a.first + i);
    for (int64_t i = 0; i < a.first; ++i) order.push_back(i);
    for (int64_t i = a.first; i < nr; ++i) order.push_back(nb + i);
  }
  return order;
}

Size result_shape(const Advanced& a) {
  DimVector s;
  if (a.moved) {
    for (int64_t i = 0; i < a.first; ++i) s.push_back(a.rest[i]);
    for (int64_t v : a.bshape) s.push_back(v);
    for (int64_t i = a.first; i < static_cast<int64_t>(a.rest.size()); ++i) s.push_back(a.rest[i]);
  } else {
    for (int64_t v : a.bshape) s.push_back(v);
    for (int64_t v : a.rest) s.push_back(v);
  }
  return Size(s);
}

// The view permuted so its indexed dims come first, merged into one: (count, rest...).
Tensor flat_rows(const Tensor& view, const Advanced& a) {
  DimVector s{a.count};
  for (int64_t v : a.rest) s.push_back(v);
  return reshape(permute(view, a.perm), s);
}

Tensor positions(const std::vector<int64_t>& v) { return from_vector(v, {static_cast<int64_t>(v.size())}); }

Tensor index_impl(const Tensor& x, const std::vector<TensorIndex>& ix) {
  const Parsed p = parse(x, ix, "index");
  if (p.tensors.empty()) return p.view;
  const Advanced a = advanced(p, "index", ix);
  if (p.view.numel() == 0) {  // an empty result; the gradient of nothing is zeros
    Tensor out = zeros(result_shape(a).vec(), x.dtype());
    if (needs_grad(x))
      record(out, "IndexBackward0", {x}, [s = x.shape()](const Tensor& g) -> Grads { return {zeros(s.vec(), g.dtype())}; },
             [&](const Tangents& d) { return zeros_like(out, d[0].dtype()); });  // jvp: an empty result's tangent
    return out;
  }
  // y = index_select(flat rows, 0, positions), then laid out as (B, rest) or (before, B, after)
  DimVector bs = a.bshape.vec();
  for (int64_t v : a.rest) bs.push_back(v);
  Tensor out = reshape(index_select(flat_rows(p.view, a), 0, positions(a.lin)), bs);
  if (a.moved) out = contiguous(permute(out, b_order(a, true)));
  // Python's x[mask] = v writes into x: the copy remembers where it came from (indexing.h)
  out.impl()->index_origin = std::make_shared<detail::IndexOrigin>(detail::IndexOrigin{x.impl_ptr(), ix});
  return out;
}

const char* type_word(DType t) {
  return t == kFloat32 ? "Float" : t == kFloat64 ? "Double" : t == kInt64 ? "Long" : "Bool";
}

Tensor& index_put_impl(Tensor& self, const std::vector<TensorIndex>& ix, const Tensor& values, bool accumulate) {
  detail::check_defined(self, "index_put_");
  detail::check_defined(values, "index_put_");
  if (values.dtype() != self.dtype()) {
    throw std::invalid_argument(std::string("[index_put_] Index put requires the source and destination dtypes match, got ") +
                                type_word(self.dtype()) + " for the destination and " + type_word(values.dtype()) +
                                " for the source.");
  }
  if (grad_enabled() && self.requires_grad() && self.is_leaf()) {
    throw std::runtime_error("[index_put_] a leaf Variable that requires grad is being used in an in-place operation (shape " +
                             self.shape().str() + ")");
  }
  const Parsed p = parse(self, ix, "index_put_");
  const std::optional<Advanced> a = p.tensors.empty() ? std::nullopt : std::optional(advanced(p, "index_put_", ix));
  const Size target = a ? result_shape(*a) : p.view.shape();
  try {
    if (broadcast_shapes(values.shape(), target, "index_put_") != target) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw std::invalid_argument("[index_put_] shape mismatch: value tensor of shape " + values.shape().str() +
                                " cannot be broadcast to indexing result of shape " + target.str());
  }
  Tensor view = p.view;
  if (view.numel() == 0) return self;  // nothing to write (the indices and shapes were checked)
  if (!a) {  // basic indices: a view of self, written in place
    if (accumulate) view.add_(values);
    else view.copy_(values);
    return self;
  }
  // The indexed part's new values, out of place from its current ones (bool works in int64: a
  // sum of bools is their or), copied back in through the permuted view.
  const DType work = self.dtype() == kBool ? kInt64 : self.dtype();
  Tensor cur = flat_rows(view, *a).clone().to(work);
  Tensor v = expand(values, target.vec()).to(work);
  if (a->moved) v = permute(v, b_order(*a, false));
  DimVector vs{a->bshape.numel()};
  for (int64_t s : a->rest) vs.push_back(s);
  v = reshape(v, vs);
  // Each position is written once, by the last value aimed at it (as PyTorch's CPU loop); with
  // accumulate every value adds. The rule is PyTorch's IndexPutBackward0:
  //   d cur = g (accumulate) or g with the written rows zeroed,  d v = g[positions] (every one)
  std::vector<int64_t> keep, lin;
  std::vector<double> hit(static_cast<std::size_t>(a->count), 0.0);
  for (std::size_t j = a->lin.size(); j-- > 0;) {
    const auto pos = static_cast<std::size_t>(a->lin[j]);
    if (!accumulate && hit[pos] != 0.0) continue;
    hit[pos] = 1.0;
    keep.push_back(static_cast<int64_t>(j));
    lin.push_back(a->lin[j]);
  }
  std::reverse(keep.begin(), keep.end());  // values add in index order, as PyTorch's loop adds them
  std::reverse(lin.begin(), lin.end());
  DimVector ms{a->count};
  for (std::size_t i = 0; i < a->rest.size(); ++i) ms.push_back(1);
  const Tensor written = from_vector(hit, ms, kBool);
  Tensor updated;
  {
    NoGradGuard values_only;
    detail::JvpPause no_tangent;  // record() below pushes it
    const Tensor base = accumulate ? cur : masked_fill(cur, written, 0.0);
    updated = index_add(base, 0, positions(lin), index_select(v, 0, positions(keep)));
  }
  if (needs_grad(cur, v)) {
    // jvp: the same write of the tangents, d updated = index_add(d cur (rows written zeroed unless
    // accumulate), d v[keep] at lin)
    const auto jvp = [&](const Tangents& t) -> Tensor {
      const Tensor& dcur = t[0];
      const Tensor& dv = t[1];
      Tensor base = dcur.defined() ? (accumulate ? dcur : masked_fill(dcur, written, 0.0))
                                   : zeros(cur.shape().vec(), dv.dtype());
      if (!dv.defined()) return base;
      return index_add(base, 0, positions(lin), index_select(dv.to(base.dtype()), 0, positions(keep)));
    };
    record(updated, "IndexPutBackward0", {cur, v},
           [sw = SavedTensor(written), accumulate, sa = SavedTensor(positions(a->lin))](const Tensor& g) -> Grads {
             return {accumulate ? g : masked_fill(g, sw.get(), 0.0), index_select(g, 0, sa.get())};
           },
           jvp);
  }
  DimVector ps;
  for (int64_t dim : a->perm) ps.push_back(view.size(dim));
  permute(view, a->perm).copy_(reshape(updated, ps).to(self.dtype()));
  return self;
}

}  // namespace

void detail::write_back_indexed(const Tensor& t) {
  if (!t.defined() || !t.impl()->index_origin) return;
  const IndexOrigin& o = *t.impl()->index_origin;
  std::shared_ptr<TensorImpl> base = o.base.lock();
  if (!base) throw std::logic_error("[index] the tensor this indexing result came from no longer exists");
  Tensor b(base);
  index_put_impl(b, o.indices, t, false);
}

Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
  return index_impl(*this, std::vector<TensorIndex>(indices));
}
Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const { return index_impl(*this, indices); }
Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values, bool accumulate) {
  return index_put_impl(*this, std::vector<TensorIndex>(indices), values, accumulate);
}
Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, double value, bool accumulate) {
  return index_put_impl(*this, std::vector<TensorIndex>(indices), full({}, value, dtype()), accumulate);
}
Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values, bool accumulate) {
  return index_put_impl(*this, indices, values, accumulate);
}
Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, double value, bool accumulate) {
  return index_put_impl(*this, indices, full({}, value, dtype()), accumulate);
}
Tensor Tensor::operator[](const Tensor& index) const { return index_impl(*this, {TensorIndex(index)}); }
Tensor Tensor::operator[](std::initializer_list<indexing::TensorIndex> indices) const {
  return index_impl(*this, std::vector<TensorIndex>(indices));
}

}  // namespace ag
