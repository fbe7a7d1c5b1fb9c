// Long runs of the key-value store's process-crash test (tests/kv_crash_harness.hpp): thousands
// of SIGKILL rounds with 1, 3 and 6 writer threads. Built only with -DCCF_LONG_TESTS=ON;
// CCF_KV_CRASH_ROUNDS sets the number of rounds of each test.
#include <gtest/gtest.h>

#include "filter_types.hpp"
#include "kv_crash_harness.hpp"

namespace ccf_test {
namespace {

TEST(long_kv_crash, one_writer) {
  kv_crash::config c;
  c.threads = 1;
  c.rounds = kv_crash::rounds_from_env(3000, test_scale());
  c.seed = 101;
  EXPECT_EQ(kv_crash::run(c), c.rounds);
}

TEST(long_kv_crash, three_writers) {
  kv_crash::config c;
  c.threads = 3;
  c.keys = 8;
  c.rounds = kv_crash::rounds_from_env(3000, test_scale());
  c.seed = 102;
  EXPECT_EQ(kv_crash::run(c), c.rounds);
}

TEST(long_kv_crash, six_writers_on_four_keys) {
  kv_crash::config c;
  c.threads = 6;
  c.keys = 4;
  c.rounds = kv_crash::rounds_from_env(2000, test_scale());
  c.seed = 103;
  EXPECT_EQ(kv_crash::run(c), c.rounds);
}

}  // namespace
}  // namespace ccf_test
