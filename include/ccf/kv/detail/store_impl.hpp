// ccf — concurrent cuckoo filters.
// kv/detail/store_impl.hpp: the members of ccf::kv::store (kv/store.hpp has the design).
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ccf/detail/sizing.hpp"
#include "ccf/kv/store.hpp"  // the class these are the members of

namespace ccf::kv {

namespace detail {

/// An index with room for `capacity` keys holding the live keys of `from` (keys read back from
/// `log` below `end`); doubles the room until every key fits. Throws corrupt_error when `from`
/// holds a key twice (only a damaged or forged snapshot can make it so; rebuilding it would
/// never end).
inline std::unique_ptr<kv_index> rebuild_index(const log_file& log, std::uint64_t end,
                                               const kv_index& from, std::size_t capacity) {
  std::string scratch, probe;
  for (;; capacity *= 2) {
    auto fresh = std::make_unique<kv_index>(capacity, from.seed());
    bool fits = true;
    from.for_each_offset([&](std::uint64_t offset) {
      if (!fits) return;
      const std::string_view key = log.indexed_record_at(offset, end, scratch).key;
      const std::uint64_t h = fresh->hash(key);
      if (fresh->find(h, key,
                      [&](std::uint64_t o) { return log.indexed_record_at(o, end, probe).key; })) {
        throw corrupt_error("ccf::kv: the index of the log '" + log.path() +
                            "' holds a key twice (a damaged index snapshot): remove the file "
                            "'index' next to it to rebuild the index from the log");
      }
      fits = fresh->insert_new(h, offset);
    });
    if (fits) return fresh;
  }
}

/// The directory that holds `path` ("." for a bare name).
inline std::string parent_directory(std::string path) {
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}

/// max(a, v) into a, atomically.
inline void raise_to(std::atomic<std::uint64_t>& a, std::uint64_t v) noexcept {
  for (std::uint64_t cur = a.load(); cur < v && !a.compare_exchange_weak(cur, v);) {
  }
}

/// Throws std::invalid_argument for options no store can run with, before anything is created.
inline void check_options(const options& o) {
  if (!o.fs) throw std::invalid_argument("ccf::kv: options::fs is empty");
  // A value outside the enumeration would run as durability::none (it is neither of the two
  // compared with): writes meant to be synced never would be.
  if (o.sync != durability::none && o.sync != durability::group &&
      o.sync != durability::every_write) {
    throw std::invalid_argument("ccf::kv: options::sync " +
                                std::to_string(static_cast<int>(o.sync)) +
                                " is not a durability (none, group or every_write)");
  }
  if (o.sync == durability::group && (o.group_writes == 0 || o.group_interval.count() <= 0)) {
    throw std::invalid_argument(
        "ccf::kv: durability::group needs group_writes >= 1 and group_interval > 0");
  }
  // A log holds at most this many records (each at least a header and one key byte, padded).
  constexpr std::uint64_t most_keys = kv_index::max_offset / record_size(1, 0);
  if (o.expected_keys > most_keys) {
    throw std::invalid_argument("ccf::kv: expected_keys " + std::to_string(o.expected_keys) +
                                " is more keys than a log can hold (" + std::to_string(most_keys) +
                                ")");
  }
  // The index for expected_keys is made by recover(), once the directory, the LOCK and the log
  // exist: one larger than this machine's memory is refused here, before anything is created.
  if (o.expected_keys != 0) {
    const std::uint64_t bytes = kv_index::table_bytes_for(o.expected_keys);
    const std::uint64_t memory = ccf::detail::physical_memory_bytes();
    if (bytes > memory) {
      throw std::length_error("ccf::kv: an index for expected_keys " +
                              std::to_string(o.expected_keys) + " needs " + std::to_string(bytes) +
                              " bytes, more than this machine's " + std::to_string(memory) +
                              " bytes of memory");
    }
  }
}

}  // namespace detail

inline store::store(const std::string& path, const options& o)
    : fs_(o.fs), options_(o), dir_(o.fs && !path.empty() ? o.fs->absolute(path) : path) {
  detail::check_options(o);
  if (path.empty()) throw std::invalid_argument("ccf::kv: the store's path is empty");
  if (!fs_->exists(dir_)) {
    if (!o.create_if_missing) {
      throw std::invalid_argument("ccf::kv: there is no store at '" + dir_ + "'");
    }
    fs_->create_directory(dir_);
    // The new directory's entry is durable before any write is acknowledged: a power loss lost
    // the whole store with it.
    fs_->sync_directory(detail::parent_directory(dir_));
  }
  // Checked before the lock too: a directory that holds no store is left without a LOCK file,
  // and a file named log that is not a store's (its header) refuses the directory before a
  // compaction's leftover names are removed from it.
  if (!fs_->exists(file("log"))) {
    if (!o.create_if_missing) {
      throw std::invalid_argument("ccf::kv: there is no store at '" + dir_ + "'");
    }
    refuse_files_of_another_store();
  } else {
    detail::log_file::open(*fs_, file("log"));
  }
  lock_ = fs_->lock(file("LOCK"));
  const bool exists = fs_->exists(file("log"));
  if (!exists && !o.create_if_missing) {
    throw std::invalid_argument("ccf::kv: there is no store at '" + dir_ + "'");
  }
  if (exists && o.error_if_exists) {
    throw std::invalid_argument("ccf::kv: a store exists at '" + dir_ + "'");
  }
  if (!exists) refuse_files_of_another_store();
  for (const char* leftover :
       {"log.tmp", "log.compact", "index.tmp", "index.compact", "index.compact.tmp"}) {
    if (fs_->exists(file(leftover))) fs_->remove(file(leftover));
  }
  if (!exists) {
    std::random_device rd;
    const std::uint64_t seed = (static_cast<std::uint64_t>(rd()) << 32) | rd();
    detail::log_file::create(*fs_, file("log.tmp"), seed);
    fs_->rename(file("log.tmp"), file("log"));
    fs_->sync_directory(dir_);
    report_.created = true;
  }
  recover(o);
  if (o.sync == durability::group) {
    syncer_ = std::jthread([this](std::stop_token stop) { background_syncer(stop); });
  }
}

/// A directory with no log holds no store, and none of a store's other files either: every state
/// a store passes through has its log (compaction renames a new one over it). An index or a
/// compaction file there belongs to something else, which creating a store would overwrite or
/// delete; a log.tmp is the leftover of a creation cut short.
inline void store::refuse_files_of_another_store() const {
  for (const char* name :
       {"index", "index.tmp", "log.compact", "index.compact", "index.compact.tmp"}) {
    if (fs_->exists(file(name))) {
      throw std::invalid_argument("ccf::kv: '" + dir_ + "' holds '" + name +
                                  "' but no log: not a store, and not a place to create one");
    }
  }
}

/// Replays the log from the index snapshot. A record the snapshot's index names that is no longer
/// valid (a byte of an old record rotted; the replay compares keys with it, and a doubling reads
/// it) is a log damaged in the middle: strict recovery refuses it as such, and a lenient one
/// replays the whole log without the snapshot, which cuts the log at the bad record.
inline void store::recover(const options& o) {
  try {
    replay(o, true);
  } catch (const damaged_log_error&) {
    throw;
  } catch (const corrupt_error& e) {
    if (!report_.snapshot_used) throw;  // the log's header: there is nothing to cut
    if (o.strict_recovery) {
      throw damaged_log_error(std::string(e.what()) +
                              " (the index snapshot names it; a recovery replays the log without "
                              "the snapshot)");
    }
    const bool created = report_.created;
    report_ = open_report();
    report_.created = created;
    report_.snapshot_discarded = true;
    records_ = 0;
    live_bytes_ = 0;
    rehashes_ = 0;
    snapshot_position_ = last_record_ = 0;
    replay(o, false);
  }
}

inline void store::replay(const options& o, bool use_snapshot) {
  std::shared_ptr<detail::log_file> log = detail::log_file::open(*fs_, file("log"));
  const std::uint64_t size = log->size();
  detail::snapshot_meta meta;
  std::unique_ptr<detail::kv_index> index =
      use_snapshot ? detail::read_snapshot(*fs_, file("index"), *log, meta) : nullptr;
  if (index && o.verify_log) {  // its position was synced; the records below it are checked
    meta.synced_floor = meta.position;
    index.reset();
  }
  std::uint64_t from = detail::log_header_size;
  if (index) {
    report_.snapshot_used = true;
    from = meta.position;
    records_ = meta.records;
    rehashes_ = meta.rehashes;
    live_bytes_ = meta.live_bytes;
    snapshot_position_ = meta.position;
    last_record_ = meta.last_record;
  } else {
    // A snapshot that does not fit this log is stale for good: it is removed before anything is
    // written (below), so that it can never be taken for current once the log has grown past it.
    index = std::make_unique<detail::kv_index>(std::max<std::size_t>(o.expected_keys, 1024),
                                               log->header().seed);
  }
  current_ = std::make_shared<detail::generation>(detail::generation{log, std::move(index)});
  appended_.store(size);
  const auto scan = log->scan(
      from, [&](std::uint64_t at, const detail::record_view& r) { apply(at, r); },
      [&](std::uint64_t tail) {
        return o.tail_search_bytes != 0 ? o.tail_search_bytes
                                        : 4096 * tail + (std::uint64_t{1} << 30);
      });
  report_.replayed_records = scan.records;
  // Below an intact snapshot's position the log was synced: a record missing or bad there is
  // damage (a cut file, a rotten byte), never the torn tail of an interrupted append.
  const std::uint64_t floor = meta.synced_floor;
  const bool records_follow = scan.end < size && (scan.beyond != 0 || scan.stopped);
  if (o.strict_recovery) {
    if (scan.end < floor) throw damaged_log_error(below_floor_message(*log, scan.end, floor));
    if (records_follow) {
      const std::string found = std::to_string(scan.beyond) + " valid records follow";
      throw damaged_log_error("ccf::kv: the log is corrupt at offset " + std::to_string(scan.end) +
                              " of '" + log->path() + "': " +
                              (scan.stopped ? "valid records may follow (the search for them "
                                              "stopped at options::tail_search_bytes; " +
                                                  found + " before it)"
                                            : found));
    }
  }
  if (scan.end < size && (records_follow || scan.end < floor)) {
    // Keep the cut-off bytes: they hold records (of writes that were never synced, or past a
    // corruption), or may (the search stopped at its bound), or were synced. Kept before the
    // snapshot goes: a crash in between finds the same damage again.
    report_.dropped_file = keep_tail(*log, scan.end, size);
    report_.dropped_records = scan.beyond;
  }
  if (!report_.snapshot_used && fs_->exists(file("index"))) {
    fs_->remove(file("index"));
    fs_->sync_directory(dir_);
  }
  if (floor > size) report_.lost_synced_bytes = floor - size;
  if (scan.end < size) {
    log->raw().truncate(scan.end);
    log->raw().sync();
    fs_->sync_directory(dir_);
    report_.truncated_bytes = size - scan.end;
  }
  // What was replayed may not have been synced before a crash of the process, nor the directory
  // entries (a compaction's rename) it was found through: both are now, before any write.
  log->raw().sync();
  fs_->sync_directory(dir_);
  appended_.store(scan.end);
  synced_.store(scan.end);
}

/// The message of a strict recovery that finds the log's valid records ending at `end`, below
/// the position `floor` up to which an intact snapshot says the log was synced.
inline std::string store::below_floor_message(const detail::log_file& log, std::uint64_t end,
                                              std::uint64_t floor) {
  const std::string synced = "its index snapshot says it was synced up to offset " +
                             std::to_string(floor) + ": synced records are lost or damaged";
  if (end == log.size()) {
    return "ccf::kv: the log '" + log.path() + "' ends at offset " + std::to_string(end) +
           ", but " + synced;
  }
  return "ccf::kv: the log is corrupt at offset " + std::to_string(end) + " of '" + log.path() +
         "', and " + synced;
}

/// Copies the log's bytes [from, size) into a new file "dropped-<from>" (or "dropped-<from>.<n>"
/// for the first n whose name is free, when an earlier recovery left that one), a piece of 1 MiB
/// at a time, durable before the log loses them; returns its path.
inline std::string store::keep_tail(detail::log_file& log, std::uint64_t from, std::uint64_t size) {
  const std::string base = "dropped-" + std::to_string(from);
  std::string name = base;
  for (unsigned n = 1; fs_->exists(file(name.c_str())); ++n)
    name = base + "." + std::to_string(n);
  std::unique_ptr<kv::file> keep = fs_->open(file(name.c_str()), file_system::open_mode::create);
  std::vector<std::byte> piece(std::size_t{1} << 20);
  for (std::uint64_t at = from; at < size;) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), size - at));
    const std::size_t got = log.raw().read_at(at, std::span<std::byte>(piece.data(), want));
    keep->write_at(at - from, std::span<const std::byte>(piece.data(), got));
    if (got < want) break;  // the file ended early: nothing more to keep
    at += got;
  }
  keep->sync();
  fs_->sync_directory(dir_);  // the copy is durable before the log loses those bytes
  return file(name.c_str());
}

/// Applies the record at `offset` to the index while the log is replayed: the key's live record
/// is found by comparing keys.
inline void store::apply(std::uint64_t offset, const detail::record_view& r) {
  thread_local std::string probe;
  const detail::generation& g = *current_;
  const std::uint64_t end = appended_.load(std::memory_order_acquire);
  const std::optional<detail::live_record> old = g.index->find_record(
      g.index->hash(r.key), r.key,
      [&](std::uint64_t at) { return g.log->indexed_record_at(at, end, probe); });
  apply_known(r.key, offset, r.erased, r.size, old);
}

/// Applies the record at `offset` (of `key`, `size` bytes, a delete when `erased`) whose key's
/// live record is `old`, as found by apply() or before a batch was written (plan()).
inline void store::apply_known(std::string_view key, std::uint64_t offset, bool erased,
                               std::uint64_t size, const std::optional<detail::live_record>& old) {
  while (!current_->index->apply(current_->index->hash(key), old, offset, erased))
    grow();
  if (old) live_bytes_ -= old->size;
  if (!erased) live_bytes_ += size;
  ++records_;
  last_record_ = offset;
}

inline void store::grow() {
  const detail::generation& g = *current_;
  const std::size_t room = g.index->engine().num_buckets() * detail::kv_index::layout::slots;
  auto bigger = detail::rebuild_index(*g.log, appended_.load(), *g.index, room * 2);
  auto next = std::make_shared<detail::generation>(detail::generation{g.log, std::move(bigger)});
  std::unique_lock<detail_rwlock> switching(readers_);
  current_ = std::move(next);
  ++rehashes_;
}

inline void store::submit(detail::pending_write& w) {
  std::unique_lock<std::mutex> lk(queue_mutex_);
  check_open();
  check_not_guarding();
  if (!failure_.empty()) throw io_error(failure_);
  queue_.push_back(&w);
  queue_cv_.wait(lk, [&] { return w.done || (!committing_ && queue_.front() == &w); });
  if (!w.done && closed_) {  // closed while this write waited: it was never written
    queue_.pop_front();
    queue_cv_.notify_all();
    throw std::logic_error("ccf::kv: the store '" + dir_ + "' was closed");
  }
  if (!w.done) {
    committing_ = true;
    std::vector<detail::pending_write*> batch;
    std::size_t bytes = 0;
    while (!queue_.empty() && batch.size() < 4096 && (batch.empty() || bytes < (8u << 20))) {
      bytes += queue_.front()->key.size() + queue_.front()->value.size();
      batch.push_back(queue_.front());
      queue_.pop_front();
    }
    const std::string failure = failure_;  // a write or sync failed since these were queued
    lk.unlock();
    std::exception_ptr error;
    try {
      if (!failure.empty()) throw io_error(failure);
      commit(batch);
    } catch (...) {
      error = std::current_exception();
    }
    lk.lock();
    for (detail::pending_write* b : batch) {
      if (error) b->error = error;  // else the write's own (commit() refused it alone)
      b->done = true;
    }
    committing_ = false;
    queue_cv_.notify_all();
  }
  if (w.error) std::rethrow_exception(w.error);
}

/// Finds, before anything is written, each write's live record (the index's, or one this batch
/// wrote), and encodes the records of the writes that change something into `bytes`, the first
/// at `start`. The key comparisons happen here: an older record among a key's candidates that
/// fails its checksum refuses that write alone (corrupt_error, nothing written), not once its
/// record is in the log, where every replay of the log would meet it again.
inline std::vector<detail::planned_record> store::plan(std::vector<detail::pending_write*>& batch,
                                                       std::uint64_t start,
                                                       std::vector<std::byte>& bytes) {
  detail::generation& g = *current_;
  const std::uint64_t id_low = g.log->header().id_low();
  std::vector<detail::planned_record> records;
  // The live record of each key this batch wrote (none after an erase).
  std::unordered_map<std::string_view, std::optional<detail::live_record>> latest;
  std::string probe;
  auto record_at = [&](std::uint64_t at) { return g.log->indexed_record_at(at, start, probe); };
  for (detail::pending_write* w : batch) {
    std::optional<detail::live_record> old;
    if (const auto it = latest.find(w->key); it != latest.end()) {
      old = it->second;
    } else {
      try {
        old = g.index->find_record(g.index->hash(w->key), w->key, record_at);
      } catch (const corrupt_error&) {
        w->error = std::current_exception();
        continue;
      }
    }
    w->result = old.has_value();
    if (w->erase && !old) continue;
    const std::uint64_t at = start + bytes.size();
    detail::encode_record(bytes, at, w->key, w->value, w->erase, id_low);
    latest[w->key] = w->erase ? std::nullopt
                              : std::optional(detail::live_record{
                                    at, detail::record_size(w->key.size(), w->value.size())});
    records.push_back({w, at, old});
  }
  return records;
}

inline void store::commit(std::vector<detail::pending_write*>& batch) {
  detail::generation& g = *current_;
  const std::uint64_t start = appended_.load();
  std::vector<std::byte> bytes;
  const std::vector<detail::planned_record> records = plan(batch, start, bytes);
  if (bytes.empty()) return;
  if (start + bytes.size() > detail::kv_index::max_offset) {
    throw io_error("ccf::kv: the log '" + g.log->path() + "' would pass its 2 TiB limit");
  }
  try {
    try {
      g.log->raw().write_at(start, bytes);
    } catch (const std::exception&) {
      // Part of the batch may be in the file (a full disk, a file size limit): cut it off, or
      // the next open reported it as a recovered torn tail. Nothing below `start` changes.
      try {
        g.log->raw().truncate(start);
      } catch (const std::exception&) {
      }
      throw;
    }
    if (options_.sync == durability::every_write) {
      g.log->raw().sync();
      ++syncs_;
    }
  } catch (const std::exception& e) {
    mark_failed(e);
    throw;
  }
  const std::uint64_t end = start + bytes.size();
  appended_.store(end, std::memory_order_release);
  if (options_.sync == durability::every_write) detail::raise_to(synced_, end);
  try {
    for (const detail::planned_record& p : records) {
      const detail::pending_write& w = *p.write;
      apply_known(w.key, p.offset, w.erase, detail::record_size(w.key.size(), w.value.size()),
                  p.old);
    }
  } catch (const std::exception& e) {
    // The records are in the log but not all in the index (memory ran out, or a doubling of the
    // index read an older record that fails its checksum): the index no longer describes the
    // log, so no more writes, and no snapshot of it (close() wrote one, and the records were
    // lost).
    mark_failed(e);
    throw;
  }
  if (options_.sync == durability::group &&
      unsynced_writes_.fetch_add(records.size()) + records.size() >= options_.group_writes) {
    // Taking the syncer's mutex orders this notify after its test of the count or after its
    // wait began: a notify between the two would be lost until the interval ran out.
    { std::lock_guard<std::mutex> ordered(syncer_mutex_); }
    syncer_cv_.notify_one();
  }
  if (options_.snapshot_every_bytes != 0 && end >= next_snapshot_ &&
      end - snapshot_position_ >= options_.snapshot_every_bytes) {
    // The records are written and applied: a snapshot that cannot be written changes nothing
    // (the previous one still describes a prefix of the log); try again an interval later.
    try {
      write_snapshot_locked();
    } catch (const std::exception&) {
      next_snapshot_ = end + options_.snapshot_every_bytes;
    }
  }
}

inline void store::sync_to(std::uint64_t end) {
  check_not_failed();
  if (synced_.load() >= end) return;
  std::lock_guard<std::mutex> lk(sync_mutex_);
  if (synced_.load() >= end) return;
  std::shared_ptr<detail::generation> g;
  {
    std::shared_lock<detail_rwlock> readers(readers_);
    g = current_;
  }
  const std::uint64_t target = appended_.load(std::memory_order_acquire);
  try {
    g->log->raw().sync();
  } catch (const std::exception& e) {
    // After a failed sync nothing is known of what reached the disk: no more writes.
    mark_failed(e);
    throw;
  }
  ++syncs_;
  detail::raise_to(synced_, target);
}

inline void store::mark_failed(const std::exception& e) noexcept {
  std::lock_guard<std::mutex> lk(queue_mutex_);
  if (!failure_.empty()) return;  // the first failure is the cause: later ones follow from it
  try {
    failure_ = std::string("ccf::kv: the store failed and must be reopened: ") + e.what();
  } catch (...) {
    failure_ = "ccf::kv: failed";  // 15 characters: kept in the string itself, no allocation
  }
}

inline void store::write_snapshot_locked() {
  const detail::generation& g = *current_;
  const std::uint64_t end = appended_.load();
  sync_to(end);
  detail::snapshot_meta meta;
  meta.log_id = g.log->header().id;
  meta.position = end;
  meta.records = records_;
  meta.rehashes = rehashes_;
  meta.live_bytes = live_bytes_;
  meta.last_record = last_record_;
  if (last_record_ != 0) {
    std::string scratch;
    meta.last_checksum = g.log->record_at(last_record_, end, scratch).checksum;
  }
  detail::write_snapshot(*fs_, file("index"), *g.index, meta);
  snapshot_position_ = end;
  fs_->sync_directory(dir_);
}

inline void store::background_syncer(const std::stop_token& stop) {
  // The wait's deadline is now + the interval in steady-clock nanoseconds: capped at a day so that
  // it cannot wrap into the past (milliseconds::max(), or some 290 years), where the syncer would
  // spin and never sleep. Syncing more often than group_interval only loses less at a crash.
  const std::chrono::milliseconds interval =
      std::min<std::chrono::milliseconds>(options_.group_interval, std::chrono::hours(24));
  std::unique_lock<std::mutex> lk(syncer_mutex_);
  while (!stop.stop_requested()) {
    syncer_cv_.wait_for(lk, stop, interval,
                        [&] { return unsynced_writes_.load() >= options_.group_writes; });
    unsynced_writes_.store(0);
    lk.unlock();
    try {
      sync_to(appended_.load());
    } catch (const std::exception& e) {
      mark_failed(e);  // the store takes no more writes: nothing more to sync (close() tries)
      return;
    }
    lk.lock();
  }
}

}  // namespace ccf::kv

#include "ccf/kv/detail/store_maintenance.hpp"
