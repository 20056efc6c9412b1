// A node's backward rule as the engine stores it: Grads (one gradient per input), BackwardFn
// (a move-only closure in a pooled block) and MultiBackwardFn (a node with several outputs).
// node.h is what to read first; this is the plumbing under it.
#pragma once

#include <cstddef>
#include <functional>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "pool.h"
#include "small_vec.h"
#include "tensor.h"

namespace ag {

// One gradient per input; an undefined Tensor means "no gradient". Up to three fit inline.
using Grads = SmallVec<Tensor, 3>;

// A node's backward closure: grad_output -> one gradient per input. Like
// std::function<Grads(const Tensor&)>, but move-only and with the closure in a pooled block
// (pool.h) instead of a fresh heap allocation per node.
class BackwardFn {
 public:
  BackwardFn() = default;
  BackwardFn(std::nullptr_t) {}  // NOLINT: `fn = nullptr` releases the closure
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, BackwardFn> &&
                                              !std::is_same_v<std::decay_t<F>, std::nullptr_t>>>
  BackwardFn(F&& f) {  // NOLINT: implicit, so ops pass their lambda directly
    using Fn = std::decay_t<F>;
    void* o = detail::pool_alloc(sizeof(Fn));
    try {
      new (o) Fn(std::forward<F>(f));
    } catch (...) {
      detail::pool_free(o, sizeof(Fn));
      throw;
    }
    obj_ = o;
    call_ = [](void* p, const Tensor& g) -> Grads { return (*static_cast<Fn*>(p))(g); };
    destroy_ = [](void* p) noexcept {
      static_cast<Fn*>(p)->~Fn();
      detail::pool_free(p, sizeof(Fn));
    };
  }
  BackwardFn(BackwardFn&& o) noexcept : obj_(o.obj_), call_(o.call_), destroy_(o.destroy_) { o.obj_ = nullptr; }
  BackwardFn& operator=(BackwardFn&& o) noexcept {
    if (this != &o) {
      reset();
      obj_ = o.obj_;
      call_ = o.call_;
      destroy_ = o.destroy_;
      o.obj_ = nullptr;
    }
    return *this;
  }
  BackwardFn& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  BackwardFn(const BackwardFn&) = delete;
  BackwardFn& operator=(const BackwardFn&) = delete;
  ~BackwardFn() { reset(); }

  explicit operator bool() const { return obj_ != nullptr; }
  Grads operator()(const Tensor& grad_output) const {
    if (!obj_) throw std::logic_error("[autograd] a node's backward function is empty (released or never set)");
    return call_(obj_, grad_output);
  }

 private:
  void reset() noexcept {
    if (!obj_) return;
    void* o = obj_;
    obj_ = nullptr;
    destroy_(o);
  }
  void* obj_ = nullptr;
  Grads (*call_)(void*, const Tensor&) = nullptr;
  void (*destroy_)(void*) noexcept = nullptr;
};

// The backward of a node with several outputs (a custom Function): one gradient per output
// (undefined where none arrived) -> one gradient per input.
using MultiBackwardFn = std::function<Grads(const std::vector<Tensor>&)>;

}  // namespace ag
