// ccf — concurrent cuckoo filters.
// growing_cuckoo_filter.hpp: cuckoo filters that grow as items come, keeping their
// false-positive rate.
//
// ccf::growing_cuckoo_filter<Key, Hash> (one thread at a time) and
// ccf::concurrent_growing_cuckoo_filter<Key, Hash> (any number of threads) are constructed as
// (initial_capacity, target_fpr) and double their table whenever it is full — as many times as
// needed, with no key kept:
//   - a lookup probes two buckets at any size (not a pair per level, as chained sub-filters do);
//   - the false-positive rate stays within the target for growth_options::max_doublings splits
//     (default 16: from one chunk of 2^15 buckets to 2^31), and degrades gently after that;
//   - bits per item, at the load where the table doubles (95 %), are about 2 to 5 more than
//     those of the smallest static filter for the same rate at rates 1e-2 to 1e-4, and fewer
//     below 1e-4 (about 4 to 8 fewer at 1e-5 and 1e-6): the slot takes any even width from 12
//     to 32 bits, not only the static widths 4, 8, 12, 16, 32 (docs/growing.md has the table);
//   - a doubling copies each entry once (a chunk split, in parallel on large tables), so inserts
//     cost about what a static filter's do, amortised;
//   - in the concurrent filter, lookups go on, lock-free, while the table doubles, and never miss
//     an item; writers wait for the doubling;
//   - insert refuses (returns false, changing no item) only where copies crowd the table and a
//     doubling cannot help: copies of one item past 8; while the table is far from full, a copy
//     that finds no room (below an eighth of full, any item); an item that finds no room even
//     in the table doubled for it (an insert doubles at most once). Keys inserted many times
//     each do not make it double without bound (docs/growing.md, "When").
// The design and the bound are in detail/growing_core.hpp and docs/growing.md. Items: any Key with
// a ccf::hash; erase only what was inserted (while the table is small, erasing a key that was
// never inserted is refused). Files: save() / to_bytes() and the loading constructors, in the
// format of the other filters (detail/serialization.hpp) with the growing filter's own
// alternate-function code, so a growing filter's file never loads as a static filter or back.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ccf/allocator.hpp"
#include "ccf/detail/batch_ops.hpp"
#include "ccf/detail/canonical_table.hpp"
#include "ccf/detail/growing_core.hpp"
#include "ccf/detail/parallel.hpp"
#include "ccf/detail/serialization.hpp"
#include "ccf/hash.hpp"

namespace ccf {

struct growth_options {
  std::uint64_t seed = default_seed;
  /// Splits the false-positive target is kept for (it degrades gently after); at most 64.
  unsigned max_doublings = 16;
  /// Threads that split a large table (0: every hardware thread).
  unsigned threads = 0;
};

namespace detail {

/// A growing core of any slot width, seen through its hashes.
class growing_model {
 public:
  virtual ~growing_model() = default;
  virtual bool insert(std::uint64_t h) = 0;
  virtual bool contains(std::uint64_t h) const = 0;
  virtual bool erase(std::uint64_t h) = 0;
  virtual std::size_t count(std::uint64_t h) const = 0;
  virtual std::size_t size() const noexcept = 0;
  virtual std::size_t capacity() const = 0;
  virtual std::size_t num_buckets() const = 0;
  virtual std::size_t size_in_tags() const = 0;
  virtual std::size_t size_in_bytes() const = 0;
  virtual std::size_t memory_in_bytes() const = 0;
  virtual std::size_t chunks() const = 0;
  virtual unsigned doublings() const noexcept = 0;
  virtual unsigned splits() const = 0;
  virtual void clear() = 0;
  /// Saving, with writers paused: start(header with the table's fields, whether hashes are kept,
  /// how many) returns the table's words to write, [first, last); then word(index, w) for those
  /// and for every kept hash, by their index among the words after the prefix (the table's
  /// words, then the hashes); returns the item count.
  using word_span = std::pair<std::size_t, std::size_t>;
  using save_start = std::function<word_span(file_header&, bool, std::size_t)>;
  using save_word = std::function<void(std::size_t, std::uint64_t)>;
  virtual std::size_t save(const save_start& start, const save_word& word) const = 0;
  /// Loading: the words the table of header h takes; then the table; then what it holds.
  virtual std::size_t table_words(const file_header& h) const = 0;
  virtual std::size_t load_table(const file_header& h, word_reader& words) = 0;
  /// False when the kept hashes disagree with the table.
  virtual bool set_contents(std::size_t items, unsigned doublings, bool keeps_hashes,
                            const std::vector<std::uint64_t>& hashes) = 0;
  /// An empty model of the same width for one item, with the same threads and allocator (what a
  /// moved-from filter keeps).
  virtual std::unique_ptr<growing_model> empty_like() const = 0;
};

template <unsigned W, bool Concurrent, class Allocator>
class growing_model_of final : public growing_model {
 public:
  using core_type = growing_core<W, Concurrent, Allocator>;
  growing_model_of(std::size_t capacity, unsigned threads, const Allocator& alloc)
      : core_(capacity, threads, alloc) {}
  std::unique_ptr<growing_model> empty_like() const override {
    return std::make_unique<growing_model_of>(1, core_.threads(), core_.get_allocator());
  }

  bool insert(std::uint64_t h) override { return core_.insert(h); }
  bool contains(std::uint64_t h) const override { return core_.contains(h); }
  bool erase(std::uint64_t h) override { return core_.erase(h); }
  std::size_t count(std::uint64_t h) const override { return core_.count(h); }
  std::size_t size() const noexcept override { return core_.size(); }
  std::size_t capacity() const override { return core_.capacity(); }
  std::size_t num_buckets() const override { return core_.num_buckets(); }
  std::size_t size_in_tags() const override { return core_.size_in_tags(); }
  std::size_t size_in_bytes() const override { return core_.size_in_bytes(); }
  std::size_t memory_in_bytes() const override { return core_.memory_in_bytes(); }
  std::size_t chunks() const override { return core_.chunks(); }
  unsigned doublings() const noexcept override { return core_.doublings(); }
  unsigned splits() const override { return core_.splits(); }

  void clear() override { core_.clear(); }
  std::size_t save(const save_start& start, const save_word& word) const override {
    return core_.with_writers_paused([&] {
      return core_.with_state([&](const typename core_type::state& s) {
        file_header h;
        h.num_buckets = s.table->num_buckets();
        h.chunks = std::size_t{1} << s.k;
        h.capacity = std::max<std::size_t>(1, core_.capacity());
        h.word_count = canonical_table<typename core_type::layout>::words(h.num_buckets);
        std::vector<std::uint64_t> hashes;
        const bool keeps_hashes = core_.keeps_hashes();
        if (keeps_hashes) core_.for_each_hash([&](std::uint64_t x) { hashes.push_back(x); });
        const std::size_t table_words = h.word_count;
        const auto [first, last] = start(h, keeps_hashes, hashes.size());
        std::size_t k = first;
        auto table_word = [&](std::uint64_t w) { word(k++, w); };
        s.table->save_canonical_words(first, last, table_word);
        k = table_words;
        for (std::uint64_t x : hashes)
          word(k++, x);
        return core_.size();
      });
    });
  }
  std::size_t table_words(const file_header& h) const override {
    return canonical_table<typename core_type::layout>::words(
        static_cast<std::size_t>(h.num_buckets));
  }
  std::size_t load_table(const file_header& h, word_reader& words) override {
    return core_.load_table(static_cast<unsigned>(std::countr_zero(h.chunks)),
                            static_cast<std::size_t>(h.num_buckets / h.chunks), words);
  }
  bool set_contents(std::size_t items, unsigned doublings, bool keeps_hashes,
                    const std::vector<std::uint64_t>& hashes) override {
    return core_.set_contents(items, doublings, keeps_hashes, hashes);
  }

 private:
  core_type core_;
};

template <bool Concurrent, class Allocator>
std::unique_ptr<growing_model> make_growing_model(unsigned width, std::size_t capacity,
                                                  unsigned threads, const Allocator& alloc) {
  switch (width) {
    case 12:
      return std::make_unique<growing_model_of<12, Concurrent, Allocator>>(capacity, threads,
                                                                           alloc);
    case 14:
      return std::make_unique<growing_model_of<14, Concurrent, Allocator>>(capacity, threads,
                                                                           alloc);
    case 16:
      return std::make_unique<growing_model_of<16, Concurrent, Allocator>>(capacity, threads,
                                                                           alloc);
    case 18:
      return std::make_unique<growing_model_of<18, Concurrent, Allocator>>(capacity, threads,
                                                                           alloc);
    case 20:
      return std::make_unique<growing_model_of<20, Concurrent, Allocator>>(capacity, threads,
                                                                           alloc);
    case 22:
      return std::make_unique<growing_model_of<22, Concurrent, Allocator>>(capacity, threads,
                                                                           alloc);
    case 24:
      return std::make_unique<growing_model_of<24, Concurrent, Allocator>>(capacity, threads,
                                                                           alloc);
    case 26:
      return std::make_unique<growing_model_of<26, Concurrent, Allocator>>(capacity, threads,
                                                                           alloc);
    case 28:
      return std::make_unique<growing_model_of<28, Concurrent, Allocator>>(capacity, threads,
                                                                           alloc);
    case 30:
      return std::make_unique<growing_model_of<30, Concurrent, Allocator>>(capacity, threads,
                                                                           alloc);
    case 32:
      return std::make_unique<growing_model_of<32, Concurrent, Allocator>>(capacity, threads,
                                                                           alloc);
  }
  throw std::invalid_argument("ccf: growing filters have slots of 12, 14, ..., 32 bits, not " +
                              std::to_string(width));
}

/// The words a growing filter's file holds before its table: target rate, max doublings,
/// doublings done, whether it keeps hashes, how many.
inline constexpr std::size_t growing_prefix_words = 5;
using growing_prefix = std::array<std::uint64_t, growing_prefix_words>;

/// A growing filter's whole file streamed to Out (header, prefix words, table, hashes kept,
/// trailer), as a part that basic_growing_filter::write_part makes.
template <class Out>
class growing_whole_file {
 public:
  explicit growing_whole_file(Out out) : out_(std::move(out)) {}
  growing_model::word_span start(const file_header& h, const growing_prefix& prefix) {
    writer_.emplace(std::move(out_), h);
    for (std::uint64_t w : prefix)
      (*writer_)(w);
    return {0, static_cast<std::size_t>(h.word_count)};
  }
  void put(std::size_t, std::uint64_t w) { (*writer_)(w); }
  void finish(std::size_t items) { writer_->finish(items); }

 private:
  Out out_;
  std::optional<word_writer<Out>> writer_;
};

/// Bytes [offset, offset + len) of a growing filter's file, those it has, in `into`: from the
/// words they cover alone where they end before the trailer (window_writer), else from the
/// whole file streamed; size() is the file's.
class growing_file_range {
 public:
  growing_file_range(std::uint64_t offset, std::uint64_t len, std::vector<std::byte>& into)
      : offset_(offset), len_(len), into_(&into) {}
  growing_model::word_span start(const file_header& h, const growing_prefix& prefix) {
    size_ = h.file_bytes();
    if (window_writer::fits(h, offset_, len_)) {
      window_.emplace(h, offset_, len_, *into_);
      for (std::size_t k = 0; k < prefix.size(); ++k)
        window_->put(k, prefix[k]);
      const auto table = [](std::uint64_t k) {
        return static_cast<std::size_t>(k - std::min<std::uint64_t>(k, growing_prefix_words));
      };
      return {table(window_->first_word()), table(window_->end_word())};
    }
    if (offset_ >= size_ || len_ == 0) return {0, 0};
    whole_.emplace(range_out{offset_, len_, into_, &streamed_});
    return whole_->start(h, prefix);
  }
  void put(std::size_t k, std::uint64_t w) {
    if (window_) window_->put(growing_prefix_words + k, w);
    if (whole_) whole_->put(k, w);
  }
  void finish(std::size_t items) {
    if (window_) window_->finish();
    if (whole_) whole_->finish(items);
  }
  std::uint64_t size() const noexcept { return size_; }

 private:
  std::uint64_t offset_;
  std::uint64_t len_;
  std::vector<std::byte>* into_;
  std::uint64_t size_ = 0;
  std::uint64_t streamed_ = 0;
  std::optional<window_writer> window_;
  std::optional<growing_whole_file<range_out>> whole_;
};

template <class Key, class Hash, bool Concurrent, class Allocator = table_allocator<std::uint64_t>>
class basic_growing_filter {
  static_assert(require_key_hasher<Hash, Key>());

 public:
  using key_type = Key;
  using hasher = Hash;
  using allocator_type = Allocator;

  /// A filter for `initial_capacity` items before it first doubles, keeping false positives
  /// within `target_fpr`. Throws std::invalid_argument for capacity 0, a rate out of reach or
  /// max_doublings above 64.
  basic_growing_filter(std::size_t initial_capacity, double target_fpr,
                       const growth_options& o = {}, const Allocator& alloc = Allocator())
      : target_(target_fpr),
        max_doublings_(o.max_doublings),
        width_(growing_width(target_fpr, o.max_doublings)),
        seed_(o.seed),
        key_seed_(key_seed(o.seed)),
        model_(make_growing_model<Concurrent>(width_, initial_capacity, o.threads, alloc)) {}

  /// A move leaves `other` an empty filter for one item with its settings, made first: a
  /// moved-from filter answers every call as an empty one does (it crashed on its null model).
  /// As the engine's, the move is noexcept: no memory for that small filter ends the program.
  basic_growing_filter(basic_growing_filter&& other) noexcept
      : target_(other.target_),
        max_doublings_(other.max_doublings_),
        width_(other.width_),
        seed_(other.seed_),
        key_seed_(other.key_seed_),
        model_(other.model_->empty_like()) {
    std::swap(model_, other.model_);
  }
  basic_growing_filter& operator=(basic_growing_filter&& other) noexcept {
    if (this != &other) {
      basic_growing_filter taken(std::move(other));
      swap(taken);
    }
    return *this;
  }
  ~basic_growing_filter() = default;
  void swap(basic_growing_filter& other) noexcept {
    std::swap(target_, other.target_);
    std::swap(max_doublings_, other.max_doublings_);
    std::swap(width_, other.width_);
    std::swap(seed_, other.seed_);
    std::swap(key_seed_, other.key_seed_);
    std::swap(model_, other.model_);
  }

  /// Loads a filter saved by save(); throws ccf::format_error like the other filters.
  explicit basic_growing_filter(std::istream& in, unsigned threads = 0,
                                const Allocator& alloc = Allocator())
      : basic_growing_filter(filter_source(in), threads, alloc) {}
  explicit basic_growing_filter(std::span<const std::byte> bytes, unsigned threads = 0,
                                const Allocator& alloc = Allocator())
      : basic_growing_filter(filter_source(bytes), threads, alloc) {}
  /// Loads from a source whose header was read already (the runtime filter's loader).
  basic_growing_filter(filter_source& src, unsigned threads, const Allocator& alloc = Allocator())
      : basic_growing_filter(checked(src.header), src, threads, alloc) {}

  std::uint64_t hash_of(const Key& key) const noexcept { return Hash{}(key, key_seed_); }
  /// False, changing no item, only where copies crowd the table and a doubling cannot help (see
  /// the top of this file; docs/growing.md, "When").
  bool insert(const Key& key) { return model_->insert(hash_of(key)); }
  bool contains(const Key& key) const { return model_->contains(hash_of(key)); }
  bool erase(const Key& key) { return model_->erase(hash_of(key)); }
  std::size_t count(const Key& key) const { return model_->count(hash_of(key)); }
  // A filter of strings takes a std::string_view or a C string as it is (ccf::transparent_key).
  template <transparent_key<Hash, Key> K>
  std::uint64_t hash_of(const K& key) const noexcept {
    return Hash{}(key, key_seed_);
  }
  template <transparent_key<Hash, Key> K>
  bool insert(const K& key) {
    return model_->insert(hash_of(key));
  }
  template <transparent_key<Hash, Key> K>
  bool contains(const K& key) const {
    return model_->contains(hash_of(key));
  }
  template <transparent_key<Hash, Key> K>
  bool erase(const K& key) {
    return model_->erase(hash_of(key));
  }
  template <transparent_key<Hash, Key> K>
  std::size_t count(const K& key) const {
    return model_->count(hash_of(key));
  }
  bool insert_hash(std::uint64_t h) { return model_->insert(h); }
  bool contains_hash(std::uint64_t h) const { return model_->contains(h); }
  bool erase_hash(std::uint64_t h) { return model_->erase(h); }
  std::size_t count_hash(std::uint64_t h) const { return model_->count(h); }

  /// Inserts keys in order until one is refused (only copies of items are: see the top of this
  /// file); returns how many were inserted: exactly keys[0, result). An insert that throws
  /// (std::bad_alloc) ends the batch with nothing of its key inserted; the keys before it stay,
  /// as they would inserted one at a time.
  std::size_t insert_many(std::span<const Key> keys) {
    std::size_t i = 0;
    while (i < keys.size() && insert(keys[i]))
      ++i;
    return i;
  }
  std::size_t insert_many_hashes(std::span<const std::uint64_t> hashes) {
    std::size_t i = 0;
    while (i < hashes.size() && model_->insert(hashes[i]))
      ++i;
    return i;
  }
  /// found[i] = contains(keys[i]); returns how many were found.
  std::size_t contains_many(std::span<const Key> keys, std::span<bool> found) const {
    check_output_size("contains_many", keys.size(), found.size());
    std::size_t hits = 0;
    for (std::size_t i = 0; i < keys.size(); ++i)
      hits += (found[i] = contains(keys[i])) ? 1 : 0;
    return hits;
  }
  std::size_t contains_many_hashes(std::span<const std::uint64_t> hashes,
                                   std::span<bool> found) const {
    check_output_size("contains_many_hashes", hashes.size(), found.size());
    std::size_t hits = 0;
    for (std::size_t i = 0; i < hashes.size(); ++i)
      hits += (found[i] = model_->contains(hashes[i])) ? 1 : 0;
    return hits;
  }
  /// Runs ops in order, one call at a time (as the static filters' apply_many: results[i] is
  /// what op i's call returned; a refused insert does not stop the batch; an op that throws, as
  /// a doubling that finds no memory, ends it after the ops before it); returns how many
  /// returned true.
  std::size_t apply_many(std::span<const operation<Key>> ops, std::span<bool> results) {
    return apply_by("apply_many", ops, results, [&](const Key& key) { return hash_of(key); });
  }
  std::size_t apply_many_hashes(std::span<const operation<std::uint64_t>> ops,
                                std::span<bool> results) {
    return apply_by("apply_many_hashes", ops, results, [](std::uint64_t h) { return h; });
  }
  /// Inserts `keys` (skipping those it already answers yes for, with skip_present); the
  /// concurrent filter uses `threads` threads (0: all), the other one. Only copies of items are
  /// refused (see the top of this file).
  bulk_result bulk_insert(std::span<const Key> keys, unsigned threads = 0,
                          bool skip_present = false) {
    return bulk_insert_by(
        keys.size(), [&](std::size_t i) { return hash_of(keys[i]); }, threads, skip_present);
  }
  bulk_result bulk_insert_hashes(std::span<const std::uint64_t> hashes, unsigned threads = 0,
                                 bool skip_present = false) {
    return bulk_insert_by(
        hashes.size(), [&](std::size_t i) { return hashes[i]; }, threads, skip_present);
  }

  std::size_t size() const noexcept { return model_->size(); }
  bool empty() const noexcept { return size() == 0; }
  /// Items it takes before it next doubles: 95 % of its slots (fewer once entries copied at splits
  /// fill slots too, docs/growing.md, Memory).
  std::size_t capacity() const { return model_->capacity(); }
  std::size_t num_buckets() const { return model_->num_buckets(); }
  std::size_t size_in_tags() const { return model_->size_in_tags(); }
  /// The table's bytes.
  std::size_t size_in_bytes() const { return model_->size_in_bytes(); }
  /// Every byte it holds: the table, while it is small the hashes it keeps to rebuild it, and
  /// a concurrent filter's locks and counter shards.
  std::size_t memory_in_bytes() const { return model_->memory_in_bytes(); }
  /// Chunks of the table (1 while it is small, then 2^splits).
  std::size_t chunks() const { return model_->chunks(); }
  double load_factor() const {
    return static_cast<double>(size()) / static_cast<double>(size_in_tags());
  }
  /// Times the table doubled so far.
  unsigned doublings() const noexcept { return model_->doublings(); }
  /// Bits of each slot (anchor and fingerprint).
  unsigned fingerprint_bits() const noexcept { return width_; }
  double target_fpr() const noexcept { return target_; }
  unsigned max_doublings() const noexcept { return max_doublings_; }
  /// The bound on the false-positive rate of the table as it is (docs/growing.md).
  double fpr_bound() const { return growing_fpr_bound(width_, model_->splits()); }
  std::uint64_t seed() const noexcept { return seed_; }

  void clear() { model_->clear(); }

  void save(std::ostream& out) const { write(stream_out{&out}); }
  std::vector<std::byte> to_bytes() const {
    std::vector<std::byte> bytes;
    write(buffer_out{&bytes});
    return bytes;
  }
  /// Bytes [offset, offset + len) of to_bytes() in `out`, as the other filters' read_bytes.
  std::uint64_t read_bytes(std::uint64_t offset, std::uint64_t len,
                           std::vector<std::byte>& out) const {
    out.clear();
    growing_file_range range(offset, len, out);
    write_part(range);
    return range.size();
  }

 private:
  basic_growing_filter(filter_source&& src, unsigned threads, const Allocator& alloc)
      : basic_growing_filter(static_cast<filter_source&>(src), threads, alloc) {}
  /// Whether a filter of this target rate and max doublings has slots of `width` bits (as every
  /// constructor chooses them).
  static bool is_width_for(unsigned width, double target, unsigned max_doublings) {
    try {
      return growing_width(target, max_doublings) == width;
    } catch (const std::invalid_argument&) {
      return false;
    }
  }
  basic_growing_filter(const file_header& h, filter_source& src, unsigned threads,
                       const Allocator& alloc)
      : width_(h.fingerprint_bits),
        seed_(h.seed),
        key_seed_(key_seed(h.seed)),
        model_(make_growing_model<Concurrent>(width_, 1, threads, alloc)) {
    if (h.word_count < growing_prefix_words) {
      throw format_error("ccf: corrupt growing filter file (" + std::to_string(h.word_count) +
                         " words)");
    }
    word_reader words(src.body(), h);
    target_ = std::bit_cast<double>(words());
    const std::uint64_t max_doublings = words();
    const std::uint64_t doublings = words();
    const std::uint64_t keeps_hashes = words();
    const std::uint64_t kept = words();
    const std::uint64_t rest = h.word_count - growing_prefix_words;
    max_doublings_ = static_cast<unsigned>(
        std::min<std::uint64_t>(max_doublings, growing_max_max_doublings + 1));
    // Each doubling at least doubles the table, which started with a bucket or more: a count
    // above log2(buckets) is forged (and would grow past what the next load accepts). A table of
    // one chunk (at most growing_chunk buckets) keeps its items' hashes, one of more does not: a
    // single chunk without them would be split into chunks of a size no file has.
    if (!(target_ > 0.0 && target_ < 1.0) || max_doublings > growing_max_max_doublings ||
        doublings >= static_cast<std::uint64_t>(std::bit_width(h.num_buckets)) ||
        keeps_hashes > 1 || (keeps_hashes == 0 && kept != 0) ||
        (keeps_hashes != 0) != (h.chunks == 1) || h.num_buckets > growing_chunk * h.chunks ||
        kept > rest || rest - kept != model_->table_words(h)) {
      throw format_error("ccf: corrupt growing filter file (its parts do not fit together)");
    }
    if (!is_width_for(width_, target_, static_cast<unsigned>(max_doublings))) {
      throw format_error("ccf: corrupt growing filter file (" + std::to_string(width_) +
                         "-bit slots are not those of its target rate " +
                         params_format_double(target_) + " and " + std::to_string(max_doublings) +
                         " doublings)");
    }
    const std::size_t entries = model_->load_table(h, words);
    std::vector<std::uint64_t> hashes(static_cast<std::size_t>(kept));
    for (std::uint64_t& x : hashes)
      x = words();
    const std::uint64_t items = words.finish();
    if (items > entries || (keeps_hashes != 0 && entries != items)) {
      throw format_error("ccf: corrupt growing filter file (it says " + std::to_string(items) +
                         " items, its table holds " + std::to_string(entries) + " entries)");
    }
    if (keeps_hashes != 0 && kept != items) {
      throw format_error("ccf: corrupt growing filter file (it says " + std::to_string(items) +
                         " items, it keeps " + std::to_string(kept) + " hashes)");
    }
    if (!model_->set_contents(static_cast<std::size_t>(items), static_cast<unsigned>(doublings),
                              keeps_hashes != 0, hashes)) {
      throw format_error("ccf: corrupt growing filter file (its kept hashes are not its table's)");
    }
  }

  template <class HashAt>
  bulk_result bulk_insert_by(std::size_t n, HashAt hash_at, unsigned threads, bool skip_present) {
    if (!Concurrent || threads == 0) {
      threads = Concurrent ? std::max(1U, std::thread::hardware_concurrency()) : 1;
    }
    const std::size_t workers = std::clamp<std::size_t>(threads, 1, n / 4096 + 1);
    std::atomic<std::size_t> skipped{0}, refused{0};
    std::vector<std::exception_ptr> failures(workers);
    // Without skip_present worker t takes a range of the items. With it, the items whose hash
    // falls to t (every worker hashes every item): the copies of a key go to one worker, which
    // tests and inserts them in order (two workers could both find a key absent and store it
    // twice).
    const auto owner = [workers](std::uint64_t h) {
      return static_cast<std::size_t>(((h >> 32) * workers) >> 32);
    };
    const auto run = [&](std::size_t t) {
      std::size_t skips = 0, refusals = 0;
      const bool by_hash = skip_present && workers > 1;
      try {
        const std::size_t lo = by_hash ? 0 : n * t / workers;
        const std::size_t hi = by_hash ? n : n * (t + 1) / workers;
        for (std::size_t i = lo; i < hi; ++i) {
          const std::uint64_t h = hash_at(i);
          if (by_hash && owner(h) != t) continue;
          if (skip_present && model_->contains(h)) {
            ++skips;
          } else if (!model_->insert(h)) {
            ++refusals;
          }
        }
      } catch (...) {
        failures[t] = std::current_exception();
      }
      skipped.fetch_add(skips, std::memory_order_relaxed);
      refused.fetch_add(refusals, std::memory_order_relaxed);
    };
    run_shares(workers, run);  // the shares no thread could take run here
    for (const std::exception_ptr& e : failures) {
      if (e) std::rethrow_exception(e);
    }
    bulk_result r;
    r.duplicates = skipped.load();
    r.refused = refused.load();
    r.inserted = n - r.duplicates - r.refused;
    return r;
  }

  template <class K, class HashOf>
  std::size_t apply_by(const char* member, std::span<const operation<K>> ops,
                       std::span<bool> results, HashOf&& hash_of_key) {
    check_operations(member, ops, results.size());
    std::size_t yes = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const std::uint64_t h = hash_of_key(ops[i].key);
      const bool r = ops[i].kind == operation_kind::contains ? model_->contains(h)
                     : ops[i].kind == operation_kind::insert ? model_->insert(h)
                                                             : model_->erase(h);
      results[i] = r;
      yes += r ? 1 : 0;
    }
    return yes;
  }
  static const file_header& checked(const file_header& h) {
    if (h.alternate != static_cast<std::uint32_t>(alternate_kind::growing)) {
      throw format_error("ccf: the file does not hold a growing filter");
    }
    if (h.slots_per_bucket != growing_slots || h.fingerprint_bits < 12 || h.fingerprint_bits > 32 ||
        h.fingerprint_bits % 2 != 0 || !std::has_single_bit(h.chunks) ||
        (h.chunks > 1 && h.num_buckets / h.chunks != growing_chunk)) {
      throw format_error("ccf: corrupt growing filter file (layout " +
                         std::to_string(h.fingerprint_bits) + " bits x " +
                         std::to_string(h.slots_per_bucket) + " slots, " +
                         std::to_string(h.chunks) + " chunks)");
    }
    if (!hash_probe_matches<Key, Hash>(h.hash_probe, key_seed(h.seed))) {
      throw format_error("ccf: the file was written with another key type or hash function");
    }
    return h;
  }

  /// Completes the header of a file whose table fields the model filled, and returns the words
  /// between the header and the table.
  growing_prefix fill_header(file_header& h, bool keeps_hashes, std::size_t kept) const {
    h.fingerprint_bits = width_;
    h.slots_per_bucket = growing_slots;
    h.alternate = static_cast<std::uint32_t>(alternate_kind::growing);
    h.seed = seed_;
    h.max_kicks = growing_max_kicks;
    h.hash_probe = hash_probe<Key, Hash>(key_seed_);
    h.word_count += growing_prefix_words + kept;
    return {std::bit_cast<std::uint64_t>(target_), max_doublings_, model_->doublings(),
            keeps_hashes ? 1u : 0u, kept};
  }

  /// Streams the file to `part` from one snapshot: part.start(header, prefix words) returns the
  /// table's words it takes; part.put(index, word) for those and the hashes kept (as
  /// growing_model::save gives them); part.finish(item count).
  template <class Part>
  void write_part(Part& part) const {
    const auto start = [&](file_header& h, bool keeps_hashes, std::size_t kept) {
      const growing_prefix prefix = fill_header(h, keeps_hashes, kept);
      return part.start(h, prefix);
    };
    const std::size_t items =
        model_->save(start, [&](std::size_t k, std::uint64_t w) { part.put(k, w); });
    part.finish(items);
  }
  template <class Out>
  void write(Out out) const {
    growing_whole_file<Out> whole(std::move(out));
    write_part(whole);
  }

  double target_ = 0;
  unsigned max_doublings_ = 16;
  unsigned width_;
  std::uint64_t seed_;
  std::uint64_t key_seed_;
  std::unique_ptr<growing_model> model_;
};

}  // namespace detail

template <class Key, class Hash = ccf::hash<Key>, class Allocator = table_allocator<std::uint64_t>>
using growing_cuckoo_filter = detail::basic_growing_filter<Key, Hash, false, Allocator>;
template <class Key, class Hash = ccf::hash<Key>, class Allocator = table_allocator<std::uint64_t>>
using concurrent_growing_cuckoo_filter = detail::basic_growing_filter<Key, Hash, true, Allocator>;

}  // namespace ccf
