// ccf — concurrent cuckoo filters.
// runtime_filter.hpp: one filter type whose layout and kind are chosen at run time.
//
// ccf::runtime_filter holds byte-string keys (std::string_view, hashed with ccf::hash) in any of
// ccf's layouts — fingerprint bits 4, 8, 12, 16, 32 and buckets of 2, 4, 8 slots — and kinds:
//   filter_kind::sequential  ccf::cuckoo_filter (one thread at a time),
//   filter_kind::concurrent  ccf::concurrent_cuckoo_filter with striped locks,
//   filter_kind::lockfree    ccf::lockfree_cuckoo_filter (layouts with bits x slots <= 48),
// or a growing filter (filter_config::growing_for_rate; ccf::growing_cuckoo_filter, or
// ccf::concurrent_growing_cuckoo_filter for the concurrent kind), which reports full only for
// items inserted many times (docs/growing.md, "When").
// It is what the ccf tool, the Python package and the Redis module use, so that a layout picked
// from a target false-positive rate (filter_config::for_rate) or read from a file needs no
// template instantiation of theirs. Files are those of the typed filters over std::string /
// std::string_view keys with chunked_alternate (the default), in either direction; load() reads
// the header to pick the layout (a global_alternate file is refused, naming its alternate).
//
// The filter types behind it (about forty) take minutes to compile; ccf's own programs compile
// them once, in the library ccf_runtime_models (CCF_RUNTIME_FILTER_PREBUILT in config.hpp).
//
// Every member forwards to the typed filter through one virtual call; batches cost one virtual
// call per batch. Keys can also be given by hash (hash_of(key), insert_hash, contains_many_hashes
// ...) for callers that hash once and use the hash several times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ccf/allocator.hpp"
#include "ccf/concurrent_cuckoo_filter.hpp"
#include "ccf/config.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/detail/runtime_model.hpp"
#include "ccf/filter_file.hpp"
#include "ccf/lockfree_cuckoo_filter.hpp"
#include "ccf/params.hpp"

namespace ccf {

enum class filter_kind : unsigned { sequential, concurrent, lockfree };

inline const char* to_string(filter_kind k) noexcept {
  switch (k) {
    case filter_kind::sequential:
      return "sequential";
    case filter_kind::concurrent:
      return "concurrent";
    case filter_kind::lockfree:
      return "lockfree";
  }
  return "?";
}
inline std::optional<filter_kind> parse_filter_kind(std::string_view s) noexcept {
  if (s == "sequential") return filter_kind::sequential;
  if (s == "concurrent") return filter_kind::concurrent;
  if (s == "lockfree") return filter_kind::lockfree;
  return std::nullopt;
}

/// The shape of a runtime filter.
struct filter_config {
  std::size_t capacity = 0;
  unsigned fingerprint_bits = 16;
  unsigned slots_per_bucket = 4;
  filter_kind kind = filter_kind::sequential;
  std::uint64_t seed = default_seed;
  std::size_t max_kicks = 500;
  /// A growing filter: capacity is its initial capacity, target_fpr its rate, kept for
  /// max_doublings doublings (fingerprint_bits is then its slot width, slots_per_bucket 4).
  bool growing = false;
  double target_fpr = 0.0;
  unsigned max_doublings = 16;

  /// A growing filter for `initial_capacity` items before its first doubling, at `fpr`.
  static filter_config growing_for_rate(std::size_t initial_capacity, double fpr,
                                        filter_kind kind = filter_kind::sequential,
                                        unsigned max_doublings = 16) {
    filter_config c;
    c.capacity = initial_capacity;
    c.kind = kind;
    c.growing = true;
    c.target_fpr = fpr;
    c.max_doublings = max_doublings;
    c.fingerprint_bits = detail::growing_width(fpr, max_doublings);
    c.slots_per_bucket = detail::growing_slots;
    return c;
  }

  /// The layout of least memory for `capacity` items at false-positive rate `fpr`
  /// (ccf::smallest_layout_for; for the lock-free kind, among the layouts it supports, counting
  /// its 64-bit word a bucket, and of equal memory the lowest expected rate).
  static filter_config for_rate(std::size_t capacity, double fpr,
                                filter_kind kind = filter_kind::sequential) {
    return least_among(capacity, fpr, kind, 0);
  }
  /// for_rate among the layouts of `slots` slots a bucket (2, 4 or 8): the one of least memory
  /// that reaches `fpr` in such buckets.
  static filter_config for_rate_with_slots(std::size_t capacity, double fpr, unsigned slots,
                                           filter_kind kind = filter_kind::sequential) {
    if (slots != 2 && slots != 4 && slots != 8) {
      throw std::invalid_argument("ccf: slots per bucket must be 2, 4 or 8, not " +
                                  std::to_string(slots));
    }
    return least_among(capacity, fpr, kind, slots);
  }

 private:
  /// for_rate among the layouts of `slots` slots a bucket (0: any).
  static filter_config least_among(std::size_t capacity, double fpr, filter_kind kind,
                                   unsigned slots) {
    const bool lockfree = kind == filter_kind::lockfree;
    const auto allowed = [&](unsigned b, unsigned s) {
      return (slots == 0 || s == slots) && (!lockfree || detail::versioned_layout_supported(b, s));
    };
    // Every lock-free bucket is one 64-bit word, whatever its tags fill of it.
    const filter_params p =
        lockfree ? detail::smallest_layout_among(capacity, fpr, allowed,
                                                 [](unsigned, unsigned) { return 64.0; })
                 : detail::smallest_layout_among(capacity, fpr, allowed);
    if (p.fingerprint_bits == 0) {
      throw std::invalid_argument(
          std::string("ccf: no ") +
          (lockfree ? "lock-free layout (at most 48 tag bits per bucket)" : "layout") +
          (slots != 0 ? " of " + std::to_string(slots) + " slots a bucket" : std::string()) +
          " reaches a false-positive rate of " + detail::params_format_double(fpr) +
          (lockfree ? "" : " (32-bit fingerprints are the widest)"));
    }
    filter_config c;
    c.capacity = capacity;
    c.kind = kind;
    c.fingerprint_bits = p.fingerprint_bits;
    c.slots_per_bucket = p.slots_per_bucket;
    return c;
  }
};

namespace detail {

/// The runtime model of the typed filter of B-bit fingerprints, S slots and `kind`, made from
/// `args` (a shape, or a file).
template <unsigned B, unsigned S, class Allocator, class... Args>
std::unique_ptr<runtime_model> model_of_kind(filter_kind kind, Args&&... args) {
  using key = std::string_view;
  using hash = ccf::hash<std::string_view>;
  using alt = chunked_alternate;
  switch (kind) {
    case filter_kind::sequential:
      return std::make_unique<runtime_model_of<cuckoo_filter<key, B, S, hash, alt, Allocator>>>(
          std::forward<Args>(args)...);
    case filter_kind::concurrent:
      return std::make_unique<runtime_model_of<
          concurrent_cuckoo_filter<key, B, S, hash, striped_locking, alt, Allocator>>>(
          std::forward<Args>(args)...);
    case filter_kind::lockfree:
      if constexpr (versioned_layout_supported(B, S)) {
        return std::make_unique<
            runtime_model_of<lockfree_cuckoo_filter<key, B, S, hash, alt, Allocator>>>(
            std::forward<Args>(args)...);
      } else {
        throw std::invalid_argument(
            "ccf: the lock-free filter needs bits x slots <= 48 (one 64-bit word per bucket), "
            "not " +
            std::to_string(B) + " x " + std::to_string(S));
      }
  }
  throw std::invalid_argument("ccf: unknown filter kind");
}

template <unsigned B, class Allocator, class... Args>
std::unique_ptr<runtime_model> model_of_slots(unsigned slots, filter_kind kind, Args&&... args) {
  switch (slots) {
    case 2:
      return model_of_kind<B, 2, Allocator>(kind, std::forward<Args>(args)...);
    case 4:
      return model_of_kind<B, 4, Allocator>(kind, std::forward<Args>(args)...);
    case 8:
      return model_of_kind<B, 8, Allocator>(kind, std::forward<Args>(args)...);
  }
  throw std::invalid_argument("ccf: slots per bucket must be 2, 4 or 8, not " +
                              std::to_string(slots));
}

/// What a runtime model is made from: a shape (a new filter) or a file, and the allocator.
template <class Allocator>
struct model_source {
  const filter_config* shape = nullptr;  // a new filter of this shape, or
  filter_source* file = nullptr;         // the filter this file holds
  const Allocator& alloc;
};

// The units of instantiation: every filter type of B-bit fingerprints, and the growing filters.
// With CCF_RUNTIME_FILTER_PREBUILT (config.hpp) they are compiled once, for the default
// allocator, in ccf's library ccf_runtime_models (src/), not in every program's sources.

/// A static filter of B-bit fingerprints, `slots` slots per bucket and `kind`.
template <unsigned B, class Allocator>
std::unique_ptr<runtime_model> static_model_for(unsigned slots, filter_kind kind,
                                                const model_source<Allocator>& s) {
  if (s.shape != nullptr) {
    return model_of_slots<B, Allocator>(slots, kind, s.shape->capacity, s.shape->seed,
                                        s.shape->max_kicks, s.alloc);
  }
  return model_of_slots<B, Allocator>(slots, kind, std::move(*s.file), s.alloc);
}
/// A growing filter of `kind` (sequential or concurrent).
template <class Allocator>
std::unique_ptr<runtime_model> growing_model_for(filter_kind kind,
                                                 const model_source<Allocator>& s) {
  const auto make = [&]<bool Concurrent>() -> std::unique_ptr<runtime_model> {
    using model = growing_runtime_model<Concurrent, Allocator>;
    if (s.shape == nullptr) return std::make_unique<model>(*s.file, 0U, s.alloc);
    growth_options o;
    o.seed = s.shape->seed;
    o.max_doublings = s.shape->max_doublings;
    return std::make_unique<model>(s.shape->capacity, s.shape->target_fpr, o, s.alloc);
  };
  switch (kind) {
    case filter_kind::sequential:
      return make.template operator()<false>();
    case filter_kind::concurrent:
      return make.template operator()<true>();
    case filter_kind::lockfree:
      break;
  }
  throw std::invalid_argument("ccf: a growing filter is sequential or concurrent, not lockfree");
}

/// f.template operator()<B>() for the fingerprint bits B == bits.
template <class F>
std::unique_ptr<runtime_model> with_fingerprint_bits(unsigned bits, F&& f) {
  switch (bits) {
    case 4:
      return f.template operator()<4>();
    case 8:
      return f.template operator()<8>();
    case 12:
      return f.template operator()<12>();
    case 16:
      return f.template operator()<16>();
    case 32:
      return f.template operator()<32>();
  }
  throw std::invalid_argument("ccf: fingerprint bits must be 4, 8, 12, 16 or 32, not " +
                              std::to_string(bits));
}

using prebuilt_allocator = table_allocator<std::uint64_t>;

#if CCF_RUNTIME_FILTER_PREBUILT
extern template std::unique_ptr<runtime_model> static_model_for<4>(
    unsigned, filter_kind, const model_source<prebuilt_allocator>&);
extern template std::unique_ptr<runtime_model> static_model_for<8>(
    unsigned, filter_kind, const model_source<prebuilt_allocator>&);
extern template std::unique_ptr<runtime_model> static_model_for<12>(
    unsigned, filter_kind, const model_source<prebuilt_allocator>&);
extern template std::unique_ptr<runtime_model> static_model_for<16>(
    unsigned, filter_kind, const model_source<prebuilt_allocator>&);
extern template std::unique_ptr<runtime_model> static_model_for<32>(
    unsigned, filter_kind, const model_source<prebuilt_allocator>&);
extern template std::unique_ptr<runtime_model> growing_model_for(
    filter_kind, const model_source<prebuilt_allocator>&);
#endif

}  // namespace detail

template <class Allocator = table_allocator<std::uint64_t>>
class basic_runtime_filter {
 public:
  using allocator_type = Allocator;

  /// An empty filter of the given shape. Throws std::invalid_argument for a layout ccf does not
  /// have (or the lock-free kind does not support) and for capacity 0, std::length_error when the
  /// table would not fit in memory.
  explicit basic_runtime_filter(const filter_config& c, const Allocator& alloc = Allocator())
      : impl_(make_model(c.growing, c.fingerprint_bits, c.slots_per_bucket, c.kind,
                         source{&c, nullptr, alloc})),
        bits_(c.growing ? detail::growing_width(c.target_fpr, c.max_doublings)
                        : c.fingerprint_bits),
        slots_(c.growing ? detail::growing_slots : c.slots_per_bucket),
        kind_(c.kind) {}

  /// A move leaves `other` an empty filter of its shape (its model's filter moved out: see the
  /// typed filters' moves); a moved-from runtime filter answers every call as an empty one does.
  /// noexcept, as the typed filters' moves: no memory for the new model ends the program.
  basic_runtime_filter(basic_runtime_filter&& other) noexcept
      : impl_(other.impl_->take()), bits_(other.bits_), slots_(other.slots_), kind_(other.kind_) {}
  basic_runtime_filter& operator=(basic_runtime_filter&& other) noexcept {
    if (this != &other) {
      impl_ = other.impl_->take();
      bits_ = other.bits_;
      slots_ = other.slots_;
      kind_ = other.kind_;
    }
    return *this;
  }
  ~basic_runtime_filter() = default;

  /// A filter saved by any ccf filter over string keys with chunked_alternate (or by
  /// runtime_filter), as `kind`; a growing filter's file loads as a growing filter. Throws
  /// ccf::format_error as the typed filters do (and for a global_alternate filter's file), and
  /// std::invalid_argument for a growing filter's file asked for as filter_kind::lockfree (there
  /// is no lock-free growing filter).
  static basic_runtime_filter load(std::istream& in, filter_kind kind = filter_kind::sequential,
                                   const Allocator& alloc = Allocator()) {
    detail::filter_source src(in);
    return basic_runtime_filter(src, kind, alloc);
  }
  static basic_runtime_filter load(std::span<const std::byte> bytes,
                                   filter_kind kind = filter_kind::sequential,
                                   const Allocator& alloc = Allocator()) {
    detail::filter_source src(bytes);
    return basic_runtime_filter(src, kind, alloc);
  }
  /// The header at the start of `first_bytes`, the beginning of a filter file whose rest may not
  /// be there yet, checked as load() checks it before it reads the table (and before the checks
  /// of the filter type it picks: key type, capacity, max kicks): ccf::format_error for a header
  /// that is not a filter file's, or a static filter of a layout ccf does not build.
  static filter_file_info read_header(std::span<const std::byte> first_bytes) {
    detail::byte_source src(first_bytes);
    const detail::file_header h = detail::read_header_only(src);
    check_layout(h);
    return detail::info_of(h);
  }

  std::uint64_t hash_of(std::string_view key) const noexcept { return impl_->hash_of(key); }
  /// hash_of(key) of any runtime filter with this seed, before there is a filter (to hash keys
  /// while reading them, and size the filter after).
  static std::uint64_t key_hash(std::string_view key, std::uint64_t seed) noexcept {
    return ccf::hash<std::string_view>{}(key, ccf::key_seed(seed));
  }
  bool insert(std::string_view key) { return impl_->insert_hash(hash_of(key)); }
  bool contains(std::string_view key) const { return impl_->contains_hash(hash_of(key)); }
  bool erase(std::string_view key) { return impl_->erase_hash(hash_of(key)); }
  std::size_t count(std::string_view key) const { return impl_->count_hash(hash_of(key)); }
  bool insert_hash(std::uint64_t h) { return impl_->insert_hash(h); }
  bool contains_hash(std::uint64_t h) const { return impl_->contains_hash(h); }
  bool erase_hash(std::uint64_t h) { return impl_->erase_hash(h); }
  std::size_t count_hash(std::uint64_t h) const { return impl_->count_hash(h); }

  /// As the typed filters' insert_many: exactly keys[0, result) are inserted.
  std::size_t insert_many(std::span<const std::string_view> keys) {
    return impl_->insert_many_hashes(hashes_of(keys));
  }
  std::size_t insert_many_hashes(std::span<const std::uint64_t> hashes) {
    return impl_->insert_many_hashes(hashes);
  }
  std::size_t contains_many(std::span<const std::string_view> keys, std::span<bool> found) const {
    detail::check_output_size("contains_many", keys.size(), found.size());  // before hashing
    return impl_->contains_many_hashes(hashes_of(keys), found);
  }
  std::size_t contains_many_hashes(std::span<const std::uint64_t> hashes,
                                   std::span<bool> found) const {
    return impl_->contains_many_hashes(hashes, found);
  }
  /// As the typed filters' apply_many: ops run in order, results[i] is what op i's call returned.
  std::size_t apply_many(std::span<const operation<std::string_view>> ops,
                         std::span<bool> results) {
    detail::check_operations("apply_many", ops, results.size());  // before hashing, by its name
    std::vector<operation<std::uint64_t>> hashed(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i)
      hashed[i] = {ops[i].kind, hash_of(ops[i].key)};
    return impl_->apply_many_hashes(hashed, results);
  }
  std::size_t apply_many_hashes(std::span<const operation<std::uint64_t>> ops,
                                std::span<bool> results) {
    return impl_->apply_many_hashes(ops, results);
  }
  /// Fills this filter, which no other thread may use meanwhile, with `keys` in parallel (see
  /// ccf::build); returns what was inserted, skipped and refused.
  bulk_result bulk_insert(std::span<const std::string_view> keys, unsigned threads = 0,
                          bool skip_present = false) {
    if (threads == 0) threads = std::max(1U, std::thread::hardware_concurrency());
    return impl_->bulk_insert(keys, threads, skip_present);
  }
  /// bulk_insert of keys given by their hashes (hash_of).
  bulk_result bulk_insert_hashes(std::span<const std::uint64_t> hashes, unsigned threads = 0,
                                 bool skip_present = false) {
    if (threads == 0) threads = std::max(1U, std::thread::hardware_concurrency());
    return impl_->bulk_insert_hashes(hashes, threads, skip_present);
  }

  std::size_t size() const noexcept { return impl_->size(); }
  bool empty() const noexcept { return size() == 0; }
  std::size_t capacity() const noexcept { return impl_->capacity(); }
  std::size_t num_buckets() const noexcept { return impl_->num_buckets(); }
  /// The table's bytes.
  std::size_t size_in_bytes() const noexcept { return impl_->size_in_bytes(); }
  /// Every byte it holds: the table, for a small growing filter the hashes it keeps, and for a
  /// concurrent or lock-free filter its lock words and counter shards.
  std::size_t memory_in_bytes() const { return impl_->memory_in_bytes(); }
  std::size_t size_in_tags() const noexcept { return num_buckets() * slots_; }
  std::size_t chunks() const noexcept { return impl_->chunks(); }
  std::size_t max_kicks() const noexcept { return impl_->max_kicks(); }
  std::size_t relocations() const noexcept { return impl_->relocations(); }
  std::uint64_t seed() const noexcept { return impl_->seed(); }
  unsigned fingerprint_bits() const noexcept { return bits_; }
  unsigned slots_per_bucket() const noexcept { return slots_; }
  filter_kind kind() const noexcept { return kind_; }
  /// Whether it is a growing filter, and how many times it doubled.
  bool growing() const noexcept { return impl_->growing(); }
  unsigned doublings() const noexcept { return impl_->doublings(); }
  double load_factor() const noexcept {
    return static_cast<double>(size()) / static_cast<double>(size_in_tags());
  }
  /// The false-positive rate expected at the current load (ccf::expected_fpr; for a growing
  /// filter, its bound at its current size).
  double expected_fpr() const {
    if (growing()) return impl_->fpr_bound();
    return ccf::expected_fpr(bits_, slots_, load_factor());
  }
  /// The false-positive rate expected once the filter holds capacity() items (for a growing
  /// filter, its bound at its current size).
  double design_fpr() const {
    if (growing()) return impl_->fpr_bound();
    return ccf::expected_fpr(bits_, slots_,
                             static_cast<double>(capacity()) / static_cast<double>(size_in_tags()));
  }
  void clear() { impl_->clear(); }
  void save(std::ostream& out) const { impl_->save(out); }
  std::vector<std::byte> to_bytes() const { return impl_->to_bytes(); }
  /// Bytes [offset, offset + len) of to_bytes(), those the file has, in `out`, made without the
  /// whole file in memory (each call a snapshot of its own); returns the file's size.
  std::uint64_t read_bytes(std::uint64_t offset, std::uint64_t len,
                           std::vector<std::byte>& out) const {
    return impl_->read_bytes(offset, len, out);
  }

 private:
  basic_runtime_filter(detail::filter_source& src, filter_kind kind, const Allocator& alloc)
      : impl_(from_file(src, kind, alloc)),
        bits_(src.header.fingerprint_bits),
        slots_(src.header.slots_per_bucket),
        kind_(kind) {}

  using source = detail::model_source<Allocator>;

  static std::unique_ptr<detail::runtime_model> make_model(bool growing, unsigned bits,
                                                           unsigned slots, filter_kind kind,
                                                           const source& s) {
    if (growing) return detail::growing_model_for(kind, s);
    return detail::with_fingerprint_bits(
        bits, [&]<unsigned B>() { return detail::static_model_for<B>(slots, kind, s); });
  }
  /// A static filter's file of a layout ccf does not build is a bad file (format_error), not a
  /// bad argument.
  static std::unique_ptr<detail::runtime_model> from_file(detail::filter_source& src,
                                                          filter_kind kind,
                                                          const Allocator& alloc) {
    check_layout(src.header);
    return make_model(is_growing(src.header), src.header.fingerprint_bits,
                      src.header.slots_per_bucket, kind, source{nullptr, &src, alloc});
  }
  static void check_layout(const detail::file_header& h) {
    const unsigned bits = h.fingerprint_bits, slots = h.slots_per_bucket;
    const bool known_bits = bits == 4 || bits == 8 || bits == 12 || bits == 16 || bits == 32;
    if (!is_growing(h) && (!known_bits || (slots != 2 && slots != 4 && slots != 8))) {
      throw format_error("ccf: corrupt filter file (a layout of " + std::to_string(bits) +
                         "-bit fingerprints x " + std::to_string(slots) +
                         " slots, which ccf does not build)");
    }
  }
  static bool is_growing(const detail::file_header& h) noexcept {
    return h.alternate == static_cast<std::uint32_t>(detail::alternate_kind::growing);
  }

  std::vector<std::uint64_t> hashes_of(std::span<const std::string_view> keys) const {
    std::vector<std::uint64_t> h(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i)
      h[i] = hash_of(keys[i]);
    return h;
  }

  std::unique_ptr<detail::runtime_model> impl_;
  unsigned bits_;
  unsigned slots_;
  filter_kind kind_;
};

using runtime_filter = basic_runtime_filter<>;

}  // namespace ccf
