// A stateful allocator for tests: its copies share an arena that counts the blocks they hold
// (which allocator a table's memory came from) and can be told to fail (std::bad_alloc).
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace ccf_test {

struct test_arena {
  long live = 0;      // blocks allocated and not yet freed
  bool fail = false;  // every allocation throws std::bad_alloc while set
};

template <class T>
struct arena_allocator {
  using value_type = T;
  std::shared_ptr<test_arena> arena;
  explicit arena_allocator(std::shared_ptr<test_arena> a) : arena(std::move(a)) {}
  template <class U>
  arena_allocator(const arena_allocator<U>& o) noexcept : arena(o.arena) {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    if (arena->fail) throw std::bad_alloc();
    ++arena->live;
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    --arena->live;
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const arena_allocator<U>& o) const noexcept {
    return arena == o.arena;
  }
};

}  // namespace ccf_test
