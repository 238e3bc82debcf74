#include "toolsift/interner.h"

#include <limits>
#include <stdexcept>

namespace toolsift {

namespace {

// [A-Za-z0-9_]: Python's \w restricted to ASCII.
struct WordTable {
  bool word[256] = {};
  constexpr WordTable() {
    for (int c = 'a'; c <= 'z'; ++c) word[c] = true;
    for (int c = 'A'; c <= 'Z'; ++c) word[c] = true;
    for (int c = '0'; c <= '9'; ++c) word[c] = true;
    word[static_cast<unsigned char>('_')] = true;
  }
};
constexpr WordTable kWord{};

}  // namespace

int32_t Interner::id_of(std::string_view w) {
  auto it = ids_.find(w);
  if (it != ids_.end()) return it->second;
  if (words_.size() >= static_cast<std::size_t>(std::numeric_limits<int32_t>::max())) {
    throw std::length_error("interner: more than 2^31 - 1 distinct words");
  }
  const auto id = static_cast<int32_t>(words_.size());
  words_.emplace_back(w);
  ids_.emplace(std::string_view(words_.back()), id);
  return id;
}

void Interner::intern(const char* buf, std::size_t n_bytes, const int64_t* offsets, std::size_t n_texts,
                      std::vector<int32_t>& ids, std::vector<int64_t>& counts) {
  for (std::size_t i = 0; i < n_texts; ++i) {
    if (offsets[i] < 0 || offsets[i + 1] < offsets[i] || static_cast<std::size_t>(offsets[i + 1]) > n_bytes) {
      throw std::invalid_argument("interner: offsets must be nondecreasing within the buffer (text " +
                                  std::to_string(i) + ")");
    }
  }
  // Checked before any word is interned, so a refused call leaves the interner as it was.
  for (std::size_t i = 0; i < n_texts; ++i) {
    for (int64_t b = offsets[i]; b < offsets[i + 1]; ++b) {
      if (static_cast<unsigned char>(buf[b]) >= 0x80) {
        throw std::invalid_argument("interner: non-ASCII byte in text " + std::to_string(i));
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  counts.assign(n_texts, 0);
  std::string token;
  for (std::size_t i = 0; i < n_texts; ++i) {
    const auto* p = reinterpret_cast<const unsigned char*>(buf) + offsets[i];
    const auto* end = reinterpret_cast<const unsigned char*>(buf) + offsets[i + 1];
    const std::size_t before = ids.size();
    while (p < end) {
      if (!kWord.word[*p]) {
        ++p;
        continue;
      }
      const auto* start = p;
      while (p < end && kWord.word[*p]) ++p;
      if (p - start < 2) continue;
      std::string_view w(reinterpret_cast<const char*>(start), static_cast<std::size_t>(p - start));
      if (lowercase_) {
        token.assign(w);
        for (char& c : token) {
          if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        }
        w = token;
      }
      ids.push_back(id_of(w));
    }
    counts[i] = static_cast<int64_t>(ids.size() - before);
  }
}

}  // namespace toolsift
