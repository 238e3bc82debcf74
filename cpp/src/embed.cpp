// toolsift/embed.h. Compiled without FMA contraction (CMakeLists.txt): a product and the
// sum it joins round separately, as in NumPy.
#include "toolsift/embed.h"

#include <algorithm>
#include <cmath>

#include "toolsift/parallel.h"

namespace toolsift {

namespace {
// Below this many floats of work a call stays on the calling thread (a query's one text).
constexpr std::size_t kMinWorkPerThread = std::size_t{1} << 16;
}  // namespace

void static_mean_rows(const int8_t* codes, std::size_t d, const float* mult, const int64_t* ptr,
                      std::size_t n_texts, const int64_t* ids, float* out, int threads) {
  const std::size_t tokens = n_texts ? static_cast<std::size_t>(ptr[n_texts] - ptr[0]) : 0;
  const std::size_t per_text = n_texts ? std::max<std::size_t>(1, tokens * d / n_texts) : 1;
  parallel_chunks(n_texts, threads, std::max<std::size_t>(1, kMinWorkPerThread / per_text),
                  [&](int, std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      float* o = out + i * d;
      for (int64_t t = ptr[i]; t < ptr[i + 1]; ++t) {
        const std::size_t r = static_cast<std::size_t>(ids[t]);
        const int8_t* c = codes + r * d;
        const float w = mult[r];
        for (std::size_t k = 0; k < d; ++k) o[k] += static_cast<float>(c[k]) * w;
      }
      // Each square in float32, summed in float64 (what the Numba kernel this replaced did:
      // its float() of a float32 stayed float32).
      double sq = 0.0;
      for (std::size_t k = 0; k < d; ++k) sq += static_cast<double>(o[k] * o[k]);
      if (sq > 1e-24) {
        const float inv = static_cast<float>(1.0 / std::sqrt(sq));
        for (std::size_t k = 0; k < d; ++k) o[k] *= inv;
      } else {
        std::fill(o, o + d, 0.0f);
      }
    }
  });
}

void quantize_rows(const float* x, std::size_t n, std::size_t d, int8_t* codes, float* scales, int threads) {
  parallel_chunks(n, threads, std::max<std::size_t>(1, kMinWorkPerThread / std::max<std::size_t>(1, d)),
                  [&](int, std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      const float* row = x + i * d;
      int8_t* c = codes + i * d;
      double amax = 0.0;
      for (std::size_t k = 0; k < d; ++k) amax = std::max(amax, std::abs(static_cast<double>(row[k])));
      if (amax == 0.0) {
        scales[i] = 0.0f;
        std::fill(c, c + d, int8_t{0});
        continue;
      }
      const double inv = 127.0 / amax;
      // |x * inv| <= 127 up to one rounding, and rounding keeps it there: no clip needed.
      for (std::size_t k = 0; k < d; ++k) c[k] = static_cast<int8_t>(std::nearbyint(static_cast<double>(row[k]) * inv));
      scales[i] = static_cast<float>(amax / 127.0);
    }
  });
}

}  // namespace toolsift
