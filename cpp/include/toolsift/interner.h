// ASCII text analysis for index builds: split into words, lowercase and give every
// distinct word an id, in one pass over the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace toolsift {

// Words are maximal runs of [A-Za-z0-9_] of two or more characters: what Python's
// (?u)\b\w\w+\b finds in ASCII text. Ids are dense, in first-seen order, and stable
// for the interner's lifetime, so a caller maps only the words new since its last call
// (stop words, stemming and the vocabulary stay the caller's business).
class Interner {
 public:
  explicit Interner(bool lowercase) : lowercase_(lowercase) {}

  // Texts are buf[offsets[i] : offsets[i+1]] for i < n_texts; offsets must be
  // nondecreasing and within n_bytes (checked), and every byte ASCII (checked:
  // std::invalid_argument, before anything is interned). Appends the id of each word to `ids`, sets counts[i] to the
  // number of words of text i.
  void intern(const char* buf, std::size_t n_bytes, const int64_t* offsets, std::size_t n_texts,
              std::vector<int32_t>& ids, std::vector<int64_t>& counts);

  std::size_t size() const { return words_.size(); }
  const std::string& word(std::size_t id) const { return words_[id]; }
  bool lowercase() const { return lowercase_; }

 private:
  int32_t id_of(std::string_view w);

  bool lowercase_;
  std::deque<std::string> words_;  // deque: the map's keys view these, so they must not move
  std::unordered_map<std::string_view, int32_t> ids_;
  std::mutex mu_;  // intern() runs without the GIL
};

}  // namespace toolsift
