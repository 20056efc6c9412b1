// In-place ops: zero_, fill_, add_, mul_, copy_. They are meant for data updates (optimizer
// steps run them under NoGradGuard); masked_fill_ (masked_fill.cpp) is the differentiable one.
#include "autograd/inplace.h"

#include <stdexcept>

#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

namespace detail {

bool begin_inplace(const Tensor& t, const char* op, bool differentiable) {
  bool tracked = grad_enabled() && t.requires_grad();
  if (tracked) {
    if (t.is_leaf()) {
      throw std::runtime_error(std::string("[") + op + "] a leaf tensor of shape " + t.shape().str() +
                               " that requires grad is being used in an in-place operation; wrap it "
                               "in NoGradGuard (as optimizers do) or use the out-of-place op");
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
  ++t.impl()->storage->version;
  return tracked;
}

}  // namespace detail

static void check_no_grad_source(const Tensor& src, const char* op) {
  if (grad_enabled() && src.requires_grad()) {
    throw std::runtime_error(std::string("[") + op + "] the source tensor requires grad; in-place " + op +
                             " does not record history. Use the out-of-place op or NoGradGuard");
  }
}

static void check_broadcastable_into(const Tensor& dst, const Tensor& src, const char* op) {
  Size b = broadcast_shapes(dst.shape(), src.shape(), op);
  if (b != dst.shape()) {
    detail::shape_error(op, "cannot broadcast a tensor of shape " + src.shape().str() + " into one of shape " +
                                dst.shape().str());
  }
}

Tensor& Tensor::fill_(double value) {
  detail::begin_inplace(*this, "fill_", false);
  dispatch_all(dtype(), [&]<typename T>() { detail::for_each_inplace<T>(*this, [&](T& x) { x = static_cast<T>(value); }); });
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0.0); }

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  check_no_grad_source(other, "add_");
  check_broadcastable_into(*this, other, "add_");
  detail::begin_inplace(*this, "add_", false);
  dispatch_float(dtype(), "add_", [&]<typename T>() {
    T* p = static_cast<T*>(impl()->storage->data);
    Tensor o = other.dtype() == dtype() ? other : other.to(dtype());
    const T* q = static_cast<const T*>(o.impl()->storage->data);
    const T a = static_cast<T>(alpha);
    if (is_contiguous() && o.is_contiguous() && o.shape() == shape()) {  // gradient accumulation: one flat loop
      T* pp = p + storage_offset();
      const T* qq = q + o.storage_offset();
      const int64_t n = numel();
      if (a == T(1))
        for (int64_t i = 0; i < n; ++i) pp[i] += qq[i];
      else
        for (int64_t i = 0; i < n; ++i) pp[i] += a * qq[i];
      return;
    }
    Strides so = detail::broadcast_strides(o, shape());
    detail::walk<2>(shape(), {&strides(), &so}, {storage_offset(), o.storage_offset()},
                    [&](const std::array<int64_t, 2>& i) { p[i[0]] += a == T(1) ? q[i[1]] : a * q[i[1]]; });
  });
  return *this;
}

Tensor& Tensor::add_(double value) {
  detail::begin_inplace(*this, "add_", false);
  dispatch_float(dtype(), "add_", [&]<typename T>() {
    detail::for_each_inplace<T>(*this, [v = static_cast<T>(value)](T& x) { x += v; });
  });
  return *this;
}

Tensor& Tensor::mul_(const Tensor& other) {
  check_no_grad_source(other, "mul_");
  check_broadcastable_into(*this, other, "mul_");
  detail::begin_inplace(*this, "mul_", false);
  dispatch_float(dtype(), "mul_", [&]<typename T>() {
    T* p = static_cast<T*>(impl()->storage->data);
    Tensor o = other.dtype() == dtype() ? other : other.to(dtype());
    const T* q = static_cast<const T*>(o.impl()->storage->data);
    Strides so = detail::broadcast_strides(o, shape());
    detail::walk<2>(shape(), {&strides(), &so}, {storage_offset(), o.storage_offset()},
                    [&](const std::array<int64_t, 2>& i) { p[i[0]] *= q[i[1]]; });
  });
  return *this;
}

Tensor& Tensor::mul_(double value) {
  detail::begin_inplace(*this, "mul_", false);
  dispatch_float(dtype(), "mul_", [&]<typename T>() {
    detail::for_each_inplace<T>(*this, [v = static_cast<T>(value)](T& x) { x *= v; });
  });
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_no_grad_source(src, "copy_");
  check_broadcastable_into(*this, src, "copy_");
  // Copy through a temporary if src overlaps our storage, so the copy reads the old values.
  Tensor s = shares_storage(src) ? src.clone() : src;
  detail::begin_inplace(*this, "copy_", false);
  detail::copy_into(*this, s);
  return *this;
}

}  // namespace ag
