// DimVector: the list of int64 that shapes and strides are made of. It behaves like a
// std::vector<int64_t> but keeps up to 8 dims inline, so creating a tensor or a view (which
// copies a shape and strides) does not touch the heap. Training a small model creates tens of
// thousands of these per second; with std::vector, malloc and free were a third of a step.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <vector>

namespace ag {

class DimVector {
 public:
  using value_type = int64_t;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = int64_t&;
  using const_reference = const int64_t&;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;
  static constexpr std::size_t kInline = 8;

  DimVector() = default;
  explicit DimVector(std::size_t n, int64_t value = 0) { resize(n, value); }
  DimVector(std::initializer_list<int64_t> v) { assign(v.begin(), v.end()); }
  DimVector(const std::vector<int64_t>& v) { assign(v.data(), v.data() + v.size()); }  // NOLINT: implicit like a vector copy
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  DimVector(It first, It last) {
    for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
  }
  DimVector(const DimVector& o) {
    if (o.heap_) assign(o.begin(), o.end());
    else copy_inline(o);
  }
  DimVector(DimVector&& o) noexcept { take(o); }
  DimVector& operator=(const DimVector& o) {
    if (this == &o) return *this;
    if (o.heap_) assign(o.begin(), o.end());
    else copy_inline(o);
    return *this;
  }
  DimVector& operator=(DimVector&& o) noexcept {
    if (this != &o) take(o);
    return *this;
  }
  ~DimVector() = default;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return heap_ ? heap_.get() : inline_; }
  const int64_t* data() const { return heap_ ? heap_.get() : inline_; }
  int64_t& operator[](std::size_t i) { return data()[i]; }
  const int64_t& operator[](std::size_t i) const { return data()[i]; }
  int64_t& back() { return data()[size_ - 1]; }
  const int64_t& back() const { return data()[size_ - 1]; }
  int64_t& front() { return data()[0]; }
  const int64_t& front() const { return data()[0]; }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size_; }

  void reserve(std::size_t n) {
    if (n <= capacity()) return;
    std::unique_ptr<int64_t[]> h(new int64_t[n]);
    std::copy(begin(), end(), h.get());
    heap_ = std::move(h);
    heap_cap_ = n;
  }
  void resize(std::size_t n, int64_t value = 0) {
    reserve(n);
    std::fill(data() + std::min(n, size_), data() + n, value);
    size_ = n;
  }
  void clear() { size_ = 0; }
  void push_back(int64_t v) {
    if (size_ == capacity()) reserve(std::max<std::size_t>(2 * capacity(), kInline));
    data()[size_++] = v;
  }
  void pop_back() { --size_; }
  iterator insert(const_iterator pos, int64_t v) {
    const std::size_t i = static_cast<std::size_t>(pos - data());
    push_back(v);
    std::rotate(data() + i, data() + size_ - 1, data() + size_);
    return data() + i;
  }
  iterator erase(const_iterator pos) {
    const std::size_t i = static_cast<std::size_t>(pos - data());
    std::copy(data() + i + 1, data() + size_, data() + i);
    --size_;
    return data() + i;
  }

  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }  // NOLINT: implicit on purpose
  bool operator==(const DimVector& o) const {  // a plain loop: shapes are short, memcmp's call costs more
    if (size_ != o.size_) return false;
    const int64_t *a = data(), *b = o.data();
    for (std::size_t i = 0; i < size_; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  bool operator!=(const DimVector& o) const { return !(*this == o); }

 private:
  std::size_t capacity() const { return heap_ ? heap_cap_ : kInline; }
  void assign(const int64_t* first, const int64_t* last) {
    size_ = 0;
    reserve(static_cast<std::size_t>(last - first));
    std::copy(first, last, data());
    size_ = static_cast<std::size_t>(last - first);
  }
  void copy_inline(const DimVector& o) {
    heap_.reset();
    std::memcpy(inline_, o.inline_, sizeof(inline_));  // a fixed size: a few vector moves, no call
    size_ = o.size_;
  }
  void take(DimVector& o) {
    if (o.heap_) {
      heap_ = std::move(o.heap_);
      heap_cap_ = o.heap_cap_;
      size_ = o.size_;
    } else {
      copy_inline(o);
    }
    o.size_ = 0;
  }

  std::size_t size_ = 0;
  int64_t inline_[kInline] = {};  // always initialized, so a copy moves all of it in a few stores
  std::unique_ptr<int64_t[]> heap_;
  std::size_t heap_cap_ = 0;
};

}  // namespace ag
