// toolsift/wordpiece.h: FastWordPiece (toolsift/encoders/wordpiece.py) in C++.
#include "toolsift/wordpiece.h"

#include <algorithm>
#include <utility>

namespace toolsift {

namespace {

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
// BERT's punctuation in ASCII: every printable non-alphanumeric character but space
// (33-47, 58-64, 91-96, 123-126), each a word of its own (wordpiece.py's _WORDS).
bool punct(char c) { return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126); }
// Control characters BERT's clean_text drops (tab, newline and CR are spaces): _DROPPED.
bool dropped(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u <= 0x08 || u == 0x0b || u == 0x0c || (u >= 0x0e && u <= 0x1f) || u == 0x7f;
}
char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

}  // namespace

WordPiece::WordPiece(std::unordered_map<std::string, int32_t> vocab, int32_t unk, std::string prefix,
                     std::size_t max_chars, std::vector<std::string> added)
    : vocab_(std::move(vocab)), unk_(unk), prefix_(std::move(prefix)), max_chars_(max_chars), added_(std::move(added)) {
  for (const auto& item : vocab_) longest_ = std::max(longest_, item.first.size());
}

bool WordPiece::ids(const char* text, std::size_t n, std::vector<int32_t>& out) const {
  std::string low(text, n);
  for (char& c : low) {
    if (dropped(c)) return false;
    c = lower(c);
  }
  if (!added_.empty()) {
    const std::string raw(text, n);
    for (const std::string& a : added_) {
      if (raw.find(a) != std::string::npos || low.find(a) != std::string::npos) return false;
    }
  }
  std::string word;
  for (std::size_t i = 0; i < n;) {
    const char c = low[i];
    if (alnum(c)) {
      std::size_t j = i;
      while (j < n && alnum(low[j])) ++j;
      word.assign(low, i, j - i);
      pieces(word, out);
      i = j;
    } else {
      if (punct(c)) pieces(std::string(1, c), out);
      ++i;  // a space, tab, newline or CR separates words
    }
  }
  return true;
}

void WordPiece::pieces(const std::string& word, std::vector<int32_t>& out) const {
  // Greedy longest-match-first, as BERT: one unknown piece makes the whole word [UNK].
  if (word.size() > max_chars_) {
    out.push_back(unk_);
    return;
  }
  const std::size_t mark = out.size();
  std::string piece;
  for (std::size_t start = 0; start < word.size();) {
    // No vocabulary entry is longer than longest_ (prefix included): longer pieces are
    // not looked up (the same longest match).
    const std::size_t room = start == 0 ? longest_ : (longest_ > prefix_.size() ? longest_ - prefix_.size() : 0);
    std::size_t end = std::min(word.size(), start + room);
    bool found = false;
    while (end > start) {
      if (start == 0) {
        piece.assign(word, 0, end);
      } else {
        piece.assign(prefix_);
        piece.append(word, start, end - start);
      }
      const auto it = vocab_.find(piece);
      if (it != vocab_.end()) {
        out.push_back(it->second);
        found = true;
        break;
      }
      --end;
    }
    if (!found) {
      out.resize(mark);
      out.push_back(unk_);
      return;
    }
    start = end;
  }
}

}  // namespace toolsift
