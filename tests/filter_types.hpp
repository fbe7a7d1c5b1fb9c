// The filter types the typed contract tests run over, and small helpers shared by the tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <ccf/concurrent_cuckoo_filter.hpp>
#include <ccf/cuckoo_filter.hpp>
#include <ccf/lockfree_cuckoo_filter.hpp>

namespace ccf_test {

using u64 = std::uint64_t;

/// Distinct 64-bit keys: a bijective mix of a counter, so keys never repeat within one stream.
inline u64 key_of(u64 i, u64 stream = 0) {
  return ccf::mix64(i ^ (stream << 48));
}

inline std::vector<u64> make_keys(std::size_t n, u64 stream = 0) {
  std::vector<u64> keys(n);
  for (std::size_t i = 0; i < n; ++i)
    keys[i] = key_of(i, stream);
  return keys;
}

/// Scale factor for test sizes: CCF_TEST_SCALE (default 1; sanitizer runs use less).
inline double test_scale() {
  const char* s = std::getenv("CCF_TEST_SCALE");
  return s != nullptr ? std::atof(s) : 1.0;
}

using all_filters = ::testing::Types<
    ccf::cuckoo_filter<u64>, ccf::cuckoo_filter<u64, 8, 4>, ccf::cuckoo_filter<u64, 12, 4>,
    ccf::cuckoo_filter<u64, 4, 8>, ccf::cuckoo_filter<u64, 32, 2>, ccf::cuckoo_filter<u64, 12, 8>,
    ccf::concurrent_cuckoo_filter<u64>, ccf::concurrent_cuckoo_filter<u64, 12, 2>,
    ccf::concurrent_cuckoo_filter<u64, 8, 8>,
    ccf::concurrent_cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::global_locking>,
    ccf::concurrent_cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::elided_mcs_locking>,
    ccf::lockfree_cuckoo_filter<u64>, ccf::lockfree_cuckoo_filter<u64, 8, 4>>;

using concurrent_filters = ::testing::Types<
    ccf::concurrent_cuckoo_filter<u64>, ccf::concurrent_cuckoo_filter<u64, 12, 4>,
    ccf::concurrent_cuckoo_filter<u64, 8, 2>,
    ccf::concurrent_cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::global_locking>,
    ccf::concurrent_cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::elided_mcs_locking>,
    ccf::lockfree_cuckoo_filter<u64>>;

}  // namespace ccf_test
