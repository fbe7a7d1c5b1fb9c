// ccf — concurrent cuckoo filters.
// redis/redis_allocator.hpp: a standard allocator over RedisModule_Alloc / RedisModule_Free, so
// that filter tables count in Redis's used_memory, INFO memory and maxmemory eviction.
#pragma once

#include <cstddef>
#include <limits>
#include <new>

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

  /// The bytes a block of `bytes` takes in used_memory (Redis's allocator rounds each block up
  /// to a size class of its own): asked of Redis for a block of that size. ccf's growing filter
  /// counts the hashes it keeps with it (memory_in_bytes, MEMORY USAGE).
  static std::size_t block_bytes(std::size_t bytes) noexcept {
    void* p = api::alloc(bytes == 0 ? 1 : bytes);
    const std::size_t n = api::malloc_size(p);
    api::dealloc(p);
    return n;
  }

  template <class U>
  friend constexpr bool operator==(const redis_allocator&, const redis_allocator<U>&) noexcept {
    return true;
  }
};

}  // namespace ccf_redis
