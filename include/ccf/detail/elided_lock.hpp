// ccf — concurrent cuckoo filters.
// elided_lock.hpp: an MCS queue lock whose critical sections are first tried as Intel RTM
// transactions (hardware lock elision), with the plain MCS lock as the fallback.
//
// Design
// ------
// Layout (two cache lines, 128 bytes):
//   line 0: the mcs_lock word (tail of the MCS queue). It is the only word a speculative
//           section reads from the lock, so it is kept alone on its line.
//   line 1: mode_ (lock_mode of the current non-speculative holder), fallbacks_ and commits_
//           (statistics). Written only outside transactions or by the non-speculative holder,
//           and read by no transaction, so these writes never abort a speculative section.
//
// lock(mode), when rtm_supported():
//   speculate:  status = XBEGIN
//               started:  if the MCS lock is held -> XABORT(rtm_locked_code)
//                         else return: the section runs transactionally; the lock word is in
//                         the transaction's read set, so a thread that really acquires the
//                         lock aborts every speculative section (their effects vanish)
//               aborted:  ++retries; spin (outside any transaction) while the lock is held,
//                         so that sections do not all abort again at once; then speculate again
//                         while retries < max_retries
//   fallback:   the standard MCS acquisition with this thread's node, then mode_ = mode and
//               ++fallbacks_ (both under the lock).
//   Deviation from the plain "retry max_retries times" rule: an abort with the capacity bit and
//   no retry hint goes to the fallback at once, since the same section would overflow again.
//   Without RTM (rtm_supported() false) lock() is the fallback alone: no RTM instruction runs.
//
// unlock():
//   if this thread holds the MCS lock (its per-thread node table has an entry for this lock):
//     the standard MCS release;
//   otherwise the section is speculative: XEND, then ++commits_.
//   Asking the node table instead of XTEST keeps unlock correct when a thread holds several
//   elided locks, some speculatively and some not, and releases them in any order. When the
//   section was nested in another transaction, XEND only leaves one nesting level and the
//   commits_ increment becomes part of the enclosing transaction: it is published exactly when
//   the outer transaction commits, and dropped with it if that one aborts.
//
// Per-thread state: the retry count is local to lock(); the MCS node comes from mcs_lock's
// thread_local node table (so the limit of mcs_lock::max_held_locks locks held at once applies,
// counted together with plain mcs_locks); "held speculatively" is "not in the table". Nothing of
// it appears in the interface.
//
// Counters are relaxed atomics: fallbacks_ is only written by the holder (a load and a store, no
// read-modify-write); commits_ takes one relaxed fetch_add after XEND, outside the transaction,
// on a line no transaction reads. After all threads have stopped, commits + fallbacks equals the
// number of successful lock() / try_lock() calls.
//
// mode(): the thesis records whether the non-speculative holder is a reader (0) or an updater
// (1). Speculative holders do not write it (that write would make all speculative sections
// conflict with each other), so mode() is only meaningful while a non-speculative holder is in
// its section; otherwise it is the mode of the last non-speculative holder.
//
// Lockable: lock() is lock(lock_mode::update) and try_lock() takes the lock in update mode
// without waiting, so std::lock_guard / std::scoped_lock / std::lock work.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>

#include "ccf/config.hpp"
#include "ccf/detail/mcs_lock.hpp"
#include "ccf/detail/rtm.hpp"

namespace ccf::detail {

/// What the holder of a lock does in its critical section.
enum class lock_mode : std::uint8_t { read = 0, update = 1 };

class alignas(cache_line_size) elided_mcs_lock {
 public:
  /// Speculative attempts before the MCS fallback.
  static constexpr unsigned max_retries = 8;

  elided_mcs_lock() noexcept = default;
  elided_mcs_lock(const elided_mcs_lock&) = delete;
  elided_mcs_lock& operator=(const elided_mcs_lock&) = delete;

  void lock(lock_mode mode) noexcept {
    if (rtm_supported() && speculate()) return;
    mcs_.lock();
    note_fallback(mode);
  }

  /// Takes the lock without waiting: one speculative attempt (when RTM is usable), else the MCS
  /// lock if it is free.
  bool try_lock(lock_mode mode) noexcept {
    if (rtm_supported() && speculate_once()) return true;
    if (!mcs_.try_lock()) return false;
    note_fallback(mode);
    return true;
  }

  void unlock() noexcept {
    if (mcs_.owned_by_this_thread()) {
      mcs_.unlock();
      return;
    }
    commit();
  }

  /// Lockable interface: update mode.
  void lock() noexcept { lock(lock_mode::update); }
  bool try_lock() noexcept { return try_lock(lock_mode::update); }

  /// Mode of the current non-speculative holder (see the design notes).
  lock_mode mode() const noexcept { return mode_.load(std::memory_order_relaxed); }

  /// Whether a thread holds or waits for the lock non-speculatively.
  bool is_locked() const noexcept { return mcs_.is_locked(); }

  /// Critical sections that committed as transactions.
  std::uint64_t speculative_commits() const noexcept {
    return commits_.load(std::memory_order_relaxed);
  }

  /// Acquisitions of the underlying MCS lock (all of them when RTM is not usable).
  std::uint64_t fallback_acquisitions() const noexcept {
    return fallbacks_.load(std::memory_order_relaxed);
  }

 private:
  void note_fallback(lock_mode mode) noexcept {
    mode_.store(mode, std::memory_order_relaxed);
    // Only the holder writes fallbacks_, so a load and a store suffice.
    fallbacks_.store(fallbacks_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Returns true inside a started transaction that saw the lock free; false after max_retries
  // aborts (or a capacity abort), outside any transaction.
  CCF_TARGET_RTM bool speculate() noexcept {
    for (unsigned retries = 0; retries < max_retries;) {
      const unsigned status = rtm_begin();
      if (status == rtm_started) {
        if (!mcs_.is_locked()) return true;
        rtm_abort_locked();
      }
      ++retries;
      if ((status & rtm_abort_capacity) != 0 && (status & rtm_abort_retry) == 0) return false;
      spin_backoff backoff;
      while (mcs_.is_locked())
        backoff.pause();
    }
    return false;
  }

  CCF_TARGET_RTM bool speculate_once() noexcept {
    if (rtm_begin() == rtm_started) {
      if (!mcs_.is_locked()) return true;
      rtm_abort_locked();
    }
    return false;
  }

  CCF_TARGET_RTM void commit() noexcept {
    // Not held through the MCS lock, so the section must be a transaction; without RTM this is
    // an unlock() of a lock the thread does not hold.
    if (CCF_UNLIKELY(!rtm_supported())) std::terminate();
    rtm_end();
    commits_.fetch_add(1, std::memory_order_relaxed);
  }

  mcs_lock mcs_;
  std::atomic<lock_mode> mode_{lock_mode::read};
  std::atomic<std::uint64_t> fallbacks_{0};
  std::atomic<std::uint64_t> commits_{0};
};

static_assert(sizeof(elided_mcs_lock) == 2 * cache_line_size);

}  // namespace ccf::detail
