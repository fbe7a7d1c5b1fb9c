// ccf — concurrent cuckoo filters.
// detail/table_memory.hpp: zeroed, cache-line aligned word storage for the bucket tables.
//
// Tables of 8 MiB and more are aligned to 2 MiB and advised as transparent-huge-page candidates
// (Linux madvise(MADV_HUGEPAGE)): a random bucket access then needs no TLB walk through 4 KiB
// pages. The size is checked against the machine's physical memory before anything is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "ccf/config.hpp"

namespace ccf::detail {

struct free_deleter {
  void operator()(std::uint64_t* p) const noexcept { std::free(p); }
};

class table_memory {
 public:
  table_memory() = default;

  /// `words` zeroed 64-bit words. Throws std::bad_alloc when the allocation fails.
  explicit table_memory(std::size_t words) : words_(words) {
    const std::size_t bytes = words * sizeof(std::uint64_t);
    constexpr std::size_t huge_page = std::size_t{2} << 20;
    const std::size_t align = bytes >= 4 * huge_page ? huge_page : cache_line_size;
    const std::size_t rounded = (bytes + align - 1) / align * align;
    void* raw = std::aligned_alloc(align, rounded);
    if (raw == nullptr) throw std::bad_alloc();
    data_.reset(static_cast<std::uint64_t*>(raw));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == huge_page) ::madvise(raw, rounded, MADV_HUGEPAGE);
#endif
    zero();
  }

  table_memory(const table_memory& other) : table_memory(other.words_) {
    if (words_ != 0) std::memcpy(data_.get(), other.data_.get(), words_ * sizeof(std::uint64_t));
  }
  table_memory& operator=(const table_memory& other) {
    if (this != &other) *this = table_memory(other);
    return *this;
  }
  table_memory(table_memory&&) noexcept = default;
  table_memory& operator=(table_memory&&) noexcept = default;

  void zero() noexcept {
    if (words_ != 0) std::memset(data_.get(), 0, words_ * sizeof(std::uint64_t));
  }

  std::uint64_t* data() noexcept {
    return data_.get();
  }
  const std::uint64_t* data() const noexcept {
    return data_.get();
  }
  std::size_t words() const noexcept {
    return words_;
  }
  std::size_t bytes() const noexcept {
    return words_ * sizeof(std::uint64_t);
  }

 private:
  std::unique_ptr<std::uint64_t[], free_deleter> data_;
  std::size_t words_ = 0;
};

}  // namespace ccf::detail
