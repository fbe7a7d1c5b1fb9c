// ccf — concurrent cuckoo filters.
// kv/options.hpp: how a key-value store is opened, and what it reports.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ccf/kv/file_system.hpp"

namespace ccf::kv {

/// When a store's writes reach the disk.
enum class durability {
  /// Only at sync(), compact() and close(): a crash loses the writes since the last of those.
  none,
  /// A background thread syncs the log every group_interval, and sooner once group_writes
  /// writes wait: a crash loses at most the writes of the last interval.
  group,
  /// Every put() and erase() returns only once its record is on disk (concurrent writers share
  /// one sync), and only then does it become visible to get().
  every_write,
};

struct options {
  durability sync = durability::every_write;
  std::size_t group_writes = 1024;
  /// At most a day is waited: a longer interval syncs once a day.
  std::chrono::milliseconds group_interval{10};
  /// Size the index for this many keys from the start (0: it starts small and doubles).
  std::size_t expected_keys = 0;
  bool create_if_missing = true;
  bool error_if_exists = false;
  /// On a bad record in the middle of the log (valid records after it), refuse to open instead of
  /// recovering up to it (see store.hpp, "Recovery").
  bool strict_recovery = false;
  /// The most bytes that the search for valid records after a bad one may checksum (0: 4096
  /// times the bytes after the bad one, plus 1 GiB). Each 8-byte position is tried at the cost of
  /// the record size its would-be header claims; a search that reaches the bound counts the tail
  /// as holding records (kept in a dropped file, or refused with strict_recovery).
  std::uint64_t tail_search_bytes = 0;
  /// Replay the whole log, checking every record, instead of the records after the index
  /// snapshot's position: a record that rotted below that position is then found at open (a log
  /// damaged in the middle, see strict_recovery) instead of by the get, put, erase, for_each or
  /// compact that reads it.
  bool verify_log = false;
  /// Write an index snapshot after the log grew by this many bytes (0: only at close and
  /// compaction).
  std::uint64_t snapshot_every_bytes = std::uint64_t{256} << 20;
  /// The file system (tests put a fault-injecting one here).
  std::shared_ptr<file_system> fs = posix_file_system();
};

/// What open() found and did.
struct open_report {
  bool created = false;        // a new store
  bool snapshot_used = false;  // the index came from its snapshot
  /// The snapshot's index named a record that is not valid: the log was replayed without it (and
  /// cut at its first bad record).
  bool snapshot_discarded = false;
  std::uint64_t replayed_records = 0;
  std::uint64_t truncated_bytes = 0;  // a torn or bad tail cut off the log
  /// Valid records after the first bad one (dropped with the tail; kept in dropped_file).
  std::uint64_t dropped_records = 0;
  /// Where the cut-off bytes were saved, when they held valid records (or may have: the search for
  /// them stopped at options::tail_search_bytes).
  std::string dropped_file;
  /// Bytes the log lost below the position of an intact index snapshot of it (the log was
  /// synced up to there before the snapshot was written): the file was cut, and the records
  /// there are gone. strict_recovery refuses such a log.
  std::uint64_t lost_synced_bytes = 0;
};

struct store_stats {
  std::size_t keys = 0;
  std::size_t index_buckets = 0;
  std::size_t index_bytes = 0;
  double index_load = 0;  // occupied slots / slots
  double index_bytes_per_key = 0;
  std::size_t rehashes = 0;  // times the index doubled
  std::uint64_t log_bytes = 0;
  std::uint64_t live_bytes = 0;  // bytes of the records of live keys
  std::uint64_t records = 0;     // put and delete records in the log
  std::uint64_t syncs = 0;
  std::uint64_t compactions = 0;
};

}  // namespace ccf::kv
