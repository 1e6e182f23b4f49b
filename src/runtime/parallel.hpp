// src/runtime/parallel.hpp — one index loop over a few threads (private to the compiled part: the autotuner's
// compiles, the predictor's kernel summaries).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <system_error>
#include <thread>
#include <vector>

namespace tilejit::runtime::detail {

/// Runs fn(i) once for every i in [0, n) on up to `threads` threads (0: all cores), the calling thread among them.
/// fn must not throw. A thread that cannot be started leaves its share to the others. Returns the threads used
/// (0 when n is 0).
inline unsigned parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return 0;
  const unsigned want = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  const auto nt = static_cast<unsigned>(std::min<std::size_t>(want, n));
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < nt; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // fewer threads: the others pick up the work
    }
  }
  work();
  for (auto& t : pool) t.join();
  return static_cast<unsigned>(pool.size()) + 1;
}

}  // namespace tilejit::runtime::detail
