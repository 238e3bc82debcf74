// Minimal fork-join over an index range. Batch calls are coarse (one task per query), so
// spawning threads per call costs microseconds against milliseconds of work; small
// batches run inline to keep single-query latency free of thread start-up.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "toolsift/cpus.h"

namespace toolsift {

// threads <= 0 means every CPU this process may use (affinity and cgroup quota).
inline int resolve_threads(int threads) { return threads > 0 ? threads : available_cpus(); }

// Calls fn(worker, begin, end) on contiguous chunks of [0, n).
template <class Fn>
void parallel_chunks(std::size_t n, int threads, std::size_t min_per_thread, Fn&& fn) {
  int t = resolve_threads(threads);
  if (min_per_thread == 0) min_per_thread = 1;
  const std::size_t max_useful = (n + min_per_thread - 1) / min_per_thread;
  if (static_cast<std::size_t>(t) > max_useful) t = static_cast<int>(std::max<std::size_t>(1, max_useful));
  if (t <= 1) {
    fn(0, std::size_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(t));
  std::exception_ptr error;
  std::mutex error_mu;
  const std::size_t chunk = (n + t - 1) / t;
  for (int w = 0; w < t; ++w) {
    const std::size_t begin = std::min(n, static_cast<std::size_t>(w) * chunk);
    const std::size_t end = std::min(n, begin + chunk);
    pool.emplace_back([&, w, begin, end] {
      try {
        fn(w, begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace toolsift
