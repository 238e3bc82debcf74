// BM25 scoring parameters and the per-term formulas, shared by index build and tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace toolsift {

enum class Bm25Method : int32_t {
  kLucene = 0,  // idf = ln(1 + (N - df + .5) / (df + .5)), as bm25s and Lucene compute it
  kAtire = 1,   // idf = ln(N / df)
};

struct Bm25Params {
  double k1 = 1.5;  // bm25s' default; the MFTR reference scores with it
  double b = 0.75;
  Bm25Method method = Bm25Method::kLucene;

  void validate() const {
    if (!(k1 >= 0.0) || !std::isfinite(k1)) throw std::invalid_argument("k1 must be a finite number >= 0");
    if (!(b >= 0.0 && b <= 1.0)) throw std::invalid_argument("b must be in [0, 1]");
  }
};

inline double bm25_idf(const Bm25Params& p, double n_docs, double df) {
  switch (p.method) {
    case Bm25Method::kAtire:
      return df > 0 ? std::log(n_docs / df) : 0.0;
    case Bm25Method::kLucene:
    default:
      return std::log(1.0 + (n_docs - df + 0.5) / (df + 0.5));
  }
}

// Term-frequency component; tends to 1 as tf grows, so a term contributes at most idf.
inline double bm25_tfc(const Bm25Params& p, double tf, double doc_len, double avgdl) {
  const double norm = avgdl > 0 ? (1.0 - p.b + p.b * doc_len / avgdl) : 1.0;
  return tf / (tf + p.k1 * norm);
}

}  // namespace toolsift
