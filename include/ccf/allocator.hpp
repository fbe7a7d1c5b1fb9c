// ccf — concurrent cuckoo filters.
// allocator.hpp: where a filter's table memory comes from.
//
// Every ccf cuckoo filter takes an Allocator template argument (and a constructor argument) for
// its table, and a growing filter also for the hashes a small one keeps: the memory that grows
// with its capacity. Its small fixed-size parts (lock stripes, item counters, read epochs) and
// the scratch memory of a batch come from the C++ heap (batch scratch from table_allocator). The
// default, ccf::table_allocator<T>, is a
// standard allocator that aligns blocks of 8 MiB and more to 2 MiB and advises them as
// transparent-huge-page candidates (Linux madvise(MADV_HUGEPAGE)), so that a random bucket access
// needs no TLB walk through 4 KiB pages; smaller blocks are aligned to a cache line. On Linux those
// large blocks are anonymous mappings of their own, which read as zero until written: its
// allocate_zeroed(n), which a table asks for when it can, then costs nothing up front, and the
// pages are zeroed once, by the kernel, where the table is first written (by every thread of a
// bulk build at once) rather than twice, once by the kernel and once by a memset on one thread.
// Any other standard allocator works too (the Redis module passes one that allocates through
// Redis): the table then aligns its start to a cache line inside a block a little larger than it
// needs, and zeroes it.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
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
    if (mapped(bytes)) return map(bytes);
    const std::size_t align = alignment(bytes);
    void* raw = std::aligned_alloc(align, round_up(bytes == 0 ? 1 : bytes, align));
    if (raw == nullptr) throw std::bad_alloc();
    return static_cast<T*>(raw);
  }
  /// n elements whose bytes are all zero.
  [[nodiscard]] T* allocate_zeroed(std::size_t n) {
    T* p = allocate(n);
    if (!mapped(n * sizeof(T))) std::memset(static_cast<void*>(p), 0, n * sizeof(T));
    return p;
  }
  /// n must be the count p was allocated with.
  void deallocate(T* p, std::size_t n) noexcept {
#if defined(__linux__)
    if (mapped(n * sizeof(T))) {
      ::munmap(p, round_up(n * sizeof(T), huge_page));
      return;
    }
#endif
    (void)n;
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
  static constexpr std::size_t round_up(std::size_t bytes, std::size_t align) noexcept {
    return (bytes + align - 1) / align * align;
  }
  static constexpr std::size_t alignment(std::size_t bytes) noexcept {
    const std::size_t base = alignof(T) > cache_line_size ? alignof(T) : cache_line_size;
    return bytes >= 4 * huge_page && base <= huge_page ? huge_page : base;
  }
  /// Whether a block of this size is a mapping of its own (and so starts out zero).
  static constexpr bool mapped(std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    return alignment(bytes) == huge_page;
#else
    (void)bytes;
    return false;
#endif
  }
  /// A fresh anonymous mapping of round_up(bytes, 2 MiB) starting on a 2 MiB boundary: one
  /// 2 MiB more is mapped, and what lies before the boundary and after the block is unmapped.
  static T* map(std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const std::size_t size = round_up(bytes, huge_page);
    void* const raw = ::mmap(nullptr, size + huge_page, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    void* start = raw;
    std::size_t space = size + huge_page;
    std::align(huge_page, size, start, space);  // always fits: huge_page bytes to spare
    const std::size_t head = size + huge_page - space;
    if (head != 0) ::munmap(raw, head);
    if (huge_page - head != 0) ::munmap(static_cast<char*>(start) + size, huge_page - head);
    ::madvise(start, size, MADV_HUGEPAGE);
    return static_cast<T*>(start);
#else
    (void)bytes;
    throw std::bad_alloc();
#endif
  }
};

}  // namespace ccf
