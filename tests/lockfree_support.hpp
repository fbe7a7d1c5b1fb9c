// Helpers shared by the lock-free filter's tests (lockfree_test.cpp, lockfree_filter_test.cpp).
#pragma once

#include <algorithm>
#include <cstddef>

#include "ccf/config.hpp"
#include "filter_types.hpp"

namespace ccf_test {

#if CCF_TSAN
inline constexpr double tsan_factor = 0.1;
#else
inline constexpr double tsan_factor = 1.0;
#endif

/// n scaled by CCF_TEST_SCALE (and down under TSan), at least `least`.
inline int scaled(int n, int least) {
  return std::max(least, static_cast<int>(n * test_scale() * tsan_factor));
}

/// Tags in a filter's table, read slot by slot through the thesis's table API.
template <class F>
std::size_t tags_in(const F& f) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < f.num_buckets(); ++i) {
    for (unsigned j = 0; j < F::slots_per_bucket; ++j)
      n += f.read_tag(i, j) != 0;
  }
  return n;
}

}  // namespace ccf_test
