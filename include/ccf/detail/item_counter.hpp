// ccf — concurrent cuckoo filters.
// detail/item_counter.hpp: the filter's item count and its other counters.
//
// plain_counter is a size_t. sharded_counter spreads the count over cache-line-sized shards picked
// per thread, so concurrent inserts and erases never fight over one shared line; size() adds the
// shards (exact whenever no update is in flight). rare_counter is one atomic word, for counts
// that change seldom.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ccf/config.hpp"

namespace ccf::detail {

class plain_counter {
 public:
  /// Never below zero (sharded_counter::get() reads 0 there too): an erase of an entry that was
  /// never counted (a copy made at a split, a forged file's) leaves 0.
  void add(std::ptrdiff_t d) noexcept {
    if (d >= 0) {
      n_ += static_cast<std::size_t>(d);
    } else {
      const std::size_t down = std::size_t{0} - static_cast<std::size_t>(d);  // -d, for any d
      n_ = n_ > down ? n_ - down : 0;
    }
  }
  std::size_t get() const noexcept { return n_; }
  void reset() noexcept { n_ = 0; }

 private:
  std::size_t n_ = 0;
};

class sharded_counter {
 public:
  static constexpr std::size_t num_shards = 64;

  sharded_counter() : shards_(std::make_unique<shard[]>(num_shards)) {}

  void add(std::ptrdiff_t d) noexcept {
    shards_[my_shard()].value.fetch_add(d, std::memory_order_relaxed);
  }
  std::size_t heap_bytes() const noexcept { return num_shards * sizeof(shard); }
  std::size_t get() const noexcept {
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < num_shards; ++i) {
      sum += shards_[i].value.load(std::memory_order_relaxed);
    }
    return sum < 0 ? 0 : static_cast<std::size_t>(sum);
  }
  void reset() noexcept {
    for (std::size_t i = 0; i < num_shards; ++i) {
      shards_[i].value.store(0, std::memory_order_relaxed);
    }
  }

 private:
  struct alignas(cache_line_size) shard {
    std::atomic<std::int64_t> value{0};
  };
  static std::size_t my_shard() noexcept {
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t index =
        next.fetch_add(1, std::memory_order_relaxed) % num_shards;
    return index;
  }
  std::unique_ptr<shard[]> shards_;
};

/// A count that changes rarely and is read often (the clear() calls a batched insert checks): one
/// atomic word, read with one load, on the heap so that the filter stays movable.
class rare_counter {
 public:
  rare_counter() : n_(std::make_unique<std::atomic<std::size_t>>(0)) {}
  void add(std::ptrdiff_t d) noexcept {
    n_->fetch_add(static_cast<std::size_t>(d), std::memory_order_relaxed);
  }
  std::size_t get() const noexcept { return n_->load(std::memory_order_relaxed); }
  std::size_t heap_bytes() const noexcept { return sizeof(*n_); }

 private:
  std::unique_ptr<std::atomic<std::size_t>> n_;
};

}  // namespace ccf::detail
