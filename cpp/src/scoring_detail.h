// Engine-internal helpers shared by the scoring translation units.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

#include "toolsift/inverted_index.h"

namespace toolsift::detail {

// The portable fallback of ctz64 (tested against it on every compiler).
inline int ctz64_loop(uint64_t x) noexcept {
  int n = 0;
  while ((x & 1u) == 0) {
    x >>= 1;
    ++n;
  }
  return n;
}

// Index of the lowest set bit of x (x != 0). A builtin where the compiler has one, a
// portable loop elsewhere (the bit sets it scans are sparse, so the loop is short).
inline int ctz64(uint64_t x) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_ctzll(x);
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
  unsigned long i = 0;
  _BitScanForward64(&i, x);
  return static_cast<int>(i);
#else
  return ctz64_loop(x);
#endif
}

// The ranking of hits: higher score first, ties by lower id (every top-n path).
template <class H>
bool better(const H& x, const H& y) {
  return x.score > y.score || (x.score == y.score && x.id < y.id);
}

[[noreturn]] inline void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// Queries below this count per thread run on the calling thread: a thread start costs
// more than scoring one query against a few thousand documents.
constexpr std::size_t kMinQueriesPerThread = 8;

// Maps one text's raw BM25 score to its scale. Every path (dense, sparse, gather) goes
// through this one function, so the scaled floats agree bit for bit.
class Scaler {
 public:
  Scaler(Scale scale, double upper_bound, double k1) : scale_(scale) {
    if (scale == Scale::kRaw) return;
    zero_ = !(upper_bound > 0.0);
    // Bounded: ref = ub / (1 + k1), the score of an average-length document holding each
    // query term once, so a typical full match lands near 1 - 1/e on any catalogue.
    if (!zero_) inv_ = scale == Scale::kLinear ? 1.0 / upper_bound : (1.0 + k1) / upper_bound;
  }

  float operator()(float raw) const noexcept {
    switch (scale_) {
      case Scale::kRaw:
        return raw;
      case Scale::kLinear:
        return zero_ ? 0.0f : static_cast<float>(raw * inv_);
      case Scale::kBounded:
      default:
        return zero_ ? 0.0f : static_cast<float>(-std::expm1(-static_cast<double>(raw) * inv_));
    }
  }

  // Every score maps to 0, so nothing can rank.
  bool all_zero() const noexcept { return zero_; }

  // The smallest raw float x >= 0 with (*this)(x) >= theta (theta > 0), or +inf if none:
  // raw scores below it cannot reach theta on this scale. Used as the MaxScore threshold
  // so that pruning in raw units stays exact for ties on the (coarser) scaled floats.
  float raw_floor(float theta) const noexcept {
    if (scale_ == Scale::kRaw) return theta;
    if (zero_) return std::numeric_limits<float>::infinity();
    const uint32_t top = bits(std::numeric_limits<float>::max());
    const auto ge = [&](uint32_t b) { return (*this)(from_bits(b)) >= theta; };
    if (!ge(top)) return std::numeric_limits<float>::infinity();
    double guess = scale_ == Scale::kLinear ? theta / inv_ : -std::log1p(-static_cast<double>(theta)) / inv_;
    if (!(guess >= 0.0)) guess = 0.0;
    if (guess > std::numeric_limits<float>::max()) guess = std::numeric_limits<float>::max();
    uint32_t b = bits(static_cast<float>(guess));
    // Invariant for the final bisection: !ge(lo) and ge(hi); ge(0) is false as theta > 0.
    uint32_t lo = 0, hi = top;
    if (ge(b)) {
      hi = b;
      for (uint32_t step = 1; hi > 0; step *= 2) {
        const uint32_t c = hi > step ? hi - step : 0;
        if (!ge(c)) {
          lo = c;
          break;
        }
        hi = c;
        if (step > (1u << 30)) break;
      }
    } else {
      lo = b;
      for (uint32_t step = 1;; step *= 2) {
        const uint32_t c = top - lo > step ? lo + step : top;
        if (ge(c)) {
          hi = c;
          break;
        }
        lo = c;
        if (step > (1u << 30)) break;
      }
    }
    while (hi - lo > 1) {
      const uint32_t mid = lo + (hi - lo) / 2;
      (ge(mid) ? hi : lo) = mid;
    }
    return from_bits(hi);
  }

 private:
  static uint32_t bits(float x) noexcept {
    uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
  }
  static float from_bits(uint32_t b) noexcept {
    float x;
    std::memcpy(&x, &b, sizeof x);
    return x;
  }

  Scale scale_;
  bool zero_ = false;
  double inv_ = 1.0;
};

// First position j in [lo, hi) with docs[j] >= target (hi if none), by galloping from lo:
// cost O(log distance), so a sorted sweep of c targets over a list of df postings costs
// O(c log(df / c)).
inline int64_t gallop(const int32_t* docs, int64_t lo, int64_t hi, int32_t target) noexcept {
  if (lo >= hi || docs[lo] >= target) return lo;
  int64_t step = 1;
  while (lo + step < hi && docs[lo + step] < target) {
    lo += step;
    step *= 2;
  }
  const int64_t end = std::min(lo + step, hi);
  return std::lower_bound(docs + lo + 1, docs + end, target) - docs;
}

}  // namespace toolsift::detail
