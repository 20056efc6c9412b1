// NestedList: a scalar or a nested braced list of scalars, as torch.tensor takes them
// (tensor(...) in ops.h). Plain data, no tensors: kernels/creation.cpp reads its leaves.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "dtype.h"

namespace ag {

class NestedList {
 public:
  NestedList(double v) : value_(v), kind_(kFloat32) {}         // NOLINT: implicit by design
  NestedList(float v) : value_(v), kind_(kFloat32) {}          // NOLINT
  NestedList(int v) : value_(v), ivalue_(v), kind_(kInt64) {}  // NOLINT
  NestedList(long v) : value_(static_cast<double>(v)), ivalue_(v), kind_(kInt64) {}            // NOLINT
  NestedList(long long v) : value_(static_cast<double>(v)), ivalue_(v), kind_(kInt64) {}       // NOLINT
  NestedList(bool v) : value_(v), kind_(kBool) {}              // NOLINT
  NestedList(std::initializer_list<NestedList> l) : children_(l), is_list_(true) {}

  bool is_list() const { return is_list_; }
  const std::vector<NestedList>& children() const { return children_; }
  double value() const { return value_; }
  int64_t ivalue() const { return kind_ == kInt64 ? ivalue_ : static_cast<int64_t>(value_); }
  DType kind() const { return kind_; }

 private:
  double value_ = 0;
  int64_t ivalue_ = 0;
  DType kind_ = kFloat32;
  std::vector<NestedList> children_;
  bool is_list_ = false;
};

}  // namespace ag
