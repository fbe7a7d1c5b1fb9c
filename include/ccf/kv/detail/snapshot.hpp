// ccf — concurrent cuckoo filters.
// kv/detail/snapshot.hpp: the key-value store's index snapshot — the index as of a log position,
// so that opening a store replays only the log's tail.
//
//   0  8  magic "CCFKVIDX"     8  4  format version (1)     12  4  slots per bucket (4)
//  16 16  id of the log it belongs to
//  32  8  log position: every record before it is in the index, none after it
//  40  8  chunks               48  8  chunk size (buckets)
//  56  8  live keys            64  8  records before the position
//  72  8  index doublings      80  8  bytes of live records
//  88  8  word count (the index's slot words)
//  96  8  offset of the last record before the position (0: none)
// 104  8  that record's checksum
// 112  -  the words, little-endian
//  end 8  XXH3-64 of everything before
//
// A snapshot is written to a temporary name, synced and renamed into place, after the log is
// synced up to its position. Reading checks the length against the header before allocating,
// the log id and position against the log, and the checksum; any mismatch makes the store
// ignore the snapshot and replay the whole log (a missing or stale snapshot only costs time; an
// intact one of this log whose position the log's records no longer reach says that the log lost
// synced records, which the replay then reports or, with strict recovery, refuses). The
// last record's offset and checksum pin the position to this log's contents: that very record
// must be there and end exactly at the position, so a snapshot whose log was cut below its position and has
// grown again (new records where its position points) is never taken for current.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ccf/kv/detail/kv_index.hpp"
#include "ccf/kv/detail/log.hpp"
#include "ccf/kv/detail/record.hpp"
#include "ccf/kv/file_system.hpp"

namespace ccf::kv::detail {

inline constexpr char snapshot_magic[8] = {'C', 'C', 'F', 'K', 'V', 'I', 'D', 'X'};
inline constexpr std::size_t snapshot_header_size = 112;

/// What a snapshot holds besides the index.
struct snapshot_meta {
  std::array<std::byte, 16> log_id{};
  std::uint64_t position = 0;
  std::uint64_t records = 0;
  std::uint64_t rehashes = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t last_record = 0;    // offset of the last record before position (0: none)
  std::uint64_t last_checksum = 0;  // and its checksum
  /// Set by read_snapshot() for an intact snapshot of this log that does not fit it (0
  /// otherwise): its position, up to which the log was synced before the snapshot was written.
  /// A log that no longer holds valid records up to it lost synced records.
  std::uint64_t synced_floor = 0;
};

/// Writes the snapshot of `index` into the file `path`, synced.
inline void write_snapshot_file(file_system& fs, const std::string& path, const kv_index& index,
                                const snapshot_meta& meta) {
  std::unique_ptr<file> f = fs.open(path, file_system::open_mode::create);
  f->truncate(0);
  const auto& ix = index.engine().indexer();
  std::vector<std::byte> out(snapshot_header_size);
  std::memcpy(out.data(), snapshot_magic, 8);
  put_u32(&out[8], 1);
  put_u32(&out[12], kv_index::layout::slots);
  std::memcpy(&out[16], meta.log_id.data(), 16);
  put_u64(&out[32], meta.position);
  put_u64(&out[40], ix.chunks());
  put_u64(&out[48], ix.chunk_size());
  put_u64(&out[56], index.size());
  put_u64(&out[64], meta.records);
  put_u64(&out[72], meta.rehashes);
  put_u64(&out[80], meta.live_bytes);
  put_u64(&out[88], kv_index::layout::words_for(ix.num_buckets()));
  put_u64(&out[96], meta.last_record);
  put_u64(&out[104], meta.last_checksum);
  out.reserve(out.size() + kv_index::layout::words_for(ix.num_buckets()) * 8 + 8);
  auto sink = [&](std::uint64_t w) {
    out.resize(out.size() + 8);
    put_u64(&out[out.size() - 8], w);
  };
  index.engine().save_canonical(sink);
  sink(XXH3_64bits(out.data(), out.size()));
  f->write_at(0, out);
  f->sync();
}

/// Writes the snapshot of `index` to `path` (through a temporary file, removed when the write
/// fails: a full disk kept it, as large as the index; the caller syncs the directory).
inline void write_snapshot(file_system& fs, const std::string& path, const kv_index& index,
                           const snapshot_meta& meta) {
  const std::string tmp = path + ".tmp";
  try {
    write_snapshot_file(fs, tmp, index, meta);
    fs.rename(tmp, path);
  } catch (...) {
    try {
      if (fs.exists(tmp)) fs.remove(tmp);
    } catch (...) {
    }
    throw;
  }
}

/// Whether the record at meta.last_record is the one the snapshot names and ends at
/// meta.position.
inline bool ends_at(const log_file& log, const snapshot_meta& meta) {
  std::string scratch;
  const std::optional<record_view> r = log.read(meta.last_record, meta.position, scratch);
  return r && meta.last_record + r->size == meta.position && r->checksum == meta.last_checksum;
}

/// The snapshot at `path` if it is intact and belongs to `log` as it is now. An intact snapshot
/// of this log whose position the log no longer reaches with the record it names (the log was cut
/// or damaged below it) gives null and sets meta.synced_floor.
inline std::unique_ptr<kv_index> read_snapshot(file_system& fs, const std::string& path,
                                               const log_file& log, snapshot_meta& meta) {
  const std::array<std::byte, 16>& log_id = log.header().id;
  const std::uint64_t log_size = log.size(), seed = log.header().seed;
  if (!fs.exists(path)) return nullptr;
  std::unique_ptr<file> f;
  try {
    f = fs.open(path, file_system::open_mode::existing);
  } catch (const io_error&) {
    return nullptr;  // one that cannot be opened (read-only, not a file) only costs a replay
  }
  const std::uint64_t size = f->size();
  std::array<std::byte, snapshot_header_size> h{};
  if (size < snapshot_header_size + 8 || f->read_at(0, h) != h.size()) return nullptr;
  const std::uint64_t chunks = get_u64(&h[40]), chunk_size = get_u64(&h[48]);
  const std::uint64_t words = get_u64(&h[88]);
  const bool shape_ok =
      std::memcmp(h.data(), snapshot_magic, 8) == 0 && get_u32(&h[8]) == 1 &&
      get_u32(&h[12]) == kv_index::layout::slots && std::memcmp(&h[16], log_id.data(), 16) == 0 &&
      chunks != 0 && chunk_size != 0 && chunks < (std::uint64_t{1} << 32) &&
      chunk_size < (std::uint64_t{1} << 32) && chunks * chunk_size < (std::uint64_t{1} << 40) &&
      words == kv_index::layout::words_for(chunks * chunk_size) &&
      size == snapshot_header_size + words * 8 + 8;
  meta.position = get_u64(&h[32]);
  meta.last_record = get_u64(&h[96]);
  meta.last_checksum = get_u64(&h[104]);
  if (!shape_ok || meta.position < log_header_size) return nullptr;
  const bool fits = meta.position <= log_size &&
                    (meta.position == log_header_size ? meta.last_record == 0 : ends_at(log, meta));
  std::memcpy(meta.log_id.data(), &h[16], 16);
  meta.records = get_u64(&h[64]);
  meta.rehashes = get_u64(&h[72]);
  meta.live_bytes = get_u64(&h[80]);
  const std::uint64_t keys = get_u64(&h[56]);

  XXH3_state_t state{};
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, h.data(), h.size());
  std::vector<std::byte> buffer(std::size_t{1} << 16);
  std::uint64_t at = snapshot_header_size, left = 0, pos = 0;
  auto source = [&]() -> std::uint64_t {
    if (pos == left) {
      const auto want = static_cast<std::size_t>(
          std::min<std::uint64_t>(buffer.size(), snapshot_header_size + words * 8 - at));
      if (f->read_at(at, std::span<std::byte>(buffer.data(), want)) != want) {
        throw corrupt_error("ccf::kv: the index snapshot ends early");
      }
      XXH3_64bits_update(&state, buffer.data(), want);
      at += want;
      left = want;
      pos = 0;
    }
    pos += 8;
    return get_u64(&buffer[pos - 8]);
  };
  auto index = std::make_unique<kv_index>(
      kv_index::indexer_type(static_cast<std::size_t>(chunks),
                             static_cast<std::size_t>(chunk_size)),
      static_cast<std::size_t>(chunks * chunk_size * kv_index::layout::slots * 95 / 100), seed);
  try {
    const std::size_t loaded = index->engine().load_canonical(source);
    std::array<std::byte, 8> sum{};
    if (f->read_at(at, sum) != 8 || get_u64(sum.data()) != XXH3_64bits_digest(&state) ||
        loaded != keys) {
      return nullptr;
    }
  } catch (const corrupt_error&) {
    return nullptr;
  }
  if (!fits) {
    meta.synced_floor = meta.position;
    return nullptr;
  }
  return index;
}

}  // namespace ccf::kv::detail
