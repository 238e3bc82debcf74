// A raw query's words to term ids, remembered per word (the fused search's analysis).
//
// The split is toolsift.analyze's TOKEN_PATTERN on ASCII text: runs of two or more of
// [A-Za-z0-9_], lowercased when asked. What a word stands for (no term for a stop word,
// its stem, or its stem and exact form; as term ids, -1 for terms the index never saw) is
// what the Python analyzer and vocabulary say, taught once per word with learn(); a word
// not yet taught is reported instead. Thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace toolsift {

class QueryWords {
 public:
  // Remembers at most `capacity` words, then starts over.
  QueryWords(bool lowercase, std::size_t capacity) : lowercase_(lowercase), capacity_(capacity) {}

  // Appends the term ids of the ASCII text [text, text + n) to `ids`, in word order.
  // Returns false, with `unknown` holding the words not taught yet (distinct, in order),
  // when there are any; `ids` is then incomplete.
  bool terms(const char* text, std::size_t n, std::vector<int32_t>& ids, std::vector<std::string>& unknown) const;

  // Teaches `word` (as terms() splits it) its 0, 1 or 2 term ids.
  void learn(const std::string& word, const int32_t* ids, std::size_t n_ids);

  // Splits ASCII text as terms() does (for tests and the caller's own use).
  static void split(const char* text, std::size_t n, bool lowercase, std::vector<std::string>& words);

 private:
  struct Entry {
    std::array<int32_t, 2> ids;
    int32_t n;
  };
  bool lowercase_;
  std::size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> map_;
};

}  // namespace toolsift
