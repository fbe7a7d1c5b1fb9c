// ccf — concurrent cuckoo filters.
// filter_file.hpp: what a filter file holds, read from its header alone.
//
// ccf::read_filter_info reads and checks the 80-byte header of a filter file (the format is in
// detail/serialization.hpp) and the length of what follows it, without reading or allocating
// the table: tools use it to choose the filter type to load a file into, and to describe a file.
// It throws ccf::format_error for a file that is not a ccf filter, has another format version,
// has an impossible shape, or is shorter or longer than its header says (for a stream whose
// length is unknown, such as a pipe, the length is not checked and the stream is left after the
// header). ccf::read_filter_header reads the header alone, from the first bytes of a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <span>
#include <string>

#include "ccf/detail/indexer.hpp"
#include "ccf/detail/serialization.hpp"

namespace ccf {

struct filter_file_info {
  unsigned fingerprint_bits = 0;
  unsigned slots_per_bucket = 0;
  /// "global" or "chunked" (ccf::global_alternate, ccf::chunked_alternate), or "growing" (a file
  /// of ccf::growing_cuckoo_filter).
  std::string alternate;
  std::uint64_t num_buckets = 0;
  std::uint64_t chunks = 0;
  std::uint64_t seed = 0;
  std::uint64_t max_kicks = 0;
  std::uint64_t capacity = 0;
  /// Bytes of the whole file as its header describes it.
  std::uint64_t file_bytes = 0;
};

namespace detail {

inline filter_file_info info_of(const file_header& h) {
  filter_file_info i;
  i.fingerprint_bits = h.fingerprint_bits;
  i.slots_per_bucket = h.slots_per_bucket;
  i.alternate =
      h.alternate == static_cast<std::uint32_t>(alternate_kind::global)
          ? "global"
          : (h.alternate == static_cast<std::uint32_t>(alternate_kind::chunked) ? "chunked"
                                                                                : "growing");
  i.num_buckets = h.num_buckets;
  i.chunks = h.chunks;
  i.seed = h.seed;
  i.max_kicks = h.max_kicks;
  i.capacity = h.capacity;
  i.file_bytes = h.file_bytes();
  return i;
}

inline filter_file_info read_info(byte_source& src) {
  const file_header h = read_header_only(src);
  if (const std::optional<std::uint64_t> left = src.remaining()) check_body_length(h, *left);
  return info_of(h);
}

}  // namespace detail

/// The header of the filter file in `in` (read from its current position).
inline filter_file_info read_filter_info(std::istream& in) {
  detail::byte_source src(in);
  return detail::read_info(src);
}
/// The header of the filter file held in `bytes`.
inline filter_file_info read_filter_info(std::span<const std::byte> bytes) {
  detail::byte_source src(bytes);
  return detail::read_info(src);
}
/// The header at the start of `first_bytes`, the beginning of a filter file whose rest may not be
/// there yet (a file still arriving): read_filter_info without the check of the length.
inline filter_file_info read_filter_header(std::span<const std::byte> first_bytes) {
  detail::byte_source src(first_bytes);
  return detail::info_of(detail::read_header_only(src));
}

}  // namespace ccf
