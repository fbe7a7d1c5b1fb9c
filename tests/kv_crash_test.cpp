// Real process crashes of the key-value store: a child process writes to a store (POSIX file
// system, durability::every_write) and is killed with SIGKILL at a random point; the parent
// reopens the store and checks every acknowledged write (tests/kv_crash_harness.hpp has the
// rounds and the oracle). Hundreds of rounds by default: CCF_KV_CRASH_ROUNDS sets the number of
// each test, CCF_TEST_SCALE scales the default; tests/long_kv_crash_test.cpp runs thousands.
#include <gtest/gtest.h>

#include "filter_types.hpp"
#include "kv_crash_harness.hpp"

namespace ccf_test {
namespace {

TEST(kv_crash, one_writer_killed_at_random_points) {
  kv_crash::config c;
  c.threads = 1;
  c.rounds = kv_crash::rounds_from_env(250, test_scale());
  c.seed = 1;
  EXPECT_EQ(kv_crash::run(c), c.rounds);
}

TEST(kv_crash, three_writers_killed_at_random_points) {
  kv_crash::config c;
  c.threads = 3;
  c.keys = 8;
  c.rounds = kv_crash::rounds_from_env(200, test_scale());
  c.seed = 2;
  EXPECT_EQ(kv_crash::run(c), c.rounds);
}

}  // namespace
}  // namespace ccf_test
