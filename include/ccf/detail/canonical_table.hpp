// ccf — concurrent cuckoo filters.
// detail/canonical_table.hpp: a table's canonical form — the words a filter file holds.
//
// For tag layouts the canonical form is packed_tag_layout's word array: slot j of bucket i is
// the Bits bits at bit (i * Slots + j) * Bits of a little-endian stream of 64-bit words, then
// zero bits up to the end of packed_tag_layout::words_for(n) words (one spare word included).
// The packed layout is its own canonical form (its words are copied); the versioned layout of the
// lock-free filter packs its tags into that stream on save and unpacks them, with counters 0, on
// load. For the payload layout (the store's index) the canonical form is its slot words as they
// are. save() also counts the items, so the count in a file is that of the table it came from,
// even while other threads change the table.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>

#include "ccf/detail/packed_tag_layout.hpp"
#include "ccf/detail/serialization.hpp"

namespace ccf::detail {

/// Appends fields of `bits` bits to a stream of 64-bit words.
class bit_writer {
 public:
  template <class Sink>
  void put(std::uint64_t v, unsigned bits, Sink& sink) {
    acc_ |= v << fill_;
    if (fill_ + bits >= 64) {
      sink(acc_);
      acc_ = fill_ == 0 ? 0 : v >> (64 - fill_);
      fill_ = fill_ + bits - 64;
    } else {
      fill_ += bits;
    }
  }
  template <class Sink>
  void flush(Sink& sink) {
    if (fill_ != 0) sink(acc_);
    acc_ = 0;
    fill_ = 0;
  }

 private:
  std::uint64_t acc_ = 0;
  unsigned fill_ = 0;
};

/// Reads fields of `bits` bits from a stream of 64-bit words.
class bit_reader {
 public:
  template <class Source>
  std::uint64_t get(unsigned bits, Source& source) {
    const std::uint64_t mask = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    if (left_ >= bits) {
      const std::uint64_t v = acc_ & mask;
      acc_ = bits == 64 ? 0 : acc_ >> bits;
      left_ -= bits;
      return v;
    }
    const std::uint64_t next = source();
    const std::uint64_t v = (acc_ | (left_ == 0 ? next : next << left_)) & mask;
    const unsigned used = bits - left_;
    acc_ = used == 64 ? 0 : next >> used;
    left_ = 64 - used;
    return v;
  }
  /// The bits not read yet from the last word.
  std::uint64_t rest() const noexcept { return acc_; }

 private:
  std::uint64_t acc_ = 0;
  unsigned left_ = 0;
};

template <class Layout>
struct canonical_table {
  /// Files hold the tags bit-packed as packed_tag_layout has them: 2, 4 or 8 slots a bucket.
  static constexpr bool has_file_format =
      Layout::slots == 2 || Layout::slots == 4 || Layout::slots == 8;
  static constexpr std::size_t words(std::size_t num_buckets) noexcept {
    if constexpr (Layout::versioned) {
      return packed_tag_layout<Layout::tag_bits, Layout::slots>::words_for(num_buckets);
    } else {
      return Layout::words_for(num_buckets);
    }
  }

  template <class Table>
  static std::size_t count_items(const Table& t, std::size_t num_buckets) {
    std::size_t free = 0;
    for (std::size_t i = 0; i < num_buckets; ++i)
      free += Layout::free_count(t.load(i));
    return num_buckets * Layout::slots - free;
  }

  /// Writes the canonical form with sink(word); returns the item count.
  template <class Table, class Sink>
  static std::size_t save(const Table& t, std::size_t num_buckets, Sink& sink) {
    save_words(t, num_buckets, 0, words(num_buckets), sink);
    return count_items(t, num_buckets);
  }
  /// Writes words [first, last) of the canonical form (those it has) with sink(word), reading
  /// only the buckets they hold.
  template <class Table, class Sink>
  static void save_words(const Table& t, std::size_t num_buckets, std::size_t first,
                         std::size_t last, Sink& sink) {
    last = std::min(last, words(num_buckets));
    if constexpr (Layout::versioned) {
      // Start at the last bucket before `first` that begins on a word boundary: every
      // lcm(64, bucket bits) bits, a bucket and a word begin together.
      constexpr std::size_t bucket_bits = std::size_t{Layout::slots} * Layout::tag_bits;
      constexpr std::size_t period_words = std::lcm(std::size_t{64}, bucket_bits) / 64;
      std::size_t k = first / period_words * period_words;
      const auto windowed = [&](std::uint64_t w) {
        if (k >= first && k < last) sink(w);
        ++k;
      };
      bit_writer out;
      for (std::size_t i = k * 64 / bucket_bits; i < num_buckets && k < last; ++i) {
        const auto b = t.load(i);
        for (unsigned j = 0; j < Layout::slots; ++j)
          out.put(Layout::get(b, j), Layout::tag_bits, windowed);
      }
      out.flush(windowed);
      while (k < last)
        windowed(0);
    } else {
      for (std::size_t k = first; k < std::min(last, t.words().size()); ++k)
        sink(t.load_word(k));
    }
  }

  template <class Table, class Source>
  static std::size_t load(Table& t, std::size_t num_buckets, Source& source) {
    if constexpr (Layout::versioned) {
      bit_reader in;
      std::size_t read = 0;
      auto counted = [&]() {
        ++read;
        return source();
      };
      for (std::size_t i = 0; i < num_buckets; ++i) {
        typename Layout::bucket b{};
        for (unsigned j = 0; j < Layout::slots; ++j)
          Layout::set(b, j,
                      static_cast<typename Layout::slot_type>(in.get(Layout::tag_bits, counted)));
        t.word(i).quiescent_store(b);
      }
      bool clear = in.rest() == 0;
      for (; read < words(num_buckets); ++read)
        clear &= source() == 0;
      if (!clear) throw format_error("ccf: corrupt filter file (bits set past the last bucket)");
    } else {
      for (auto& w : t.words())
        w = source();
      // Packed layouts (the static filters' and the growing filter's) end in padding.
      if constexpr (requires { Layout::bucket_bits; }) check_padding(t, num_buckets);
    }
    return count_items(t, num_buckets);
  }

 private:
  /// Throws unless every bit past the last bucket (in the last word and the spare word) is zero.
  template <class Table>
  static void check_padding(const Table& t, std::size_t num_buckets) {
    const std::size_t used = num_buckets * Layout::bucket_bits;
    const auto words = t.words();
    for (std::size_t k = used / 64; k < words.size(); ++k) {
      const unsigned keep = k == used / 64 ? static_cast<unsigned>(used % 64) : 0;
      const std::uint64_t mask = keep == 0 ? ~std::uint64_t{0} : ~((std::uint64_t{1} << keep) - 1);
      if ((words[k] & mask) != 0) {
        throw format_error("ccf: corrupt filter file (bits set past the last bucket)");
      }
    }
  }
};

}  // namespace ccf::detail
