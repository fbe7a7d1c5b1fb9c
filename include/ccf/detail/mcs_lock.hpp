// ccf — concurrent cuckoo filters.
// mcs_lock.hpp: the MCS queue lock (Mellor-Crummey and Scott) used by ccf's lock policies.
//
// Design
// ------
// Layout. An mcs_lock is one cache line holding a single word, `tail_`: a pointer to the queue
// node of the last thread that asked for the lock, or null when the lock is free. Every waiting
// thread owns a cache-line sized `node` {next, locked}; waiters spin on their *own* node, so a
// hand-off touches exactly one remote cache line and waiting generates no traffic on the lock word.
//
// Protocol.
//   lock(n):   n = {next: null, locked: true}; prev = exchange(tail_, &n)   [acq_rel]
//              if prev != null: prev->next = &n [release]; spin while n.locked [acquire]
//   unlock(n): succ = n.next [acquire]
//              if succ == null: CAS(tail_, &n -> null) [release] succeeds -> done (queue empty);
//                               otherwise a successor is between its exchange and its
//                               prev->next store: spin until n.next != null
//              succ->locked = false [release]            (direct FIFO hand-off)
//   The exchange is acq_rel: acquire pairs with the release CAS of an owner that emptied the
//   queue; release publishes our node's initialisation to the successor that will find &n in
//   tail_. The hand-off store is a release paired with the acquire spin of the successor, so the
//   critical sections form a happens-before chain in queue order.
//
// Invariants.
//   * tail_ == null  <=>  no thread holds or waits for the lock.
//   * Threads acquire in the order of their exchanges on tail_ (strict FIFO).
//   * After unlock(n) returns, no other thread reads or writes n: it may be reused or destroyed.
//     Until then n must stay alive and must not be used for another lock.
//
// Per-thread nodes. lock(node&) / unlock(node&) take the node explicitly (it may live on the
// stack). The node-less lock() / try_lock() / unlock() make mcs_lock a standard Lockable (so
// std::lock_guard and std::scoped_lock work): they take a node from a thread_local table of
// max_held_locks slots keyed by the lock's address. The table is shared by all mcs_locks (and
// the elided locks built on them) of a thread, so a thread may hold at most max_held_locks locks
// through this interface at once; taking one more calls std::terminate(), as does unlock() of a
// lock the thread does not hold. Locks are not recursive, and a thread must not exit while it
// holds or waits for a lock (its nodes die with it).
//
// Waiting. Spinning uses CCF_CPU_RELAX(); after spin_backoff::yield_after spins a waiter also
// calls std::this_thread::yield() on every round, so that an oversubscribed machine (more
// threads than cores) still makes progress when the next owner in the queue is not running.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>

#include "ccf/config.hpp"

namespace ccf::detail {

/// Spin-wait helper: pause with CCF_CPU_RELAX() for yield_after rounds, then also yield the CPU.
class spin_backoff {
 public:
  static constexpr unsigned yield_after = 128;

  void pause() noexcept {
    if (spins_ < yield_after) {
      ++spins_;
      CCF_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
  }

 private:
  unsigned spins_ = 0;
};

class alignas(cache_line_size) mcs_lock {
 public:
  /// One waiter's queue entry. Lives on the waiter's cache line only.
  struct alignas(cache_line_size) node {
    std::atomic<node*> next{nullptr};
    std::atomic<bool> locked{false};
  };

  /// Locks one thread may hold at once through the node-less interface.
  static constexpr std::size_t max_held_locks = 8;

  constexpr mcs_lock() noexcept = default;
  mcs_lock(const mcs_lock&) = delete;
  mcs_lock& operator=(const mcs_lock&) = delete;

  /// Enqueues `n` and waits until the lock is handed to it.
  void lock(node& n) noexcept {
    n.next.store(nullptr, std::memory_order_relaxed);
    n.locked.store(true, std::memory_order_relaxed);
    node* const prev = tail_.exchange(&n, std::memory_order_acq_rel);
    if (CCF_LIKELY(prev == nullptr)) return;
    prev->next.store(&n, std::memory_order_release);
    spin_backoff backoff;
    while (n.locked.load(std::memory_order_acquire))
      backoff.pause();
  }

  /// Takes the lock with `n` if it is free (no owner, no waiters); never waits.
  bool try_lock(node& n) noexcept {
    n.next.store(nullptr, std::memory_order_relaxed);
    n.locked.store(false, std::memory_order_relaxed);
    node* expected = nullptr;
    return tail_.compare_exchange_strong(expected, &n, std::memory_order_acq_rel,
                                         std::memory_order_relaxed);
  }

  /// Releases the lock held with `n`, handing it to the next waiter if there is one.
  void unlock(node& n) noexcept {
    node* succ = n.next.load(std::memory_order_acquire);
    if (succ == nullptr) {
      node* expected = &n;
      if (tail_.compare_exchange_strong(expected, nullptr, std::memory_order_release,
                                        std::memory_order_relaxed)) {
        return;
      }
      spin_backoff backoff;
      while ((succ = n.next.load(std::memory_order_acquire)) == nullptr)
        backoff.pause();
    }
    succ->locked.store(false, std::memory_order_release);
  }

  /// Whether some thread holds or waits for the lock (tail != null).
  bool is_locked() const noexcept { return tail_.load(std::memory_order_acquire) != nullptr; }

  /// Whether `n` is the last node of the queue, i.e. its owner has enqueued and nobody has come
  /// after it. Meant for tests and diagnostics (e.g. checking FIFO order).
  bool is_tail(const node& n) const noexcept { return tail_.load(std::memory_order_acquire) == &n; }

  /// Lockable interface with a per-thread node (see the design notes above).
  void lock() noexcept { lock(claim_slot()); }

  bool try_lock() noexcept {
    node& n = claim_slot();
    if (try_lock(n)) return true;
    release_slot(n);
    return false;
  }

  void unlock() noexcept {
    thread_nodes& table = local_nodes();
    const std::size_t i = find_slot(table, this);
    if (i == max_held_locks) std::terminate();  // not held by this thread
    unlock(table.nodes[i]);
    table.owners[i] = nullptr;
  }

  /// Whether the calling thread holds (or is waiting for) this lock through the node-less
  /// interface. Locks taken with an explicit node are not seen.
  bool owned_by_this_thread() const noexcept {
    return find_slot(local_nodes(), this) != max_held_locks;
  }

 private:
  struct thread_nodes {
    std::array<node, max_held_locks> nodes{};
    std::array<const mcs_lock*, max_held_locks> owners{};
  };

  static thread_nodes& local_nodes() noexcept {
    static thread_local thread_nodes table;
    return table;
  }

  static std::size_t find_slot(const thread_nodes& table, const mcs_lock* owner) noexcept {
    for (std::size_t i = 0; i < max_held_locks; ++i) {
      if (table.owners[i] == owner) return i;
    }
    return max_held_locks;
  }

  node& claim_slot() noexcept {
    thread_nodes& table = local_nodes();
    const std::size_t i = find_slot(table, nullptr);
    if (i == max_held_locks) std::terminate();  // more than max_held_locks locks held at once
    table.owners[i] = this;
    return table.nodes[i];
  }

  void release_slot(node& n) noexcept {
    thread_nodes& table = local_nodes();
    table.owners[static_cast<std::size_t>(&n - table.nodes.data())] = nullptr;
  }

  std::atomic<node*> tail_{nullptr};
};

static_assert(sizeof(mcs_lock) == cache_line_size);
static_assert(sizeof(mcs_lock::node) == cache_line_size);

}  // namespace ccf::detail
