// ccf benchmarks — adapters.hpp: the one interface through which ccf-bench drives every filter and
// every baseline set.
//
// bench_target is a small virtual interface whose methods each run a whole loop over a span of
// keys (insert a slice, look up a stream, run a mixed stream), so the virtual call is paid once per
// phase and thread, never once per key: inside, filter_target<Impl> calls Impl's member functions
// directly and the compiler inlines them. Impl is either a ccf filter or a small wrapper
// (libcuckoo_set, tbb_set) giving a baseline the same member names. Optional members
// (insert_many, contains_many, erase, size_in_tags) are detected with requires-expressions, so a
// filter that lacks one still plugs in and the harness skips what it cannot do.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ccf::bench {

using key_type = std::uint64_t;

/// What one entry of a mixed operation stream asks for.
enum class op_kind : std::uint8_t {
  lookup_present,  // look up a key that should be in the table (a miss is a false negative)
  lookup_absent,   // look up a key that was never inserted (a hit is a false positive)
  insert,          // insert a key
  erase,           // erase a key that is in the table
  update,          // erase a key that is in the table and insert it again (one operation)
  reinsert,        // insert a key that is already in the table (the answer is not checked)
};

/// Outcome counters of a mixed stream.
struct mixed_counts {
  std::uint64_t present_queries = 0;
  std::uint64_t present_found = 0;
  std::uint64_t absent_queries = 0;
  std::uint64_t absent_found = 0;
  std::uint64_t inserts_failed = 0;
  std::uint64_t erases_failed = 0;

  mixed_counts& operator+=(const mixed_counts& o) noexcept {
    present_queries += o.present_queries;
    present_found += o.present_found;
    absent_queries += o.absent_queries;
    absent_found += o.absent_found;
    inserts_failed += o.inserts_failed;
    erases_failed += o.erases_failed;
    return *this;
  }
};

/// What a target can do.
struct target_traits {
  bool concurrent = false;        // every operation may be called from several threads at once
  bool has_erase = false;         // erase exists
  bool concurrent_erase = false;  // erase may run concurrently with other operations
  bool has_batch = false;         // insert_many and contains_many exist
  bool exact = false;             // an exact set: no false positives
};

class bench_target {
 public:
  virtual ~bench_target() = default;
  virtual const target_traits& traits() const noexcept = 0;
  virtual std::size_t table_bytes() const = 0;
  /// Slots of the table (0 when the notion does not apply).
  virtual std::size_t table_slots() const = 0;
  virtual std::string info() const = 0;
  /// Inserts keys in order and stops at the first one that does not fit; returns how many went in.
  virtual std::size_t insert_range(std::span<const key_type> keys, bool batch) = 0;
  /// Returns how many of `keys` are reported present.
  virtual std::size_t lookup_range(std::span<const key_type> keys, bool batch) const = 0;
  /// Erases every key; returns how many erases succeeded.
  virtual std::size_t erase_range(std::span<const key_type> keys) = 0;
  /// Runs keys[i] through kinds[i]; the indices of failed inserts are appended to failed_inserts.
  virtual mixed_counts run_mixed(std::span<const key_type> keys, std::span<const op_kind> kinds,
                                 std::vector<std::size_t>& failed_inserts) = 0;
};

// ---- optional members ----

template <class F>
concept has_insert_many = requires(F& f, std::span<const key_type> keys) {
  f.insert_many(keys);
};
template <class F>
concept has_contains_many = requires(const F& f, std::span<const key_type> keys,
                                     std::span<bool> found) {
  f.contains_many(keys, found);
};
template <class F>
concept has_erase = requires(F& f, key_type k) {
  { f.erase(k) } -> std::convertible_to<bool>;
};
template <class F>
concept has_size_in_tags = requires(const F& f) {
  { f.size_in_tags() } -> std::convertible_to<std::size_t>;
};
template <class F>
concept has_info = requires(const F& f) {
  { f.info() } -> std::convertible_to<std::string>;
};

/// Largest number of keys handed to one insert_many / contains_many call.
inline constexpr std::size_t max_batch_size = 4096;

/// f.insert_many(keys), as a count of keys inserted (a void insert_many inserts them all).
template <has_insert_many F>
std::size_t insert_many_count(F& f, std::span<const key_type> keys) {
  if constexpr (std::is_void_v<decltype(f.insert_many(keys))>) {
    f.insert_many(keys);
    return keys.size();
  } else {
    return static_cast<std::size_t>(f.insert_many(keys));
  }
}

/// f.contains_many(keys, found), as a count of keys found (counted from `found` when the filter's
/// contains_many returns nothing).
template <has_contains_many F>
std::size_t contains_many_count(const F& f, std::span<const key_type> keys, std::span<bool> found) {
  if constexpr (std::is_void_v<decltype(f.contains_many(keys, found))>) {
    f.contains_many(keys, found);
    return static_cast<std::size_t>(
        std::count(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(keys.size()), true));
  } else {
    return static_cast<std::size_t>(f.contains_many(keys, found));
  }
}

template <class Impl>
class filter_target final : public bench_target {
 public:
  filter_target(std::unique_ptr<Impl> impl, target_traits traits, std::size_t batch_size)
      : impl_(std::move(impl)),
        traits_(traits),
        batch_size_(std::clamp<std::size_t>(batch_size, 1, max_batch_size)) {
    traits_.has_erase = has_erase<Impl>;
    if (!traits_.has_erase) traits_.concurrent_erase = false;
    traits_.has_batch = has_insert_many<Impl> && has_contains_many<Impl>;
  }

  const target_traits& traits() const noexcept override { return traits_; }
  std::size_t table_bytes() const override { return impl_->size_in_bytes(); }
  std::size_t table_slots() const override {
    if constexpr (has_size_in_tags<Impl>) {
      return impl_->size_in_tags();
    } else {
      return 0;
    }
  }
  std::string info() const override {
    if constexpr (has_info<Impl>) {
      return impl_->info();
    } else {
      return {};
    }
  }

  std::size_t insert_range(std::span<const key_type> keys, bool batch) override {
    if constexpr (has_insert_many<Impl>) {
      if (batch) {
        std::size_t done = 0;
        while (done < keys.size()) {
          const std::size_t len = std::min(batch_size_, keys.size() - done);
          const std::size_t n = insert_many_count(*impl_, keys.subspan(done, len));
          done += n;
          if (n < len) break;
        }
        return done;
      }
    }
    std::size_t done = 0;
    for (const key_type k : keys) {
      if (!insert_one(k)) break;
      ++done;
    }
    return done;
  }

  std::size_t lookup_range(std::span<const key_type> keys, bool batch) const override {
    std::size_t found = 0;
    if constexpr (has_contains_many<Impl>) {
      if (batch) {
        std::array<bool, max_batch_size> out{};
        for (std::size_t off = 0; off < keys.size(); off += batch_size_) {
          const std::size_t len = std::min(batch_size_, keys.size() - off);
          found +=
              contains_many_count(*impl_, keys.subspan(off, len), std::span<bool>(out.data(), len));
        }
        return found;
      }
    }
    for (const key_type k : keys)
      found += impl_->contains(k) ? 1 : 0;
    return found;
  }

  std::size_t erase_range(std::span<const key_type> keys) override {
    std::size_t erased = 0;
    if constexpr (has_erase<Impl>) {
      for (const key_type k : keys)
        erased += impl_->erase(k) ? 1 : 0;
    }
    return erased;
  }

  mixed_counts run_mixed(std::span<const key_type> keys, std::span<const op_kind> kinds,
                         std::vector<std::size_t>& failed_inserts) override {
    mixed_counts c;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const key_type k = keys[i];
      switch (kinds[i]) {
        case op_kind::lookup_present:
          ++c.present_queries;
          c.present_found += impl_->contains(k) ? 1 : 0;
          break;
        case op_kind::lookup_absent:
          ++c.absent_queries;
          c.absent_found += impl_->contains(k) ? 1 : 0;
          break;
        case op_kind::insert:
          if (!insert_one(k)) {
            ++c.inserts_failed;
            failed_inserts.push_back(i);
          }
          break;
        case op_kind::erase:
          if (!erase_one(k)) ++c.erases_failed;
          break;
        case op_kind::reinsert:
          static_cast<void>(insert_one(k));
          break;
        case op_kind::update:
          if (!erase_one(k)) ++c.erases_failed;
          // An exact set refuses a key only when it is there already (a concurrent update of the
          // same key put it back first); a filter refuses it only when the table is full.
          if (!insert_one(k) && !traits_.exact) {
            ++c.inserts_failed;
            failed_inserts.push_back(i);
          }
          break;
      }
    }
    return c;
  }

 private:
  bool insert_one(key_type k) {
    if constexpr (std::is_void_v<decltype(impl_->insert(k))>) {
      impl_->insert(k);
      return true;
    } else {
      return static_cast<bool>(impl_->insert(k));
    }
  }
  bool erase_one(key_type k) {
    if constexpr (has_erase<Impl>) {
      return impl_->erase(k);
    } else {
      (void)k;
      return false;
    }
  }

  std::unique_ptr<Impl> impl_;
  target_traits traits_;
  std::size_t batch_size_;
};

/// Builds a ccf cuckoo-family filter whose table holds about `target_slots` slots: the filters size
/// their tables from an item capacity, so the capacity is guessed, the slot count read back, and
/// the filter rebuilt once with the capacity scaled to hit the target.
template <class Filter>
std::unique_ptr<Filter> make_with_slots(std::size_t target_slots, std::uint64_t seed) {
  std::size_t capacity = std::max<std::size_t>(1, target_slots * 9 / 10);
  auto filter = std::make_unique<Filter>(capacity, seed);
  const std::size_t slots = filter->size_in_tags();
  const double ratio = static_cast<double>(target_slots) / static_cast<double>(slots);
  if (ratio < 0.995 || ratio > 1.005) {
    capacity = std::max<std::size_t>(1, static_cast<std::size_t>(capacity * ratio));
    filter.reset();
    filter = std::make_unique<Filter>(capacity, seed);
  }
  return filter;
}

/// How ccf-bench asks a registry entry for a table.
struct build_request {
  std::size_t target_slots = 0;  // cuckoo tables: slots wanted
  std::size_t items = 0;         // keys that will be inserted (Bloom filters and baseline sets)
  unsigned bits = 16;            // fingerprint bits of the cuckoo filters
  double bloom_fpr = 0.0;        // false-positive rate the Bloom filters are built for
  std::uint64_t seed = 0;
  std::size_t batch_size = 128;
};

struct filter_entry {
  int order = 0;  // position in listings and in "all"
  std::string name;
  std::string description;
  bool concurrent = false;
  /// Bits used when none of the --bits values is in supported_bits (0: then skip the entry).
  unsigned fallback_bits = 0;
  /// True when the entry does not depend on --bits at all (exact sets): run once per sweep. For
  /// Bloom filters the bits only choose the target FPR (that of the cuckoo filter).
  bool bits_independent = false;
  /// Fingerprint widths the entry can be built with (empty: any).
  std::vector<unsigned> supported_bits;
  /// Returns nullptr when the entry cannot be built for that request (e.g. unsupported bits).
  std::function<std::unique_ptr<bench_target>(const build_request&)> make;
};

/// Every filter and baseline this build of ccf-bench knows, sorted by `order` then name. Entries
/// are added by the targets_*.cpp translation units (which CMake compiles only when their
/// dependency was found) through static filter_registrar objects.
std::vector<filter_entry>& filter_registry();

struct filter_registrar {
  explicit filter_registrar(filter_entry entry);
};

/// Wraps a built Impl into the bench_target that drives it.
template <class Impl>
std::unique_ptr<bench_target> wrap(std::unique_ptr<Impl> impl, target_traits traits,
                                   std::size_t batch_size) {
  return std::make_unique<filter_target<Impl>>(std::move(impl), traits, batch_size);
}

}  // namespace ccf::bench
