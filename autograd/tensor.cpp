// Tensor handle basics: layout queries, element access, autograd flags, and the method forms
// of the free-function ops.
#include "autograd/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "autograd/pool.h"
#include "autograd/random.h"

namespace ag {

namespace detail {

Tensor make_tensor(const Size& shape, DType dtype, const char* op) {
  const std::size_t bytes = check_alloc(shape, element_size(dtype), op);
  return Tensor(make_pooled<TensorImpl>(make_pooled<Storage>(bytes), shape, contiguous_strides(shape), 0, dtype));
}

Tensor make_tensor(const Size& shape, const Strides& strides, DType dtype, const char* op) {
  const std::size_t bytes = check_alloc(shape, element_size(dtype), op);
  return Tensor(make_pooled<TensorImpl>(make_pooled<Storage>(bytes), shape, strides, 0, dtype));
}

// Dense: the elements fill their storage span with no gap or overlap, in some order of the dims.
static bool non_overlapping_and_dense(const Tensor& t) {
  if (t.is_contiguous()) return true;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.shape()[d] != 1) dims.push_back(d);
  std::sort(dims.begin(), dims.end(), [&](int64_t x, int64_t y) { return t.stride(x) < t.stride(y); });
  int64_t expected = 1;
  for (int64_t d : dims) {
    if (t.stride(d) != expected) return false;
    expected *= t.shape()[d];
  }
  return true;
}

Strides elementwise_strides(const Size& shape, std::initializer_list<const Tensor*> inputs) {
  bool all_contiguous = true, same_dense_strides = true;
  const Tensor& first = **inputs.begin();
  for (const Tensor* t : inputs) {
    if (t->shape() != shape) {
      all_contiguous = same_dense_strides = false;
      break;
    }
    all_contiguous = all_contiguous && t->is_contiguous();
    same_dense_strides = same_dense_strides && t->strides() == first.strides() && non_overlapping_and_dense(*t);
  }
  if (all_contiguous) return contiguous_strides(shape);
  if (same_dense_strides) return first.strides();
  // TensorIterator's reorder_dimensions: an insertion sort of the dims, innermost first, by the
  // strides of the inputs in order (a broadcast dim says nothing; at equal strides the smaller dim
  // goes inner), then dense strides in that order
  const std::size_t n = static_cast<std::size_t>(shape.size());
  std::vector<Strides> st;
  for (const Tensor* t : inputs) st.push_back(broadcast_strides(*t, shape));
  auto should_swap = [&](std::size_t d0, std::size_t d1) {
    for (const Strides& s : st) {
      if (s[d0] == 0 || s[d1] == 0) continue;
      if (s[d0] < s[d1]) return -1;
      if (s[d0] > s[d1]) return 1;
      if (shape[static_cast<int64_t>(d0)] > shape[static_cast<int64_t>(d1)]) return 1;
    }
    return 0;
  };
  std::vector<std::size_t> perm(n);
  for (std::size_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  for (std::size_t i = 1; i < n; ++i) {
    std::size_t d1 = i;
    for (std::size_t d0 = i; d0-- > 0;) {
      const int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  Strides out(n);
  uint64_t stride = 1;  // modulo 2^64: an empty tensor's dims may multiply past int64, as in contiguous_strides
  for (std::size_t i = 0; i < n; ++i) {
    out[perm[i]] = static_cast<int64_t>(stride);
    stride *= static_cast<uint64_t>(shape[static_cast<int64_t>(perm[i])]);
  }
  return out;
}

Tensor alias(const Tensor& t, Size shape, Strides strides, int64_t offset) {
  check_shape(shape, "view");
  return Tensor(make_pooled<TensorImpl>(t.impl()->storage, std::move(shape), std::move(strides), offset, t.dtype()));
}

Strides broadcast_strides(const int64_t* from, const int64_t* strides, int64_t m, const Size& shape) {
  const int64_t n = shape.size();
  Strides st(static_cast<std::size_t>(n), 0);
  for (int64_t i = 0; i < m; ++i) {
    int64_t j = n - m + i;
    st[static_cast<std::size_t>(j)] = from[i] == 1 && shape[j] != 1 ? 0 : strides[i];
  }
  return st;
}

Strides broadcast_strides(const Tensor& t, const Size& shape) {
  return broadcast_strides(t.shape().vec().data(), t.strides().data(), t.dim(), shape);
}

// Whether the slices t[i] along the first dim lie in disjoint memory ranges, one after another:
// the stride of dim 0 is past the reach of a slice (contiguous tensors, and column blocks of one).
static bool first_dim_disjoint(const Tensor& t) {
  int64_t reach = 1;
  for (int64_t d = 1; d < t.dim(); ++d) reach += (t.size(d) - 1) * std::abs(t.stride(d));
  return t.stride(0) >= reach;
}

void copy_into(const Tensor& dst, const Tensor& src) {
  Strides ss = broadcast_strides(src, dst.shape());
  dispatch_all(dst.dtype(), [&]<typename TD>() {
    dispatch_all(src.dtype(), [&]<typename TS>() {
      TD* pd = static_cast<TD*>(dst.impl()->storage->data);
      const TS* ps = static_cast<const TS*>(src.impl()->storage->data);
      auto put = [&](const std::array<int64_t, 2>& o) {
        pd[o[0]] = convert_element<TD>(ps[o[1]]);
      };
      // in dst's memory order: a transposed copy of a transposed src is one stream too
      if (dst.dim() == 0 || dst.numel() < kMinParallelElements || dst.size(0) < 2 || !first_dim_disjoint(dst)) {
        walk_in_memory_order<2>(dst.shape(), {&dst.strides(), &ss}, {dst.storage_offset(), src.storage_offset()}, put);
        return;
      }
      // a large dst (an activation made contiguous, heads copied side by side into a wider
      // matrix) whose first dim's slices lie apart in memory: that dim split over ag's threads,
      // each walking its own part (a copy: the same bits for any split)
      parallel_lines(dst.size(0), dst.numel() / dst.size(0), [&](int64_t b, int64_t e) {
        Size part = dst.shape();
        part[0] = e - b;
        walk_in_memory_order<2>(part, {&dst.strides(), &ss}, {dst.storage_offset() + b * dst.stride(0), src.storage_offset() + b * ss[0]},
                                put);
      });
    });
  });
}

Tensor zeros_tensor(const Size& shape, DType dtype) {
  Tensor t = make_tensor(shape, dtype, "zeros");
  // every dtype's zero (+0.0, 0, false) is all bits 0
  if (t.numel() > 0) std::memset(t.impl()->storage->data, 0, static_cast<std::size_t>(t.numel()) * element_size(dtype));
  return t;
}

Tensor scalar_tensor(double value, DType dtype) {
  Tensor t = make_tensor(Size{}, dtype, "full");
  dispatch_all(dtype, [&]<typename T>() { *t.data_ptr<T>() = checked_scalar<T>(value, "fill_"); });
  return t;
}

Tensor contiguous_copy(const Tensor& t, DType dtype) {
  Tensor out = make_tensor(t.shape(), dtype);
  copy_into(out, t);
  return out;
}

Tensor preserved_copy(const Tensor& t, DType dtype) {
  Tensor out = t.is_contiguous() ? make_tensor(t.shape(), dtype)  // the fast path: one flat loop
                                 : make_tensor(t.shape(), elementwise_strides(t.shape(), {&t}), dtype);
  copy_into(out, t);
  return out;
}

Tensor contiguous_values(const Tensor& t) { return t.is_contiguous() ? t : contiguous_copy(t, t.dtype()); }

Tensor transpose_view(const Tensor& t, int64_t d0, int64_t d1) {
  const int64_t n = t.dim();
  if (d0 < 0) d0 += n;
  if (d1 < 0) d1 += n;
  Size s = t.shape();
  Strides st = t.strides();
  if (n > 0) {
    std::swap(s[d0], s[d1]);
    std::swap(st[static_cast<std::size_t>(d0)], st[static_cast<std::size_t>(d1)]);
  }
  return alias(t, std::move(s), std::move(st), t.storage_offset());
}

Tensor permute_view(const Tensor& t, const DimVector& dims) {
  Size s;
  Strides st;
  for (int64_t d : dims) {
    s.vec().push_back(t.shape()[d]);
    st.push_back(t.strides()[static_cast<std::size_t>(d)]);
  }
  return alias(t, std::move(s), std::move(st), t.storage_offset());
}

void undefined_tensor(const char* op) {
  throw std::logic_error(std::string("[") + op +
                         "] called on an undefined tensor (a default-constructed Tensor, or .grad() before any backward)");
}

void shape_error(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string("[") + op + "] " + what);
}

}  // namespace detail

void Tensor::set_grad(const Tensor& g) const {
  TensorImpl& self = const_cast<TensorImpl&>(checked("set_grad"));
  if (g.defined()) {
    if (g.impl() == &self) throw std::invalid_argument("[set_grad] can't assign Variable as its own grad");
    if (g.dtype() != self.dtype) {
      throw std::invalid_argument("[set_grad] assigned grad has data of a different type: the tensor is " +
                                  dtype_name(self.dtype) + ", the gradient " + dtype_name(g.dtype()));
    }
    if (g.shape() != self.shape) {
      throw std::invalid_argument("[set_grad] assigned grad has data of a different size: the tensor has shape " +
                                  self.shape.str() + ", the gradient " + g.shape().str());
    }
  }
  self.grad = g.impl_;
}

int64_t Tensor::no_dims_check(const TensorImpl& i, int64_t d, const char* op) {
  if (i.shape.size() == 0) {
    throw std::out_of_range(std::string("[") + op + "] Dimension specified as " + std::to_string(d) +
                            " but tensor has no dimensions");
  }
  return i.shape.size();
}

bool Tensor::is_contiguous() const {
  checked("is_contiguous");
  if (numel() == 0) return true;  // as PyTorch: an empty tensor is contiguous whatever its strides
  int64_t expected = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    int64_t s = impl_->shape[i];
    if (s == 1) continue;
    if (impl_->strides[static_cast<std::size_t>(i)] != expected) return false;
    expected *= s;
  }
  return true;
}

template <class T>
static constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return kFloat32;
  else if constexpr (std::is_same_v<T, double>) return kFloat64;
  else if constexpr (std::is_same_v<T, int64_t>) return kInt64;
  else return kBool;
}

template <class T>
T* Tensor::data_ptr() const {
  if (dtype_of<T>() != checked("data_ptr").dtype) {
    throw std::invalid_argument("[data_ptr] requested " + dtype_name(dtype_of<T>()) + " from a tensor of dtype " +
                                dtype_name(impl_->dtype));
  }
  return static_cast<T*>(impl_->storage->data) + impl_->offset;
}
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template uint8_t* Tensor::data_ptr<uint8_t>() const;

template <class T>
std::vector<T> Tensor::to_vector() const {
  std::vector<T> out(static_cast<std::size_t>(checked("to_vector").shape.numel()));
  dispatch_all(dtype(), [&]<typename S>() {
    const S* p = static_cast<const S*>(impl_->storage->data);
    std::size_t i = 0;
    detail::walk<1>(shape(), {&strides()}, {storage_offset()},
                    [&](const std::array<int64_t, 1>& o) { out[i++] = detail::convert_element<T>(p[o[0]]); });
  });
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;

double Tensor::item() const { return item<double>(); }

template <class T>
T Tensor::item() const {
  if (checked("item").shape.numel() != 1) {
    throw std::invalid_argument("[item] a Tensor with " + std::to_string(numel()) +
                                " elements cannot be converted to a scalar (shape " + shape().str() + ")");
  }
  if constexpr (std::is_same_v<T, bool>) {
    return to_vector<double>()[0] != 0;
  } else if constexpr (std::is_same_v<T, int>) {
    return static_cast<int>(to_vector<int64_t>()[0]);
  } else {
    return to_vector<T>()[0];
  }
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template int Tensor::item<int>() const;
template bool Tensor::item<bool>() const;

Tensor& Tensor::requires_grad_(bool r) {
  checked("requires_grad_");
  if (checked("requires_grad_").grad_fn) {
    // a non-leaf requires grad already: asking for it again is a no-op, as in PyTorch
    if (r) return *this;
    throw std::runtime_error("[requires_grad_] you can only change requires_grad flags of leaf variables. If you want "
                             "to use a computed variable in a subgraph that doesn't require differentiation use "
                             "var_no_grad = var.detach().");
  }
  if (r && !is_floating_point()) {
    throw std::invalid_argument("[requires_grad_] only floating point tensors can require gradients, got " +
                                dtype_name(dtype()));
  }
  impl_->requires_grad = r;
  // A leaf view that now requires grad lets go of its base: graph edges hold the leaf, and the
  // base could get a history through it (x.add_(v * 2) for v a view of x), a reference cycle
  // never freed. Nothing is lost: in-place writes to it or through its views are refused, as
  // PyTorch refuses them ("a view of a leaf Variable that requires grad ...").
  if (r) {
    impl_->view_base = nullptr;
    impl_->is_view = false;
  }
  return *this;
}

Tensor Tensor::detach() const {
  const TensorImpl& i = checked("detach");
  return detail::alias(*this, i.shape, i.strides, i.offset);
}

// ---- method forms ----
Tensor Tensor::to(DType t) const { return ag::to(*this, t); }
Tensor Tensor::contiguous() const { return ag::contiguous(*this); }
Tensor Tensor::clone() const { return ag::clone(*this); }
Tensor Tensor::view(const DimVector& s) const { return ag::view(*this, s); }
Tensor Tensor::reshape(const DimVector& s) const { return ag::reshape(*this, s); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return ag::transpose(*this, a, b); }
Tensor Tensor::permute(const DimVector& d) const { return ag::permute(*this, d); }
Tensor Tensor::t() const { return ag::t(*this); }
Tensor Tensor::T() const {
  checked("T");
  std::vector<int64_t> d;
  for (int64_t i = dim() - 1; i >= 0; --i) d.push_back(i);
  return ag::permute(*this, d);
}
Tensor Tensor::unsqueeze(int64_t d) const { return ag::unsqueeze(*this, d); }
Tensor Tensor::squeeze() const { return ag::squeeze(*this); }
Tensor Tensor::squeeze(int64_t d) const { return ag::squeeze(*this, d); }
Tensor Tensor::expand(const DimVector& s) const { return ag::expand(*this, s); }
Tensor Tensor::slice(int64_t d, std::optional<int64_t> s, std::optional<int64_t> e, int64_t step) const {
  return ag::slice(*this, d, s, e, step);
}
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l) const { return ag::narrow(*this, d, s, l); }
Tensor Tensor::select(int64_t d, int64_t i) const { return ag::select(*this, d, i); }
Tensor Tensor::operator[](int64_t i) const { return ag::select(*this, 0, i); }
// elementwise
Tensor Tensor::add(const Tensor& o) const { return ag::add(*this, o); }
Tensor Tensor::add(double o) const { return ag::add(*this, o); }
Tensor Tensor::sub(const Tensor& o) const { return ag::sub(*this, o); }
Tensor Tensor::sub(double o) const { return ag::sub(*this, o); }
Tensor Tensor::mul(const Tensor& o) const { return ag::mul(*this, o); }
Tensor Tensor::mul(double o) const { return ag::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return ag::div(*this, o); }
Tensor Tensor::div(double o) const { return ag::div(*this, o); }
Tensor Tensor::pow(double e) const { return ag::pow(*this, e); }
Tensor Tensor::pow(const Tensor& e) const { return ag::pow(*this, e); }
Tensor Tensor::neg() const { return ag::neg(*this); }
Tensor Tensor::exp() const { return ag::exp(*this); }
Tensor Tensor::log() const { return ag::log(*this); }
Tensor Tensor::sqrt() const { return ag::sqrt(*this); }
Tensor Tensor::tanh() const { return ag::tanh(*this); }
Tensor Tensor::sigmoid() const { return ag::sigmoid(*this); }
Tensor Tensor::relu() const { return ag::relu(*this); }
Tensor Tensor::erf() const { return ag::erf(*this); }
Tensor Tensor::sin() const { return ag::sin(*this); }
Tensor Tensor::cos() const { return ag::cos(*this); }
Tensor Tensor::log1p() const { return ag::log1p(*this); }
Tensor Tensor::expm1() const { return ag::expm1(*this); }
Tensor Tensor::rsqrt() const { return ag::rsqrt(*this); }
Tensor Tensor::reciprocal() const { return ag::reciprocal(*this); }
Tensor Tensor::abs() const { return ag::abs(*this); }
Tensor Tensor::sign() const { return ag::sign(*this); }
Tensor Tensor::square() const { return ag::square(*this); }
Tensor Tensor::round() const { return ag::round(*this); }
Tensor Tensor::round(int64_t decimals) const { return ag::round(*this, decimals); }
Tensor Tensor::floor() const { return ag::floor(*this); }
Tensor Tensor::ceil() const { return ag::ceil(*this); }
Tensor Tensor::trunc() const { return ag::trunc(*this); }
Tensor Tensor::frac() const { return ag::frac(*this); }
Tensor Tensor::clamp(std::optional<double> lo, std::optional<double> hi) const { return ag::clamp(*this, lo, hi); }
Tensor Tensor::clamp_min(double lo) const { return ag::clamp_min(*this, lo); }
Tensor Tensor::clamp_max(double hi) const { return ag::clamp_max(*this, hi); }
Tensor Tensor::minimum(const Tensor& o) const { return ag::minimum(*this, o); }
Tensor Tensor::maximum(const Tensor& o) const { return ag::maximum(*this, o); }
Tensor Tensor::where(const Tensor& c, const Tensor& o) const { return ag::where(c, *this, o); }
Tensor Tensor::where(const Tensor& c, double o) const { return ag::where(c, *this, o); }
Tensor Tensor::gt(double v) const { return ag::gt(*this, v); }
Tensor Tensor::gt(const Tensor& o) const { return ag::gt(*this, o); }
Tensor Tensor::lt(double v) const { return ag::lt(*this, v); }
Tensor Tensor::lt(const Tensor& o) const { return ag::lt(*this, o); }
Tensor Tensor::ge(double v) const { return ag::ge(*this, v); }
Tensor Tensor::ge(const Tensor& o) const { return ag::ge(*this, o); }
Tensor Tensor::le(double v) const { return ag::le(*this, v); }
Tensor Tensor::le(const Tensor& o) const { return ag::le(*this, o); }
Tensor Tensor::eq(double v) const { return ag::eq(*this, v); }
Tensor Tensor::eq(const Tensor& o) const { return ag::eq(*this, o); }
Tensor Tensor::ne(double v) const { return ag::ne(*this, v); }
Tensor Tensor::ne(const Tensor& o) const { return ag::ne(*this, o); }
Tensor Tensor::logical_not() const { return ag::logical_not(*this); }
Tensor Tensor::logical_and(const Tensor& o) const { return ag::logical_and(*this, o); }
Tensor Tensor::logical_or(const Tensor& o) const { return ag::logical_or(*this, o); }
// reductions
Tensor Tensor::sum() const { return ag::sum(*this); }
Tensor Tensor::sum(const DimVector& d, bool k) const { return ag::sum(*this, d, k); }
Tensor Tensor::mean() const { return ag::mean(*this); }
Tensor Tensor::mean(const DimVector& d, bool k) const { return ag::mean(*this, d, k); }
Tensor Tensor::max() const { return ag::max(*this); }
std::pair<Tensor, Tensor> Tensor::max(int64_t d, bool k) const { return ag::max(*this, d, k); }
Tensor Tensor::argmax(int64_t d, bool k) const { return ag::argmax(*this, d, k); }
Tensor Tensor::min() const { return ag::min(*this); }
std::pair<Tensor, Tensor> Tensor::min(int64_t d, bool k) const { return ag::min(*this, d, k); }
Tensor Tensor::argmin(int64_t d, bool k) const { return ag::argmin(*this, d, k); }
Tensor Tensor::prod() const { return ag::prod(*this); }
Tensor Tensor::prod(int64_t d, bool k) const { return ag::prod(*this, d, k); }
Tensor Tensor::var(bool u) const { return ag::var(*this, u); }
Tensor Tensor::var(int d) const { return ag::var(*this, d); }
Tensor Tensor::var(const DimVector& d, bool u, bool k) const { return ag::var(*this, d, u, k); }
Tensor Tensor::std(bool u) const { return ag::std(*this, u); }
Tensor Tensor::std(int d) const { return ag::std(*this, d); }
Tensor Tensor::std(const DimVector& d, bool u, bool k) const { return ag::std(*this, d, u, k); }
Tensor Tensor::logsumexp(const DimVector& d, bool k) const { return ag::logsumexp(*this, d, k); }
Tensor Tensor::cumsum(int64_t d) const { return ag::cumsum(*this, d); }
Tensor Tensor::norm(double p) const { return ag::norm(*this, p); }
Tensor Tensor::norm(double p, const DimVector& d, bool k) const { return ag::norm(*this, p, d, k); }
// matmul, softmax, masking
Tensor Tensor::matmul(const Tensor& o) const { return ag::matmul(*this, o); }
Tensor Tensor::softmax(int64_t d) const { return ag::softmax(*this, d); }
Tensor Tensor::log_softmax(int64_t d) const { return ag::log_softmax(*this, d); }
Tensor Tensor::masked_fill(const Tensor& m, double v) const { return ag::masked_fill(*this, m, v); }
Tensor Tensor::triu(int64_t k) const { return ag::triu(*this, k); }
Tensor Tensor::tril(int64_t k) const { return ag::tril(*this, k); }
// gathering
Tensor Tensor::index_select(int64_t d, const Tensor& i) const { return ag::index_select(*this, d, i); }
Tensor Tensor::index_add(int64_t d, const Tensor& i, const Tensor& s, double a) const { return ag::index_add(*this, d, i, s, a); }
Tensor Tensor::gather(int64_t d, const Tensor& i) const { return ag::gather(*this, d, i); }
Tensor Tensor::scatter_add(int64_t d, const Tensor& i, const Tensor& s) const { return ag::scatter_add(*this, d, i, s); }
Tensor Tensor::masked_select(const Tensor& m) const { return ag::masked_select(*this, m); }
// rearranging
Tensor Tensor::flip(const DimVector& d) const { return ag::flip(*this, d); }
Tensor Tensor::roll(const DimVector& s, const DimVector& d) const { return ag::roll(*this, s, d); }
Tensor Tensor::roll(int64_t s) const { return ag::roll(*this, s); }
Tensor Tensor::roll(int64_t s, int64_t d) const { return ag::roll(*this, s, d); }
Tensor Tensor::repeat(const DimVector& s) const { return ag::repeat(*this, s); }
std::vector<Tensor> Tensor::chunk(int64_t c, int64_t d) const { return ag::chunk(*this, c, d); }
std::vector<Tensor> Tensor::split(int64_t s, int64_t d) const { return ag::split(*this, s, d); }
std::vector<Tensor> Tensor::split(const std::vector<int64_t>& s, int64_t d) const { return ag::split(*this, s, d); }
Tensor Tensor::flatten(int64_t s, int64_t e) const { return ag::flatten(*this, s, e); }
Tensor Tensor::unflatten(int64_t d, const DimVector& s) const { return ag::unflatten(*this, d, s); }
// random
Tensor Tensor::bernoulli(Generator* g) const { return ag::bernoulli(*this, g); }
Tensor Tensor::multinomial(int64_t n, bool r, Generator* g) const { return ag::multinomial(*this, n, r, g); }
Tensor& Tensor::uniform_(double a, double b, Generator* g) { return ag::uniform_(*this, a, b, g); }
Tensor& Tensor::normal_(double m, double s, Generator* g) { return ag::normal_(*this, m, s, g); }
Tensor& Tensor::bernoulli_(double p, Generator* g) { return ag::bernoulli_(*this, p, g); }
Tensor& Tensor::exponential_(double l, Generator* g) { return ag::exponential_(*this, l, g); }

}  // namespace ag
