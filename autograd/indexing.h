// libtorch's indexing API: x.index({Slice(1, None, 2), 0, idx, mask}) is Python's
// x[1::2, 0, idx, mask], and x.index_put_({...}, v) is x[...] = v. The names are libtorch's
// (torch::indexing::{Slice, None, Ellipsis, TensorIndex}); the rules are PyTorch's:
//  - an integer selects (the dim goes), a Slice narrows (start, stop and step as in Python, step
//    > 0), None inserts a dim of size 1, Ellipsis stands for as many full slices as needed;
//    together these "basic" indices give a view;
//  - an int64 tensor (a list of positions) or a bool tensor (a mask over as many dims as it has)
//    is an "advanced" index: the index tensors broadcast together to a shape B, and the result is
//    a copy whose dims are B in place of the indexed dims when those are adjacent, else B first;
//    a bool (true / false) is an advanced index over a new dim of size 1 (size 0 for false);
//  - index_put_ writes values (broadcast to the indexing result) in place; with accumulate,
//    repeated positions add up. It is an in-place op: on a leaf that requires grad it throws.
// All of it is differentiable (repeated positions accumulate their gradients).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "tensor.h"

namespace ag::indexing {

// Python's None in an index (a new dim) and for an open end of a Slice.
inline constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};

// Python's start:stop:step; an open end is None.
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step.value_or(1)) {}
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_;
  int64_t step_;
};

// One entry of an index: an integer, a Slice, None, Ellipsis (or "..."), a bool, or a tensor
// (int64 positions or a bool mask).
class TensorIndex {
 public:
  enum class Kind { None, Ellipsis, Integer, Boolean, Slice, Tensor };

  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}            // NOLINT: implicit by design
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}     // NOLINT
  TensorIndex(const char* ellipsis);                            // NOLINT: "..." only
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
  TensorIndex(I i) : kind_(Kind::Integer), integer_(static_cast<int64_t>(i)) {}  // NOLINT
  TensorIndex(bool b) : kind_(Kind::Boolean), boolean_(b) {}    // NOLINT
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}       // NOLINT
  TensorIndex(Tensor t);                                        // NOLINT

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }
  std::string str() const;  // as Python writes it: 1, 1:3, None, ..., True, tensor([2])

 private:
  Kind kind_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};

}  // namespace ag::indexing

namespace ag::detail {

// Where a copy made by advanced indexing came from, so that assigning to it as a temporary
// (x.index({idx}) = v, x[mask] = 0, x[mask] += 1) writes into the tensor it indexed, as Python's
// x[mask] = 0 does, instead of into the copy.
struct IndexOrigin {
  std::weak_ptr<TensorImpl> base;
  std::vector<indexing::TensorIndex> indices;
};

// If t is such a copy: writes its values back through base.index_put_(indices, t); else nothing.
void write_back_indexed(const Tensor& t);

}  // namespace ag::detail
