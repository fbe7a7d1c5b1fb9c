// ccf — concurrent cuckoo filters.
// detail/read_epochs.hpp: telling when no reader can still be using something retired — reads
// that never wait.
//
// A reader brackets its reads with enter() / exit(epoch): it adds one to the counter of the
// current epoch parity in its shard (64 cache-line shards picked per thread, so readers on
// different cores touch different lines), checks that the parity did not change meanwhile (else
// it takes the one back and counts itself again), and takes it back when done. It never waits:
// it counts itself again only after a writer flipped the parity. A writer
// that has just unpublished something (a table replaced by a larger one) calls synchronize(): it
// flips the epoch parity, then waits until every shard's counter of the old parity is zero.
// Readers that entered after the flip count in the new parity and can only have seen what was
// published before synchronize() was called (the flip is sequentially consistent, and so is a
// reader's increment, which comes before its first read); readers counted in the old parity may
// have seen the old object, and they all leave in finite time since no new reader joins that
// parity. When synchronize() returns, the old object can be freed (the scheme of sleepable RCU).
// synchronize() calls must not overlap (the caller serializes them).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include "ccf/config.hpp"

namespace ccf::detail {

class read_epochs {
 public:
  static constexpr std::size_t shards = 64;

  read_epochs() : shards_(std::make_unique<shard[]>(shards)) {}

  std::size_t heap_bytes() const noexcept { return shards * sizeof(shard); }

  /// Marks the calling thread as reading; pass the result to exit().
  unsigned enter() noexcept {
    for (;;) {
      const unsigned parity = parity_.load(std::memory_order_seq_cst);
      std::atomic<std::int64_t>& count = shards_[my_shard()].count[parity];
      count.fetch_add(1, std::memory_order_seq_cst);
      // Counted only if the parity is still the one read: a reader that read it, stalled across
      // a synchronize() that flipped it, and then counted itself in the old parity, would read
      // what that flip's caller had just published, and the next synchronize(), which waits on
      // the other parity only, would free that while it was read. Once the parity reads the
      // same after the increment, the next flip comes after it and its synchronize() sees it.
      if (parity_.load(std::memory_order_seq_cst) == parity) return parity;
      count.fetch_sub(1, std::memory_order_release);
    }
  }
  void exit(unsigned parity) noexcept {
    shards_[my_shard()].count[parity].fetch_sub(1, std::memory_order_release);
  }
  /// Waits until every reader that may have seen what was published before this call has left.
  void synchronize() noexcept {
    const unsigned old = parity_.load(std::memory_order_relaxed);
    parity_.store(old ^ 1U, std::memory_order_seq_cst);
    for (std::size_t s = 0; s < shards; ++s) {
      while (shards_[s].count[old].load(std::memory_order_seq_cst) != 0)
        std::this_thread::yield();
    }
  }

  /// enter() / exit() for a scope.
  class guard {
   public:
    explicit guard(read_epochs& e) noexcept : e_(e), parity_(e.enter()) {}
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    ~guard() { e_.exit(parity_); }

   private:
    read_epochs& e_;
    unsigned parity_;
  };

 private:
  struct alignas(cache_line_size) shard {
    std::atomic<std::int64_t> count[2] = {0, 0};
  };
  static std::size_t my_shard() noexcept {
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t index = next.fetch_add(1, std::memory_order_relaxed) % shards;
    return index;
  }

  std::unique_ptr<shard[]> shards_;
  std::atomic<unsigned> parity_{0};
};

}  // namespace ccf::detail
