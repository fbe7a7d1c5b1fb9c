// ccf — concurrent cuckoo filters.
// redis/cf_value.hpp: the value of a ccf key in Redis, and its dump (the bytes of CF.SCANDUMP,
// CF.LOADCHUNK, the RDB and the AOF rewrite).
//
// A key holds either a filter (ccf::basic_runtime_filter over Redis's allocator, sequential kind:
// Redis runs commands on one thread) with the few settings RedisBloom reports that a ccf filter
// does not keep, or — between the first and the last CF.LOADCHUNK of a dump — the bytes received
// so far.
//
// The dump is a 40-byte header of the module, then a ccf filter file (docs/file-format.md):
//   0   8  magic "CCFREDIS"
//   8   4  version: 1
//   12  4  zero
//   16  8  expansion rate (as given to CF.RESERVE)
//   24  8  max iterations (as given to CF.RESERVE)
//   32  8  items deleted
// all little-endian. CF.LOADCHUNK also takes a bare ccf filter file (from the ccf tool or any ccf
// filter over string keys). Every dump read is untrusted: its size is checked against its header
// before the filter loads, and ccf's loader checks the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ccf/runtime_filter.hpp>

#include "redis_allocator.hpp"

namespace ccf_redis {

using filter = ccf::basic_runtime_filter<redis_allocator<std::uint64_t>>;
using byte_buffer = std::vector<char, redis_allocator<char>>;

/// What CF.INFO reports that the filter itself does not keep.
struct filter_meta {
  std::uint64_t expansion = 1;
  std::uint64_t max_iterations = 500;
  std::uint64_t deleted = 0;
};
/// The largest MAXITERATIONS and EXPANSION that CF.RESERVE takes (a dump claiming more is forged).
inline constexpr std::uint64_t max_max_iterations = 65535;
inline constexpr std::uint64_t max_expansion = 32768;
/// The largest count of items deleted a dump holds (CF.INFO replies with a signed integer);
/// CF.DEL counts up to it and stays there.
inline constexpr std::uint64_t max_deleted =
    static_cast<std::uint64_t>(std::numeric_limits<long long>::max());  // 2^63 - 1

/// The module's settings (module arguments, see module.cpp).
struct module_settings {
  std::size_t chunk_size = std::size_t{16} << 20;  // bytes per CF.SCANDUMP / AOF chunk
  std::size_t default_capacity = 1024;             // CF.ADD / CF.INSERT of a new key
  double default_error = 0.01;                     // when CF.RESERVE has no ERROR
  std::uint64_t default_expansion = 1;
  std::uint64_t default_max_iterations = 500;
};
inline module_settings settings;

inline constexpr std::size_t dump_header_size = 40;
inline constexpr std::size_t ccf_header_size = 80;
inline constexpr std::size_t ccf_trailer_size = 16;
/// The smallest CHUNK_SIZE: a dump's first chunk must hold both headers (CF.LOADCHUNK reads the
/// dump's size from them).
inline constexpr std::size_t min_chunk_size = dump_header_size + ccf_header_size;
/// The largest CHUNK_SIZE: Redis's default proto-max-bulk-len, the longest argument a client may
/// send (a server that lowers it must keep CHUNK_SIZE under it for CF.LOADCHUNK to take chunks).
inline constexpr std::size_t max_chunk_size = std::size_t{512} << 20;

class cf_value {
 public:
  /// A key's value, allocated through Redis (destroy() frees it).
  static cf_value* create(filter&& f, const filter_meta& meta);
  /// A new filter of shape `c`. (Every filter is made or loaded in cf_value.cpp, so that only it
  /// compiles the filter types behind ccf::basic_runtime_filter.)
  static cf_value* create(const ccf::filter_config& c, const filter_meta& meta);
  static cf_value* create_pending(std::string_view first_chunk, std::size_t total);
  static void destroy(cf_value* v) noexcept;

  bool pending() const noexcept { return !filter_.has_value(); }
  filter& get() { return *filter_; }
  const filter& get() const { return *filter_; }
  filter_meta& meta() noexcept { return meta_; }
  const filter_meta& meta() const noexcept { return meta_; }

  /// The bytes received so far, and the dump's full size (pending values only).
  const byte_buffer& pending_bytes() const noexcept { return pending_; }
  std::size_t pending_total() const noexcept { return total_; }
  void append(std::string_view chunk) {
    pending_.insert(pending_.end(), chunk.begin(), chunk.end());
  }

  /// Makes a pending value the filter its dump describes, in place (the key keeps its value, and
  /// so its expiry), and frees the bytes received.
  void complete(filter&& f, const filter_meta& meta);

  std::size_t memory_usage() const noexcept;

 private:
  cf_value(filter&& f, const filter_meta& meta) : filter_(std::move(f)), meta_(meta) {}
  cf_value(std::string_view first_chunk, std::size_t total);

  std::optional<filter> filter_;
  filter_meta meta_;
  byte_buffer pending_;
  std::size_t total_ = 0;
};

/// A value's dump, read in ranges (the filter's bytes are made once, by to_bytes()).
class dump_bytes {
 public:
  explicit dump_bytes(const cf_value& v);
  std::size_t size() const noexcept { return head_.size() + body_.size(); }
  /// Bytes [offset, offset + len) of the dump, into `out` (resized).
  void read(std::size_t offset, std::size_t len, std::string& out) const;
  std::string_view head() const noexcept { return head_; }
  std::string_view body() const noexcept {
    return {reinterpret_cast<const char*>(body_.data()), body_.size()};
  }

 private:
  std::string head_;             // the module header (filters), or the pending bytes
  std::vector<std::byte> body_;  // the ccf filter file
};

/// Bytes [offset, offset + len) of the dump of v, a filter (not pending), into `out` (resized to
/// those the dump has: empty past its end), made without the whole dump in memory (CF.SCANDUMP).
/// Returns the dump's size.
std::size_t read_dump_range(const cf_value& v, std::size_t offset, std::size_t len,
                            std::vector<std::byte>& out);

/// The full size of the dump that starts with `prefix`; nullopt with `error` set when the prefix
/// is not the start of a dump (or too short to say).
std::optional<std::size_t> dump_size(std::string_view prefix, std::string& error);

/// The value a complete dump describes; nullptr with `error` set when the bytes are not a valid
/// dump (never a crash, and no allocation beyond what the bytes present justify).
cf_value* load_dump(std::string_view bytes, std::string& error);
/// load_dump of the dump head + body (a module header and a filter file, or a bare filter file
/// and an empty head).
cf_value* load_dump(std::string_view head, std::string_view body, std::string& error);

/// Completes a pending value whose bytes are the whole dump, in place; false with `error` set when
/// they are not a valid dump (the value is left as it was).
bool finish_pending(cf_value& v, std::string& error);

/// The value that the first chunk of a dump starts: the filter when the chunk is the whole dump,
/// else a pending value holding it; nullptr with `error` set when it is not the start of a dump.
/// `check_headers`: refuse headers that the last chunk would (all but the checks that need the
/// table); false for a restore under way read back (RDB, COPY), which a module that did not check
/// them may have saved: its last chunk still refuses them. (An AOF rewrite writes it as
/// CF.LOADCHUNK commands, whose first chunk is checked when the AOF loads.)
cf_value* load_first_chunk(std::string_view chunk, std::string& error, bool check_headers = true);

}  // namespace ccf_redis
