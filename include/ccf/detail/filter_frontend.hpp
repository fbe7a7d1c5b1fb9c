// ccf — concurrent cuckoo filters.
// detail/filter_frontend.hpp: the public members every cuckoo filter shares.
//
// basic_filter<Key, Hash, Engine, Alternate> hashes keys with the filter's seed (Hash{}(key,
// key_seed(seed)), the seed mixed once per filter), turns the hash into a position {i1, i2, tag}
// with the engine's indexer and hands it to the engine (cuckoo_engine.hpp). Every operation also
// has a by-hash form (insert_hash, contains_hash, ...) for callers that hashed the key already
// (hash_of gives the hash a key gets). Batches and the bulk build are in batch_ops.hpp; files in
// serialization.hpp and canonical_table.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ccf/config.hpp"
#include "ccf/detail/batch_ops.hpp"
#include "ccf/detail/canonical_table.hpp"
#include "ccf/detail/indexer.hpp"
#include "ccf/detail/serialization.hpp"
#include "ccf/detail/sizing.hpp"
#include "ccf/hash.hpp"

namespace ccf {

/// A bulk build that could not place every key: the capacity was too small.
class filter_full_error : public std::length_error {
 public:
  using std::length_error::length_error;
};

/// Options of ccf::build.
struct build_options {
  /// Threads that fill the table (0: every hardware thread).
  unsigned threads = 0;
  std::uint64_t seed = default_seed;
  std::size_t max_kicks = 500;
  /// Skip a key the filter already answers yes for (a repeat, or a false positive), as the `ccf`
  /// tool does: the filter then holds each distinct key once.
  bool skip_present = false;
};

namespace detail {

template <class Key, class Hash, class Engine, class Alternate>
class basic_filter {
  static_assert(require_key_hasher<Hash, Key>());

 public:
  using key_type = Key;
  using hasher = Hash;
  using engine_type = Engine;
  using alternate_type = Alternate;
  using allocator_type = typename Engine::allocator_type;
  using tag_type = typename Engine::tag_type;
  using position = detail::position;

  static constexpr unsigned fingerprint_bits = Engine::fingerprint_bits;
  static constexpr unsigned slots_per_bucket = Engine::slots_per_bucket;
  static constexpr std::size_t default_max_kicks = Engine::default_max_kicks;
  /// Whether filters of this layout have files (save, to_bytes and the loading constructors):
  /// those of 2, 4 or 8 slots a bucket, the layouts of the file format's bit-packed table. A
  /// lock-free filter of another bucket size has none of these members.
  static constexpr bool has_file_format =
      canonical_table<typename Engine::layout_type>::has_file_format;

  /// A filter that holds at least `capacity` distinct items. `seed` selects the hash function (it
  /// is part of the filter's identity); `max_kicks` bounds the buckets one insert's path search
  /// may visit. Throws std::invalid_argument for capacity 0, std::length_error when the table
  /// would not fit in memory.
  explicit basic_filter(std::size_t capacity, std::uint64_t seed = default_seed,
                        std::size_t max_kicks = default_max_kicks,
                        const allocator_type& alloc = allocator_type())
      : engine_(capacity, Alternate::max_chunk_buckets(slots_per_bucket), max_kicks, alloc),
        seed_(seed),
        key_seed_(key_seed(seed)) {}
  /// Not a false-positive rate: the second argument is the seed (`cuckoo_filter<K> f(n, 0.001)`
  /// compiled, with seed 0 and the default layout). A static filter's layout is its template
  /// arguments (ccf::params and smallest_layout_for pick them for a rate; at run time,
  /// filter_config::for_rate and runtime_filter); a growing filter takes a rate.
  template <std::floating_point Rate, class... Rest>
  basic_filter(std::size_t capacity, Rate not_a_seed, Rest&&...) = delete;

  /// Loads a filter saved by save() by a filter of the same key type, hash, tag width, bucket
  /// size and alternate function (any of the sequential, lock-based and lock-free kinds). The
  /// stream must end where the filter does. Throws ccf::format_error when it is truncated,
  /// corrupt, followed by junk, or holds another kind of filter.
  explicit basic_filter(std::istream& in,
                        const allocator_type& alloc = allocator_type()) requires has_file_format
      : basic_filter(filter_source(in), alloc) {}
  /// Loads a filter from the bytes to_bytes() returned (or a file's contents).
  explicit basic_filter(std::span<const std::byte> bytes,
                        const allocator_type& alloc = allocator_type()) requires has_file_format
      : basic_filter(filter_source(bytes), alloc) {}
  /// Loads a filter whose header was read already (the runtime filter reads it to choose the
  /// type).
  basic_filter(filter_source&& src, const allocator_type& alloc) requires has_file_format
      : basic_filter(checked(src), src, alloc) {}

  /// Writes the filter to `out` (format: detail/serialization.hpp). Safe to call while other
  /// threads use a concurrent filter: the table is copied from a consistent snapshot.
  void save(std::ostream& out) const requires has_file_format { write(stream_out{&out}); }
  /// The filter as bytes, in the same format as save().
  std::vector<std::byte> to_bytes() const requires has_file_format {
    std::vector<std::byte> bytes;
    write(buffer_out{&bytes});
    return bytes;
  }
  /// Bytes [offset, offset + len) of to_bytes(), those the file has, in `out` (replacing what it
  /// held), made without the whole file in memory. Returns the file's size. Bytes before the
  /// trailer take the time of their own words (and of the snapshot: a lock-free filter seals
  /// every word); a range that reaches the trailer (item count and checksum) takes the time of a
  /// save. Each call is a snapshot of its own: parts read by several calls while other threads
  /// change the filter do not make one file.
  std::uint64_t read_bytes(std::uint64_t offset, std::uint64_t len,
                           std::vector<std::byte>& out) const requires has_file_format {
    out.clear();
    const file_header h = header();
    if (window_writer::fits(h, offset, len)) {
      window_writer window(h, offset, len, out);
      auto put = [&window, k = window.first_word()](std::uint64_t w) mutable {
        window.put(k++, w);
      };
      engine_.save_canonical_words(window.first_word(), window.end_word(), put);
      window.finish();
    } else if (offset < h.file_bytes() && len != 0) {
      std::uint64_t size = 0;
      write(range_out{offset, len, &out, &size});
    }
    return h.file_bytes();
  }

  bool insert(const Key& key) { return insert_hash(hash_of(key)); }
  bool contains(const Key& key) const { return contains_hash(hash_of(key)); }
  bool erase(const Key& key) { return erase_hash(hash_of(key)); }
  std::size_t count(const Key& key) const { return count_hash(hash_of(key)); }
  // A filter of strings takes a std::string_view or a C string as it is (ccf::transparent_key):
  // f.contains("abc") or f.contains(view) makes no std::string.
  template <transparent_key<Hash, Key> K>
  bool insert(const K& key) {
    return insert_hash(hash_of(key));
  }
  template <transparent_key<Hash, Key> K>
  bool contains(const K& key) const {
    return contains_hash(hash_of(key));
  }
  template <transparent_key<Hash, Key> K>
  bool erase(const K& key) {
    return erase_hash(hash_of(key));
  }
  template <transparent_key<Hash, Key> K>
  std::size_t count(const K& key) const {
    return count_hash(hash_of(key));
  }

  /// The hash `key` gets in this filter; the *_hash members take it instead of the key.
  std::uint64_t hash_of(const Key& key) const noexcept { return hasher{}(key, key_seed_); }
  template <transparent_key<Hash, Key> K>
  std::uint64_t hash_of(const K& key) const noexcept {
    return hasher{}(key, key_seed_);
  }
  bool insert_hash(std::uint64_t h) {
    const position p = locate_hash(h);
    return engine_.insert(p, p.tag);
  }
  bool contains_hash(std::uint64_t h) const { return engine_.contains(locate_hash(h)); }
  bool erase_hash(std::uint64_t h) { return engine_.erase(locate_hash(h)); }
  std::size_t count_hash(std::uint64_t h) const { return engine_.count(locate_hash(h)); }

  std::size_t size() const noexcept { return engine_.size(); }
  bool empty() const noexcept { return size() == 0; }
  std::size_t capacity() const noexcept { return engine_.capacity(); }
  double load_factor() const noexcept {
    return static_cast<double>(size()) / static_cast<double>(size_in_tags());
  }
  void clear() { engine_.clear(); }

  std::size_t num_buckets() const noexcept { return engine_.num_buckets(); }
  std::size_t size_in_bytes() const noexcept { return engine_.size_in_bytes(); }
  /// Every byte the filter holds: its table (size_in_bytes()) and, for a concurrent filter, its
  /// lock words and counter shards (up to 136 KiB more, which a small filter notices).
  std::size_t memory_in_bytes() const noexcept { return engine_.memory_in_bytes(); }
  std::size_t size_in_tags() const noexcept { return engine_.size_in_tags(); }
  std::size_t chunks() const noexcept { return engine_.indexer().chunks(); }
  std::uint64_t seed() const noexcept { return seed_; }
  std::size_t max_kicks() const noexcept { return engine_.max_kicks(); }
  /// Relocation hops completed so far (a diagnostic: each moved one tag to its other bucket).
  std::size_t relocations() const noexcept { return engine_.relocations(); }
  std::string info() const {
    const double bits_per_item =
        size() == 0 ? 0.0
                    : static_cast<double>(size_in_bytes()) * 8.0 / static_cast<double>(size());
    return "cuckoo table: " + std::to_string(num_buckets()) + " buckets x " +
           std::to_string(slots_per_bucket) + " slots x " + std::to_string(fingerprint_bits) +
           " bits in " + std::to_string(chunks()) + " " + Alternate::name +
           " chunk(s) = " + std::to_string(size_in_bytes()) + " bytes; " + std::to_string(size()) +
           " items, load " + std::to_string(load_factor()) + ", " + std::to_string(bits_per_item) +
           " bits/item, capacity " + std::to_string(capacity()) + ", seed " + std::to_string(seed_);
  }

  /// Inserts keys as if one at a time in order, stopping at the first key that does not fit.
  /// Returns how many were inserted: exactly keys[0, result) are added (keys[result] is the first
  /// one refused when result < keys.size()). Large batches are inserted chunk by chunk, so other
  /// threads of a concurrent filter may see them in another order, and briefly see a key after a
  /// refused one, which is then erased again. Within a slot or so of full, the keys placed after
  /// a deferred key may take the room its path needed: keys[result] can be refused where inserts
  /// one at a time would have placed it (and refused a later key instead). A large batch refused
  /// in a concurrent filter tries again one key at a time from the refused key, as the keys that
  /// other batches placed past their own refusals may have filled its chunk for a moment. When it
  /// throws (std::bad_alloc for its scratch memory or a thread's first path search; the lock-free
  /// filter's kcas_thread_limit_error), it has first taken back every key it placed.
  std::size_t insert_many(std::span<const Key> keys) {
    return batch_insert(engine_, keys.size(), [&](std::size_t k) { return hash_of(keys[k]); });
  }
  /// insert_many for keys given by their hashes.
  std::size_t insert_many_hashes(std::span<const std::uint64_t> hashes) {
    return batch_insert(engine_, hashes.size(), [&](std::size_t k) { return hashes[k]; });
  }

  /// found[i] = contains(keys[i]); returns how many were found. found.size() must be at least
  /// keys.size().
  std::size_t contains_many(std::span<const Key> keys, std::span<bool> found) const {
    check_output_size("contains_many", keys.size(), found.size());
    return batch_lookup(engine_, keys.size(), key_locator(keys),
                        [&](std::size_t i, bool hit) { found[i] = hit; });
  }
  /// How many of `keys` the filter contains.
  std::size_t contains_many(std::span<const Key> keys) const {
    return batch_lookup(engine_, keys.size(), key_locator(keys), [](std::size_t, bool) {});
  }
  /// contains_many for keys given by their hashes.
  std::size_t contains_many_hashes(std::span<const std::uint64_t> hashes,
                                   std::span<bool> found) const {
    check_output_size("contains_many_hashes", hashes.size(), found.size());
    return batch_lookup(
        engine_, hashes.size(), [&](std::size_t k) { return locate_hash(hashes[k]); },
        [&](std::size_t i, bool hit) { found[i] = hit; });
  }

  /// Runs ops in order, as the calls contains, insert and erase of each op's key one at a time
  /// would, and sets results[i] to what op i's call returned; returns how many returned true.
  /// Each op is one such call for other threads of a concurrent filter. In a table of more than
  /// 1 MiB, the buckets of the next few ops are fetched while one runs, so that a batch keeps
  /// several cache misses in flight, as contains_many does. Unlike insert_many, a refused insert
  /// does not stop the batch: its result is false and the ops after it run. results.size() must
  /// be at least ops.size(), and every op's kind one of operation_kind's (std::invalid_argument
  /// before any op runs). An op that throws (as its single call would) ends the batch: the ops
  /// before it have run and their results are set; the ops after it have not run.
  std::size_t apply_many(std::span<const operation<Key>> ops, std::span<bool> results) {
    check_operations("apply_many", ops, results.size());
    return batch_apply(
        engine_, ops.size(), [&](std::size_t k) { return ops[k].kind; },
        [&](std::size_t k) { return locate(ops[k].key); },
        [&](std::size_t i, bool r) { results[i] = r; });
  }
  /// apply_many for keys given by their hashes (hash_of).
  std::size_t apply_many_hashes(std::span<const operation<std::uint64_t>> ops,
                                std::span<bool> results) {
    check_operations("apply_many_hashes", ops, results.size());
    return batch_apply(
        engine_, ops.size(), [&](std::size_t k) { return ops[k].kind; },
        [&](std::size_t k) { return locate_hash(ops[k].key); },
        [&](std::size_t i, bool r) { results[i] = r; });
  }

  /// Fills this filter, which no other thread may use meanwhile, with `keys` using `threads`
  /// threads (0: all); see ccf::build.
  bulk_result bulk_insert(std::span<const Key> keys, unsigned threads, bool skip_present) {
    if (threads == 0) threads = std::max(1U, std::thread::hardware_concurrency());
    return detail::bulk_insert(
        engine_, keys.size(), [&](std::size_t k) { return hash_of(keys[k]); }, threads,
        skip_present);
  }
  /// bulk_insert of keys given by their hashes (hash_of).
  bulk_result bulk_insert_hashes(std::span<const std::uint64_t> hashes, unsigned threads,
                                 bool skip_present) {
    if (threads == 0) threads = std::max(1U, std::thread::hardware_concurrency());
    return detail::bulk_insert(
        engine_, hashes.size(), [&](std::size_t k) { return hashes[k]; }, threads, skip_present);
  }

  // ---- the thesis's HashTable API ----
  /// The two buckets and the tag of a key.
  position locate(const Key& key) const noexcept { return locate_hash(hash_of(key)); }
  position locate_hash(std::uint64_t h) const noexcept { return engine_.indexer().locate(h); }
  std::size_t alt_index(std::size_t i, tag_type tag) const noexcept {
    return engine_.indexer().alt(i, tag);
  }
  tag_type read_tag(std::size_t i, unsigned j) const { return engine_.read_tag(i, j); }
  void write_tag(std::size_t i, unsigned j, tag_type tag) { engine_.write_tag(i, j, tag); }
  bool find_tag_in_buckets(std::size_t i1, std::size_t i2, tag_type tag) const {
    return engine_.find_tag_in_buckets(i1, i2, tag);
  }
  bool delete_tag_from_bucket(std::size_t i, tag_type tag) {
    return engine_.delete_tag_from_bucket(i, tag);
  }
  bool insert_tag_to_bucket(std::size_t i, tag_type tag, bool kickout, tag_type& old_tag) {
    return engine_.insert_tag_to_bucket(i, tag, kickout, old_tag);
  }

 protected:
  const Engine& engine() const noexcept { return engine_; }

 private:
  basic_filter(const file_header& h, filter_source& src, const allocator_type& alloc)
      : engine_(typename Engine::indexer_type(static_cast<std::size_t>(h.chunks),
                                              static_cast<std::size_t>(h.num_buckets / h.chunks)),
                static_cast<std::size_t>(h.capacity), static_cast<std::size_t>(h.max_kicks), alloc),
        seed_(h.seed),
        key_seed_(key_seed(h.seed)) {
    word_reader reader(src.body(), h);
    const std::size_t tags = engine_.load_canonical(reader);
    const std::uint64_t items = reader.finish();
    if (items != tags) {
      throw format_error("ccf: corrupt filter file (it says " + std::to_string(items) +
                         " items, its table holds " + std::to_string(tags) + " tags)");
    }
  }

  /// checked(src.header), then the length of the rest of the file against it (a stream of
  /// unknown length is read now, before the table is allocated), then whether the table fits in
  /// memory: a file whose size does not match its header is a format_error, whatever the
  /// source, before a header claiming more than the memory is a length_error.
  static const file_header& checked(filter_source& src) {
    const file_header& h = checked(src.header);
    src.body();
    check_fits_in_memory(h.word_count * 8, static_cast<std::size_t>(h.capacity));
    return h;
  }
  /// Checks a file header against this filter type, before anything is allocated.
  static const file_header& checked(const file_header& h) {
    if (h.fingerprint_bits != fingerprint_bits || h.slots_per_bucket != slots_per_bucket) {
      throw format_error("ccf: the file holds a filter of " + std::to_string(h.fingerprint_bits) +
                         "-bit tags in " + std::to_string(h.slots_per_bucket) +
                         "-slot buckets; this filter type has " + std::to_string(fingerprint_bits) +
                         "-bit tags in " + std::to_string(slots_per_bucket) + "-slot buckets");
    }
    if (h.alternate != static_cast<std::uint32_t>(Alternate::kind)) {
      throw format_error("ccf: the file's filter uses " + alternate_of_file(h.alternate) +
                         ", this filter type the " + Alternate::name + " one");
    }
    if (!hash_probe_matches<Key, Hash>(h.hash_probe, key_seed(h.seed))) {
      throw format_error("ccf: the file was written with another key type or hash function");
    }
    if (h.capacity > h.num_buckets * slots_per_bucket) {
      throw format_error("ccf: corrupt filter file (capacity " + std::to_string(h.capacity) +
                         " is more than its " + std::to_string(h.num_buckets * slots_per_bucket) +
                         " slots)");
    }
    // The word count is the packed table's of these bits, slots and buckets: decode_header
    // checked it for every static file (the canonical form of every layout).
    if (h.max_kicks > Engine::max_max_kicks) {
      throw format_error("ccf: corrupt filter file (max kicks " + std::to_string(h.max_kicks) +
                         " is more than " + std::to_string(Engine::max_max_kicks) + ")");
    }
    return h;
  }

  /// The header of this filter's file.
  file_header header() const {
    file_header h;
    h.fingerprint_bits = fingerprint_bits;
    h.slots_per_bucket = slots_per_bucket;
    h.alternate = static_cast<std::uint32_t>(Alternate::kind);
    h.num_buckets = num_buckets();
    h.chunks = chunks();
    h.seed = seed_;
    h.max_kicks = max_kicks();
    h.capacity = capacity();
    h.word_count = canonical_table<typename Engine::layout_type>::words(num_buckets());
    h.hash_probe = hash_probe<Key, Hash>(key_seed_);
    return h;
  }
  template <class Out>
  void write(Out out) const {
    word_writer<Out> writer(std::move(out), header());
    const std::size_t items = engine_.save_canonical(writer);
    writer.finish(items);
  }

  auto key_locator(std::span<const Key> keys) const {
    return [this, keys](std::size_t k) { return locate(keys[k]); };
  }
  /// The alternate-bucket function a file header's code names, for messages.
  static std::string alternate_of_file(std::uint32_t code) {
    switch (static_cast<alternate_kind>(code)) {
      case alternate_kind::global:
        return std::string("the ") + global_alternate::name + " alternate-bucket function";
      case alternate_kind::chunked:
        return std::string("the ") + chunked_alternate::name + " alternate-bucket function";
      case alternate_kind::growing:
        return "the growing filter's alternate-bucket function";
    }
    return "an unknown alternate-bucket function (code " + std::to_string(code) + ")";
  }

  Engine engine_;
  std::uint64_t seed_;
  std::uint64_t key_seed_;
};

}  // namespace detail

/// A filter of type Filter holding `keys`, filled in parallel: keys are hashed and sorted by
/// chunk, then each thread fills whole chunks of the table with no lock (chunked filters; a
/// filter of one chunk is filled by one thread). The result is an ordinary Filter. Throws
/// filter_full_error when some key does not fit in a filter of `capacity` items (at least
/// keys.size() makes sense, less with skip_present and repeated keys). Where fewer threads than
/// options.threads can be started, it runs on those that can.
template <class Filter>
Filter build(std::span<const typename Filter::key_type> keys, std::size_t capacity,
             const build_options& options = {},
             const typename Filter::allocator_type& alloc = typename Filter::allocator_type()) {
  Filter f(capacity, options.seed, options.max_kicks, alloc);
  const bulk_result r = f.bulk_insert(keys, options.threads, options.skip_present);
  if (r.refused != 0) {
    throw filter_full_error("ccf: filter full: " + std::to_string(r.refused) + " of " +
                            std::to_string(keys.size()) + " keys did not fit in a filter of " +
                            std::to_string(f.capacity()) + " items");
  }
  return f;
}

}  // namespace ccf
