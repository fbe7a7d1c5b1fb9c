// Threads that cannot be started (pthread_create failing with EAGAIN, as at a process's thread
// limit): a bulk build throws instead of hanging, and a growing filter's doubling or bulk insert
// goes on with the threads it has. This executable replaces pthread_create with one that fails
// on request, so it is not among the sanitizer builds (whose runtimes intercept it themselves).
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <system_error>
#include <thread>
#include <vector>

#include "ccf/cuckoo_filter.hpp"
#include "ccf/growing_cuckoo_filter.hpp"
#include "filter_types.hpp"

namespace {
/// pthread_create calls that may still succeed; the ones after them fail with EAGAIN.
std::atomic<long> threads_allowed{1L << 40};
}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                              void* arg) noexcept {
  using create_fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const auto real = reinterpret_cast<create_fn>(dlsym(RTLD_NEXT, "pthread_create"));
  if (threads_allowed.fetch_sub(1) <= 0) return EAGAIN;
  return real(thread, attr, start, arg);
}

namespace ccf_test {
namespace {

/// Ends the process if the test body has not finished within 60 seconds (a hang is the bug).
class thread_failure : public ::testing::Test {
 protected:
  void SetUp() override {
    watchdog_ = std::thread([this] {
      for (int i = 0; i < 600 && !done_.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!done_.load()) {
        std::fprintf(stderr, "thread_failure_test: hung for 60 s\n");
        std::_Exit(1);
      }
    });
  }
  void TearDown() override {
    threads_allowed = 1L << 40;
    done_ = true;
    watchdog_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread watchdog_;
};

TEST_F(thread_failure, a_bulk_build_throws_instead_of_waiting_for_a_thread_that_never_came) {
  const auto keys = make_keys(2000000, 3);  // several chunks: four threads
  using F = ccf::cuckoo_filter<u64>;
  threads_allowed = 1;  // the first helper thread starts, the second cannot
  EXPECT_THROW(ccf::build<F>(std::span<const u64>(keys), keys.size(), {.threads = 4}),
               std::system_error);
  threads_allowed = 1L << 40;
  const F f = ccf::build<F>(std::span<const u64>(keys), keys.size(), {.threads = 4});
  EXPECT_EQ(f.size(), keys.size());
  EXPECT_EQ(f.contains_many(std::span<const u64>(keys)), keys.size());
}

TEST_F(thread_failure, a_growing_filter_doubles_with_the_threads_it_can_start) {
  // An insert that asked for a doubling threw std::system_error after it had gone in (a caller
  // that tried again stored the key twice).
  ccf::concurrent_growing_cuckoo_filter<u64> f(1 << 20, 1e-3, {.threads = 4});
  const auto keys = make_keys(f.capacity() + 1000, 4);
  std::size_t i = 0;
  for (; i < f.capacity(); ++i)
    ASSERT_TRUE(f.insert(keys[i]));
  const std::size_t before = f.doublings();
  threads_allowed = 0;
  for (; i < keys.size(); ++i)
    ASSERT_TRUE(f.insert(keys[i])) << i;
  EXPECT_GT(f.doublings(), before) << "doubled on this thread alone";
  EXPECT_EQ(f.size(), keys.size());
  for (const u64 k : keys)
    ASSERT_TRUE(f.contains(k));
}

TEST_F(thread_failure, a_growing_bulk_insert_runs_the_shares_no_thread_took) {
  const auto keys = make_keys(100000, 5);
  for (const bool skip_present : {false, true}) {
    ccf::concurrent_growing_cuckoo_filter<u64> f(1000, 1e-6);
    threads_allowed = 1;
    const ccf::bulk_result r = f.bulk_insert(std::span<const u64>(keys), 4, skip_present);
    threads_allowed = 1L << 40;
    EXPECT_EQ(r.inserted, keys.size()) << skip_present;
    EXPECT_EQ(f.size(), keys.size());
    for (const u64 k : keys)
      ASSERT_TRUE(f.contains(k));
  }
}

}  // namespace
}  // namespace ccf_test
