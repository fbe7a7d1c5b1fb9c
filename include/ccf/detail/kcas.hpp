// ccf — concurrent cuckoo filters.
// kcas.hpp: lock-free multi-word compare-and-swap (K-CAS) on 64-bit words, with bounded memory.
//
// What it offers
//   kcas(entries)            atomically: if every *word == expected, write every desired; K <= 8.
//   cas(word, exp, des)      single-word CAS that copes with (and helps) K-CAS operations.
//   kcas_load(word)          linearizable read of the logical value; never writes, never throws.
//   kcas_read(word)          the same value, but first finishes any operation it meets on word.
// Values must be < 2^62 (bits 63 and 62 are reserved: kcas_word::value_mask). ccf's lock-free
// cuckoo filter stores a bucket per word: four 12-bit tags (48 bits) + a 14-bit relocation counter.
//
// Algorithm: Harris, Fraser & Pratt's K-CAS built from RDCSS ("DCSS" below), with the descriptor
// reuse of Arbel-Raviv & Brown: every thread owns one K-CAS descriptor and one DCSS descriptor
// (kcas_state.hpp), reused for all its operations, so nothing is ever allocated or reclaimed.
//
// Word encoding (raw 64-bit contents of a kcas_word)
//   bit 63 = 0, bit 62 = 0  a plain value (the logical value).
//   bit 63 = 1              a K-CAS tag:  seq (53 bits) << 9 | slot (9 bits). The word takes part
//                           in the K-CAS of thread slot `slot`, operation number `seq`.
//   bit 62 = 1              a DCSS tag: the same layout, naming a DCSS descriptor.
// A K-CAS descriptor holds state = seq << 2 | status (undecided / succeeded / failed) and the
// sorted (word, expected, desired) triples. A DCSS descriptor holds seq and (word, expected,
// kcas tag) meaning "if that K-CAS is still undecided, swap expected -> kcas tag in word".
//
// One operation (owner thread, slot i, next sequence number s)
//   0. sort the words by address; state := (s, undecided); then write the triples (release).
//   1. phase 1, for each word in address order: DCSS-install tag K(i,s) in place of expected: put
//      the helper's own DCSS tag in the word by CAS, read the K-CAS state, then CAS the DCSS tag
//      to K(i,s) if the state is still (s, undecided), back to expected otherwise. A word that
//      holds another value makes the outcome "failed"; a word that holds another operation's
//      K-CAS tag is resolved first (if that operation's logical value for the word differs from
//      ours we fail at once, otherwise we help it to completion and try again).
//   2. decide: CAS state (s, undecided) -> (s, succeeded or failed). This is the linearization
//      point of a successful K-CAS: at that instant every word holds K(i,s), whose logical value
//      is its expected value, and from then on its logical value is desired.
//   3. phase 2, for each word: CAS K(i,s) -> desired (succeeded) or expected (failed). Before it
//      returns, the owner also finishes any DCSS tag still aimed at K(i,s) in its words (that
//      completion reads the decided state and rolls back). Only after phase 2 may the owner
//      start operation s+1, which is what makes reuse safe: see "why reuse is safe".
//   Any thread that meets tag K(i,s) in a word reads descriptor i, checks that its state still
//   carries sequence number s (otherwise the operation is over and the word has moved on) and
//   runs the same steps 1-3 with its own DCSS descriptor. Meeting a DCSS tag, it completes that
//   DCSS (one CAS). Helping recursion is bounded: words are installed in address order, so a
//   chain of helped operations meets strictly increasing addresses and cannot cycle.
//
// Logical value of a word (what kcas_load returns without writing)
//   plain v           -> v.
//   K-CAS tag K(i,s)  -> descriptor i (validated by s): desired if succeeded, expected otherwise.
//   DCSS tag          -> the DCSS descriptor's expected value (validated by its seq).
//   If a descriptor's seq no longer matches, the operation has finished: read the word again.
//
// Why it is linearizable
//   * A K-CAS tag K(i,s) enters a word only by a DCSS whose state read saw (s, undecided), and
//     leaves it only by phase 2, which runs after the decision. So between a helper's pass over
//     word w in phase 1 and the decision, w holds K(i,s) continuously: at the decision every word
//     of a successful operation holds its tag, and all K logical values switch at one instant.
//   * A failed K-CAS linearizes at the read that saw a mismatching logical value (it was inside
//     the operation's interval, and no one could decide "succeeded" after it).
//   * kcas_load of a tagged word: K(i,s) undecided -> the word still holds the tag, logical value
//     expected; decided -> the decision fell between the raw read and the state read, or before
//     it, so the decided value is the logical value at some instant of the read.
//   * The "late DCSS": helper H installs its DCSS tag, reads (s, undecided), stalls; meanwhile the
//     operation fails elsewhere and is decided; H's final CAS would then put K(i,s) into a word
//     after the decision. A late tag can only appear after a "failed" decision (a "succeeded"
//     decider passed this word while it held K(i,s), and K(i,s) never leaves before the
//     decision, so H's DCSS tag cannot sit there across the decision). Phase 2 of the owner
//     completes such pending DCSS tags itself (rolling them back) before it returns, and any
//     DCSS installed after the owner looked reads a decided state and rolls back. Hence once the
//     owner returns, no word holds K(i,s) and none ever will again.
//
// Why reuse is safe (ABA protection)
//   Every operation of a slot has a fresh sequence number, carried by its tags and by the state
//   word. The owner bumps the state's seq *before* rewriting the triples (release stores), and a
//   helper reads the triples (acquire loads) *before* re-reading the state: if the seq it reads
//   matches its tag, the triples it read belong to that operation (a seqlock). After the owner
//   returns, its tag is gone from memory for good (above), so a stale tag cannot be confused with
//   a newer operation until the 53-bit sequence number wraps: a helper would have to stall while
//   one thread completes 2^53 operations. Slots keep their counters across thread exit/reuse.
//
// Progress and memory
//   Lock-free: a thread only retries when some operation has made progress (a descriptor moved
//   on, a CAS by another thread succeeded, or it helped an operation to completion). kcas_load
//   never writes. Memory is fixed: kcas_max_threads * (256 + 64) bytes of descriptors (~160 KiB)
//   plus one flag per slot, in one constant-initialized table; no allocation, no reclamation.
//   A thread takes a slot on its first update (kcas, cas, or kcas_read that has to help) and
//   returns it at exit. With 512 slots taken, that first update throws kcas_thread_limit_error.
//
// Memory order: all word and state accesses are seq_cst (a CAS is a full barrier on x86 anyway,
// and the linearization argument relies on one order over words and states); descriptor fields
// use release stores / acquire loads (the seqlock). Every shared access is atomic (TSan-clean).
//
// Preconditions: the words of one kcas are distinct and non-null; values < 2^62 (both checked:
// std::invalid_argument / std::length_error). A word must outlive every operation that may still
// touch it: helpers act on all words of an operation they help, so a structure whose words take
// part in K-CAS may only be destroyed when no thread is inside an operation on any word that
// shares a K-CAS with it. Do not use K-CAS from thread_local destructors that run after this
// thread's slot holder was destroyed.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>

#include "ccf/config.hpp"
#include "ccf/detail/kcas_state.hpp"

namespace ccf::detail {

/// One word of a K-CAS: if *word == expected for all entries, every word becomes desired.
struct kcas_entry {
  kcas_word* word;
  std::uint64_t expected;
  std::uint64_t desired;
};

namespace kcas_impl {

namespace enc = kcas_encoding;

struct word_op {
  kcas_word* word;
  std::uint64_t expected;
  std::uint64_t desired;
};

/// A validated copy of a K-CAS descriptor.
struct kcas_view {
  std::uint64_t state;  // the state word read last (its seq matched the tag)
  std::uint32_t count;
  std::array<word_op, kcas_max_words> ops;
};

/// A validated copy of a DCSS descriptor.
struct dcss_view {
  kcas_word* word;
  std::uint64_t expected;
  std::uint64_t kcas_tag;
};

[[nodiscard]] inline kcas_thread_record& record_of(std::uint64_t tag) noexcept {
  return kcas_global_registry.record(enc::tag_slot(tag));
}

/// Copies the descriptor named by K-CAS tag `tag`; false when it has moved on to a later
/// operation (then the tagged operation is over and no word holds its tag any more).
[[nodiscard]] inline bool read_kcas(std::uint64_t tag, kcas_view& view) noexcept {
  const kcas_descriptor& d = record_of(tag).kcas;
  std::uint32_t n = d.count.load(std::memory_order_acquire);
  if (n > kcas_max_words) n = kcas_max_words;  // torn read of a reused descriptor: rejected below
  for (std::uint32_t i = 0; i < n; ++i) {
    const kcas_descriptor_entry& e = d.entries[i];
    view.ops[i] = {e.word.load(std::memory_order_acquire),
                   e.expected.load(std::memory_order_acquire),
                   e.desired.load(std::memory_order_acquire)};
  }
  view.count = n;
  view.state = d.state.load(std::memory_order_seq_cst);
  return enc::state_seq(view.state) == enc::tag_seq(tag);
}

/// Copies the descriptor named by DCSS tag `tag`; false when that DCSS is over.
[[nodiscard]] inline bool read_dcss(std::uint64_t tag, dcss_view& view) noexcept {
  const dcss_descriptor& d = record_of(tag).dcss;
  view.word = d.word.load(std::memory_order_acquire);
  view.expected = d.expected.load(std::memory_order_acquire);
  view.kcas_tag = d.kcas_tag.load(std::memory_order_acquire);
  return d.seq.load(std::memory_order_seq_cst) == enc::tag_seq(tag);
}

/// Second half of a DCSS: tag `dtag` sits (or sat) in view.word. Replace it with the K-CAS tag
/// if that K-CAS is still undecided, with the expected value otherwise. Idempotent: only the
/// first CAS on `dtag` can succeed, and `dtag` is never installed twice.
inline void complete_dcss(std::uint64_t dtag, const dcss_view& view) noexcept {
  const std::uint64_t state = record_of(view.kcas_tag).kcas.state.load(std::memory_order_seq_cst);
  const bool undecided =
      state == enc::make_state(enc::tag_seq(view.kcas_tag), enc::status_undecided);
  std::uint64_t current = dtag;
  kcas_access::raw(*view.word)
      .compare_exchange_strong(current, undecided ? view.kcas_tag : view.expected,
                               std::memory_order_seq_cst, std::memory_order_seq_cst);
}

inline void help_dcss(std::uint64_t dtag) noexcept {
  dcss_view view{};
  if (read_dcss(dtag, view)) complete_dcss(dtag, view);
}

/// DCSS with this thread's descriptor (slot `self`): if `word` holds `expected` and K-CAS
/// `ktag` is undecided, `word` becomes `ktag`. Returns what `word` held: `expected` means the
/// attempt was made (its effect depends on the state, which the caller re-reads); anything else
/// (a value or a K-CAS tag, never a DCSS tag) means the word did not hold `expected`.
[[nodiscard]] inline std::uint64_t dcss(std::uint32_t self, kcas_word& word, std::uint64_t expected,
                                        std::uint64_t ktag) noexcept {
  std::atomic<std::uint64_t>& raw = kcas_access::raw(word);
  std::uint64_t current = raw.load(std::memory_order_seq_cst);
  while (current != expected) {  // cheap path: no descriptor write when the attempt is moot
    if (!enc::is_dcss_tag(current)) return current;
    help_dcss(current);
    current = raw.load(std::memory_order_seq_cst);
  }
  dcss_descriptor& d = kcas_global_registry.record(self).dcss;
  const std::uint64_t seq = (d.seq.load(std::memory_order_relaxed) + 1) & enc::seq_mask;
  d.seq.store(seq, std::memory_order_relaxed);  // ordered before the fields by their release
  d.word.store(&word, std::memory_order_release);
  d.expected.store(expected, std::memory_order_release);
  d.kcas_tag.store(ktag, std::memory_order_release);
  const std::uint64_t dtag = enc::make_tag(enc::dcss_bit, self, seq);
  for (;;) {
    current = expected;
    if (raw.compare_exchange_strong(current, dtag, std::memory_order_seq_cst,
                                    std::memory_order_seq_cst)) {
      complete_dcss(dtag, dcss_view{&word, expected, ktag});
      return expected;
    }
    if (!enc::is_dcss_tag(current)) return current;
    help_dcss(current);
  }
}

/// Logical value of `word`, which held K-CAS tag `ktag`; false when the operation is over.
[[nodiscard]] inline bool kcas_logical_value(std::uint64_t ktag, const kcas_word* word,
                                             std::uint64_t& value) noexcept {
  kcas_view view{};
  if (!read_kcas(ktag, view)) return false;
  for (std::uint32_t i = 0; i < view.count; ++i) {
    if (view.ops[i].word == word) {
      value = enc::state_status(view.state) == enc::status_succeeded ? view.ops[i].desired
                                                                     : view.ops[i].expected;
      return true;
    }
  }
  return false;  // cannot happen for a validated view; the caller reads the word again
}

/// Phase 2 for one word: replace `ktag` by the final value, and roll back any DCSS still aimed
/// at `ktag` in this word (a late DCSS, see the essay).
inline void release_word(const word_op& op, std::uint64_t ktag, bool succeeded) noexcept {
  std::atomic<std::uint64_t>& raw = kcas_access::raw(*op.word);
  const std::uint64_t final_value = succeeded ? op.desired : op.expected;
  std::uint64_t current = raw.load(std::memory_order_seq_cst);
  for (;;) {
    if (current == ktag) {
      if (raw.compare_exchange_strong(current, final_value, std::memory_order_seq_cst,
                                      std::memory_order_seq_cst)) {
        return;
      }
      continue;
    }
    if (!enc::is_dcss_tag(current)) return;
    dcss_view view{};
    if (read_dcss(current, view)) {
      if (view.kcas_tag != ktag) return;
      complete_dcss(current, view);  // the state is decided: this restores the expected value
    }
    current = raw.load(std::memory_order_seq_cst);
  }
}

inline bool run_kcas(std::uint32_t self, std::uint64_t ktag, const kcas_view& view) noexcept;

/// Helps the K-CAS named by `ktag` to completion (nothing to do if it is over).
inline void help_kcas(std::uint32_t self, std::uint64_t ktag) noexcept {
  kcas_view view{};
  if (read_kcas(ktag, view)) run_kcas(self, ktag, view);
}

/// Steps 1-3 of the essay for the operation `view` describes. Returns its outcome when the
/// descriptor still belongs to it at the end (always true for the owner).
inline bool run_kcas(std::uint32_t self, std::uint64_t ktag, const kcas_view& view) noexcept {
  std::atomic<std::uint64_t>& state = record_of(ktag).kcas.state;
  if (enc::state_status(view.state) == enc::status_undecided) {
    std::uint64_t outcome = enc::status_succeeded;
    for (std::uint32_t i = 0; i < view.count && outcome == enc::status_succeeded; ++i) {
      const word_op& op = view.ops[i];
      for (;;) {
        const std::uint64_t seen = dcss(self, *op.word, op.expected, ktag);
        if (seen == op.expected || seen == ktag) break;
        if (enc::is_kcas_tag(seen)) {
          std::uint64_t logical = 0;
          if (kcas_logical_value(seen, op.word, logical) && logical != op.expected) {
            outcome = enc::status_failed;
            break;
          }
          help_kcas(self, seen);
          continue;
        }
        outcome = enc::status_failed;
        break;
      }
    }
    std::uint64_t undecided = view.state;
    state.compare_exchange_strong(undecided, enc::make_state(enc::state_seq(view.state), outcome),
                                  std::memory_order_seq_cst, std::memory_order_seq_cst);
  }
  const std::uint64_t decided = state.load(std::memory_order_seq_cst);
  if (enc::state_seq(decided) != enc::tag_seq(ktag)) return false;  // owner already finished
  const bool succeeded = enc::state_status(decided) == enc::status_succeeded;
  for (std::uint32_t i = 0; i < view.count; ++i)
    release_word(view.ops[i], ktag, succeeded);
  return succeeded;
}

inline void check_value(std::uint64_t value) {
  if (CCF_UNLIKELY((value & ~kcas_value_mask) != 0)) {
    throw std::invalid_argument("ccf::detail::kcas: value uses the reserved bits 62-63");
  }
}

/// kcas_load's slow path, for a word that held a descriptor tag: kept out of line so that the
/// common case (a plain value) inlines into lookups as one load and one test.
CCF_NOINLINE inline std::uint64_t load_tagged(const kcas_word& word,
                                              std::uint64_t current) noexcept {
  namespace enc = kcas_encoding;
  const std::atomic<std::uint64_t>& raw = kcas_access::raw(word);
  for (;;) {
    if (enc::is_value(current)) return current;
    if (enc::is_dcss_tag(current)) {
      dcss_view view{};
      if (read_dcss(current, view)) return view.expected;
    } else {
      std::uint64_t logical = 0;
      if (kcas_logical_value(current, &word, logical)) return logical;
    }
    current = raw.load(std::memory_order_seq_cst);
  }
}

}  // namespace kcas_impl

/// The logical value of `word`. Never writes shared memory, never blocks, needs no thread slot:
/// what readers (filter lookups) should use. Lock-free: it re-reads only when an operation on
/// the word has finished in the meantime.
[[nodiscard]] CCF_FORCEINLINE std::uint64_t kcas_load(const kcas_word& word) noexcept {
  const std::uint64_t current = kcas_access::raw(word).load(std::memory_order_seq_cst);
  if (CCF_LIKELY(kcas_encoding::is_value(current))) return current;
  return kcas_impl::load_tagged(word, current);
}

/// The logical value of `word`, after finishing every operation found in it (the word holds a
/// plain value at the instant this returns it). May take a thread slot to help, hence may throw
/// kcas_thread_limit_error.
[[nodiscard]] inline std::uint64_t kcas_read(kcas_word& word) {
  namespace enc = kcas_encoding;
  const std::atomic<std::uint64_t>& raw = kcas_access::raw(word);
  for (;;) {
    const std::uint64_t current = raw.load(std::memory_order_seq_cst);
    if (enc::is_value(current)) return current;
    if (enc::is_dcss_tag(current)) {
      kcas_impl::help_dcss(current);
    } else {
      kcas_impl::help_kcas(kcas_this_thread_slot(), current);
    }
  }
}

/// Single-word CAS on a K-CAS word: if its logical value is `expected`, make it `desired`.
/// Helps a K-CAS it meets only when that operation could still leave `expected` in the word.
/// Throws std::invalid_argument for values >= 2^62, kcas_thread_limit_error (see kcas_state.hpp).
inline bool cas(kcas_word& word, std::uint64_t expected, std::uint64_t desired) {
  namespace enc = kcas_encoding;
  kcas_impl::check_value(expected);
  kcas_impl::check_value(desired);
  std::atomic<std::uint64_t>& raw = kcas_access::raw(word);
  for (;;) {
    std::uint64_t current = expected;
    if (raw.compare_exchange_strong(current, desired, std::memory_order_seq_cst,
                                    std::memory_order_seq_cst)) {
      return true;
    }
    if (enc::is_value(current)) return false;
    if (enc::is_dcss_tag(current)) {
      kcas_impl::dcss_view view{};
      if (kcas_impl::read_dcss(current, view)) {
        if (view.expected != expected) return false;
        kcas_impl::complete_dcss(current, view);
      }
      continue;
    }
    std::uint64_t logical = 0;
    if (kcas_impl::kcas_logical_value(current, &word, logical) && logical != expected) {
      return false;
    }
    kcas_impl::help_kcas(kcas_this_thread_slot(), current);
  }
}

/// Multi-word CAS: if every entries[i].word holds entries[i].expected, atomically write every
/// entries[i].desired and return true; otherwise change nothing and return false. Entries may come
/// in any order; the words must be distinct. 0 entries: true; more than kcas_max_words:
/// std::length_error; duplicate or null words, values >= 2^62: std::invalid_argument; no free
/// thread slot: kcas_thread_limit_error (nothing written in every one of these cases).
inline bool kcas(std::span<const kcas_entry> entries) {
  namespace enc = kcas_encoding;
  const std::size_t n = entries.size();
  if (n == 0) return true;
  if (n > kcas_max_words) throw std::length_error("ccf::detail::kcas: more than 8 words");
  std::array<kcas_impl::word_op, kcas_max_words> ops{};
  for (std::size_t i = 0; i < n; ++i) {
    const kcas_entry& e = entries[i];
    if (e.word == nullptr) throw std::invalid_argument("ccf::detail::kcas: null word");
    kcas_impl::check_value(e.expected);
    kcas_impl::check_value(e.desired);
    // Insertion sort by address (std::less gives a total order on pointers).
    std::size_t j = i;
    for (; j > 0 && std::less<kcas_word*>{}(e.word, ops[j - 1].word); --j)
      ops[j] = ops[j - 1];
    ops[j] = {e.word, e.expected, e.desired};
  }
  for (std::size_t i = 1; i < n; ++i) {
    if (ops[i].word == ops[i - 1].word) {
      throw std::invalid_argument("ccf::detail::kcas: the same word appears twice");
    }
  }
  if (n == 1) return cas(*ops[0].word, ops[0].expected, ops[0].desired);

  const std::uint32_t self = kcas_this_thread_slot();
  kcas_descriptor& d = kcas_global_registry.record(self).kcas;
  const std::uint64_t seq = (enc::state_seq(d.state.load(std::memory_order_relaxed)) + 1);
  const std::uint64_t undecided = enc::make_state(seq, enc::status_undecided);
  // Publish the new sequence number first: a helper holding an older tag that reads any of the
  // fields below will then see the new seq when it validates (release stores / acquire loads).
  d.state.store(undecided, std::memory_order_seq_cst);
  d.count.store(static_cast<std::uint32_t>(n), std::memory_order_release);
  for (std::size_t i = 0; i < n; ++i) {
    d.entries[i].word.store(ops[i].word, std::memory_order_release);
    d.entries[i].expected.store(ops[i].expected, std::memory_order_release);
    d.entries[i].desired.store(ops[i].desired, std::memory_order_release);
  }
  const kcas_impl::kcas_view view{undecided, static_cast<std::uint32_t>(n), ops};
  return kcas_impl::run_kcas(self, enc::make_tag(enc::kcas_bit, self, seq), view);
}

/// Fixed-size form: kcas(std::array<kcas_entry, K>{...}) with 1 <= K <= kcas_max_words.
template <std::size_t K>
inline bool kcas(const std::array<kcas_entry, K>& entries) {
  static_assert(K >= 1 && K <= kcas_max_words, "a K-CAS updates 1 to kcas_max_words words");
  return kcas(std::span<const kcas_entry>(entries.data(), K));
}

}  // namespace ccf::detail
