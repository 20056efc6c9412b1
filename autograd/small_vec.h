// SmallVec<T, N>: a vector that keeps its first N elements inline. Graph nodes have one or two
// inputs, so their edge lists and the gradient lists their backward returns fit inline and cost
// no allocation; longer lists (cat of many tensors) move to the heap.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace ag {

template <class T, std::size_t N>
class SmallVec {
 public:
  SmallVec() = default;
  SmallVec(std::initializer_list<T> v) {
    for (const T& x : v) push_back(x);
  }
  SmallVec(const SmallVec&) = default;
  SmallVec& operator=(const SmallVec&) = default;
  // A moved-from SmallVec is empty (its inline elements are moved out, so they hold nothing).
  SmallVec(SmallVec&& o) noexcept : inline_(std::move(o.inline_)), heap_(std::move(o.heap_)), size_(o.size_) { o.size_ = 0; }
  SmallVec& operator=(SmallVec&& o) noexcept {
    inline_ = std::move(o.inline_);
    heap_ = std::move(o.heap_);
    size_ = o.size_;
    o.size_ = 0;
    return *this;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return size_ <= N ? inline_.data() : heap_.data(); }
  const T* data() const { return size_ <= N ? inline_.data() : heap_.data(); }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  void reserve(std::size_t n) {
    if (n > N) heap_.reserve(n);
  }

  void push_back(T v) {
    if (size_ < N) {
      inline_[size_++] = std::move(v);
      return;
    }
    if (size_ == N) {  // spill the inline elements to the heap
      heap_.reserve(2 * N + 1);
      for (T& x : inline_) heap_.push_back(std::move(x));
    }
    heap_.push_back(std::move(v));
    ++size_;
  }
  // Releases every element (the inline ones in use destroyed and default-constructed again; once
  // spilled, all of them).
  void clear() {
    const std::size_t used = size_ < N ? size_ : N;
    for (std::size_t i = 0; i < used; ++i) {  // destroyed and made anew: no zeroed temporary moved in
      std::destroy_at(&inline_[i]);
      ::new (static_cast<void*>(&inline_[i])) T;
    }
    heap_.clear();
    size_ = 0;
  }

 private:
  std::array<T, N> inline_{};
  std::vector<T> heap_;
  std::size_t size_ = 0;
};

}  // namespace ag
