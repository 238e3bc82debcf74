// Reusable per-thread working memory for sparse scoring.
//
// Scoring one query touches only the documents in its postings, but it needs O(1)
// random access by id (a window accumulator, per-group maxima, a doc -> candidate slot
// map). Allocating and zeroing arrays of n_docs per call would cost more than the scoring
// itself at 10^6 documents (page faults), so the index keeps a small pool of these
// buffers. Every buffer is handed out clean (accumulators all zero, slot map all -1) and
// must be returned clean, which the users guarantee by resetting exactly the entries they
// touched. Per thread that has used an index: 32 KiB, plus 5 bytes per group (grouped
// fields), plus 4 bytes per document once gather has scanned a posting list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace toolsift {

struct Scratch {
  std::vector<float> acc;       // window accumulator (top-k), all 0 between uses
  std::vector<float> best;      // per group, all 0 between uses
  std::vector<uint8_t> in_top;  // per group, all 0 between uses
  std::vector<int32_t> slot;    // per document, all -1 between uses
  std::vector<int32_t> touched_groups;
  std::vector<float> heap;

  // Growing keeps the invariant: new entries get the clean value.
  void need_window(std::size_t n) {
    if (acc.size() < n) acc.resize(n, 0.0f);
  }
  void need_groups(std::size_t n) {
    if (best.size() < n) best.resize(n, 0.0f);
    if (in_top.size() < n) in_top.resize(n, 0);
  }
  void need_slots(std::size_t n) {
    if (slot.size() < n) slot.resize(n, -1);
  }
};

// Thread-safe free list of Scratch buffers, owned by one index so its memory goes away
// with the index. A lease returns its buffer on destruction unless the work using it was
// interrupted (an exception), in which case the possibly dirty buffer is dropped.
class ScratchPool {
 public:
  class Lease {
   public:
    Lease(ScratchPool* pool, std::unique_ptr<Scratch> s) : pool_(pool), s_(std::move(s)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (clean_ && s_) pool_->give_back(std::move(s_));
    }
    Scratch& operator*() noexcept { return *s_; }
    Scratch* operator->() noexcept { return s_.get(); }
    // Marks the buffer as in use (possibly dirty) until done() is called.
    void begin() noexcept { clean_ = false; }
    void done() noexcept { clean_ = true; }

   private:
    ScratchPool* pool_;
    std::unique_ptr<Scratch> s_;
    bool clean_ = true;
  };

  Lease acquire() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<Scratch> s = std::move(free_.back());
        free_.pop_back();
        return Lease(this, std::move(s));
      }
    }
    return Lease(this, std::make_unique<Scratch>());
  }

 private:
  void give_back(std::unique_ptr<Scratch> s) {
    std::lock_guard<std::mutex> lock(mu_);
    // Bounded by the largest thread count ever used on this index.
    free_.push_back(std::move(s));
  }

  std::mutex mu_;
  std::vector<std::unique_ptr<Scratch>> free_;
};

}  // namespace toolsift
