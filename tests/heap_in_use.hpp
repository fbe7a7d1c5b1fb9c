// The bytes the heap holds, to check what filters report as their memory: glibc's count of blocks
// in use (mapped ones included); nothing where the allocator is not glibc's (the sanitizers
// replace it).
#pragma once

#include <cstddef>
#include <optional>

#if defined(__GLIBC__)
#if __GLIBC_PREREQ(2, 33) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#include <malloc.h>
#define CCF_TEST_HEAP_COUNTED 1
#endif
#endif

inline std::optional<std::size_t> heap_in_use() {
#if defined(CCF_TEST_HEAP_COUNTED)
  const struct mallinfo2 m = ::mallinfo2();
  return m.uordblks + m.hblkhd;
#else
  return std::nullopt;
#endif
}
