// toolsift/query_words.h: ASCII words of a raw query to term ids, memoised per word.
#include "toolsift/query_words.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace toolsift {

namespace {

inline bool word_char(unsigned char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Calls fn(begin, length) for each run of two or more word characters.
template <class Fn>
void each_word(const char* text, std::size_t n, Fn&& fn) {
  std::size_t i = 0;
  while (i < n) {
    while (i < n && !word_char(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t start = i;
    while (i < n && word_char(static_cast<unsigned char>(text[i]))) ++i;
    if (i - start > 1) fn(start, i - start);
  }
}

}  // namespace

void QueryWords::split(const char* text, std::size_t n, bool lowercase, std::vector<std::string>& words) {
  each_word(text, n, [&](std::size_t start, std::size_t len) {
    std::string w(text + start, len);
    if (lowercase) {
      for (char& c : w) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      }
    }
    words.push_back(std::move(w));
  });
}

bool QueryWords::terms(const char* text, std::size_t n, std::vector<int32_t>& ids,
                       std::vector<std::string>& unknown) const {
  thread_local std::vector<std::string> words;
  words.clear();
  split(text, n, lowercase_, words);
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& w : words) {
    const auto it = map_.find(w);
    if (it == map_.end()) {
      if (std::find(unknown.begin(), unknown.end(), w) == unknown.end()) unknown.push_back(w);
      continue;
    }
    for (int32_t j = 0; j < it->second.n; ++j) ids.push_back(it->second.ids[static_cast<std::size_t>(j)]);
  }
  return unknown.empty();
}

void QueryWords::learn(const std::string& word, const int32_t* ids, std::size_t n_ids) {
  if (n_ids > 2) {
    throw std::invalid_argument("QueryWords.learn: a word has at most 2 terms, got " + std::to_string(n_ids));
  }
  Entry e{{-1, -1}, static_cast<int32_t>(n_ids)};
  for (std::size_t j = 0; j < n_ids; ++j) e.ids[j] = ids[j];
  std::lock_guard<std::mutex> lock(mu_);
  if (map_.size() >= capacity_) map_.clear();
  map_[word] = e;
}

}  // namespace toolsift
