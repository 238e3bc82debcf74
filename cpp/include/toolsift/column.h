// A read-only typed column over memory that is either owned by the engine or borrowed
// from elsewhere (a memory-mapped Arrow file, a NumPy array) and kept alive by an owner
// handle. This is what lets the same index serve from freshly built vectors and from
// zero-copy mmapped buffers without branching in the scoring loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace toolsift {

template <class T>
class Column {
 public:
  Column() = default;

  // Takes ownership of `values`; the data pointer stays valid for the column's lifetime.
  static Column owned(std::vector<T> values) {
    auto holder = std::make_shared<std::vector<T>>(std::move(values));
    Column c;
    c.data_ = holder->data();
    c.size_ = holder->size();
    c.owner_ = std::move(holder);
    return c;
  }

  // Borrows `size` elements at `data`; `owner` keeps the memory alive.
  static Column borrowed(const T* data, std::size_t size, std::shared_ptr<const void> owner) {
    if (data == nullptr && size != 0) throw std::invalid_argument("null data pointer for non-empty column");
    Column c;
    c.data_ = data;
    c.size_ = size;
    c.owner_ = std::move(owner);
    return c;
  }

  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  const std::shared_ptr<const void>& owner() const noexcept { return owner_; }

 private:
  const T* data_ = nullptr;
  std::size_t size_ = 0;
  std::shared_ptr<const void> owner_;
};

}  // namespace toolsift
