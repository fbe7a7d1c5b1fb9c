// Test helper: run a body on several threads released at the same moment.
#pragma once

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace ccf_test {

/// Runs body(t) for t in [0, threads) on threads that start together, and joins them.
template <typename Body>
void run_threads(int threads, Body body) {
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&go, &body, t] {
      while (!go.load(std::memory_order_acquire))
        std::this_thread::yield();
      body(t);
    });
  }
  go.store(true, std::memory_order_release);
  for (auto& th : pool)
    th.join();
}

}  // namespace ccf_test
