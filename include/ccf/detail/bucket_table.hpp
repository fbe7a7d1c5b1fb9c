// ccf — concurrent cuckoo filters.
// detail/bucket_table.hpp: the storage of a cuckoo table — the words of its buckets.
//
// bucket_table<Layout, WordPolicy, Allocator> owns Layout::words_for(n) zeroed words (every slot
// empty) allocated through Allocator, with the first word on a cache-line boundary whatever the
// allocator guarantees. load(i) returns a copy of bucket i and store(i, old, now) writes the
// differences, both through the word policy and the layout; nothing here locks or validates:
// the concurrency protocol (lock_protocol.hpp, kcas_protocol.hpp) decides when these are called.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

#include "ccf/config.hpp"

namespace ccf::detail {

template <class Layout, class WordPolicy, class Allocator>
class bucket_table {
 public:
  using layout = Layout;
  using word_type = typename Layout::word_type;
  using bucket = typename Layout::bucket;
  using allocator_type =
      typename std::allocator_traits<Allocator>::template rebind_alloc<word_type>;

  bucket_table() = default;
  bucket_table(std::size_t num_buckets, const Allocator& alloc)
      : alloc_(alloc),
        num_buckets_(num_buckets),
        words_(Layout::words_for(num_buckets)),
        far_(words_ >= far_table_bytes / sizeof(word_type)) {
    allocate();
  }
  bucket_table(const bucket_table& other) requires std::is_trivially_copyable_v<word_type>
      : bucket_table(other,
                     std::allocator_traits<allocator_type>::select_on_container_copy_construction(
                         other.alloc_)) {}
  /// A copy of `other` in memory from `alloc`.
  bucket_table(const bucket_table& other,
               const allocator_type& alloc) requires std::is_trivially_copyable_v<word_type>
      : alloc_(alloc), num_buckets_(other.num_buckets_), words_(other.words_), far_(other.far_) {
    allocate();
    if (words_ != 0) std::memcpy(data_, other.data_, words_ * sizeof(word_type));
  }
  bucket_table(bucket_table&& other) noexcept
      : alloc_(other.alloc_),
        num_buckets_(std::exchange(other.num_buckets_, 0)),
        words_(std::exchange(other.words_, 0)),
        far_(std::exchange(other.far_, false)),
        raw_(std::exchange(other.raw_, nullptr)),
        data_(std::exchange(other.data_, nullptr)) {}
  bucket_table& operator=(bucket_table other) noexcept {
    std::swap(alloc_, other.alloc_);
    std::swap(num_buckets_, other.num_buckets_);
    std::swap(words_, other.words_);
    std::swap(far_, other.far_);
    std::swap(raw_, other.raw_);
    std::swap(data_, other.data_);
    return *this;
  }
  ~bucket_table() { release(); }

  allocator_type get_allocator() const noexcept { return alloc_; }

  std::size_t num_buckets() const noexcept { return num_buckets_; }
  std::size_t size_in_bytes() const noexcept { return words_ * sizeof(word_type); }
  std::span<word_type> words() noexcept { return {data_, words_}; }
  std::span<const word_type> words() const noexcept { return {data_, words_}; }
  /// The word of bucket i, for layouts with one word per bucket (the K-CAS protocol's target).
  word_type& word(std::size_t i) noexcept { return data_[i]; }
  /// Word k as the word policy reads it (64-bit word layouts).
  std::uint64_t load_word(std::size_t k) const noexcept { return WordPolicy::load(data_[k]); }

  CCF_FORCEINLINE bucket load(std::size_t i) const noexcept {
    return Layout::template load<WordPolicy>(data_, i);
  }
  CCF_FORCEINLINE void store(std::size_t i, const bucket& old, const bucket& now) noexcept {
    Layout::template store<WordPolicy>(data_, i, old, now);
  }
  /// Tables of at least this size have their buckets prefetched into L2, smaller ones into L1.
  /// Most of a large table's lines come from memory, and batches that keep many such misses in
  /// flight (a window of 16 keys, two lines a key; a path search's level) ran faster with L2
  /// prefetches, presumably because the core has fewer L1 fill buffers than that. Most of a
  /// smaller table's lines come from the L3, and an L1 prefetch saves the extra step from L2 to
  /// L1. The size where one starts to pay was measured on one machine, between 64 and 128 MiB
  /// (docs/benchmarks.md); unlike the caches' sizes, it is not asked of the C library, which
  /// reports a virtual machine's L3 as the whole host's.
  static constexpr std::size_t far_table_bytes = std::size_t{96} << 20;
  CCF_FORCEINLINE void prefetch(std::size_t i) const noexcept {
    if (far_) {
      CCF_PREFETCH_L2(data_ + Layout::first_word(i));
    } else {
      CCF_PREFETCH(data_ + Layout::first_word(i));
    }
  }
  /// For a far table, the same as prefetch: there is no prefetch for writing into L2.
  CCF_FORCEINLINE void prefetch_for_write(std::size_t i) const noexcept {
    if (far_) return prefetch(i);
    CCF_PREFETCH_WRITE(data_ + Layout::first_word(i));
  }

  /// Reads one word per cache line of buckets [first, last) (a run that starts and ends on word
  /// boundaries, such as a chunk) in address order, so that they come
  /// into the caches at the speed of a sequential sweep (which the hardware prefetchers run
  /// ahead of) rather than one random miss at a time. Returns the words' xor only so that the
  /// reads are kept.
  std::uint64_t warm(std::size_t first, std::size_t last)
      const noexcept requires std::is_same_v<word_type, std::uint64_t> {
    constexpr std::size_t stride = cache_line_size / sizeof(word_type);
    std::uint64_t x = 0;
    const std::size_t end = std::min(words_, Layout::first_word(last));
    for (std::size_t k = Layout::first_word(first); k < end; k += stride)
      x ^= WordPolicy::load(data_[k]);
    return x;
  }

  /// Empties every slot, while no other thread writes the table. Lookups of a concurrent table
  /// may still read it (the striped policy's optimistic readers, which then retry): its words
  /// are zeroed with the policy's atomic stores, not memset.
  void zero() noexcept {
    if constexpr (std::is_trivially_copyable_v<word_type> && !WordPolicy::concurrent) {
      if (words_ != 0) std::memset(data_, 0, words_ * sizeof(word_type));
    } else if constexpr (std::is_trivially_copyable_v<word_type>) {
      for (std::size_t k = 0; k < words_; ++k)
        WordPolicy::store(data_[k], 0);
    } else {
      for (std::size_t k = 0; k < words_; ++k)
        data_[k].quiescent_store(0);
    }
  }

 private:
  static constexpr std::size_t pad = cache_line_size / sizeof(word_type);
  using traits = std::allocator_traits<allocator_type>;

  /// Plain words from an allocator that hands out zeroed blocks (table_allocator: fresh pages
  /// for large tables) need no pass over the table here.
  static constexpr bool zeroed_by_allocator =
      std::is_trivially_default_constructible_v<word_type> &&
      std::is_trivially_copyable_v<word_type> && requires(allocator_type a, std::size_t n) {
    { a.allocate_zeroed(n) } -> std::same_as<typename traits::pointer>;
  };

  void allocate() {
    if constexpr (zeroed_by_allocator) {
      raw_ = alloc_.allocate_zeroed(words_ + pad);
    } else {
      raw_ = traits::allocate(alloc_, words_ + pad);
    }
    void* start = std::to_address(raw_);
    std::size_t space = (words_ + pad) * sizeof(word_type);
    std::align(cache_line_size, words_ * sizeof(word_type), start, space);
    data_ = static_cast<word_type*>(start);
    if constexpr (!zeroed_by_allocator) std::uninitialized_value_construct_n(data_, words_);
  }
  void release() noexcept {
    if (raw_ == nullptr) return;
    std::destroy_n(data_, words_);
    traits::deallocate(alloc_, raw_, words_ + pad);
    raw_ = nullptr;
  }

  [[no_unique_address]] allocator_type alloc_{};
  std::size_t num_buckets_ = 0;
  std::size_t words_ = 0;
  // The table has at least far_table_bytes. A bool, not a test of words_: words_ has the type
  // of a 64-bit word, so as far as the compiler knows each store to the table may change it.
  bool far_ = false;
  typename traits::pointer raw_ = nullptr;
  word_type* data_ = nullptr;
};

}  // namespace ccf::detail
