// One raw-text query on a hybrid index in one engine call: the BM25 words
// (toolsift/query_words.h), the static query vector (WordPiece ids, the token table's
// rows summed and normalised, int8 codes: toolsift/embed.h), each need field's dense
// candidates (toolsift/dense_candidates.h: an exact int8 top-n scan, with the 4-bit
// prefilter where there is one, or an IVF probe) and FusedSearcher's hybrid search. The same answer as toolsift.search.fused_hybrid for one
// raw query (tests/test_hybrid_text.py compares them on every query of the five sets).
// A text this path does not take (not ASCII, a word not taught yet, a text WordPiece's
// fast path refuses) is reported, and the caller takes the Python path.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "toolsift/dense_candidates.h"
#include "toolsift/fused.h"
#include "toolsift/int8_coarse.h"
#include "toolsift/int8_dot.h"
#include "toolsift/query_words.h"
#include "toolsift/wordpiece.h"

namespace toolsift {

// A static encoder's token table: row t is codes[t * d ...] times mult[t].
struct TokenTable {
  const int8_t* codes = nullptr;
  const float* mult = nullptr;
  std::size_t n_tokens = 0;
  std::size_t d = 0;
  std::size_t max_tokens = 256;  // a text's first max_tokens ids count
};

class HybridText {
 public:
  enum class Status { kHits, kUnknownWords, kNotTaken };

  // half[f] / cand[f]: need field f's dense half as FusedSearcher takes it (q_codes and
  // q_scales are filled per search) and its candidate rule. Every pointer is the index's
  // own and outlives this object (the binding keeps the owners). `threads`: for the scans
  // (1 unless the largest is big enough to split, as toolsift.kernels.launch decides) and
  // the engine call.
  HybridText(std::shared_ptr<const FusedSearcher> searcher, WordPiece wordpiece, const TokenTable& table,
             const DenseHalf half[3], const DenseCandidates cand[3], const MftrParams& params,
             const FusedOptions& options, bool params_field, bool lowercase, int threads);

  // The hits of the ASCII text [text, text + n): kHits with `out` filled; kUnknownWords
  // with `unknown` holding the BM25 words not taught yet (learn them, then call again);
  // kNotTaken when WordPiece's fast path refuses the text. breakdown: also the hits'
  // MFTR terms (FusedHits::terms).
  Status search(const char* text, std::size_t n, std::size_t k, FusedHits& out, std::vector<std::string>& unknown,
                bool breakdown = false) const;

  // A multi-step request (toolsift.search.needs.run_steps) in one call: readings[0] is the
  // whole request (its BM25 words and its vector, as search() takes them), readings[1:]
  // its steps (their vectors only); text r is [texts[r], texts[r] + lens[r]), ASCII. Every
  // reading's dense candidates (one scan of each need field for all readings), their
  // union with the request's BM25 candidates, BM25 scored once, each reading's hybrid
  // field scores and MFTR score, combine_needs over the readings and the top k: the
  // hits' combined scores, and in `out.cos` each need field's best cosine over the
  // readings where its dense half added the hit. Statuses as search(). breakdown: also
  // each hit's MFTR terms from the reading its combined score came from (FusedHits::terms).
  Status search_steps(const char* const* texts, const std::size_t* lens, std::size_t n_readings, std::size_t k,
                      FusedHits& out, std::vector<std::string>& unknown, bool breakdown = false) const;

  // A request analysed by the caller (a text these analysers do not take: not ASCII, or
  // outside WordPiece's fast path): `terms`, the whole request's BM25 term ids (the
  // analyzer's and vocabulary's, -1 for a word the index never saw), and each reading's
  // WordPiece ids, tokens[token_ptr[r]:token_ptr[r + 1]) for r < n_readings (readings as
  // search_steps takes them; a reading's first max_tokens ids count). One reading:
  // search()'s answer for that text; more: search_steps'. kNotTaken for no reading or an
  // id outside the token table.
  Status search_ids(const std::vector<int32_t>& terms, const int64_t* tokens, const int64_t* token_ptr,
                    std::size_t n_readings, std::size_t k, FusedHits& out, bool breakdown = false) const;

  void learn(const std::string& word, const int32_t* ids, std::size_t n_ids) { words_.learn(word, ids, n_ids); }

  // Gives need field f's scan its prefilter (built from that field's live rows) from the
  // next search on; safe while other threads search (the same result with or without).
  void set_coarse(int f, const Int8Coarse* coarse) { coarse_[f].store(coarse, std::memory_order_release); }

  // The WordPiece ids of an ASCII text, or false (tests compare them with tokenizers).
  bool token_ids(const char* text, std::size_t n, std::vector<int32_t>& out) const { return wp_.ids(text, n, out); }

 private:
  // The readings' ids (WordPiece's int32 or a caller's int64) cut to max_tokens each into
  // (ids, ptr); false for an id outside the table.
  template <class T>
  bool cut_ids(const T* tokens, const int64_t* token_ptr, std::size_t n_readings, std::vector<int64_t>& ids,
               std::vector<int64_t>& ptr) const {
    ids.clear();
    ptr.assign(1, 0);
    for (std::size_t r = 0; r < n_readings; ++r) {
      const int64_t a = token_ptr[r];
      const int64_t e = std::min(token_ptr[r + 1], a + static_cast<int64_t>(table_.max_tokens));
      for (int64_t i = a; i < e; ++i) {
        const int64_t t = tokens[i];
        if (t < 0 || static_cast<std::size_t>(t) >= table_.n_tokens) return false;
        ids.push_back(t);
      }
      ptr.push_back(static_cast<int64_t>(ids.size()));
    }
    return true;
  }
  // search() and search_steps() after analysis, on checked ids.
  Status one_step(const std::vector<int32_t>& terms, const int64_t* tokens, std::size_t n_tokens, std::size_t k,
                  FusedHits& out, bool breakdown) const;
  Status steps(const std::vector<int32_t>& terms, const int64_t* token_ids, const int64_t* token_ptr,
               std::size_t n_readings, std::size_t k, FusedHits& out, bool breakdown) const;

  std::shared_ptr<const FusedSearcher> searcher_;
  WordPiece wp_;
  TokenTable table_;
  DenseHalf half_[3];
  DenseCandidates cand_[3];
  std::atomic<const Int8Coarse*> coarse_[3];
  MftrParams params_;
  FusedOptions options_;
  bool params_field_;
  QueryWords words_;
  int threads_;
};

}  // namespace toolsift
