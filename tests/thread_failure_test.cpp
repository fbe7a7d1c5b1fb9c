// Threads that cannot be started (pthread_create failing with EAGAIN, as at a process's thread
// limit): a bulk build, a growing filter's doubling and its bulk insert go on with the threads
// they can start (a bulk build hung, then threw). Threads that fail while they work (an
// allocation refused): a bulk build rethrows once every thread has stopped, keeping what went
// in; a batched insert (insert_many) takes back every key it placed before it rethrows. This
// executable replaces pthread_create and operator new with ones that fail on request, so it is
// not among the sanitizer builds (whose runtimes intercept them themselves).
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
#include <new>
#include <span>
#include <system_error>
#include <thread>
#include <vector>

#include "ccf/concurrent_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/growing_cuckoo_filter.hpp"
#include "ccf/lockfree_cuckoo_filter.hpp"
#include "filter_types.hpp"

namespace {
/// pthread_create calls that may still succeed; the ones after them fail with EAGAIN.
std::atomic<long> threads_allowed{1L << 40};
/// An allocation of exactly this many bytes throws std::bad_alloc (0: none does).
std::atomic<std::size_t> refused_size{0};
/// The next allocation of at least this many bytes throws std::bad_alloc, once (0: none does).
std::atomic<std::size_t> refused_once_from{0};
}  // namespace

void* operator new(std::size_t n) {
  if (n != 0 && n == refused_size.load(std::memory_order_relaxed)) throw std::bad_alloc();
  std::size_t from = refused_once_from.load(std::memory_order_relaxed);
  if (from != 0 && n >= from && refused_once_from.compare_exchange_strong(from, 0))
    throw std::bad_alloc();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// GCC takes the free of a pointer from this operator new, once inlined, for a mismatch.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

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
    refused_size = 0;
    refused_once_from = 0;
    done_ = true;
    watchdog_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread watchdog_;
};

TEST_F(thread_failure, a_bulk_build_runs_on_the_threads_it_can_start) {
  // It waited for a thread that never came (a hang), then threw std::system_error (ccf build
  // failed under a low pids limit, where one thread would have done).
  const auto keys = make_keys(2000000, 3);  // several chunks: four threads
  using F = ccf::cuckoo_filter<u64>;
  for (const long allowed : {1L, 0L}) {  // a helper, then none; on a retry, none
    threads_allowed = allowed;
    const F f = ccf::build<F>(std::span<const u64>(keys), keys.size(), {.threads = 4});
    EXPECT_LT(threads_allowed.load(), 0) << allowed;  // it asked for more than it got
    threads_allowed = 1L << 40;
    EXPECT_EQ(f.size(), keys.size()) << allowed;
    EXPECT_EQ(f.contains_many(std::span<const u64>(keys)), keys.size()) << allowed;
  }
}

TEST_F(thread_failure, a_bulk_build_whose_inserts_throw_rethrows_and_counts_what_went_in) {
  // A thread whose path search could not size its queue (std::bad_alloc) ended the process from
  // a helper thread, or, on the calling thread, left the helpers waiting at a barrier for good.
  using F = ccf::cuckoo_filter<u64>;
  using path = ccf::detail::cuckoo_path<F::engine_type::slot_type, F::slots_per_bucket>;
  constexpr std::size_t max_kicks = F::engine_type::max_max_kicks;  // a queue of a unique size
  const auto keys = make_keys(2000000, 6);                          // several chunks
  for (const unsigned threads : {1U, 2U, 4U}) {
    F f(keys.size(), ccf::default_seed, max_kicks);
    ASSERT_EQ(f.max_kicks(), max_kicks);
    refused_size = (max_kicks + path::roots + F::slots_per_bucket) * sizeof(path::node);
    EXPECT_THROW(f.bulk_insert(std::span<const u64>(keys), threads, false), std::bad_alloc)
        << threads;
    refused_size = 0;
    // The items that went in are in the size; the filter goes on working.
    std::size_t stored = 0;
    for (std::size_t i = 0; i < f.num_buckets(); ++i) {
      for (unsigned j = 0; j < F::slots_per_bucket; ++j)
        stored += f.read_tag(i, j) != 0;
    }
    EXPECT_GT(stored, 0U) << threads;
    EXPECT_LT(stored, keys.size()) << threads;
    EXPECT_EQ(f.size(), stored) << threads;
    for (const u64 k : keys) {
      if (!f.contains(k)) {
        ASSERT_TRUE(f.insert(k)) << threads;
      }
    }
    for (const u64 k : keys)
      ASSERT_TRUE(f.contains(k)) << threads;
  }
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

// ---- batched inserts that throw take back what they placed ----

template <class F>
class batch_failure : public thread_failure {};
using batch_filters = ::testing::Types<ccf::cuckoo_filter<u64>, ccf::concurrent_cuckoo_filter<u64>,
                                       ccf::lockfree_cuckoo_filter<u64>>;
TYPED_TEST_SUITE(batch_failure, batch_filters);

/// The bytes of a path-search queue for F's largest max_kicks (a size nothing else allocates).
template <class F>
constexpr std::size_t queue_bytes() {
  using path = ccf::detail::cuckoo_path<typename F::engine_type::slot_type, F::slots_per_bucket>;
  return (F::engine_type::max_max_kicks + path::roots + F::slots_per_bucket) *
         sizeof(typename path::node);
}

/// Fills f one key at a time to `load`, then runs insert_many(batch) on a new thread (whose
/// path-search queue is not sized yet) with `arm` run there first; expects std::bad_alloc and
/// that the filter holds what it held before; then, emptied, it takes the whole batch.
template <class F, class Arm>
void expect_batch_taken_back(F& f, double load, std::size_t batch_size, Arm arm) {
  const auto before_keys = make_keys(static_cast<std::size_t>(f.size_in_tags() * load), 21);
  for (const u64 k : before_keys)
    ASSERT_TRUE(f.insert(k));
  const std::size_t before = f.size();
  const auto batch = make_keys(batch_size, 22);
  bool threw = false;
  std::thread([&] {
    arm();
    try {
      f.insert_many(std::span<const u64>(batch));
    } catch (const std::bad_alloc&) {
      threw = true;
    }
  }).join();
  refused_size = 0;
  refused_once_from = 0;
  ASSERT_TRUE(threw);
  EXPECT_EQ(f.size(), before) << f.info();
  // Nothing of the batch stayed behind: erasing the keys before it empties the table.
  for (const u64 k : before_keys)
    ASSERT_TRUE(f.erase(k));
  EXPECT_EQ(f.size(), 0U);
  EXPECT_EQ(f.contains_many(std::span<const u64>(batch)), 0U);
  // The filter goes on working.
  EXPECT_EQ(f.insert_many(std::span<const u64>(batch)), batch.size());
  EXPECT_EQ(f.contains_many(std::span<const u64>(batch)), batch.size());
}

TYPED_TEST(batch_failure, a_grouped_batch_whose_bookkeeping_is_refused_takes_back_its_keys) {
  // A large batch past the table's room: its first refusal allocates the items' offsets (the
  // first allocation of 256 KiB or more in the batch), and that allocation fails.
  TypeParam f(600000, 5);
  ASSERT_GE(f.chunks(), 2U);
  const std::size_t batch = f.size_in_tags() / 4;
  ASSERT_GE(batch, ccf::detail::grouped_min_per_chunk * f.chunks());
  expect_batch_taken_back(f, 0.75, batch, [] { refused_once_from = std::size_t{256} << 10; });
}

TYPED_TEST(batch_failure,
           a_batch_of_several_blocks_takes_back_the_blocks_before_the_one_that_threw) {
  // A batch of three blocks: the first goes in whole, the second is refused partway and its
  // bookkeeping cannot be allocated; the first block is taken back too.
  TypeParam f(std::size_t{15} << 20, 9);
  const std::size_t room = f.size_in_tags() / 4;  // after a prefill to 0.75
  const std::size_t n = 2 * room;                 // blocks of about 2/3 of the room
  const std::size_t block = ccf::detail::insert_block_size(n);
  ASSERT_GT(n, ccf::detail::grouped_min_block) << "a batch of one block";
  ASSERT_LT(block, room) << "the first block does not fit";
  ASSERT_GT(2 * block, room) << "the second block fits";
  expect_batch_taken_back(f, 0.75, n, [] { refused_once_from = std::size_t{256} << 10; });
}

TYPED_TEST(batch_failure, a_batch_whose_thread_cannot_size_its_search_queue_inserts_nothing) {
  // A thread's path-search queue is sized by its first search: a batch sizes it before its first
  // insert, and one that cannot throws having placed nothing. Shapes: a grouped batch, a small
  // one into a table past the caches (prefetched, full-bucket keys deferred), one that fits them.
  struct shape {
    std::size_t capacity;
    double load;
    bool small_batch;
  };
  for (const shape& sh :
       {shape{600000, 0.75, false}, shape{600000, 0.9, true}, shape{20000, 0.9, true}}) {
    TypeParam f(sh.capacity, 6, TypeParam::engine_type::max_max_kicks);
    ASSERT_EQ(f.size_in_bytes() > TypeParam::engine_type::cached_table_bytes, sh.capacity > 100000);
    expect_batch_taken_back(f, sh.load, sh.small_batch ? 2000 : f.size_in_tags() / 8,
                            [] { refused_size = queue_bytes<TypeParam>(); });
  }
}

}  // namespace
}  // namespace ccf_test
