// ccf — concurrent cuckoo filters.
// detail/filter_frontend.hpp: the public members every cuckoo filter shares.
//
// basic_filter<Key, Hash, Core> hashes keys with the filter's seed, turns the hash into a position
// {i1, i2, tag} and hands it to the core (cuckoo_core for the sequential and lock-based filters,
// lockfree_core for the lock-free one). It also implements the batch operations: the positions of
// the next `batch_window` keys are computed and their buckets prefetched before the current key is
// processed, so a batch keeps that many cache misses in flight instead of one. With a core that
// can place a key without searching (cuckoo_core), insert_many also sets aside up to
// `defer_window` keys whose two buckets are both full, prefetching the buckets their path search
// will read first, and comes back to each one `defer_window` full-bucket keys later. When a key
// is refused, the keys after it that already went in are erased again, so the outcome is that of
// inserting strictly in order: exactly keys[0, result) are in the filter.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>

#include "ccf/config.hpp"
#include "ccf/detail/serialization.hpp"
#include "ccf/detail/sizing.hpp"
#include "ccf/detail/tag_packing.hpp"
#include "ccf/hash.hpp"

namespace ccf::detail {

template <class Key, class Hash, class Core>
class basic_filter {
 public:
  using key_type = Key;
  using hasher = Hash;
  using core_type = Core;
  using tag_type = typename Core::tag_type;
  using position = typename Core::position;

  static constexpr std::size_t default_max_kicks = Core::default_max_kicks;
  static constexpr std::size_t batch_window = 16;
  static constexpr std::size_t defer_window = 16;

  /// A filter that holds at least `capacity` distinct items. `seed` selects the hash function (it
  /// is part of the filter's identity); `max_kicks` bounds the buckets one insert's path search
  /// may visit. Throws std::invalid_argument for capacity 0, std::length_error when the table
  /// would not fit in memory.
  explicit basic_filter(std::size_t capacity, std::uint64_t seed = default_seed,
                        std::size_t max_kicks = default_max_kicks)
      : core_(capacity, max_kicks), seed_(seed) {}

  /// Loads a filter saved by save() (by this type, or by the sequential / lock-based concurrent
  /// filter of the same key type, tag width, bucket size and hash). Throws ccf::format_error when
  /// the stream is truncated or corrupt or holds another kind of filter.
  explicit basic_filter(std::istream& in) : basic_filter(std::make_unique<file_reader>(in)) {}

  /// Writes the filter to `out` (format: detail/serialization.hpp). Safe to call while other
  /// threads use a concurrent filter: it holds all locks while it copies the table.
  void save(std::ostream& out) const {
    file_header h;
    h.fingerprint_bits = Core::fingerprint_bits;
    h.slots_per_bucket = Core::slots_per_bucket;
    h.num_buckets = num_buckets();
    h.seed = seed_;
    h.max_kicks = max_kicks();
    h.capacity = capacity();
    h.word_count = core_.table().words().size();
    h.hash_probe = detail::hash_probe<Key, Hash>(seed_);
    detail::word_writer writer(out, h);
    const std::size_t items = core_.save_words(writer);
    writer.finish(items);
  }

  bool insert(const Key& key) { return core_.insert(locate(key)); }
  bool contains(const Key& key) const { return core_.contains(locate(key)); }
  bool erase(const Key& key) { return core_.erase(locate(key)); }
  std::size_t count(const Key& key) const { return core_.count(locate(key)); }

  std::size_t size() const noexcept { return core_.size(); }
  bool empty() const noexcept { return size() == 0; }
  std::size_t capacity() const noexcept { return core_.capacity(); }
  double load_factor() const noexcept {
    return static_cast<double>(size()) / static_cast<double>(size_in_tags());
  }
  void clear() { core_.clear(); }

  std::size_t num_buckets() const noexcept { return core_.table().num_buckets(); }
  std::size_t size_in_bytes() const noexcept { return core_.table().size_in_bytes(); }
  std::size_t size_in_tags() const noexcept { return core_.table().size_in_tags(); }
  std::uint64_t seed() const noexcept { return seed_; }
  std::size_t max_kicks() const noexcept { return core_.max_kicks(); }
  std::string info() const {
    const double bits_per_item =
        size() == 0 ? 0.0
                    : static_cast<double>(size_in_bytes()) * 8.0 / static_cast<double>(size());
    return core_.table().info() + "; " + std::to_string(size()) + " items, load " +
           std::to_string(load_factor()) + ", " + std::to_string(bits_per_item) +
           " bits/item, capacity " + std::to_string(capacity()) + ", seed " + std::to_string(seed_);
  }

  /// Inserts keys as if one at a time in order, stopping at the first key that does not fit.
  /// Returns how many were inserted: exactly keys[0, result) are added (keys[result] is the first
  /// one refused when result < keys.size()). On a concurrent filter other threads may briefly
  /// see a key after a refused one, which is then erased again.
  std::size_t insert_many(std::span<const Key> keys) {
    std::array<position, batch_window> ring;
    const std::size_t n = keys.size();
    const std::size_t lead = std::min(n, batch_window);
    for (std::size_t i = 0; i < lead; ++i) {
      ring[i] = locate(keys[i]);
      core_.prefetch_for_write(ring[i]);
    }
    if constexpr (requires { core_.try_place(ring[0]); }) {
      // Keys whose two buckets are both full wait in `deferred` while the buckets their path
      // search will look at first are prefetched; later keys go on meanwhile.
      struct pending {
        std::size_t index;
        position p;
      };
      std::array<pending, defer_window> deferred;
      std::size_t first = 0, waiting = 0;
      // keys[j] did not fit: take back the keys after it that went in, so the result is as if
      // the keys had been inserted strictly in order.
      auto refuse = [&](std::size_t j, std::size_t upto) {
        for (std::size_t k = j + 1; k < upto; ++k) {
          bool still_waiting = false;
          for (std::size_t d = 0; d < waiting; ++d) {
            still_waiting |= deferred[(first + d) % defer_window].index == k;
          }
          if (!still_waiting) core_.erase(locate(keys[k]));
        }
        return j;
      };
      for (std::size_t i = 0; i < n; ++i) {
        const position p = ring[i % batch_window];
        if (i + batch_window < n) {
          ring[i % batch_window] = locate(keys[i + batch_window]);
          core_.prefetch_for_write(ring[i % batch_window]);
        }
        if (core_.try_place(p)) continue;
        core_.prefetch_alternates(p);
        if (waiting == defer_window) {
          const pending q = deferred[first];
          first = (first + 1) % defer_window;
          --waiting;
          if (!core_.insert(q.p)) return refuse(q.index, i);
        }
        deferred[(first + waiting) % defer_window] = {i, p};
        ++waiting;
      }
      while (waiting != 0) {
        const pending q = deferred[first];
        first = (first + 1) % defer_window;
        --waiting;
        if (!core_.insert(q.p)) return refuse(q.index, n);
      }
      return n;
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        const position p = ring[i % batch_window];
        if (i + batch_window < n) {
          ring[i % batch_window] = locate(keys[i + batch_window]);
          core_.prefetch_for_write(ring[i % batch_window]);
        }
        if (!core_.insert(p)) return i;
      }
      return n;
    }
  }

  /// found[i] = contains(keys[i]); returns how many were found. found.size() must be at least
  /// keys.size().
  std::size_t contains_many(std::span<const Key> keys, std::span<bool> found) const {
    if (found.size() < keys.size()) {
      throw std::invalid_argument("ccf: contains_many needs an output span of at least " +
                                  std::to_string(keys.size()) + " elements, got " +
                                  std::to_string(found.size()));
    }
    return batch_lookup(keys, [&](std::size_t i, bool hit) { found[i] = hit; });
  }
  /// How many of `keys` the filter contains.
  std::size_t contains_many(std::span<const Key> keys) const {
    return batch_lookup(keys, [](std::size_t, bool) {});
  }

  // ---- the thesis's HashTable API ----
  /// The two buckets and the tag of a key.
  position locate(const Key& key) const noexcept {
    return core_.indexer().locate(hasher{}(key, seed_));
  }
  std::size_t alt_index(std::size_t i, tag_type tag) const noexcept {
    return core_.indexer().alt_index(i, tag);
  }
  tag_type read_tag(std::size_t i, unsigned j) const { return core_.read_tag(i, j); }
  void write_tag(std::size_t i, unsigned j, tag_type tag) { core_.write_tag(i, j, tag); }
  bool find_tag_in_buckets(std::size_t i1, std::size_t i2, tag_type tag) const {
    return core_.find_tag_in_buckets(i1, i2, tag);
  }
  bool delete_tag_from_bucket(std::size_t i, tag_type tag) {
    return core_.delete_tag_from_bucket(i, tag);
  }
  bool insert_tag_to_bucket(std::size_t i, tag_type tag, bool kickout, tag_type& old_tag) {
    return core_.insert_tag_to_bucket(i, tag, kickout, old_tag);
  }

 protected:
  const Core& core() const noexcept { return core_; }

 private:
  using file_header = detail::file_header;
  using file_reader = detail::word_reader;

  explicit basic_filter(std::unique_ptr<file_reader> reader)
      : core_(typename Core::exact_buckets_t{}, checked_buckets(reader->header()),
              static_cast<std::size_t>(reader->header().capacity),
              static_cast<std::size_t>(reader->header().max_kicks)),
        seed_(reader->header().seed) {
    core_.load_words(*reader);
    const std::uint64_t items = reader->finish();
    if (!core_.table().padding_is_clear()) {
      throw format_error("ccf: corrupt filter file (bits set past the last bucket)");
    }
    if (items != size()) {
      throw format_error("ccf: corrupt filter file (it says " + std::to_string(items) +
                         " items, its table holds " + std::to_string(size()) + " tags)");
    }
  }

  static std::size_t checked_buckets(const file_header& h) {
    if (h.fingerprint_bits != Core::fingerprint_bits ||
        h.slots_per_bucket != Core::slots_per_bucket) {
      throw format_error("ccf: the file holds a filter of " + std::to_string(h.fingerprint_bits) +
                         "-bit tags in " + std::to_string(h.slots_per_bucket) +
                         "-slot buckets; this filter type has " +
                         std::to_string(Core::fingerprint_bits) + "-bit tags in " +
                         std::to_string(Core::slots_per_bucket) + "-slot buckets");
    }
    if (h.hash_probe != detail::hash_probe<Key, Hash>(h.seed)) {
      throw format_error("ccf: the file was written with another key type or hash function");
    }
    const std::uint64_t words =
        detail::tag_packing<Core::fingerprint_bits, Core::slots_per_bucket>::words_for(
            h.num_buckets);
    if (h.num_buckets == 0 || h.num_buckets >= (std::uint64_t{1} << 56) || h.word_count != words ||
        h.capacity == 0) {
      throw format_error("ccf: corrupt filter file (bucket count " + std::to_string(h.num_buckets) +
                         ", word count " + std::to_string(h.word_count) + ", capacity " +
                         std::to_string(h.capacity) + " do not fit together)");
    }
    detail::check_fits_in_memory(words * 8, static_cast<std::size_t>(h.capacity));
    return static_cast<std::size_t>(h.num_buckets);
  }

  template <class Sink>
  std::size_t batch_lookup(std::span<const Key> keys, Sink&& sink) const {
    std::array<position, batch_window> ring;
    const std::size_t n = keys.size();
    const std::size_t lead = std::min(n, batch_window);
    for (std::size_t i = 0; i < lead; ++i) {
      ring[i] = locate(keys[i]);
      core_.prefetch(ring[i]);
    }
    std::size_t hits = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const position p = ring[i % batch_window];
      if (i + batch_window < n) {
        ring[i % batch_window] = locate(keys[i + batch_window]);
        core_.prefetch(ring[i % batch_window]);
      }
      const bool hit = core_.contains(p);
      hits += hit ? 1 : 0;
      sink(i, hit);
    }
    return hits;
  }

  Core core_;
  std::uint64_t seed_;
};

}  // namespace ccf::detail
