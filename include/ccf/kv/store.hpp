// ccf — concurrent cuckoo filters.
// kv/store.hpp: ccf::kv::store — a crash-safe, log-structured key-value store with a cuckoo
// index (the seed design's "cuckoo_db", made real).
//
// Files (in the store's directory):
//   log      the append-only log of put and delete records (detail/record.hpp)
//   index    the index snapshot: the index as of a log position (detail/snapshot.hpp)
//   LOCK     flock'ed while a store object has the directory open (one owner at a time)
// and, only while a compaction runs, log.compact and index.compact.
//
// Reads. get() hashes the key, walks the index slots with its tag in its two buckets (an instance
// of the cuckoo engine, detail/kv_index.hpp) and compares the full key with each slot's record,
// read in place from the mapped log with its checksum verified. Gets take no lock that writers
// take: the index is a striped-lock table whose lookups take no lock, and records are never
// changed once written. A sharded reader lock (detail/sharded_rwlock.hpp) is taken for reading by
// gets and for writing only to switch to a new index (growth) or a new log (compaction).
//
// Writes and their order. put() and erase() are queued; the first writer in the queue becomes
// the committer and takes a batch of queued writes in queue order: it decides each write's record
// (an erase of an absent key writes nothing), appends the batch with one write, syncs it
// (durability::every_write), then applies the records to the index in that order and wakes the
// batch's writers. Writes are thus ordered by their position in the queue, which is the log's
// order, and a write is visible to get() once it is in the index (every_write: once durable).
// Concurrent writers share one sync (group commit); durability::group leaves syncing to a
// background thread (every group_interval or group_writes), durability::none to sync()/close().
//
// Index growth. When an insert into the index finds no cuckoo path, the committer builds an index
// with twice the buckets from the keys of the live records (read back from the log, as in the
// seed design), switches to it, and inserts again. Keys are unique in the index (a put of an
// existing key replaces its slot's offset), so a rebuild never loops on duplicates.
//
// Recovery. open() reads the index snapshot if it belongs to the log (else starts empty), then
// replays the records after the snapshot's position. Replay stops at the first position that
// does not hold a valid record and truncates the log there (a torn or unsynced tail). If valid
// records lie beyond that point (corruption, or unsynced blocks written out of order before a
// crash), they are reported in open_report and their bytes kept in a file "dropped-<offset>" in
// the directory (a later name, "dropped-<offset>.<n>", when that one exists) before the log is
// cut — or, with options::strict_recovery, open() throws damaged_log_error (a corrupt_error)
// instead. The search for them is bounded (options::tail_search_bytes); one that reaches the bound
// counts the tail as holding records. Records before the snapshot's position are checked whenever
// they are read (get, iteration, compaction, and the replay, which compares each replayed key with
// the record the index names for it), so a corrupt record is an error, never a wrong value. One
// the replay meets makes the log one damaged in the middle: damaged_log_error with
// strict_recovery; otherwise the whole log is replayed without the snapshot, which cuts it at the
// first bad record (open_report::snapshot_discarded).
//
// Compaction writes the live records to log.compact (while gets and puts go on), then, with
// writers held, copies the records written meanwhile, syncs, writes index.compact, renames both
// over log and index, syncs the directory and switches. A crash at any step leaves either the
// old log and its snapshot or the new log (whose stale snapshot is ignored): nothing lost, no
// second copy visible; leftovers of an interrupted compaction are removed at open.
//
// Limits: keys of 1 to max_key_size (65,536) bytes, values of up to max_value_size (2^30 - 1)
// bytes (std::length_error otherwise, from reads of such a key too); a log of up to 2 TiB.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ccf/detail/sharded_rwlock.hpp"
#include "ccf/kv/detail/kv_index.hpp"
#include "ccf/kv/detail/log.hpp"
#include "ccf/kv/detail/snapshot.hpp"
#include "ccf/kv/file_system.hpp"
#include "ccf/kv/options.hpp"

namespace ccf::kv {

namespace detail {

/// A log and the index of its records: what gets read; replaced whole by growth and compaction.
struct generation {
  std::shared_ptr<log_file> log;
  std::unique_ptr<kv_index> index;
};

struct compaction_target;

/// One queued write.
struct pending_write {
  std::string_view key;
  std::string_view value;
  bool erase = false;
  bool result = false;  // the key was there (before this write)
  bool done = false;
  std::exception_ptr error;
};

/// A write of a batch: where its record goes, and the key's live record that it replaces or
/// erases, as commit() found it before writing.
struct planned_record {
  pending_write* write;
  std::uint64_t offset;
  std::optional<live_record> old;
};

}  // namespace detail

class store {
 public:
  /// Opens (or creates) the store in directory `path`. Throws store_locked_error when another
  /// store object has it open, corrupt_error when its files cannot be recovered, io_error on I/O
  /// failures, std::invalid_argument for a missing store without create_if_missing.
  static std::unique_ptr<store> open(const std::string& path, const options& o = {}) {
    return std::unique_ptr<store>(new store(path, o));
  }
  store(const store&) = delete;
  store& operator=(const store&) = delete;
  /// Closes the store (see close()); errors are swallowed: call close() to see them.
  ~store() {
    try {
      close();
    } catch (...) {
    }
  }

  /// Sets `key` to `value` (durable on return with durability::every_write).
  void put(std::string_view key, std::string_view value) {
    check_sizes(key, value.size());
    detail::pending_write w;
    w.key = key;
    w.value = value;
    submit(w);
  }
  /// Removes `key`; false when it was not there.
  bool erase(std::string_view key) {
    check_sizes(key, 0);
    detail::pending_write w;
    w.key = key;
    w.erase = true;
    submit(w);
    return w.result;
  }
  /// The value of `key`, if any.
  std::optional<std::string> get(std::string_view key) const {
    std::string value;
    if (!get(key, value)) return std::nullopt;
    return value;
  }
  /// Copies the value of `key` into `value` (reusing its buffer); false when absent.
  bool get(std::string_view key, std::string& value) const {
    return lookup(key, [&](std::string_view v) { value.assign(v); });
  }
  bool contains(std::string_view key) const {
    return lookup(key, [](std::string_view) {});
  }
  std::size_t size() const {
    std::shared_lock<detail_rwlock> readers(readers_);
    check_open();
    return current_->index->size();
  }

  /// Makes every write so far durable.
  void sync() {
    check_open();
    sync_to(appended_.load(std::memory_order_acquire));
  }
  /// Writes the index snapshot now (so the next open replays nothing).
  void snapshot() {
    committer_guard g(*this);
    write_snapshot_locked();
  }
  /// Rewrites the live records to a new log and switches to it (see the top of this file).
  /// Throws io_error, and changes nothing, when the store failed (a write or a sync failed
  /// before or during the compaction: the store must be reopened).
  void compact();

  /// Calls f(key, value) for every live key, in log order (the order of the records that set
  /// them), as of the call (writes made meanwhile may or may not be seen). Writers wait
  /// meanwhile: f must not write to this store, compact, snapshot or close it (std::logic_error).
  void for_each(const std::function<void(std::string_view, std::string_view)>& f) const;

  store_stats stats() const;
  const open_report& opened() const noexcept { return report_; }
  /// The store's directory as open() was given it, made absolute by the file system (the POSIX
  /// one joins a relative path to the working directory of open()), so that changing the working
  /// directory later changes nothing for the store.
  const std::string& path() const noexcept { return dir_; }

  /// Syncs the log, writes the index snapshot if the log grew since the last one, stops the
  /// background syncer and releases the directory; closes in any case, then throws io_error if
  /// the sync failed (a snapshot that cannot be written is skipped: it only spares the next
  /// open its replay), or if the store failed earlier (a write, a background sync): then it
  /// syncs what the log holds, writes no snapshot and throws that failure. A compaction running
  /// in another thread is waited for. Further calls do nothing; other members throw
  /// std::logic_error.
  void close();

 private:
  using detail_rwlock = ccf::detail::sharded_rwlock;
  using clock = std::chrono::steady_clock;

  store(const std::string& path, const options& o);

  /// Makes the calling thread the only committer while it lives (queued writes wait).
  class committer_guard {
   public:
    explicit committer_guard(const store& s) : s_(s) {
      std::unique_lock<std::mutex> lk(s_.queue_mutex_);
      s_.check_not_guarding();
      s_.queue_cv_.wait(lk, [&] { return !s_.committing_; });
      s_.check_open();
      s_.committing_ = true;
      s_.guarding_ = std::this_thread::get_id();
    }
    committer_guard(const committer_guard&) = delete;
    committer_guard& operator=(const committer_guard&) = delete;
    ~committer_guard() {
      std::lock_guard<std::mutex> lk(s_.queue_mutex_);
      s_.committing_ = false;
      s_.guarding_ = std::thread::id();
      s_.queue_cv_.notify_all();
    }

   private:
    const store& s_;
  };

  /// Throws std::logic_error when the calling thread holds a committer_guard of this store (a
  /// write or maintenance call from for_each's callback, which would wait for itself); called
  /// with queue_mutex_ held.
  void check_not_guarding() const {
    if (guarding_ == std::this_thread::get_id()) {
      throw std::logic_error("ccf::kv: the store '" + dir_ +
                             "' cannot be written, compacted, snapshotted or closed from inside "
                             "its for_each callback (that call would wait for for_each)");
    }
  }

  static void check_sizes(std::string_view key, std::size_t value) {
    if (key.empty() || key.size() > max_key_size) {
      throw std::length_error("ccf::kv: a key must have 1 to " + std::to_string(max_key_size) +
                              " bytes, not " + std::to_string(key.size()));
    }
    if (value > max_value_size) {
      throw std::length_error("ccf::kv: a value may have at most " +
                              std::to_string(max_value_size) + " bytes, not " +
                              std::to_string(value));
    }
  }
  void check_open() const {
    if (closed_) throw std::logic_error("ccf::kv: the store '" + dir_ + "' is closed");
  }
  /// Throws io_error naming the failure when a write or sync failed (see mark_failed).
  void check_not_failed() const {
    std::lock_guard<std::mutex> lk(queue_mutex_);
    if (!failure_.empty()) throw io_error(failure_);
  }

  template <class Found>
  bool lookup(std::string_view key, Found&& found) const {
    check_sizes(key, 0);
    thread_local std::string scratch;
    std::shared_lock<detail_rwlock> readers(readers_);
    check_open();
    const detail::generation& g = *current_;
    // The log's end is read after the slot: the committer publishes a record's end before the
    // slot that points to it, so the end read here covers every record a slot seen names. The
    // record whose key matches is kept (find stops there), so it is read and checked once.
    std::optional<detail::record_view> hit;
    g.index->find(g.index->hash(key), key, [&](std::uint64_t offset) {
      const detail::record_view r =
          g.log->indexed_record_at(offset, appended_.load(std::memory_order_acquire), scratch);
      if (r.key == key) hit = r;
      return r.key;
    });
    if (!hit) return false;
    found(hit->value);
    return true;
  }

  void submit(detail::pending_write& w);
  void commit(std::vector<detail::pending_write*>& batch);
  std::vector<detail::planned_record> plan(std::vector<detail::pending_write*>& batch,
                                           std::uint64_t start, std::vector<std::byte>& bytes);
  void apply(std::uint64_t offset, const detail::record_view& r);
  void apply_known(std::string_view key, std::uint64_t offset, bool erased, std::uint64_t size,
                   const std::optional<detail::live_record>& old);
  void grow();
  void sync_to(std::uint64_t end);
  void write_snapshot_locked();
  /// Refuses every later write until the store is reopened, naming `e` (noexcept: where memory
  /// ran out the store still stops, with a shorter message).
  void mark_failed(const std::exception& e) noexcept;
  void background_syncer(const std::stop_token& stop);
  void recover(const options& o);
  void replay(const options& o, bool use_snapshot);
  void refuse_files_of_another_store() const;
  std::string keep_tail(detail::log_file& log, std::uint64_t from, std::uint64_t size);
  static std::string below_floor_message(const detail::log_file& log, std::uint64_t end,
                                         std::uint64_t floor);
  void switch_to(detail::generation next, const detail::compaction_target& t);

  std::string file(const char* name) const { return dir_ + "/" + name; }

  std::shared_ptr<file_system> fs_;
  options options_;
  std::string dir_;
  std::unique_ptr<lock_handle> lock_;
  open_report report_;

  // What gets read: replaced under the reader lock taken for writing.
  mutable detail_rwlock readers_;
  std::shared_ptr<detail::generation> current_;

  // The log's end and what is durable of it.
  std::atomic<std::uint64_t> appended_{0};
  std::atomic<std::uint64_t> synced_{0};
  std::mutex sync_mutex_;

  // The write queue and its committer (for_each, const, holds the committer role too).
  mutable std::mutex queue_mutex_;
  mutable std::condition_variable queue_cv_;
  std::deque<detail::pending_write*> queue_;
  mutable bool committing_ = false;
  mutable std::thread::id guarding_;  // the thread holding a committer_guard, if any
  std::atomic<bool> closed_{false};
  std::string failure_;  // set when a write or sync failed: the store refuses further writes

  // Counters (changed by the committer; atomics so that stats() can read them).
  std::atomic<std::uint64_t> records_{0};
  std::atomic<std::uint64_t> live_bytes_{0};
  std::atomic<std::uint64_t> rehashes_{0};
  std::uint64_t snapshot_position_ = 0;
  std::uint64_t last_record_ = 0;    // offset of the last record applied (snapshots name it)
  std::uint64_t next_snapshot_ = 0;  // after a failed snapshot, the log end to try again at
  std::atomic<std::uint64_t> syncs_{0};
  std::atomic<std::uint64_t> compactions_{0};
  std::mutex compaction_mutex_;  // held by compact() and close(): one of them at a time

  // durability::group
  std::atomic<std::uint64_t> unsynced_writes_{0};
  std::condition_variable_any syncer_cv_;
  std::mutex syncer_mutex_;
  std::jthread syncer_;
};

}  // namespace ccf::kv

#include "ccf/kv/detail/store_impl.hpp"
