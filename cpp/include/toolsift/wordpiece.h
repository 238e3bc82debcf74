// WordPiece token ids of one ASCII text for a BERT-uncased vocabulary: the C++ twin of
// toolsift.encoders.wordpiece.FastWordPiece (the same checks, splits and greedy
// longest-match-first pieces), so a query's static vector needs no Python per word.
// A text outside the fast path (not ASCII, a control character BERT drops, an added
// token in it) is refused, and the caller asks the reference tokenizer instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace toolsift {

class WordPiece {
 public:
  // vocab: token -> id; unk: the id of the unknown token; prefix: the continuing-subword
  // prefix ("##"); max_chars: longer words are one unknown token; added: the added tokens
  // as they may appear (verbatim and, for normalised ones, lower-cased).
  WordPiece(std::unordered_map<std::string, int32_t> vocab, int32_t unk, std::string prefix, std::size_t max_chars,
            std::vector<std::string> added);

  // Appends the ids of [text, text + n) to `out`; false (out unchanged) when the text is
  // outside the fast path. The text must be ASCII (the caller checks).
  bool ids(const char* text, std::size_t n, std::vector<int32_t>& out) const;

 private:
  void pieces(const std::string& word, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, int32_t> vocab_;
  int32_t unk_;
  std::string prefix_;
  std::size_t max_chars_;
  std::vector<std::string> added_;
  std::size_t longest_ = 0;  // the longest vocabulary entry, in bytes
};

}  // namespace toolsift
