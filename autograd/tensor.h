// Tensor: a cheap handle over shared storage with a shape, strides, an offset and a dtype, plus
// the autograd metadata (requires_grad, grad, grad_fn). Views share storage; ops live in ops.h
// and are also reachable as methods, PyTorch style.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dtype.h"
#include "shape.h"
#include "storage.h"

namespace ag {

struct Node;
class Tensor;
class Generator;

// A gradient hook (Tensor::register_hook): returns a replacement gradient, or an undefined
// tensor to leave the gradient as it is.
using GradHook = std::function<Tensor(const Tensor&)>;
// A hook run on a leaf after backward accumulated its .grad (Tensor::register_post_accumulate_grad_hook).
using PostAccumulateGradHook = std::function<void(const Tensor&)>;

namespace indexing {
class TensorIndex;  // indexing.h
}

namespace detail {
struct LeafHooks;
struct IndexOrigin;  // indexing.h
// The error for an op given an undefined tensor (a default-constructed Tensor, or .grad() before
// any backward): std::logic_error "[op] ... undefined tensor ...".
[[noreturn]] void undefined_tensor(const char* op);
}  // namespace detail

struct TensorImpl {
  TensorImpl() = default;
  TensorImpl(std::shared_ptr<Storage> st, Size sh, Strides str, int64_t off, DType dt)
      : storage(std::move(st)), shape(std::move(sh)), strides(std::move(str)), offset(off), dtype(dt) {}

  std::shared_ptr<Storage> storage;
  Size shape;
  Strides strides;
  int64_t offset = 0;  // in elements
  DType dtype = kFloat32;

  // autograd
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;     // null for leaves
  uint32_t output_nr = 0;            // which output of grad_fn this tensor is
  std::shared_ptr<TensorImpl> grad;  // accumulated gradient of a leaf (or of a non-leaf that retains it)
  bool retains_grad = false;         // retain_grad() was called on this non-leaf
  bool leaf_in_graph = false;        // a graph edge was made to this tensor as a leaf that requires grad
  // hooks on a leaf's gradient, and its AccumulateGrad node while one is held (next_functions)
  std::shared_ptr<detail::LeafHooks> leaf_hooks;
  // forward mode (forward_ad.h): the tangent this tensor carries at the live dual level, or null.
  // Leaving the level resets it; a missing tangent means zero.
  std::shared_ptr<TensorImpl> fw_grad;
  // forward mode: a view that never takes its base's tangent (unpack_dual's primal); any other
  // view without a tangent of its own reads the same view of its root base's tangent, if any
  bool no_fw_view = false;
  // A view that is part of a graph remembers the storage version it was made at: if its base is
  // later modified in place, the view's history is stale and using it in a graph is an error.
  bool is_view = false;
  uint64_t view_version = 0;
  // A view's root base: the tensor its chain of views started from (null for a tensor that is no
  // view). An in-place write through the view rewrites the base's history (CopySlices).
  std::shared_ptr<TensorImpl> view_base;

  // a copy made by advanced indexing: where it came from (indexing.h), so that assigning to it as
  // a temporary writes into the tensor it indexed
  std::shared_ptr<const detail::IndexOrigin> index_origin;

  // set by nn: a Parameter prints "Parameter containing:", and its name appears in graphs
  bool is_parameter = false;
  std::string name;
};

// Options for creation functions: zeros({2, 3}, kFloat64) or
// zeros({2, 3}, Options().dtype(kFloat64).requires_grad(true)).
struct Options {
  DType dtype_ = kFloat32;
  bool dtype_set = false;  // tensor({...}) infers the dtype from its values unless one is given
  bool requires_grad_ = false;
  Options() = default;
  Options(DType t) : dtype_(t), dtype_set(true) {}  // NOLINT: implicit so a bare dtype can be passed
  Options dtype(DType t) const { Options o = *this; o.dtype_ = t; o.dtype_set = true; return o; }
  Options requires_grad(bool r = true) const { Options o = *this; o.requires_grad_ = r; return o; }
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  ~Tensor() = default;
  // Assigning to a named tensor rebinds the handle, as in libtorch.
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  // Assigning to a temporary writes into the tensor it views, as libtorch's Tensor::operator= &&
  // and Python's x[0] = t do: x[0] = t is x.select(0, 0).copy_(t), x.narrow(1, 0, 2) = 2.5 is
  // .fill_(2.5). In a graph it records CopySlices on x, as PyTorch does.
  Tensor& operator=(const Tensor& src) &&;
  Tensor& operator=(Tensor&& src) &&;
  Tensor& operator=(double value) &&;

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // ---- layout ----
  const Size& shape() const { return checked("shape").shape; }
  const Size& sizes() const { return checked("sizes").shape; }
  // A 0-dim tensor has no size or stride to give: IndexError "Dimension specified as 0 but tensor
  // has no dimensions" in PyTorch, std::out_of_range here.
  int64_t size(int64_t d) const {
    const TensorImpl& i = checked("size");
    return i.shape[wrap_dim(d, no_dims_check(i, d, "size"), "size", i.shape)];
  }
  int64_t dim() const { return checked("dim").shape.size(); }
  int64_t numel() const { return checked("numel").shape.numel(); }
  const Strides& strides() const { return checked("strides").strides; }
  int64_t stride(int64_t d) const {
    const TensorImpl& i = checked("stride");
    return i.strides[static_cast<std::size_t>(wrap_dim(d, no_dims_check(i, d, "stride"), "stride", i.shape))];
  }
  int64_t storage_offset() const { return checked("storage_offset").offset; }
  DType dtype() const { return checked("dtype").dtype; }
  bool is_floating_point() const { return is_floating(checked("is_floating_point").dtype); }
  bool is_contiguous() const;
  bool shares_storage(const Tensor& o) const { return checked("shares_storage").storage == o.checked("shares_storage").storage; }

  // ---- data ----
  // Pointer to the first element (offset applied). Checks that T matches the dtype.
  template <class T>
  T* data_ptr() const;
  double item() const;  // a one-element tensor's value
  // libtorch's item<T>(): the value converted to T (float, double, int64_t, int or bool); an
  // int64 value comes back exactly, where item() would round it past 2^53
  template <class T>
  T item() const;
  template <class T>
  std::vector<T> to_vector() const;  // all elements in row-major order, converted to T

  // ---- autograd ----
  bool requires_grad() const { return checked("requires_grad").requires_grad; }
  Tensor& requires_grad_(bool r = true);
  bool is_leaf() const { return checked("is_leaf").grad_fn == nullptr; }
  Tensor grad() const { return Tensor(checked("grad").grad); }
  // PyTorch's t.grad = g: g must have t's shape and dtype ("assigned grad has data of a different
  // size" / "... type", std::invalid_argument otherwise), and must not be t itself. t.set_grad({})
  // is t.grad = None: the next backward starts a fresh gradient.
  void set_grad(const Tensor& g) const;
  const std::shared_ptr<Node>& grad_fn() const { return checked("grad_fn").grad_fn; }
  int64_t output_nr() const { return checked("output_nr").output_nr; }
  // A non-leaf keeps its gradient in .grad after backward (summed over backward calls, as a
  // leaf's); a no-op on a leaf. Throws on a tensor that does not require grad.
  void retain_grad() const;
  bool retains_grad() const;
  // Calls `hook` with the gradient of this tensor each time one is computed, before it is used
  // (a leaf: before it is accumulated into .grad; a non-leaf: before its grad_fn runs). The hook
  // returns a replacement, or an undefined tensor to keep the gradient. Hooks run in the order
  // they were registered; the id removes one.
  unsigned register_hook(GradHook hook) const;
  void remove_hook(unsigned id) const;
  // On a leaf that requires grad: calls `hook(leaf)` each time backward has accumulated the
  // leaf's gradient into .grad (once per pass, after the gradient hooks), as PyTorch 2's
  // register_post_accumulate_grad_hook; optimizers and data-parallel gradient averaging start
  // from it. Not called by ag::grad, which does not touch .grad. Throws on a non-leaf.
  void register_post_accumulate_grad_hook(PostAccumulateGradHook hook) const;
  // Backpropagates from this tensor, accumulating into the .grad of the leaves. Without
  // `gradient` the tensor must hold one element. retain_graph defaults to create_graph; with
  // create_graph the backward pass records its own graph, and .grad is accumulated out of place
  // and carries history (so it can be differentiated again).
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  Tensor detach() const;  // same storage, no history
  // libtorch's data() (Python's p.data): detach(), for updates such as p.data() += -lr * p.grad().
  // It shares p's version counter, where PyTorch's has its own: docs/pytorch-differences.md
  Tensor data() const { return detach(); }

  // ---- conversions ----
  Tensor to(DType t) const;
  Tensor float_() const { return to(kFloat32); }
  Tensor double_() const { return to(kFloat64); }
  Tensor long_() const { return to(kInt64); }
  Tensor bool_() const { return to(kBool); }
  Tensor contiguous() const;
  Tensor clone() const;

  // ---- views ----
  Tensor view(const DimVector& shape) const;
  Tensor reshape(const DimVector& shape) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor permute(const DimVector& dims) const;
  Tensor t() const;
  Tensor T() const;  // all dims reversed, like PyTorch's .T
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor expand(const DimVector& shape) const;
  Tensor slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const;  // select(0, index)
  // Python's x[True] adds a dim (x.index({true})); a bool converted to an integer would select
  // row 1 instead, so x[true] does not compile.
  template <class Bool>
    requires std::is_same_v<Bool, bool>
  Tensor operator[](Bool) const = delete;
  // libtorch's indexing API (indexing.h): x.index({Slice(1, None), 0, idx, mask}) is Python's
  // x[1:, 0, idx, mask] (a view for basic indices, a copy for advanced ones), and
  // x.index_put_({...}, v) is x[...] = v (with accumulate: +=, repeated positions adding up).
  // x[t] is x.index({t}) and x[{0, 1}] is x.index({0, 1}). Assigning to the temporary result
  // writes into x, as Python's x[mask] = 0 and x[mask] += 1 do, for advanced indices too.
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values, bool accumulate = false);
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, double value, bool accumulate = false);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values, bool accumulate = false);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, double value, bool accumulate = false);
  Tensor operator[](const Tensor& index) const;
  Tensor operator[](std::initializer_list<indexing::TensorIndex> indices) const;

  // ---- a method for each op of ops.h that PyTorch has as a method, grouped as ops.h is ----
  // Each is the free function of the same name with this tensor first (x.sin() is sin(x)).
  // elementwise (unary.cpp, binary.cpp)
  Tensor add(const Tensor& other) const;
  Tensor add(double other) const;
  Tensor sub(const Tensor& other) const;
  Tensor sub(double other) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(double other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(double other) const;
  Tensor pow(double exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor erf() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor log1p() const;
  Tensor expm1() const;
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor square() const;
  Tensor round() const;
  Tensor round(int64_t decimals) const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor trunc() const;
  Tensor frac() const;
  Tensor clamp(std::optional<double> min, std::optional<double> max = std::nullopt) const;
  Tensor clamp_min(double min) const;
  Tensor clamp_max(double max) const;
  Tensor minimum(const Tensor& other) const;
  Tensor maximum(const Tensor& other) const;
  Tensor where(const Tensor& condition, const Tensor& other) const;  // where(condition, *this, other)
  Tensor where(const Tensor& condition, double other) const;
  // comparisons and logical ops (bool results)
  Tensor gt(double v) const;
  Tensor gt(const Tensor& o) const;
  Tensor lt(double v) const;
  Tensor lt(const Tensor& o) const;
  Tensor ge(double v) const;
  Tensor ge(const Tensor& o) const;
  Tensor le(double v) const;
  Tensor le(const Tensor& o) const;
  Tensor eq(double v) const;
  Tensor eq(const Tensor& o) const;
  Tensor ne(double v) const;
  Tensor ne(const Tensor& o) const;
  Tensor logical_not() const;
  Tensor logical_and(const Tensor& o) const;
  Tensor logical_or(const Tensor& o) const;
  // reductions (reduce.cpp)
  Tensor sum() const;
  Tensor sum(const DimVector& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const DimVector& dims, bool keepdim = false) const;
  Tensor max() const;
  std::pair<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;  // (values, indices)
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::pair<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;  // (values, indices)
  Tensor argmin(int64_t dim, bool keepdim = false) const;
  Tensor prod() const;
  Tensor prod(int64_t dim, bool keepdim = false) const;
  Tensor var(bool unbiased = true) const;
  Tensor var(int dim) const;
  Tensor var(const DimVector& dims, bool unbiased = true, bool keepdim = false) const;
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  Tensor var(const DimVector& dims, I correction, bool keepdim = false) const = delete;  // see ag::var
  Tensor std(bool unbiased = true) const;
  Tensor std(int dim) const;
  Tensor std(const DimVector& dims, bool unbiased = true, bool keepdim = false) const;
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  Tensor std(const DimVector& dims, I correction, bool keepdim = false) const = delete;  // see ag::std
  Tensor logsumexp(const DimVector& dims, bool keepdim = false) const;
  Tensor cumsum(int64_t dim) const;
  Tensor norm(double p = 2) const;
  Tensor norm(double p, const DimVector& dims, bool keepdim = false) const;
  // matmul, softmax, masking (matmul.cpp, softmax.cpp, masked_fill.cpp)
  Tensor matmul(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor masked_fill(const Tensor& mask, double value) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor tril(int64_t diagonal = 0) const;
  // gathering (index.cpp)
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, double alpha = 1.0) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor masked_select(const Tensor& mask) const;
  // rearranging (rearrange.cpp)
  Tensor flip(const DimVector& dims) const;
  Tensor roll(const DimVector& shifts, const DimVector& dims = {}) const;
  Tensor roll(int64_t shift) const;
  Tensor roll(int64_t shift, int64_t dim) const;
  Tensor repeat(const DimVector& sizes) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(const std::vector<int64_t>& split_sizes, int64_t dim = 0) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, const DimVector& sizes) const;
  // random (random.h): p.bernoulli(), p.multinomial(n), and the in-place fills
  Tensor bernoulli(Generator* gen = nullptr) const;
  Tensor multinomial(int64_t num_samples, bool replacement = false, Generator* gen = nullptr) const;
  Tensor& uniform_(double from = 0.0, double to = 1.0, Generator* gen = nullptr);
  Tensor& normal_(double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
  Tensor& bernoulli_(double p = 0.5, Generator* gen = nullptr);
  Tensor& exponential_(double lambd = 1.0, Generator* gen = nullptr);

  // ---- in place (bump the storage version) ----
  // All are differentiable as in PyTorch: on a non-leaf (or with an operand that requires grad)
  // the arithmetic ones and masked_fill_ record their out-of-place op's node, zero_, fill_ and
  // copy_ ZeroBackward0, FillBackward2 and CopyBackwards. Through a view of a tensor in a graph,
  // the base records CopySlices and the view AsStridedBackward0. A leaf that requires grad, or a
  // view of one, is refused outside NoGradGuard, as in PyTorch.
  Tensor& masked_fill_(const Tensor& mask, double value);
  Tensor& zero_();
  Tensor& fill_(double value);
  Tensor& add_(const Tensor& other, double alpha = 1.0);  // self += alpha other
  Tensor& add_(double value);
  Tensor& sub_(const Tensor& other, double alpha = 1.0);  // self -= alpha other
  Tensor& sub_(double value);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(double value);
  Tensor& div_(const Tensor& other);
  Tensor& div_(double value);
  Tensor& clamp_(std::optional<double> min, std::optional<double> max = std::nullopt);
  Tensor& copy_(const Tensor& src);

 private:
  // The impl, or the undefined-tensor error naming `op`.
  const TensorImpl& checked(const char* op) const {
    if (!impl_) detail::undefined_tensor(op);
    return *impl_;
  }
  // The tensor's dim count, or the error for a 0-dim tensor asked for dim d's size or stride.
  static int64_t no_dims_check(const TensorImpl& i, int64_t d, const char* op);
  std::shared_ptr<TensorImpl> impl_;
};

namespace detail {
// Throws the undefined-tensor error naming `op` if t is undefined.
inline void check_defined(const Tensor& t, const char* op) {
  if (!t.defined()) undefined_tensor(op);
}
}  // namespace detail

// PyTorch's repr: tensor([[ 0.3374, -0.1778]], grad_fn=<MmBackward0>)
std::string repr(const Tensor& t);
std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace ag
