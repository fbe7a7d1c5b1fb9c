// ccf — concurrent cuckoo filters.
// bloom_filter.hpp: the Bloom filter baselines ccf's cuckoo filters are measured against.
//
// bloom_filter<Key, Hash> — the standard Bloom filter.
//   Layout: one bit array of m bits stored in 64-bit words (std::vector<std::uint64_t>). For a
//   capacity n and a target false-positive rate eps, m = ceil(log2(e) * n * log2(1/eps)) rounded up
//   to whole words (log2(e) = 1/ln 2 = 1.4427..., the "1.44" of the classical bound
//   m >= 1.44 n log2(1/eps)), and k = max(1, round(ln 2 * m / n)) probes. With k at its optimum the
//   rate after n inserts is (1 - e^{-kn/m})^k, i.e. about eps; rounding k to an integer moves it
//   by a few per cent either way. Above eps = 1/2 the optimal k, log2(1/eps), is below 1 and k is
//   1, whose rate 1 - e^{-n/m} needs m = ceil(n / -ln(1 - eps)) bits (the classical bound would
//   give 0.22 n bits at eps = 0.9: a rate of 0.99); both rules agree at eps = 1/2.
//   Probes: the key is hashed once, h = Hash{}(key, key_seed(seed)). Probe i (0 <= i < k) is bit
//   range_reduce(h + i * d, m) with d = mix64(h ^ salt) | 1 (double hashing in the sense of Kirsch
//   and Mitzenmacher: two hash values give k probes with the same asymptotic false-positive rate as
//   k independent hashes). range_reduce(x, m) = floor(x * m / 2^64) maps the 64-bit probe to
//   [0, m) without a division and without requiring m to be a power of two.
//
// blocked_bloom_filter<Key, Hash> — the cache-blocked Bloom filter.
//   Layout: an array of 64-byte blocks (512 bits each, eight 64-bit words, 64-byte aligned). A key
//   picks one block, block = range_reduce(h, num_blocks), and sets k bits inside it, so an insert
//   or a lookup touches one cache line. The k bit positions are 9-bit fields cut from the stream
//   mix64(h + 1 * phi), mix64(h + 2 * phi), ... (seven fields per 64-bit word, phi the golden-ratio
//   constant), independent of the bits that chose the block. Positions may repeat within a key.
//   Sizing rule: a blocked filter needs more bits than the plain one, because the number of keys
//   per block varies (about Poisson with mean lambda = 512 n / bits) and overfull blocks answer
//   "maybe" far more often. ccf sizes it with an exact model instead of a fixed factor:
//     FPR(c, k) = sum_j Pois(j; 512 / c) * g_k(j),   g_k(j) = E[(X / 512)^k],
//   where c is bits per item and X the number of set bits in a block after j keys (j * k uniform
//   bit draws); the distribution of X is computed exactly by a 513-state recurrence. The
//   constructor takes the smallest c (bisection, relative precision 1e-4) and the k (1..64) with
//   FPR(c, k) <= eps. Measured rates agree with the model within sampling error (the simpler
//   mean-field model, E[X]^k instead of E[X^k], is 2-3 % optimistic and is not used). Resulting
//   bits per item, as a multiple of the plain filter's log2(e) * log2(1/eps): 1.01 at eps = 0.1,
//   1.035 at 1e-2, 1.08 at 1e-3, 1.15 at 1e-4, 1.24 at 1e-5, 1.35 at 1e-6, 1.86 at 1e-9, then
//   steeply more (2.8 at 1e-12, 4.5 at 1e-15: overfull blocks set the floor), see docs/params.md.
//   Sizing costs a few milliseconds per construction.
//
// Invariants: bits are only ever set, never cleared, except by clear(); hence no false negatives.
// Protocol: neither class synchronises. Any number of threads may call the const members at once;
// insert, insert_many and clear need exclusive access.
// Errors: capacity 0 or a fpr outside (0, 1) (NaN included) throw std::invalid_argument, and so
// does a fpr no blocked shape reaches (k <= 64, below 2^16 bits per item: about 1e-31); a table
// whose size overflows or exceeds this machine's physical memory throws std::length_error.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ccf/config.hpp"
#include "ccf/detail/indexer.hpp"
#include "ccf/detail/sizing.hpp"
#include "ccf/hash.hpp"

namespace ccf {

namespace detail {

inline constexpr std::uint64_t bloom_stride_salt = 0x2545f4914f6cdd1dULL;
inline constexpr std::uint64_t bloom_golden = 0x9e3779b97f4a7c15ULL;
/// Keys hashed ahead of the one being processed by the batch operations.
inline constexpr std::size_t bloom_lookahead = 8;
inline constexpr std::size_t bloom_block_bits = 512;
inline constexpr unsigned blocked_bloom_max_hashes = 64;

inline std::string bloom_format_double(double v) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.6g", v);
  return std::string(buf.data());
}

inline void bloom_check_arguments(const char* who, std::size_t capacity, double fpr) {
  if (capacity == 0) {
    throw std::invalid_argument(std::string(who) + ": capacity must be at least 1, got 0");
  }
  if (!(fpr > 0.0 && fpr < 1.0)) {
    throw std::invalid_argument(std::string(who) + ": fpr must be in (0, 1), got " +
                                bloom_format_double(fpr));
  }
}

/// Number of 64-bit words for `bits` bits; throws std::length_error when the table would overflow
/// or not fit in physical memory.
inline std::size_t bloom_words_for_bits(const char* who, double bits, std::size_t capacity) {
  const double words = std::max(1.0, std::ceil(bits / 64.0));
  // 2^56 words = 2^59 bytes: beyond any machine, and far from overflowing size_t or bit indices.
  if (!(words < 0x1p56)) {
    throw std::length_error(std::string(who) + ": a filter for " + std::to_string(capacity) +
                            " items needs " + bloom_format_double(bits) +
                            " bits, which overflows the table size");
  }
  const auto w = static_cast<std::size_t>(words);
  check_fits_in_memory(static_cast<std::uint64_t>(w) * 8U, capacity);
  return w;
}

/// g[j] = probability that k uniform bit positions of a 512-bit block are all set after j keys
/// have each set k uniform positions (with repetition), for j = 0 .. max_keys. The distribution
/// of the number of set bits is advanced one bit draw at a time (a draw sets a new bit with
/// probability (512 - x) / 512); states below 1e-200 are dropped.
inline std::vector<double> blocked_bloom_hit_table(unsigned k, std::size_t max_keys) {
  constexpr std::size_t B = bloom_block_bits;
  constexpr double tiny = 1e-200;
  std::vector<double> power(B + 1);
  for (std::size_t x = 0; x <= B; ++x) {
    power[x] = std::pow(static_cast<double>(x) / B, static_cast<double>(k));
  }
  std::vector<double> dist(B + 1, 0.0);
  dist[0] = 1.0;
  std::size_t lo = 0;
  std::size_t hi = 0;
  std::vector<double> g;
  g.reserve(max_keys + 1);
  for (std::size_t j = 0; j <= max_keys; ++j) {
    double hit = 0.0;
    for (std::size_t x = lo; x <= hi; ++x) {
      hit += dist[x] * power[x];
    }
    g.push_back(hit);
    if (hit > 1.0 - 1e-15) {  // the block is full for all practical purposes: bound by 1
      g.resize(max_keys + 1, 1.0);
      break;
    }
    for (unsigned draw = 0; draw < k; ++draw) {
      if (hi < B) ++hi;
      for (std::size_t x = hi; x > lo; --x) {
        dist[x] = dist[x] * (static_cast<double>(x) / B) +
                  dist[x - 1] * (static_cast<double>(B - x + 1) / B);
      }
      dist[lo] *= static_cast<double>(lo) / B;
      while (lo < hi && dist[lo] < tiny)
        dist[lo++] = 0.0;
      while (hi > lo && dist[hi] < tiny)
        dist[hi--] = 0.0;
    }
  }
  return g;
}

/// Keys per block to tabulate so that the Poisson tail beyond is negligible (< 1e-60).
inline std::size_t blocked_bloom_max_keys(double lambda) {
  return static_cast<std::size_t>(std::ceil(lambda + 20.0 * std::sqrt(lambda) + 40.0));
}

/// log(j!) for j = 0 .. n (no lgamma: it is not thread-safe everywhere).
inline std::vector<double> bloom_log_factorials(std::size_t n) {
  std::vector<double> v(n + 1, 0.0);
  for (std::size_t j = 1; j <= n; ++j)
    v[j] = v[j - 1] + std::log(static_cast<double>(j));
  return v;
}

/// sum_j Pois(j; lambda) * g[j]; terms more than 20 standard deviations below the mean are
/// dropped (each is below 1e-80).
inline double blocked_bloom_mix(double lambda, const std::vector<double>& g,
                                const std::vector<double>& log_fact) {
  const double log_lambda = std::log(lambda);
  const double first = std::max(0.0, std::floor(lambda - 20.0 * std::sqrt(lambda) - 40.0));
  const std::size_t end = std::min(g.size(), log_fact.size());
  double sum = 0.0;
  for (auto j = static_cast<std::size_t>(first); j < end; ++j) {
    sum += std::exp(-lambda + static_cast<double>(j) * log_lambda - log_fact[j]) * g[j];
  }
  return std::min(sum, 1.0);
}

/// Model false-positive rate of a blocked Bloom filter with `bits_per_item` bits per key and k
/// bits set per key.
inline double blocked_bloom_model_fpr(double bits_per_item, unsigned k) {
  const double lambda = static_cast<double>(bloom_block_bits) / bits_per_item;
  const std::size_t max_keys = blocked_bloom_max_keys(lambda);
  return blocked_bloom_mix(lambda, blocked_bloom_hit_table(k, max_keys),
                           bloom_log_factorials(max_keys));
}

struct blocked_bloom_shape {
  double bits_per_item;
  unsigned hashes;
  double model_fpr;  // the model's rate at exactly bits_per_item
};

/// The smallest bits per item, and its k, at which the blocked model reaches `fpr` (in (0, 1)).
/// Throws std::invalid_argument when no k <= 64 reaches it with less than 2^16 bits per item.
inline blocked_bloom_shape blocked_bloom_shape_for(double fpr) {
  const double plain = std::numbers::log2e * std::log2(1.0 / fpr);
  // A blocked filter never beats the plain one; and at least a bit per item: for rates near 1 the
  // bound went to 0, and the model's tables with it to millions of keys per block (0.99999 took
  // 23 s, 1 - 1e-12 threw bad_alloc).
  const double c_low = std::max(0.9 * plain, 1.0);
  const double c_cap = 65536.0;
  const std::size_t max_keys =
      blocked_bloom_max_keys(static_cast<double>(bloom_block_bits) / c_low);
  const std::vector<double> log_fact = bloom_log_factorials(max_keys);
  auto fpr_at = [&log_fact](double c, const std::vector<double>& g) {
    return blocked_bloom_mix(static_cast<double>(bloom_block_bits) / c, g, log_fact);
  };
  // Minimal c for a given k, or +inf when the cap is not enough.
  auto solve = [&](unsigned k, double& model) {
    const std::vector<double> g = blocked_bloom_hit_table(k, max_keys);
    double lo = c_low;
    if (fpr_at(lo, g) <= fpr) {
      model = fpr_at(lo, g);
      return lo;
    }
    double hi = lo * 2.0;
    while (fpr_at(hi, g) > fpr) {
      lo = hi;
      hi *= 2.0;
      if (hi > c_cap) return std::numeric_limits<double>::infinity();
    }
    while (hi - lo > 1e-4 * hi) {
      const double mid = 0.5 * (lo + hi);
      (fpr_at(mid, g) <= fpr ? hi : lo) = mid;
    }
    model = fpr_at(hi, g);
    return hi;
  };
  blocked_bloom_shape best{std::numeric_limits<double>::infinity(), 0, 1.0};
  auto try_k = [&](unsigned k) {
    double model = 1.0;
    const double c = solve(k, model);
    if (c < best.bits_per_item) {
      best = {c, k, model};
      return true;
    }
    return false;
  };
  // The optimum lies near 0.7-0.9 * log2(1/eps): start below it, walk up until three k in a row
  // do not improve, then walk down from the start while it improves.
  const auto start = static_cast<unsigned>(
      std::clamp(std::floor(0.5 * std::log2(1.0 / fpr)), 1.0, double{blocked_bloom_max_hashes}));
  unsigned misses = 0;
  for (unsigned k = start; k <= blocked_bloom_max_hashes && misses < 3; ++k) {
    misses = try_k(k) ? 0 : misses + 1;
  }
  for (unsigned k = start; k > 1 && best.hashes == k && try_k(k - 1); --k) {
  }
  if (!std::isfinite(best.bits_per_item)) {
    throw std::invalid_argument("ccf::blocked_bloom_filter: fpr " + bloom_format_double(fpr) +
                                " is below what 512-bit blocks can reach");
  }
  return best;
}

/// The key-level half of both Bloom filters: hashing keys with the filter's seed, counting
/// inserts, and the batches, which hash the key `bloom_lookahead` places ahead and prefetch what
/// it will touch while the current key is processed. Derived supplies insert_hash(h),
/// contains_hash(h), prefetch_hash(h, write), clear_bits() and a `name` for messages (the front
/// end is their friend).
template <class Derived, class Key, class Hash>
class bloom_frontend {
 public:
  using key_type = Key;
  using hasher = Hash;

  void insert(const Key& key) noexcept {
    self().insert_hash(hash_(key, key_seed_));
    ++size_;
  }

  bool contains(const Key& key) const noexcept {
    return self().contains_hash(hash_(key, key_seed_));
  }

  /// Inserts every key.
  void insert_many(std::span<const Key> keys) noexcept {
    batch(
        keys, [this](std::size_t, std::uint64_t h) { self().insert_hash(h); }, true);
    size_ += keys.size();
  }

  /// out[i] = contains(keys[i]). Throws std::invalid_argument when out is shorter than keys.
  void contains_many(std::span<const Key> keys, std::span<bool> out) const {
    if (out.size() < keys.size()) {
      throw std::invalid_argument(std::string(Derived::name) + "::contains_many: out has " +
                                  std::to_string(out.size()) + " elements for " +
                                  std::to_string(keys.size()) + " keys");
    }
    batch(
        keys, [this, out](std::size_t i, std::uint64_t h) { out[i] = self().contains_hash(h); },
        false);
  }

  void clear() noexcept {
    self().clear_bits();
    size_ = 0;
  }

  /// Number of inserts performed (duplicates counted) since construction or clear().
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::uint64_t seed() const noexcept { return seed_; }

 protected:
  /// Throws std::invalid_argument for capacity 0 or a fpr outside (0, 1).
  bloom_frontend(std::size_t capacity, double fpr, std::uint64_t seed)
      : seed_(seed), key_seed_(ccf::key_seed(seed)), capacity_(capacity) {
    bloom_check_arguments(Derived::name, capacity, fpr);
  }
  // Only as part of a filter: no front end is copied, moved or destroyed on its own. A move
  // leaves `other` empty, for one item (the filter gives it a table of its least size).
  bloom_frontend(const bloom_frontend&) = default;
  bloom_frontend(bloom_frontend&& other) noexcept
      : size_(std::exchange(other.size_, 0)),
        seed_(other.seed_),
        key_seed_(other.key_seed_),
        capacity_(std::exchange(other.capacity_, 1)),
        hash_(other.hash_) {}
  bloom_frontend& operator=(const bloom_frontend&) = default;
  bloom_frontend& operator=(bloom_frontend&& other) noexcept {
    if (this != &other) {
      size_ = std::exchange(other.size_, 0);
      seed_ = other.seed_;
      key_seed_ = other.key_seed_;
      capacity_ = std::exchange(other.capacity_, 1);
      hash_ = other.hash_;
    }
    return *this;
  }
  ~bloom_frontend() = default;

 private:
  const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
  Derived& self() noexcept { return static_cast<Derived&>(*this); }

  template <class Op>
  void batch(std::span<const Key> keys, Op op, bool write) const {
    constexpr std::size_t ahead = bloom_lookahead;
    std::array<std::uint64_t, ahead> ring{};
    const std::size_t n = keys.size();
    for (std::size_t i = 0; i < std::min(n, ahead); ++i) {
      ring[i] = hash_(keys[i], key_seed_);
      self().prefetch_hash(ring[i], write);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t h = ring[i % ahead];
      if (i + ahead < n) {
        ring[i % ahead] = hash_(keys[i + ahead], key_seed_);
        self().prefetch_hash(ring[i % ahead], write);
      }
      op(i, h);
    }
  }

  std::size_t size_ = 0;
  std::uint64_t seed_;
  std::uint64_t key_seed_;
  std::size_t capacity_;
  [[no_unique_address]] Hash hash_{};
};

}  // namespace detail

template <class Key, class Hash = ccf::hash<Key>>
class bloom_filter : public detail::bloom_frontend<bloom_filter<Key, Hash>, Key, Hash> {
  using frontend = detail::bloom_frontend<bloom_filter<Key, Hash>, Key, Hash>;
  friend frontend;
  static constexpr const char* name = "ccf::bloom_filter";  // for messages

 public:
  bloom_filter(std::size_t capacity, double fpr, std::uint64_t seed = ccf::default_seed)
      : frontend(capacity, fpr, seed) {
    const double bits = std::ceil(detail::bloom_bits_per_item(fpr) * static_cast<double>(capacity));
    words_.assign(detail::bloom_words_for_bits(name, bits, capacity), 0);
    num_bits_ = words_.size() * 64;
    const double k = std::round(std::numbers::ln2 * static_cast<double>(num_bits_) /
                                static_cast<double>(capacity));
    num_hashes_ = static_cast<std::size_t>(std::clamp(k, 1.0, 1024.0));
  }
  bloom_filter(const bloom_filter&) = default;
  bloom_filter& operator=(const bloom_filter&) = default;
  /// A move leaves `other` an empty filter of one word (contains() and insert() read past its
  /// empty table), as a moved-from cuckoo filter is: noexcept, so running out of memory for that
  /// word ends the program.
  bloom_filter(bloom_filter&& other) noexcept
      : frontend(std::move(other)),
        words_(std::exchange(other.words_, std::vector<std::uint64_t>(1))),
        num_bits_(std::exchange(other.num_bits_, 64)),
        num_hashes_(std::exchange(other.num_hashes_, 1)) {}
  bloom_filter& operator=(bloom_filter&& other) noexcept {
    if (this != &other) {
      frontend::operator=(std::move(other));
      words_ = std::exchange(other.words_, std::vector<std::uint64_t>(1));
      num_bits_ = std::exchange(other.num_bits_, 64);
      num_hashes_ = std::exchange(other.num_hashes_, 1);
    }
    return *this;
  }
  ~bloom_filter() = default;

  /// Bytes of the bit array.
  std::size_t size_in_bytes() const noexcept { return words_.size() * sizeof(std::uint64_t); }
  std::size_t num_hashes() const noexcept { return num_hashes_; }
  std::size_t num_bits() const noexcept { return num_bits_; }
  /// (1 - e^{-k n / m})^k for n = size(), the textbook estimate of the false-positive rate.
  double expected_fpr() const noexcept {
    const double k = static_cast<double>(num_hashes_);
    const double fill =
        -std::expm1(-k * static_cast<double>(this->size()) / static_cast<double>(num_bits_));
    return std::pow(fill, k);
  }

 private:
  static CCF_FORCEINLINE std::uint64_t stride_of(std::uint64_t h) noexcept {
    return mix64(h ^ detail::bloom_stride_salt) | 1U;
  }

  CCF_FORCEINLINE void insert_hash(std::uint64_t h) noexcept {
    const std::uint64_t d = stride_of(h);
    for (std::size_t i = 0; i < num_hashes_; ++i, h += d) {
      const std::uint64_t bit = detail::range_reduce(h, num_bits_);
      words_[bit >> 6] |= std::uint64_t{1} << (bit & 63);
    }
  }

  CCF_FORCEINLINE bool contains_hash(std::uint64_t h) const noexcept {
    const std::uint64_t d = stride_of(h);
    for (std::size_t i = 0; i < num_hashes_; ++i, h += d) {
      const std::uint64_t bit = detail::range_reduce(h, num_bits_);
      if (((words_[bit >> 6] >> (bit & 63)) & 1U) == 0) return false;
    }
    return true;
  }

  void prefetch_hash(std::uint64_t h, bool write) const noexcept {
    const std::uint64_t d = stride_of(h);
    for (std::size_t i = 0; i < num_hashes_; ++i, h += d) {
      const std::uint64_t* word = &words_[detail::range_reduce(h, num_bits_) >> 6];
      if (write) {
        CCF_PREFETCH_WRITE(word);
      } else {
        CCF_PREFETCH(word);
      }
    }
  }

  void clear_bits() noexcept { std::fill(words_.begin(), words_.end(), std::uint64_t{0}); }

  std::vector<std::uint64_t> words_;
  std::size_t num_bits_ = 64;
  std::size_t num_hashes_ = 1;
};

template <class Key, class Hash = ccf::hash<Key>>
class blocked_bloom_filter
    : public detail::bloom_frontend<blocked_bloom_filter<Key, Hash>, Key, Hash> {
  using frontend = detail::bloom_frontend<blocked_bloom_filter<Key, Hash>, Key, Hash>;
  friend frontend;
  static constexpr const char* name = "ccf::blocked_bloom_filter";  // for messages

 public:
  static constexpr std::size_t block_bits = detail::bloom_block_bits;

  blocked_bloom_filter(std::size_t capacity, double fpr, std::uint64_t seed = ccf::default_seed)
      : frontend(capacity, fpr, seed) {
    const detail::blocked_bloom_shape shape = detail::blocked_bloom_shape_for(fpr);
    const double bits = shape.bits_per_item * static_cast<double>(capacity);
    const std::size_t words =
        detail::bloom_words_for_bits(name, std::ceil(bits / block_bits) * block_bits, capacity);
    blocks_.resize(words / words_per_block);
    num_hashes_ = shape.hashes;
    design_fpr_ = detail::blocked_bloom_model_fpr(
        static_cast<double>(num_bits()) / static_cast<double>(capacity), shape.hashes);
  }
  blocked_bloom_filter(const blocked_bloom_filter&) = default;
  blocked_bloom_filter& operator=(const blocked_bloom_filter&) = default;
  /// A move leaves `other` an empty filter of one block (contains() and insert() read past its
  /// empty table), as a moved-from cuckoo filter is: noexcept, so running out of memory for that
  /// block ends the program.
  blocked_bloom_filter(blocked_bloom_filter&& other) noexcept
      : frontend(std::move(other)),
        blocks_(std::exchange(other.blocks_, std::vector<block>(1))),
        num_hashes_(other.num_hashes_),
        design_fpr_(other.design_fpr_) {}
  blocked_bloom_filter& operator=(blocked_bloom_filter&& other) noexcept {
    if (this != &other) {
      frontend::operator=(std::move(other));
      blocks_ = std::exchange(other.blocks_, std::vector<block>(1));
      num_hashes_ = other.num_hashes_;
      design_fpr_ = other.design_fpr_;
    }
    return *this;
  }
  ~blocked_bloom_filter() = default;

  std::size_t size_in_bytes() const noexcept { return blocks_.size() * sizeof(block); }
  std::size_t num_hashes() const noexcept { return num_hashes_; }
  std::size_t num_bits() const noexcept { return blocks_.size() * block_bits; }
  std::size_t num_blocks() const noexcept { return blocks_.size(); }
  /// The sizing model's false-positive rate once capacity() keys are in (<= the fpr asked for).
  double design_fpr() const noexcept { return design_fpr_; }

 private:
  static constexpr std::size_t words_per_block = block_bits / 64;
  struct alignas(cache_line_size) block {
    std::array<std::uint64_t, words_per_block> words{};
  };
  static_assert(sizeof(block) == 64 && alignof(block) == 64);
  using mask_type = std::array<std::uint64_t, words_per_block>;

  // The k bits of a key as one mask per word of its block.
  CCF_FORCEINLINE mask_type mask_of(std::uint64_t h) const noexcept {
    mask_type mask{};
    std::uint64_t counter = h;
    std::uint64_t fields = 0;
    unsigned left = 0;
    for (std::size_t i = 0; i < num_hashes_; ++i) {
      if (left == 0) {
        counter += detail::bloom_golden;
        fields = mix64(counter);
        left = 7;
      }
      const auto bit = static_cast<unsigned>(fields & (block_bits - 1));
      fields >>= 9;
      --left;
      mask[bit >> 6] |= std::uint64_t{1} << (bit & 63);
    }
    return mask;
  }

  CCF_FORCEINLINE std::size_t block_of(std::uint64_t h) const noexcept {
    return static_cast<std::size_t>(detail::range_reduce(h, blocks_.size()));
  }

  CCF_FORCEINLINE void insert_hash(std::uint64_t h) noexcept {
    const mask_type mask = mask_of(h);
    block& b = blocks_[block_of(h)];
    for (std::size_t w = 0; w < words_per_block; ++w)
      b.words[w] |= mask[w];
  }

  CCF_FORCEINLINE bool contains_hash(std::uint64_t h) const noexcept {
    const mask_type mask = mask_of(h);
    const block& b = blocks_[block_of(h)];
    std::uint64_t missing = 0;
    for (std::size_t w = 0; w < words_per_block; ++w)
      missing |= mask[w] & ~b.words[w];
    return missing == 0;
  }

  void prefetch_hash(std::uint64_t h, bool write) const noexcept {
    const block* b = &blocks_[block_of(h)];
    if (write) {
      CCF_PREFETCH_WRITE(b);
    } else {
      CCF_PREFETCH(b);
    }
  }

  void clear_bits() noexcept { std::fill(blocks_.begin(), blocks_.end(), block{}); }

  std::vector<block> blocks_;  // std::allocator honours alignas(64) (aligned operator new)
  std::size_t num_hashes_ = 1;
  double design_fpr_ = 0.0;
};

}  // namespace ccf
