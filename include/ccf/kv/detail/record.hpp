// ccf — concurrent cuckoo filters.
// kv/detail/record.hpp: the key-value store's log: its header and its records.
//
// A log file is a 64-byte header followed by records, each starting at a multiple of 8 bytes:
//
//   header   0  8  magic "CCFKVLOG"        8  4  format version (1)     12  4  reserved (0)
//           16 16  log id (random; the index snapshot names the log it belongs to)
//           32  8  hash seed of the store's index
//           40 16  reserved (0)             56  8  XXH3-64 of bytes 0..55
//
//   record   0  4  key length k (1 .. max_key_size)
//            4  4  value length v (0 .. max_value_size), bit 31 set for a delete record (v = 0)
//            8  8  XXH3-64 of the key and the value, seeded with mix64 of bytes 0..7 (the
//                  lengths) xor the record's offset xor the log id's first half
//           16  k  key, then v bytes of value, then zero bytes up to a multiple of 8
//
// Seeding the checksum with the offset means a record is valid only where it was written: a
// stale copy of a record elsewhere in the file (after a torn rewrite, or a log whose tail was
// rewritten) never passes. parse_record() checks a record against the bytes really present
// before it reads anything the header claims.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ccf/hash.hpp"

namespace ccf::kv {

/// Longest key, in bytes.
inline constexpr std::size_t max_key_size = std::size_t{1} << 16;
/// Longest value, in bytes.
inline constexpr std::size_t max_value_size = (std::size_t{1} << 30) - 1;

}  // namespace ccf::kv

namespace ccf::kv::detail {

inline constexpr std::size_t log_header_size = 64;
inline constexpr std::size_t record_header_size = 16;
inline constexpr std::uint32_t log_format_version = 1;
inline constexpr char log_magic[8] = {'C', 'C', 'F', 'K', 'V', 'L', 'O', 'G'};
inline constexpr std::uint32_t delete_flag = std::uint32_t{1} << 31;

inline void put_u32(std::byte* p, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<std::byte>(v >> (8 * i));
}
inline void put_u64(std::byte* p, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<std::byte>(v >> (8 * i));
}
inline std::uint32_t get_u32(const std::byte* p) noexcept {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return v;
}
inline std::uint64_t get_u64(const std::byte* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

constexpr std::uint64_t pad8(std::uint64_t n) noexcept {
  return (n + 7) & ~std::uint64_t{7};
}

struct log_header {
  std::array<std::byte, 16> id{};
  std::uint64_t seed = 0;

  std::uint64_t id_low() const noexcept { return get_u64(id.data()); }

  std::array<std::byte, log_header_size> encode() const {
    std::array<std::byte, log_header_size> b{};
    std::memcpy(b.data(), log_magic, 8);
    put_u32(&b[8], log_format_version);
    std::memcpy(&b[16], id.data(), 16);
    put_u64(&b[32], seed);
    put_u64(&b[56], XXH3_64bits(b.data(), 56));
    return b;
  }
  /// Decodes a header; std::nullopt names nothing: the caller says what is wrong.
  static std::optional<log_header> decode(std::span<const std::byte> b, std::string& why) {
    if (b.size() < log_header_size) {
      why = "shorter than its header";
      return std::nullopt;
    }
    if (std::memcmp(b.data(), log_magic, 8) != 0) {
      why = "not a ccf::kv log (bad magic)";
      return std::nullopt;
    }
    if (get_u64(&b[56]) != XXH3_64bits(b.data(), 56)) {
      why = "corrupt: its header fails its checksum";
      return std::nullopt;
    }
    if (get_u32(&b[8]) != log_format_version) {
      why = "unsupported log format version " + std::to_string(get_u32(&b[8]));
      return std::nullopt;
    }
    log_header h;
    std::memcpy(h.id.data(), &b[16], 16);
    h.seed = get_u64(&b[32]);
    return h;
  }
};

/// A record as read from the log (key and value point into the log's bytes).
struct record_view {
  std::string_view key;
  std::string_view value;
  bool erased = false;     // a delete record
  std::uint64_t size = 0;  // bytes it takes in the log, padding included
  std::uint64_t checksum = 0;
};

/// Bytes a record of this key and value takes in the log.
constexpr std::uint64_t record_size(std::size_t key, std::size_t value) noexcept {
  return record_header_size + pad8(key + value);
}

/// The checksum of a record whose key and value lie next to each other at `body` (as they do in
/// the log): one XXH3 call, with the lengths, the offset and the log folded into the seed.
inline std::uint64_t record_checksum(const std::byte* header8, const void* body, std::size_t size,
                                     std::uint64_t offset, std::uint64_t id_low) noexcept {
  return XXH3_64bits_withSeed(body, size, mix64(get_u64(header8)) ^ offset ^ id_low);
}

/// Appends the record of (key, value) — or a delete record of key — that will sit at `offset`.
inline void encode_record(std::vector<std::byte>& out, std::uint64_t offset, std::string_view key,
                          std::string_view value, bool erased, std::uint64_t id_low) {
  const std::size_t at = out.size();
  out.resize(at + record_size(key.size(), value.size()));
  std::byte* p = out.data() + at;
  put_u32(p, static_cast<std::uint32_t>(key.size()));
  put_u32(p + 4, static_cast<std::uint32_t>(value.size()) | (erased ? delete_flag : 0));
  std::memcpy(p + record_header_size, key.data(), key.size());
  if (!value.empty()) std::memcpy(p + record_header_size + key.size(), value.data(), value.size());
  put_u64(p + 8,
          record_checksum(p, p + record_header_size, key.size() + value.size(), offset, id_low));
}

/// The size in the log of the record whose 8 first header bytes are at `p`, as they claim it, or
/// 0 when no record has such a header (key of 0 or too many bytes, value too long, a delete
/// record with a value).
inline std::uint64_t claimed_record_size(const std::byte* p) noexcept {
  const std::uint32_t k = get_u32(p);
  const std::uint32_t word = get_u32(p + 4);
  const std::uint32_t v = word & ~delete_flag;
  if (k == 0 || k > max_key_size || v > max_value_size || ((word & delete_flag) != 0 && v != 0)) {
    return 0;
  }
  return record_size(k, v);
}

/// The record at `offset` of a log, given its bytes from that offset on (`available` of them),
/// if a valid one starts there. Nothing the header claims is read before it is checked against
/// `available`.
inline std::optional<record_view> parse_record(const std::byte* p, std::uint64_t available,
                                               std::uint64_t offset, std::uint64_t id_low) {
  if (offset % 8 != 0 || offset < log_header_size || available < record_header_size) {
    return std::nullopt;
  }
  const std::uint64_t size = claimed_record_size(p);
  if (size == 0 || available < size) return std::nullopt;
  const std::uint32_t k = get_u32(p), word = get_u32(p + 4), v = word & ~delete_flag;
  record_view r;
  r.key = std::string_view(reinterpret_cast<const char*>(p + record_header_size), k);
  r.value = std::string_view(r.key.data() + k, v);
  r.erased = (word & delete_flag) != 0;
  r.size = size;
  r.checksum = get_u64(p + 8);
  if (r.checksum != record_checksum(p, p + record_header_size, k + v, offset, id_low)) {
    return std::nullopt;
  }
  return r;
}

}  // namespace ccf::kv::detail
