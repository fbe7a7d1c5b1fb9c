// ccf — concurrent cuckoo filters.
// kv/detail/store_maintenance.hpp: compaction, iteration, statistics and closing of
// ccf::kv::store (kv/store.hpp has the design).
#pragma once

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "ccf/kv/store.hpp"  // the class these are the members of

namespace ccf::kv {

namespace detail {

/// A log being written by a compaction, with the index of what it holds.
struct compaction_target {
  std::shared_ptr<log_file> log;
  std::unique_ptr<kv_index> index;
  std::vector<std::byte> pending;  // encoded records not yet written
  std::uint64_t end = log_header_size;
  std::uint64_t written = log_header_size;
  std::uint64_t records = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t last_record = 0;
  std::string probe;

  void flush() {
    log->raw().write_at(written, pending);
    written += pending.size();
    pending.clear();
  }
  /// Appends the record (a put, or a delete of a key it holds) and updates the index.
  void add(const record_view& r) {
    const std::uint64_t h = index->hash(r.key);
    const std::optional<live_record> old = index->find_record(h, r.key, [&](std::uint64_t o) {
      flush();
      return log->indexed_record_at(o, end, probe);
    });
    if (r.erased && !old) return;
    const std::uint64_t at = end;
    encode_record(pending, at, r.key, r.value, r.erased, log->header().id_low());
    end += r.size;
    last_record = at;
    ++records;
    if (pending.size() >= (std::size_t{4} << 20)) flush();
    while (!index->apply(h, old, at, r.erased)) {
      flush();
      index = rebuild_index(*log, end, *index, index->engine().num_buckets() * 8);
    }
    if (old) live_bytes -= old->size;
    if (!r.erased) live_bytes += r.size;
  }
};

}  // namespace detail

inline void store::compact() {
  {
    // From for_each's callback, the wait for compaction_mutex_ could outlast the check below.
    std::lock_guard<std::mutex> lk(queue_mutex_);
    check_not_guarding();
  }
  std::lock_guard<std::mutex> one_at_a_time(compaction_mutex_);
  check_open();  // after close() std::logic_error, also for a store that failed before it
  check_not_failed();
  std::shared_ptr<detail::generation> old;
  std::uint64_t copied_to = 0;
  {
    committer_guard g(*this);
    old = current_;
    copied_to = appended_.load();
  }
  const std::string log_tmp = file("log.compact"), index_tmp = file("index.compact");
  try {
    detail::compaction_target t;
    t.log = detail::log_file::create(*fs_, log_tmp, old->log->header().seed);
    // Room for twice the live keys, and never less than options::expected_keys (the index
    // a compaction made was smaller, and the store's inserts then doubled it again).
    const std::size_t room = std::max(old->index->size() * 2 + 1024, options_.expected_keys);
    t.index = std::make_unique<detail::kv_index>(room, old->log->header().seed);
    // Phase 1, writers going on: the records live now among those before copied_to.
    std::string scratch, probe;
    for (std::uint64_t at = detail::log_header_size; at < copied_to;) {
      const detail::record_view r = old->log->record_at(at, copied_to, scratch);
      if (!r.erased) {
        const auto live = old->index->find(old->index->hash(r.key), r.key, [&](std::uint64_t o) {
          return old->log->indexed_record_at(o, appended_.load(), probe).key;
        });
        if (live == at) t.add(r);
      }
      at += r.size;
    }
    // Phase 2, writers held: what they wrote meanwhile, in order; then switch.
    committer_guard g(*this);
    check_not_failed();  // a write failed meanwhile: the index no longer describes the log
    const std::uint64_t end = appended_.load();
    for (std::uint64_t at = copied_to; at < end;) {
      const detail::record_view r = old->log->record_at(at, end, scratch);
      t.add(r);
      at += r.size;
    }
    t.flush();
    t.log->raw().sync();
    detail::snapshot_meta meta;
    meta.log_id = t.log->header().id;
    meta.position = t.end;
    meta.records = t.records;
    meta.rehashes = rehashes_;  // stats() said 2 in the process, 0 when reopened from this one
    meta.live_bytes = t.live_bytes;
    meta.last_record = t.last_record;
    if (t.last_record != 0)
      meta.last_checksum = t.log->record_at(t.last_record, t.end, t.probe).checksum;
    // The snapshot only spares the next open a replay: one that cannot be written (a full disk,
    // a file size limit) is skipped, as at close, and the compaction, which gives space back,
    // goes on.
    bool snapshot_written = true;
    try {
      detail::write_snapshot(*fs_, index_tmp, *t.index, meta);
    } catch (const std::exception&) {
      snapshot_written = false;
    }
    fs_->rename(log_tmp, file("log"));
    t.log->moved_to(file("log"));
    // The new log is now the store's log: from here on nothing may be written to the old one.
    try {
      fs_->sync_directory(dir_);
    } catch (const std::exception& e) {
      // Whether the rename is durable is unknown: refuse writes until the store is reopened.
      mark_failed(e);
      throw;
    }
    switch_to(detail::generation{t.log, std::move(t.index)}, t);
    // The old snapshot names the old log and is ignored from now on (removed when no new one
    // replaces it: it is as large as the index); a failure to put the new one in place only
    // costs the next open a full replay.
    try {
      if (snapshot_written) {
        fs_->rename(index_tmp, file("index"));
      } else if (fs_->exists(file("index"))) {
        fs_->remove(file("index"));
      }
      fs_->sync_directory(dir_);
    } catch (const std::exception&) {
      snapshot_written = false;
    }
    if (!snapshot_written) snapshot_position_ = 0;
    return;
  } catch (...) {
    // The old log and its snapshot are untouched (the renames come last): drop what was made.
    try {
      if (fs_->exists(log_tmp)) fs_->remove(log_tmp);
      if (fs_->exists(index_tmp)) fs_->remove(index_tmp);
    } catch (...) {
    }
    throw;
  }
}

inline void store::switch_to(detail::generation next, const detail::compaction_target& t) {
  auto g = std::make_shared<detail::generation>(std::move(next));
  std::lock_guard<std::mutex> syncing(sync_mutex_);
  std::unique_lock<detail_rwlock> switching(readers_);
  current_ = std::move(g);
  appended_.store(t.end);
  synced_.store(t.end);
  records_ = t.records;
  live_bytes_ = t.live_bytes;
  snapshot_position_ = t.end;
  next_snapshot_ = 0;  // a retry point after a failed snapshot lies in the old log's positions
  last_record_ = t.last_record;
  ++compactions_;
}

inline void store::for_each(
    const std::function<void(std::string_view, std::string_view)>& f) const {
  // Writers wait while the log is walked, so every live key is seen once, with its value.
  committer_guard g(*this);
  const detail::generation& gen = *current_;
  const std::uint64_t end = appended_.load();
  std::string scratch, probe;
  for (std::uint64_t at = detail::log_header_size; at < end;) {
    const detail::record_view r = gen.log->record_at(at, end, scratch);
    if (!r.erased) {
      const auto live = gen.index->find(gen.index->hash(r.key), r.key, [&](std::uint64_t o) {
        return gen.log->indexed_record_at(o, end, probe).key;
      });
      if (live == at) f(r.key, r.value);
    }
    at += r.size;
  }
}

inline store_stats store::stats() const {
  std::shared_lock<detail_rwlock> readers(readers_);
  check_open();
  const detail::generation& g = *current_;
  store_stats s;
  const auto& engine = g.index->engine();
  s.keys = g.index->size();
  s.index_buckets = engine.num_buckets();
  s.index_bytes = engine.size_in_bytes();
  s.index_load = static_cast<double>(s.keys) / static_cast<double>(engine.size_in_tags());
  s.index_bytes_per_key =
      s.keys == 0 ? 0.0 : static_cast<double>(s.index_bytes) / static_cast<double>(s.keys);
  s.rehashes = static_cast<std::size_t>(rehashes_.load());
  s.log_bytes = appended_.load();
  s.live_bytes = live_bytes_.load();
  s.records = records_.load();
  s.syncs = syncs_.load();
  s.compactions = compactions_.load();
  return s;
}

inline void store::close() {
  {
    std::lock_guard<std::mutex> lk(queue_mutex_);
    if (closed_) return;
    check_not_guarding();  // before the syncer is stopped: a refused close changes nothing
  }
  // One close at a time, never during a compaction (it finishes first): the syncer thread is
  // joined once, and no compaction file is written or removed after the LOCK goes to the
  // store's next owner.
  std::lock_guard<std::mutex> one_at_a_time(compaction_mutex_);
  if (closed_) return;
  if (syncer_.joinable()) {
    syncer_.request_stop();
    syncer_cv_.notify_all();
    syncer_.join();
  }
  // Closes in any case; a failure to sync is reported afterwards. The snapshot only spares the
  // next open its replay: one that cannot be written (a full disk) loses nothing, and is not an
  // error (every `ccf db get` on a full disk failed here, after printing the value). A store
  // that failed earlier (a write, a sync, the index) reports that failure, after a sync of what
  // its log holds: the writes acknowledged before a failed write (durability none or group) are
  // on disk then, unless the failure was a sync, after which nothing can be promised.
  std::exception_ptr error;
  {
    committer_guard g(*this);
    std::string failure;
    {
      std::lock_guard<std::mutex> lk(queue_mutex_);
      failure = failure_;
    }
    if (failure.empty()) {
      try {
        sync_to(appended_.load());
      } catch (...) {
        error = std::current_exception();
      }
    } else {
      try {
        current_->log->raw().sync();
      } catch (const std::exception&) {
      }
      error = std::make_exception_ptr(io_error(failure));
    }
    if (failure.empty() && !error && appended_.load() != snapshot_position_) {
      try {
        write_snapshot_locked();
      } catch (const std::exception&) {
      }
    }
    std::lock_guard<std::mutex> lk(queue_mutex_);
    closed_ = true;
  }
  lock_.reset();
  if (error) std::rethrow_exception(error);
}

}  // namespace ccf::kv
