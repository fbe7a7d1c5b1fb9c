// ccf — concurrent cuckoo filters.
// allocator.hpp: where a filter's table memory comes from.
//
// Every ccf cuckoo filter takes an Allocator template argument (and a constructor argument) for
// its table, its lock stripes and its counters. The default, ccf::table_allocator<T>, is a
// standard allocator that aligns blocks of 8 MiB and more to 2 MiB and advises them as
// transparent-huge-page candidates (Linux madvise(MADV_HUGEPAGE)), so that a random bucket access
// needs no TLB walk through 4 KiB pages; smaller blocks are aligned to a cache line. Any other
// standard allocator works too (the Redis module passes one that allocates through Redis): the
// table then aligns its start to a cache line inside a block a little larger than it needs.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "ccf/config.hpp"

namespace ccf {

template <class T>
struct table_allocator {
  using value_type = T;

  table_allocator() noexcept = default;
  template <class U>
  constexpr table_allocator(const table_allocator<U>&) noexcept {}  // NOLINT: rebinding

  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > max_size()) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    const std::size_t align = alignment(bytes);
    const std::size_t rounded = (bytes + align - 1) / align * align;
    void* raw = std::aligned_alloc(align, rounded == 0 ? align : rounded);
    if (raw == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == huge_page) ::madvise(raw, rounded, MADV_HUGEPAGE);
#endif
    return static_cast<T*>(raw);
  }
  void deallocate(T* p, std::size_t) noexcept {
    std::free(p);
  }

  static constexpr std::size_t max_size() noexcept {
    return (~std::size_t{0} >> 1) / sizeof(T);
  }

  template <class U>
  friend constexpr bool operator==(const table_allocator&, const table_allocator<U>&) noexcept {
    return true;
  }

 private:
  static constexpr std::size_t huge_page = std::size_t{2} << 20;
  static constexpr std::size_t alignment(std::size_t bytes) noexcept {
    const std::size_t base = alignof(T) > cache_line_size ? alignof(T) : cache_line_size;
    return bytes >= 4 * huge_page && base <= huge_page ? huge_page : base;
  }
};

}  // namespace ccf
