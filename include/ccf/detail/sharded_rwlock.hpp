// ccf — concurrent cuckoo filters.
// detail/sharded_rwlock.hpp: a reader-writer lock for many readers and rare writers.
//
// Readers announce themselves in one of 64 cache-line-sized shards, picked per thread, so
// readers on different cores never write the same line: taking the lock for reading is one
// uncontended atomic add on a line the core already owns, then one load of the writer flag. A
// writer sets the flag and waits until every shard is empty; a reader that sees the flag takes
// its announcement back and waits for the writer to finish. Both sides use sequentially
// consistent operations (reader: add, then load the flag; writer: store the flag, then load the
// shards), so either the writer sees the reader or the reader sees the writer. Writers are
// serialized by a mutex and wait by yielding; they are meant to be rare (the key-value store
// takes the lock for writing only to switch its index or its log).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "ccf/config.hpp"

namespace ccf::detail {

class sharded_rwlock {
 public:
  static constexpr std::size_t shards = 64;

  sharded_rwlock() : readers_(std::make_unique<shard[]>(shards)) {}

  std::size_t heap_bytes() const noexcept { return shards * sizeof(shard); }

  void lock_shared() noexcept {
    std::atomic<std::int64_t>& mine = readers_[my_shard()].count;
    for (;;) {
      mine.fetch_add(1, std::memory_order_seq_cst);
      if (!writer_.load(std::memory_order_seq_cst)) return;
      mine.fetch_sub(1, std::memory_order_release);
      while (writer_.load(std::memory_order_acquire))
        std::this_thread::yield();
    }
  }
  void unlock_shared() noexcept {
    readers_[my_shard()].count.fetch_sub(1, std::memory_order_release);
  }
  void lock() {
    writers_.lock();
    writer_.store(true, std::memory_order_seq_cst);
    for (std::size_t s = 0; s < shards; ++s) {
      while (readers_[s].count.load(std::memory_order_seq_cst) != 0)
        std::this_thread::yield();
    }
  }
  void unlock() noexcept {
    writer_.store(false, std::memory_order_release);
    writers_.unlock();
  }

 private:
  struct alignas(cache_line_size) shard {
    std::atomic<std::int64_t> count{0};
  };
  static std::size_t my_shard() noexcept {
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t index = next.fetch_add(1, std::memory_order_relaxed) % shards;
    return index;
  }

  std::unique_ptr<shard[]> readers_;
  std::atomic<bool> writer_{false};
  std::mutex writers_;
};

}  // namespace ccf::detail
