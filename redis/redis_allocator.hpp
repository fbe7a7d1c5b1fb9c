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

  template <class U>
  friend constexpr bool operator==(const redis_allocator&, const redis_allocator<U>&) noexcept {
    return true;
  }
};

}  // namespace ccf_redis
