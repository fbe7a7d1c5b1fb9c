// ccf — concurrent cuckoo filters.
// kv/detail/kv_index.hpp: the key-value store's in-memory index — an instance of the cuckoo
// engine, with the seed design's {tag, status, offset} slots.
//
// Layout: payload_slot_layout<24, 4> (detail/payload_slot_layout.hpp): 4-slot buckets of 64-bit
// slots holding a 24-bit tag, a 2-bit status (available / occupied / deleted) and a 38-bit payload,
// the record's offset in the log divided by 8 (records are 8-byte aligned: logs up to 2 TiB).
// 8 bytes a slot, so 8.4 bytes of index per key at 95 % load. The protocol is striped locking
// (lookups take no lock), the alternate function chunk-local, and keys are hashed with XXH3 and
// the store's seed: a key's two buckets and tag come from its hash as in every ccf table.
//
// A lookup walks every occupied slot with the key's tag in its two buckets (slot_mask) and
// compares the full key with the record the slot points to (one read of the log each; with
// 24-bit tags a lookup of a key meets another key's slot once in about 2 million). The store
// changes the index from one thread at a time (its committing writer, or a compaction), with
// the key's live record found first (find_record), through apply(): a put replaces the offset of
// the key's slot in place, so a key never has two live slots, and inserts a slot only for a key
// that has none — so duplicate keys cannot enter. When an insert finds no cuckoo path the store
// builds an index twice as large from the keys in the log (grow()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "ccf/detail/cuckoo_engine.hpp"
#include "ccf/detail/indexer.hpp"
#include "ccf/detail/lock_protocol.hpp"
#include "ccf/detail/payload_slot_layout.hpp"
#include "ccf/detail/striped_locking.hpp"
#include "ccf/hash.hpp"

namespace ccf::kv::detail {

/// A key's live record: where it is and its size.
struct live_record {
  std::uint64_t offset;
  std::uint64_t size;
};

class kv_index {
 public:
  using layout = ccf::detail::payload_slot_layout<24, 4>;
  using engine_type =
      ccf::detail::cuckoo_engine<layout, ccf::detail::lock_protocol<ccf::detail::striped_locking>>;
  using indexer_type = engine_type::indexer_type;
  static constexpr std::uint64_t max_offset = layout::max_payload * 8;

  /// An empty index for `capacity` keys.
  kv_index(std::size_t capacity, std::uint64_t seed)
      : engine_(capacity, max_chunk(), engine_type::default_max_kicks), seed_(seed) {}
  /// An empty index with the buckets of `indexer` (loading a snapshot).
  kv_index(const indexer_type& indexer, std::size_t capacity, std::uint64_t seed)
      : engine_(indexer, capacity, engine_type::default_max_kicks), seed_(seed) {}

  /// The bytes of the table of an index for `capacity` keys.
  static std::size_t table_bytes_for(std::size_t capacity) {
    return engine_type::table_bytes(engine_type::plan(capacity, max_chunk()).num_buckets());
  }

  std::uint64_t hash(std::string_view key) const noexcept {
    return XXH3_64bits_withSeed(key.data(), key.size(), seed_);
  }
  std::uint64_t seed() const noexcept { return seed_; }
  const engine_type& engine() const noexcept { return engine_; }
  engine_type& engine() noexcept { return engine_; }
  std::size_t size() const noexcept { return engine_.size(); }

  /// The offset of the record `key` maps to, if any. key_at(offset) gives the key of the record
  /// at an offset (a candidate slot's record).
  template <class KeyAt>
  std::optional<std::uint64_t> find(std::uint64_t h, std::string_view key, KeyAt&& key_at) const {
    std::optional<std::uint64_t> found;
    engine_.for_each_match(engine_.indexer().locate(h), [&](std::uint64_t slot) {
      const std::uint64_t offset = layout::payload_of(slot) * 8;
      if (!found && key_at(offset) == key) found = offset;
    });
    return found;
  }
  /// find(), with the size of the record found; record_at(offset) gives a candidate's record
  /// (its key and size).
  template <class RecordAt>
  std::optional<live_record> find_record(std::uint64_t h, std::string_view key,
                                         RecordAt&& record_at) const {
    std::uint64_t size = 0;  // of the record read last: the one find() matched
    const std::optional<std::uint64_t> at = find(h, key, [&](std::uint64_t o) {
      const auto r = record_at(o);
      size = r.size;
      return r.key;
    });
    if (!at) return std::nullopt;
    return live_record{*at, size};
  }

  /// Points the slot of the record at `old_offset` (of the key hashed to h) at `offset`; false
  /// when no slot holds it.
  bool replace_at(std::uint64_t h, std::uint64_t old_offset, std::uint64_t offset) {
    const ccf::detail::position p = engine_.indexer().locate(h);
    return engine_.replace_slot(p, layout::make(p.tag, old_offset / 8),
                                layout::make(p.tag, offset / 8));
  }
  /// Removes the slot of the record at `old_offset` (a tombstone); false when no slot holds it.
  bool erase_at(std::uint64_t h, std::uint64_t old_offset) {
    const ccf::detail::position p = engine_.indexer().locate(h);
    return engine_.erase_slot(p, layout::make(p.tag, old_offset / 8));
  }
  /// Inserts a slot for a key known to have none (rebuilding; find() found none); false when
  /// full.
  bool insert_new(std::uint64_t h, std::uint64_t offset) {
    const ccf::detail::position p = engine_.indexer().locate(h);
    return engine_.insert(p, layout::make(p.tag, offset / 8));
  }
  /// Points the index at the record at `offset` of the key hashed to h (a delete when `erased`)
  /// whose live record is `old` (find_record): replaces or erases old's slot, or inserts one.
  /// False when that insert finds no room (nothing changed). Throws std::logic_error when old's
  /// slot is gone.
  bool apply(std::uint64_t h, const std::optional<live_record>& old, std::uint64_t offset,
             bool erased) {
    if (!old) return erased || insert_new(h, offset);
    if (!(erased ? erase_at(h, old->offset) : replace_at(h, old->offset, offset))) {
      throw std::logic_error("ccf::kv: the index lost the slot of a live record");
    }
    return true;
  }
  /// Calls f(offset) for every occupied slot (the records of all live keys).
  template <class F>
  void for_each_offset(F&& f) const {
    const auto& table = engine_.table();
    for (std::size_t i = 0; i < engine_.num_buckets(); ++i) {
      const auto b = table.load(i);
      for (unsigned j = 0; j < layout::slots; ++j) {
        if (layout::status_of(layout::get(b, j)) == layout::occupied) {
          f(layout::payload_of(layout::get(b, j)) * 8);
        }
      }
    }
  }

 private:
  static std::size_t max_chunk() noexcept {
    return chunked_alternate::max_chunk_buckets(layout::slots);
  }

  engine_type engine_;
  std::uint64_t seed_;
};

}  // namespace ccf::kv::detail
