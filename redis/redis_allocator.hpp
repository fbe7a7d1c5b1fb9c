// ccf — concurrent cuckoo filters.
// redis/redis_allocator.hpp: a standard allocator over RedisModule_Alloc / RedisModule_Free, so
// that filter tables count in Redis's used_memory, INFO memory and maxmemory eviction.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <limits>
#include <new>

#include <ccf/config.hpp>

#include "module_api.hpp"

namespace ccf_redis {

template <class T>
struct redis_allocator {
  using value_type = T;

  redis_allocator() noexcept = default;
  template <class U>
  constexpr redis_allocator(const redis_allocator<U>&) noexcept {}  // NOLINT: rebinding

  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    // RedisModule_Alloc never returns null: Redis handles running out of memory itself.
    void* p = api::alloc(n == 0 ? 1 : n * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { api::dealloc(p); }

  /// The bytes a block of `bytes` takes in used_memory: Redis's allocator, jemalloc, rounds it
  /// up to its size class (16-byte steps up to 128 bytes, then four classes per doubling: a
  /// multiple of a quarter of the power of two below the size). ccf's growing filter counts the
  /// hashes it keeps with it (memory_in_bytes); the module its tables (table_block_bytes).
  static constexpr std::size_t block_bytes(std::size_t bytes) noexcept {
    if (bytes <= 16) return 16;
    const int below = std::bit_width(bytes - 1) - 1;  // 2^below < bytes <= 2^(below + 1)
    const std::size_t step = std::size_t{1} << std::max(below - 2, 4);
    return (bytes + step - 1) / step * step;
  }

  template <class U>
  friend constexpr bool operator==(const redis_allocator&, const redis_allocator<U>&) noexcept {
    return true;
  }
};

/// The bytes in used_memory of a filter table of `table_bytes`: one block holding its words and a
/// cache line to align them (ccf's bucket_table), in its size class.
constexpr std::size_t table_block_bytes(std::size_t table_bytes) noexcept {
  return redis_allocator<char>::block_bytes(table_bytes + ccf::cache_line_size);
}

}  // namespace ccf_redis
