// ccf — concurrent cuckoo filters.
// detail/kcas_protocol.hpp: the lock-free filter's concurrency protocol — every change of a
// bucket is one CAS, a relocation one 2-word K-CAS, and reads are double collects.
//
// It works on versioned_tag_layout tables (one kcas_word per bucket: tags, a version counter and
// a seal bit) and gives the cuckoo engine the operations every protocol gives
// (lock_protocol.hpp): read, probe, update, exclusive, exclusive_clear.
//
// Invariants.
//   (I1) Every stored tag t lies in bucket i or alt(i, t) of a key that stored it.
//   (I2) Every change of a bucket word advances its counter by exactly one (mod 2^c, c =
//        61 - S*F): insert, erase, both words of a hop, clear, and the table API. The counter is a
//        version number, not only a relocation count (see "Why versions" below).
//   (I3) A relocation (hop) is one 2-word K-CAS that removes t from bucket src and puts it into a
//        free slot of dst = alt(src, t) (the last hop of an insert also puts the new item into
//        the slot t leaves, in the same K-CAS): at every instant each tag is in exactly one
//        bucket, so the copies of t in {i1, i2} change only by inserts (+1) and erases (-1).
//
// update(t, i1, i2, f). Read a1 = word i1 and a2 = word i2 (kcas_load: reads, never writes), run
// f on copies. If f changed one bucket, commit it with one cas(word, seen, next(seen, new)); if
// it changed both (a hop), with one 2-word kcas; next() advances the version. A failed commit
// means a word changed: read both again and rerun f. If f changed nothing (a refused insert, an
// erase that found nothing, a hop that no longer applies), read both words again: equal words
// mean both held the values f saw throughout the time between the two reads (a double collect,
// below), which is where that outcome linearizes; otherwise rerun f.
//
// read / probe (lookups, count) are double collects. Read w1 at T1, w2 at T2, then w1 at T3 and
// w2 at T4. If w1(T3) == w1(T1) and w2(T4) == w2(T2), then by (I2) neither word changed in
// between (up to the counter wrap-around below), so throughout [T2, T3] the buckets held exactly
// the values read: a snapshot of both, and the answer computed from it linearizes at T2. If a
// word changed, the second pair becomes the first pair of the next round. probe() answers
// "present" as soon as one read shows the tag: it was present at that read.
//
// Why a present tag is never missed. Suppose the copies of t in {i1, i2} never dropped to zero
// during a lookup, and the lookup answered "absent": t was in no word it read and the words were
// equal pairwise. By the snapshot argument both words held values without t at one instant in
// [T2, T3], contradicting the assumption: a "false" answer needs a counter to wrap around exactly
// (next paragraph). In particular an item inserted before the lookup started and not erased is
// always found, whatever relocations run meanwhile.
//
// Why versions, not relocation counters. With counters that only hops advance (as in the 2025
// paper), a lookup that compares counters can answer "absent" while the item is present if
// inserts and erases of the same key run meanwhile: e.g. t sits only in w2; the lookup reads w1
// (no t); another thread inserts t into w1; a third erases the copy in w2; the lookup reads w2
// (no t), then re-reads w1: t is there, but the counters are unchanged and the lookup answers
// "absent" although one copy existed at every instant. Versions cost nothing extra (the counter
// travels in the same CAS) and make lookups linearizable, so ccf's linearizability test can
// check every operation against a sequential multiset.
//
// Counter wrap-around: the bound. A wrong "absent" needs a word to pass through a non-zero
// multiple of 2^c changes between the lookup's two reads of it and come back bit-identical
// (same tags, counter equal mod 2^c). With c = 13 (12 x 4) that is at least 8,192 successful
// CAS / K-CAS operations on that one bucket between two loads a few nanoseconds apart; each
// costs a cache-line transfer (>= ~5-20 ns), so the lookup must be stalled (preempted) for at
// least ~40-160 us while other threads hammer that same bucket without pause, and even then the
// count of changes must land on a multiple of 8,192: probability 2^-13 ~ 1.2e-4 for an arbitrary
// count. For an item that is not itself being erased and re-inserted meanwhile it is worse still
// for the adversary: the tag can only leave w1 and reappear in w2 by hops, which advance both
// words, so both counters must wrap exactly: 2^-26 ~ 1.5e-8 per such stalled lookup. With a
// uniform workload the per-bucket update rate is the total rate divided by n (100 M updates/s
// over 1 M buckets: one bucket sees 8,192 changes in ~80 s), so the bound only matters for a few
// hot buckets. 8 x 4 words have 29-bit counters: 2^-29 and 2^-58.
//
// exclusive(t, f): a consistent snapshot while others work. The caller sets the seal bit of every
// word, one cas each (a word that changes meanwhile is read again); a writer whose update reads a
// sealed word waits (yielding) until the seal is gone, and a cas or kcas it had prepared from an
// unsealed value fails because the word changed. Once the last word is sealed no word can change,
// so f() (save, clear) sees the table of that instant, every operation linearized before it and
// none after. Then every word is unsealed (its tags and counter unchanged: a reader whose two
// reads straddle the seal sees a changed word and reads again). While a snapshot is taken,
// writers are blocked: exclusive() is the one place where the lock-free filter is not
// lock-free. Two snapshots are serialized by a mutex.
//
// clear (exclusive_clear): once every word is sealed, the clear epoch becomes odd, the sealed
// words are emptied one by one, and the epoch becomes even again before any word is unsealed;
// the clear takes effect when the epoch turns odd. Lookups never wait. One whose words show no
// seal answers from them as above: an unsealed word is never mid-clear. One that meets a sealed
// word does its double collect again between two readings of the epoch, until both agree: odd,
// every word it read was sealed and is empty from the clear's point on, so it counts the words
// as empty; even, no word was emptied while it read, so the words hold what they show. Without
// the epoch a lookup could see its one bucket emptied and its other not yet (a count of 1 for
// an item stored twice), or answer "absent" for one key and then "present" for another that
// the same clear removed.
//
// Progress. Lock-free outside exclusive(): an update retries only when a word it read changed,
// i.e. another operation succeeded, and the K-CAS is lock-free itself. Lookups never write shared
// memory (kcas_load), so they scale with cores. Memory orders: kcas_load, cas and kcas are
// sequentially consistent (kcas.hpp), so every read and write of a bucket word by an operation
// takes part in one total order; the double collect relies on nothing else. The stores of
// exclusive phases (a clear emptying its sealed words) are release stores: a lookup that reads
// one synchronizes with it, so its later reading of the epoch sees the odd value the clear set
// before that store (with a relaxed store it could still read the even one).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "ccf/config.hpp"
#include "ccf/detail/kcas.hpp"
#include "ccf/detail/word_policy.hpp"

namespace ccf::detail {

class kcas_protocol {
 public:
  using word_policy = kcas_words;
  static constexpr bool concurrent = true;
  static constexpr bool lock_one_first = false;
  static constexpr const char* name = "kcas";

  kcas_protocol(std::size_t /*num_buckets*/, std::size_t /*group*/)
      : state_(std::make_unique<shared_state>()) {}
  std::size_t heap_bytes() const noexcept { return sizeof(shared_state); }

  template <class Table, class F>
  auto read(const Table& t, std::size_t i1, std::size_t i2, F&& f) const {
    using layout = typename Table::layout;
    std::uint64_t a1 = 0, a2 = 0;
    collect(t, i1, i2, a1, a2);
    if (CCF_UNLIKELY(layout::sealed(a1 | a2))) return read_sealed(t, i1, i2, f);
    return f(a1, a2);
  }

  template <class Table, class F>
  CCF_FORCEINLINE bool probe(const Table& t, std::size_t i1, std::size_t i2, F&& f) const {
    using layout = typename Table::layout;
    std::uint64_t a1 = t.load(i1);
    std::uint64_t a2 = i1 == i2 ? a1 : t.load(i2);
    for (;;) {
      if (CCF_UNLIKELY(layout::sealed(a1 | a2))) return read_sealed(t, i1, i2, f);
      if (f(a1, a2)) return true;
      if (i1 == i2) return false;
      const std::uint64_t b1 = t.load(i1);
      const std::uint64_t b2 = t.load(i2);
      if (b1 == a1 && b2 == a2) return false;  // a snapshot without a match
      a1 = b1;
      a2 = b2;
    }
  }

  template <class Table, class F>
  auto update(Table& t, std::size_t i1, std::size_t i2, F&& f) {
    using layout = typename Table::layout;
    for (;;) {
      const std::uint64_t a1 = t.load(i1);
      const std::uint64_t a2 = i1 == i2 ? a1 : t.load(i2);
      if (layout::sealed(a1) || layout::sealed(a2)) {
        std::this_thread::yield();
        continue;
      }
      std::uint64_t b1 = a1;
      std::uint64_t b2 = a2;
      auto r = i1 == i2 ? f(b1, b1) : f(b1, b2);
      const bool changed1 = b1 != a1;
      const bool changed2 = i1 != i2 && b2 != a2;
      if (changed1 && changed2) {
        const std::array<kcas_entry, 2> entries{
            {{&t.word(i1), a1, layout::next(a1, b1)}, {&t.word(i2), a2, layout::next(a2, b2)}}};
        if (kcas(entries)) return r;
      } else if (changed1 || changed2) {
        const std::size_t i = changed1 ? i1 : i2;
        const std::uint64_t seen = changed1 ? a1 : a2;
        if (cas(t.word(i), seen, layout::next(seen, changed1 ? b1 : b2))) return r;
      } else if (i1 == i2 || (t.load(i1) == a1 && t.load(i2) == a2)) {
        return r;  // nothing to change, and both words held what f saw: a snapshot
      }
    }
  }

  /// f() while no update can commit (see "exclusive" above). Sealing changes no tag and no
  /// counter, only the seal bit, so it is done on a const table (the words are atomics).
  template <class Table, class F>
  auto exclusive(const Table& table, F&& f) const {
    return sealed_phase(table, f, false);
  }
  /// exclusive() for an f that empties the table (see "clear" above): lookups take every sealed
  /// word for empty from the moment the last word is sealed.
  template <class Table, class F>
  auto exclusive_clear(const Table& table, F&& f) const {
    return sealed_phase(table, f, true);
  }

  void prefetch(std::size_t, std::size_t) const noexcept {}

  /// Takes the calling thread's K-CAS slot now (kcas_thread_limit_error past the limit), so that
  /// its updates, and its helping of others', cannot be refused for it later
  /// (cuckoo_engine::prepare_inserts).
  static void prepare_thread() { static_cast<void>(kcas_this_thread_slot()); }

 private:
  /// The double collect: a1 and a2 held these values together at one instant.
  template <class Table>
  static CCF_FORCEINLINE void collect(const Table& t, std::size_t i1, std::size_t i2,
                                      std::uint64_t& a1, std::uint64_t& a2) {
    a1 = t.load(i1);
    if (i1 == i2) {
      a2 = a1;
      return;
    }
    a2 = t.load(i2);
    for (;;) {
      const std::uint64_t b1 = t.load(i1);
      const std::uint64_t b2 = t.load(i2);
      if (b1 == a1 && b2 == a2) return;
      a1 = b1;
      a2 = b2;
    }
  }

  /// A lookup that met a sealed word: a double collect between two equal readings of the clear
  /// epoch. Odd, the words were read while a clear was emptying the table (every word sealed):
  /// they count as empty. Even, no emptying ran while they were read: they hold what they show.
  template <class Table, class F>
  CCF_NOINLINE auto read_sealed(const Table& t, std::size_t i1, std::size_t i2, F& f) const {
    using layout = typename Table::layout;
    for (;;) {
      const std::uint64_t epoch = state_->clear_epoch.load(std::memory_order_seq_cst);
      std::uint64_t a1 = 0, a2 = 0;
      collect(t, i1, i2, a1, a2);
      if (state_->clear_epoch.load(std::memory_order_seq_cst) != epoch) continue;
      if ((epoch & 1) != 0) {
        a1 &= ~layout::tag_mask;
        a2 &= ~layout::tag_mask;
      }
      return f(a1, a2);
    }
  }

  template <class Table, class F>
  auto sealed_phase(const Table& table, F& f, bool emptying) const {
    using layout = typename Table::layout;
    auto& t = const_cast<Table&>(table);
    // Sealing and unsealing help the operations they meet, which takes a K-CAS thread slot: it is
    // taken here, so that a thread past the limit is refused before any word is sealed, not by a
    // cas in the unsealing guard's destructor (which would end the program).
    static_cast<void>(kcas_this_thread_slot());
    std::lock_guard<std::mutex> serial(state_->snapshot_mutex);
    struct unseal {
      Table& t;
      ~unseal() {
        for (auto& w : t.words()) {
          for (std::uint64_t v = kcas_load(w);
               layout::sealed(v) && !cas(w, v, v & ~layout::seal_bit); v = kcas_load(w)) {
          }
        }
      }
    } guard{t};
    for (auto& w : t.words()) {
      for (std::uint64_t v = kcas_load(w); !cas(w, v, v | layout::seal_bit); v = kcas_load(w)) {
      }
    }
    if (!emptying) return f();
    // Odd from here until the table is empty, before any word is unsealed (the epoch's guard
    // ends before the seal's).
    struct epoch_guard {
      std::atomic<std::uint64_t>& epoch;
      explicit epoch_guard(std::atomic<std::uint64_t>& e) : epoch(e) {
        epoch.fetch_add(1, std::memory_order_seq_cst);
      }
      ~epoch_guard() { epoch.fetch_add(1, std::memory_order_seq_cst); }
      epoch_guard(const epoch_guard&) = delete;
      epoch_guard& operator=(const epoch_guard&) = delete;
    } odd{state_->clear_epoch};
    return f();
  }

  struct shared_state {
    std::mutex snapshot_mutex;                  // one snapshot at a time
    std::atomic<std::uint64_t> clear_epoch{0};  // odd while a clear empties the sealed table
  };
  std::unique_ptr<shared_state> state_;  // a pointer keeps the filter movable
};

}  // namespace ccf::detail
