// The bounded top-n heap of the int8 selections (int8_top, int8_probe_top and the
// prefiltered int8_top of int8_coarse.cpp): one rule for which rows are kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

namespace toolsift::detail {

// A bounded min-heap on "worse" (lower score, or equal score and higher key): its root
// is the worst kept entry, replaced whenever a better one arrives. Only positive scores
// are kept; with distinct keys the kept set is the same whatever order rows arrive in.
class TopN {
 public:
  TopN(float* s, int64_t* k, std::size_t n) : s_(s), k_(k), n_(n) {}

  void offer(float score, int64_t key) {
    if (!(score > 0.0f)) return;
    if (size_ < n_) {
      std::size_t c = size_++;
      s_[c] = score;
      k_[c] = key;
      while (c > 0) {
        const std::size_t p = (c - 1) / 2;
        if (!worse(c, p)) break;
        swap(c, p);
        c = p;
      }
    } else if (n_ > 0 && (s_[0] < score || (s_[0] == score && k_[0] > key))) {
      s_[0] = score;
      k_[0] = key;
      sift_down();
    }
  }

  std::size_t size() const { return size_; }

  // Scores below this cannot enter: 0 until the heap is full (offer keeps only positive
  // scores), then the worst kept score (an equal one may, on a lower key).
  float floor() const {
    if (n_ == 0) return std::numeric_limits<float>::infinity();
    return size_ < n_ ? 0.0f : s_[0];
  }

  // Puts the kept entries in order, best first (higher score, then lower key): the
  // heap's own order depends on the order rows arrived in, this one does not. Ends
  // the heap's use (size() stays; offer must not follow).
  void sort_best_first() {
    const std::size_t kept = size_;
    for (std::size_t end = size_; end > 1; --end) {  // the root (the worst) goes to the back
      swap(0, end - 1);
      size_ = end - 1;
      sift_down();
    }
    size_ = kept;
  }

 private:
  bool worse(std::size_t a, std::size_t b) const { return s_[a] < s_[b] || (s_[a] == s_[b] && k_[a] > k_[b]); }
  void swap(std::size_t a, std::size_t b) {
    std::swap(s_[a], s_[b]);
    std::swap(k_[a], k_[b]);
  }
  void sift_down() {
    std::size_t i = 0;
    for (;;) {
      std::size_t c = 2 * i + 1;
      if (c >= size_) return;
      if (c + 1 < size_ && worse(c + 1, c)) ++c;
      if (!worse(c, i)) return;
      swap(c, i);
      i = c;
    }
  }

  float* s_;
  int64_t* k_;
  std::size_t n_, size_ = 0;
};

}  // namespace toolsift::detail
