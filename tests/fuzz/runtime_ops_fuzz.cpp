// Fuzz target for ccf::runtime_filter (include/ccf/runtime_filter.hpp and the filters behind it)
// over sequences of operations, checked against an exact multiset of the keys inserted.
//
// Input: byte 0 picks the kind (bits 0-1: sequential, concurrent, lock-free or growing; bit 2: a
// growing filter's kind; bits 3-5: max kicks; bit 6: another seed; bit 7: a growing filter that
// starts with two chunks), byte 1 the layout (fingerprint bits 4/8/12/16/32 x slots 2/4/8; for a
// growing filter its target rate and max doublings), bytes 2-3 the capacity (1 to 2000). A lock-free
// layout the lock-free filter does not have must be refused with std::invalid_argument; the
// sequential filter is used instead. Then operations, one byte each plus their arguments, at most
// max_ops of them: insert (by key or by hash), erase (of a key in the multiset: erasing a key never
// inserted may take another key's fingerprint), contains, count, insert_many, contains_many (by key
// or by hash), bulk_insert, save and load again (as bytes or through a stream, into any kind the
// layout has), clear, and "fill" (n new keys). A key is one byte (a small id: repeats are common),
// two bytes (a larger id), or a length and that many bytes.
//
// Checked after every operation: size() is the multiset's size; the key it touched is found and
// count() is at least its multiplicity; count() > 0 exactly when contains(). Every key of the
// multiset is checked the same way (and through contains_many) after every operation while there
// are few, every 16 operations otherwise, and after loads, clears, batches and at the end. A
// static filter may refuse an insert only when full: nothing changes then, and refusing a new key
// while at most half of capacity() is used (with 8-bit or wider fingerprints, the default max
// kicks and no key held more than twice) is a finding. Erasing a key of the multiset succeeds. A
// growing filter refuses a key only when it counts at least 4 copies of it. insert_many inserts
// exactly a prefix of its keys; bulk_insert accounts for every key. A filter saved and loaded
// again has the same size, shape and bytes. A cleared filter is empty.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ccf/runtime_filter.hpp"
#include "fuzz_support.hpp"

namespace {

using ccf::filter_kind;
using ccf_fuzz::bytes;
using ccf_fuzz::input_reader;

constexpr const char* target = "runtime_ops_fuzz";
constexpr std::size_t max_input = std::size_t{1} << 16;
constexpr std::size_t max_ops = 2000;
/// Keys inserted by one input at most (fill and batches included).
constexpr std::size_t max_keys = 8000;
/// Bytes saved by one input at most (large growing tables make saving costly).
constexpr std::size_t max_saved_bytes = std::size_t{16} << 20;
/// A growing filter may refuse a key only when it already counts at least this many copies of
/// it (both of its buckets, or its one bucket, full of entries no doubling separates from it).
constexpr std::size_t growing_blocking_copies = ccf::detail::growing_slots;

void require(bool ok, const std::string& what) {
  ccf_fuzz::require(ok, target, what);
}

/// CCF_FUZZ_TRACE=1: print every operation (to follow a finding).
bool trace() {
  static const bool on = std::getenv("CCF_FUZZ_TRACE") != nullptr;
  return on;
}

std::string printable(std::string_view k) {
  std::string s;
  for (char c : k) {
    if (c >= 0x20 && c < 0x7f) {
      s += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      s += buf;
    }
  }
  return "'" + s + "'";
}

/// The exact multiset of keys the filter holds.
class multiset {
 public:
  std::size_t size() const noexcept { return total_; }
  std::size_t distinct() const noexcept { return keys_.size(); }
  std::size_t count(const std::string& k) const {
    const auto it = where_.find(k);
    return it == where_.end() ? 0 : counts_[it->second];
  }
  const std::string& key(std::size_t i) const { return keys_[i]; }
  std::size_t count_at(std::size_t i) const { return counts_[i]; }
  /// The largest multiplicity of a key.
  std::size_t max_count() const noexcept {
    return counts_.empty() ? 0 : *std::max_element(counts_.begin(), counts_.end());
  }
  void add(const std::string& k) {
    const auto [it, fresh] = where_.try_emplace(k, keys_.size());
    if (fresh) {
      keys_.push_back(k);
      counts_.push_back(0);
    }
    ++counts_[it->second];
    ++total_;
  }
  void remove(const std::string& k) {
    const auto it = where_.find(k);
    const std::size_t i = it->second;
    --total_;
    if (--counts_[i] != 0) return;
    where_.erase(it);
    if (i + 1 != keys_.size()) {
      keys_[i] = std::move(keys_.back());
      counts_[i] = counts_.back();
      where_[keys_[i]] = i;
    }
    keys_.pop_back();
    counts_.pop_back();
  }
  void clear() {
    keys_.clear();
    counts_.clear();
    where_.clear();
    total_ = 0;
  }

 private:
  std::vector<std::string> keys_;
  std::vector<std::size_t> counts_;
  std::unordered_map<std::string, std::size_t> where_;
  std::size_t total_ = 0;
};

/// One input's run.
class session {
 public:
  explicit session(input_reader& in) : in_(in), filter_(make_filter()) {}

  void run() {
    for (std::size_t op = 0; op < max_ops && !in_.done() && inserted_ < max_keys; ++op) {
      step(op);
      require(filter_->size() == model_.size(),
              "size() is " + std::to_string(filter_->size()) + ", the multiset holds " +
                  std::to_string(model_.size()) + " (after operation " + std::to_string(op) + ", " +
                  last_ + ")");
      if (model_.distinct() <= 64 || op % 16 == 15 || sweep_) check_all();
      sweep_ = false;
    }
    check_all();
    if (!growing_ && model_.size() > 0) round_trip(kind_);
  }

 private:
  // ---- setup ----
  std::unique_ptr<ccf::runtime_filter> make_filter() {
    const std::uint8_t b0 = in_.byte(), b1 = in_.byte();
    const std::uint16_t cap = in_.u16();
    static constexpr std::size_t kicks[] = {500, 0, 1, 8, 64, 500, 500, 2000};
    ccf::filter_config c;
    growing_ = (b0 & 3) == 3;
    if (growing_) {
      static constexpr double rates[] = {0.05, 0.01, 0.001, 1e-5, 1e-7};
      static constexpr unsigned doublings[] = {16, 4, 0};
      const filter_kind kind = (b0 & 4) != 0 ? filter_kind::concurrent : filter_kind::sequential;
      // Bit 7: more than one chunk of 2^15 buckets from the start (splits instead of rebuilds).
      const std::size_t capacity = (b0 & 0x80) != 0 ? 124519 + cap % 4000 : 1 + cap % 2000;
      c = ccf::filter_config::growing_for_rate(capacity, rates[b1 % 5], kind,
                                               doublings[(b1 / 5) % 3]);
    } else {
      static constexpr unsigned bits[] = {4, 8, 12, 16, 32};
      static constexpr unsigned slots[] = {2, 4, 8};
      c.capacity = 1 + cap % 2000;
      c.fingerprint_bits = bits[b1 % 5];
      c.slots_per_bucket = slots[(b1 / 5) % 3];
      c.kind = static_cast<filter_kind>(b0 & 3);
      c.max_kicks = kicks[(b0 >> 3) & 7];
    }
    if ((b0 & 0x40) != 0) c.seed = 0x1000 + b1;
    if (c.kind == filter_kind::lockfree &&
        !ccf::detail::versioned_layout_supported(c.fingerprint_bits, c.slots_per_bucket)) {
      bool refused = false;
      try {
        ccf::runtime_filter f(c);
      } catch (const std::invalid_argument&) {
        refused = true;
      }
      require(refused, "a lock-free filter of " + std::to_string(c.fingerprint_bits) + " x " +
                           std::to_string(c.slots_per_bucket) + " was made");
      c.kind = filter_kind::sequential;
    }
    kind_ = c.kind;
    max_kicks_ = c.max_kicks;
    auto f = std::make_unique<ccf::runtime_filter>(c);
    require(f->growing() == growing_ && f->kind() == c.kind && f->empty(),
            "a new filter is not what was asked for");
    require(growing_ || f->capacity() >= c.capacity, "capacity() is less than asked for");
    return f;
  }

  // ---- keys ----
  std::string read_key() {
    const std::uint8_t b = in_.byte();
    if (b < 0x80) return "k" + std::to_string(b);
    if (b < 0xe0) return "m" + std::to_string(((b - 0x80) << 8) | in_.byte());
    return "r" + in_.take(b - 0xe0);
  }
  /// A key of the multiset (empty: none).
  std::optional<std::string> present_key() {
    const std::uint16_t pick = in_.u16();
    if (model_.distinct() == 0) return std::nullopt;
    return model_.key(pick % model_.distinct());
  }

  // ---- checks ----
  void check_key(const std::string& k) {
    const bool has = filter_->contains(k);
    const std::size_t count = filter_->count(k);
    const std::size_t want = model_.count(k);
    require((count > 0) == has, "count() > 0 is not contains() for " + printable(k));
    require(want == 0 || has, "false negative: " + printable(k) + " (inserted " +
                                  std::to_string(want) + " times, after " + last_ + ")");
    require(count >= want, "count(" + printable(k) + ") is " + std::to_string(count) +
                               ", it was inserted " + std::to_string(want) + " times");
  }
  void check_all() {
    const std::size_t n = model_.distinct();
    std::vector<std::string_view> keys;
    keys.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
      keys.emplace_back(model_.key(i));
    const std::unique_ptr<bool[]> found(new bool[n + 1]());
    const std::size_t hits = filter_->contains_many(keys, std::span<bool>(found.get(), n));
    require(hits == n, "contains_many finds " + std::to_string(hits) + " of the " +
                           std::to_string(n) + " keys inserted (after " + last_ + ")");
    for (std::size_t i = 0; i < n; ++i) {
      require(found[i], "false negative in contains_many: " + printable(keys[i]));
      const std::size_t count = filter_->count(keys[i]);
      require(count >= model_.count_at(i), "count(" + printable(keys[i]) + ") is " +
                                               std::to_string(count) + ", it was inserted " +
                                               std::to_string(model_.count_at(i)) + " times");
    }
  }
  /// After a static filter refused key k: nothing changed, and it was plausibly full.
  void refused(const std::string& k, std::size_t size_before) {
    require(filter_->size() == size_before, "a refused insert changed size()");
    require(!growing_ || filter_->count(k) >= growing_blocking_copies,
            "a growing filter refused " + printable(k) + ", counted " +
                std::to_string(filter_->count(k)) + " times");
    // Copies of one key can fill both its buckets, and a kick walk that enters them stays there:
    // only a refusal with no key held more than twice is suspicious.
    const bool suspicious = model_.count(k) == 0 && 2 * filter_->size() < filter_->capacity() &&
                            max_kicks_ >= 500 && filter_->fingerprint_bits() >= 8 &&
                            model_.max_count() <= 2;
    require(!suspicious, "a new key " + printable(k) + " was refused at " +
                             std::to_string(filter_->size()) + " items of capacity " +
                             std::to_string(filter_->capacity()));
  }

  // ---- operations ----
  void insert_one(const std::string& k, bool by_hash) {
    if (trace()) std::fprintf(stderr, "  key %s\n", printable(k).c_str());
    const std::size_t before = filter_->size();
    const bool ok = by_hash ? filter_->insert_hash(filter_->hash_of(k)) : filter_->insert(k);
    ++inserted_;
    if (ok) {
      model_.add(k);
    } else {
      refused(k, before);
    }
    check_key(k);
  }
  void erase_one(bool by_hash) {
    const auto k = present_key();
    if (!k) return;
    const bool ok = by_hash ? filter_->erase_hash(filter_->hash_of(*k)) : filter_->erase(*k);
    require(ok, "erasing " + printable(*k) + ", inserted " + std::to_string(model_.count(*k)) +
                    " times, failed");
    model_.remove(*k);
    check_key(*k);
  }
  std::vector<std::string> read_batch() {
    const std::size_t n = 1 + in_.byte() % 16;
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < n && !in_.done(); ++i) {
      std::string k = read_key();
      keys.push_back(std::move(k));
    }
    return keys;
  }
  static std::vector<std::string_view> views(const std::vector<std::string>& keys) {
    return std::vector<std::string_view>(keys.begin(), keys.end());
  }
  void insert_many() {
    const std::vector<std::string> keys = read_batch();
    const auto v = views(keys);
    const std::size_t before = filter_->size();
    const std::size_t r = filter_->insert_many(v);
    inserted_ += keys.size();
    require(r <= keys.size(), "insert_many claims more keys than it was given");
    for (std::size_t i = 0; i < r; ++i)
      model_.add(keys[i]);
    require(filter_->size() == before + r, "insert_many inserted other than a prefix");
    if (r < keys.size()) refused(keys[r], filter_->size());
    sweep_ = true;
  }
  void contains_many() {
    const bool by_hash = in_.byte() % 2 != 0;
    const std::vector<std::string> keys = read_batch();
    const auto v = views(keys);
    const std::unique_ptr<bool[]> found(new bool[keys.size() + 1]());
    std::size_t hits = 0;
    if (by_hash) {
      std::vector<std::uint64_t> hashes;
      for (std::string_view k : v)
        hashes.push_back(filter_->hash_of(k));
      hits = filter_->contains_many_hashes(hashes, std::span<bool>(found.get(), keys.size()));
    } else {
      hits = filter_->contains_many(v, std::span<bool>(found.get(), keys.size()));
    }
    std::size_t expected = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      require(found[i] == filter_->contains(keys[i]),
              "contains_many differs from contains for " + printable(keys[i]));
      require(found[i] || model_.count(keys[i]) == 0,
              "false negative in contains_many: " + printable(keys[i]));
      expected += found[i] ? 1 : 0;
    }
    require(hits == expected, "contains_many's count is not the keys it found");
  }
  void bulk_insert() {
    const unsigned threads = 1 + in_.byte() % 2;
    const std::vector<std::string> keys = read_batch();
    const auto v = views(keys);
    const std::size_t before = filter_->size();
    const ccf::bulk_result r = filter_->bulk_insert(v, threads, false);
    inserted_ += keys.size();
    require(r.inserted + r.refused == keys.size() && r.duplicates == 0,
            "bulk_insert does not account for its keys");
    require(filter_->size() == before + r.inserted, "bulk_insert's count is not size()'s");
    if (r.refused == 0) {
      for (const std::string& k : keys)
        model_.add(k);
    } else {
      // Which keys were refused is not said: start again from an empty filter.
      require(!growing_ || std::any_of(keys.begin(), keys.end(),
                                       [&](const std::string& k) {
                                         return filter_->count(k) >= growing_blocking_copies;
                                       }),
              "a growing filter refused keys in bulk_insert");
      filter_->clear();
      model_.clear();
    }
    sweep_ = true;
  }
  void fill() {
    const std::size_t n = 1 + in_.byte();
    for (std::size_t i = 0; i < n; ++i) {
      const std::string k = "f" + std::to_string(fresh_++);
      const std::size_t before = filter_->size();
      ++inserted_;
      if (!filter_->insert(k)) {
        refused(k, before);
        break;
      }
      model_.add(k);
    }
    sweep_ = true;
  }
  /// Saves the filter and loads it again as `kind` (through a stream when `stream`).
  void round_trip(filter_kind kind, bool stream = false) {
    const std::vector<std::byte> saved = filter_->to_bytes();
    saved_bytes_ += saved.size();
    std::ostringstream out;
    filter_->save(out);
    const std::string text = out.str();
    require(
        text.size() == saved.size() && std::memcmp(text.data(), saved.data(), saved.size()) == 0,
        "save() and to_bytes() differ");
    std::unique_ptr<ccf::runtime_filter> loaded;
    if (stream) {
      std::istringstream s(text);
      loaded = std::make_unique<ccf::runtime_filter>(ccf::runtime_filter::load(s, kind));
    } else {
      loaded = std::make_unique<ccf::runtime_filter>(ccf::runtime_filter::load(saved, kind));
    }
    require(loaded->size() == filter_->size() && loaded->num_buckets() == filter_->num_buckets() &&
                loaded->chunks() == filter_->chunks() &&
                loaded->fingerprint_bits() == filter_->fingerprint_bits() &&
                loaded->slots_per_bucket() == filter_->slots_per_bucket() &&
                loaded->growing() == growing_ && loaded->seed() == filter_->seed(),
            "the filter loaded again differs in size or shape");
    if (!growing_) {
      require(loaded->capacity() == filter_->capacity() &&
                  loaded->max_kicks() == filter_->max_kicks() && loaded->to_bytes() == saved,
              "a static filter loaded again saves other bytes");
    }
    filter_ = std::move(loaded);
    kind_ = kind;
    sweep_ = true;
  }
  void reload() {
    const std::uint8_t mode = in_.byte();
    if (saved_bytes_ > max_saved_bytes) return;
    filter_kind kind = filter_kind::sequential;
    if (growing_) {
      kind = mode % 2 == 0 ? filter_kind::sequential : filter_kind::concurrent;
    } else {
      kind = static_cast<filter_kind>(mode % 3);
      if (kind == filter_kind::lockfree &&
          !ccf::detail::versioned_layout_supported(filter_->fingerprint_bits(),
                                                   filter_->slots_per_bucket())) {
        kind = filter_kind::concurrent;
      }
    }
    round_trip(kind, (mode & 4) != 0);
  }
  void clear() {
    filter_->clear();
    model_.clear();
    require(filter_->size() == 0 && filter_->empty(), "clear() left items");
    sweep_ = true;
  }

  void step(std::size_t op) {
    const std::uint8_t code = in_.byte() % 15;
    static constexpr const char* names[] = {
        "insert", "insert",           "insert_hash",   "erase",       "erase_hash",      "contains",
        "count",  "insert_many",      "contains_many", "bulk_insert", "save and reload", "clear",
        "fill",   "erase all copies", "insert"};
    last_ = std::string(names[code]) + " #" + std::to_string(op);
    if (trace()) {
      std::fprintf(stderr, "%s: size %zu, %zu distinct keys\n", last_.c_str(), filter_->size(),
                   model_.distinct());
    }
    switch (code) {
      case 0:
      case 1:
      case 14:
        insert_one(read_key(), false);
        break;
      case 2:
        insert_one(read_key(), true);
        break;
      case 3:
        erase_one(false);
        break;
      case 4:
        erase_one(true);
        break;
      case 5:
      case 6:
        check_key(read_key());
        break;
      case 7:
        insert_many();
        break;
      case 8:
        contains_many();
        break;
      case 9:
        bulk_insert();
        break;
      case 10:
        reload();
        break;
      case 11:
        clear();
        break;
      case 12:
        fill();
        break;
      default: {  // erase every copy of a key
        const auto k = present_key();
        if (!k) break;
        for (std::size_t n = model_.count(*k); n > 0; --n) {
          require(filter_->erase(*k), "erasing a copy of " + printable(*k) + " failed");
          model_.remove(*k);
        }
        check_key(*k);
        break;
      }
    }
  }

  input_reader& in_;
  bool growing_ = false;
  filter_kind kind_ = filter_kind::sequential;
  std::size_t max_kicks_ = 500;
  std::unique_ptr<ccf::runtime_filter> filter_;
  multiset model_;
  std::size_t inserted_ = 0, fresh_ = 0, saved_bytes_ = 0;
  bool sweep_ = false;
  std::string last_ = "nothing";
};

// ---- seeds ----

/// Builds an input: the configuration bytes, then operations.
class script {
 public:
  script(std::uint8_t kind, std::uint8_t layout, std::uint16_t capacity)
      : b_{kind, layout, static_cast<std::uint8_t>(capacity),
           static_cast<std::uint8_t>(capacity >> 8)} {}
  script& op(std::uint8_t code, std::initializer_list<std::uint8_t> args = {}) {
    b_.push_back(code);
    b_.insert(b_.end(), args.begin(), args.end());
    return *this;
  }
  script& insert(std::uint8_t id) { return op(0, {id}); }
  script& erase(std::uint16_t pick) {
    return op(3, {static_cast<std::uint8_t>(pick), static_cast<std::uint8_t>(pick >> 8)});
  }
  bytes done() const { return b_; }

 private:
  bytes b_;
};

/// A mixed workload: inserts with repeats, erases, batches, lookups, a reload and a clear.
bytes mixed(std::uint8_t kind, std::uint8_t layout, std::uint16_t capacity) {
  script s(kind, layout, capacity);
  for (std::uint8_t i = 0; i < 40; ++i)
    s.insert(static_cast<std::uint8_t>(i % 23));
  s.op(2, {0x85, 7}).op(2, {0xe3, 'a', 'b', 'c'}).op(2, {0xe0});
  for (std::uint16_t i = 0; i < 10; ++i)
    s.erase(static_cast<std::uint16_t>(i * 7));
  s.op(7, {5, 1, 2, 3, 0x81, 4, 5}).op(8, {1, 3, 1, 2, 99, 100}).op(8, {0, 2, 4, 5});
  s.op(9, {1, 4, 10, 11, 12, 13, 14}).op(12, {60}).op(10, {0}).op(6, {1}).op(5, {50});
  s.op(4, {3, 0}).op(13, {1, 0}).op(10, {5}).op(10, {2}).op(12, {30});
  s.op(11).insert(1).insert(1).insert(2).op(10, {1}).erase(0).erase(0);
  return s.done();
}

std::vector<ccf_fuzz::seed> seeds() {
  std::vector<ccf_fuzz::seed> s;
  static constexpr const char* kind_names[] = {"sequential", "concurrent", "lockfree"};
  static constexpr unsigned bits[] = {4, 8, 12, 16, 32};
  static constexpr unsigned slots[] = {2, 4, 8};
  // Every layout and kind: a mixed workload on a small table, and filling a tiny one until full.
  for (unsigned b = 0; b < 5; ++b) {
    for (unsigned sl = 0; sl < 3; ++sl) {
      const auto layout = static_cast<std::uint8_t>(b + 5 * sl);
      const std::string shape = std::to_string(bits[b]) + "x" + std::to_string(slots[sl]);
      for (std::uint8_t kind = 0; kind < 3; ++kind) {
        if (kind == 2 && !ccf::detail::versioned_layout_supported(bits[b], slots[sl])) continue;
        if ((b + sl + kind) % 2 != 0 && kind != 2) continue;  // half of the others
        s.push_back(
            {std::string("mixed-") + kind_names[kind] + "-" + shape, mixed(kind, layout, 120)});
      }
    }
  }
  for (unsigned b : {0u, 1u, 3u}) {
    for (std::uint8_t kind : {std::uint8_t{0}, std::uint8_t{0x10}}) {  // max kicks 500 or 8 ... 1
      script f(kind, static_cast<std::uint8_t>(b + 5), 20);
      f.op(12, {255}).op(12, {100}).op(7, {15, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
      f.op(10, {0}).op(14, {77}).erase(3).insert(77).op(11).op(12, {40});
      s.push_back(
          {"full-" + std::to_string(bits[b]) + "x4" + (kind != 0 ? "-kicks-1" : ""), f.done()});
    }
  }
  {  // one key many times: a static filter refuses the 2 * slots + 1st copy
    script r(0, 6, 100);
    for (int i = 0; i < 12; ++i)
      r.insert(9);
    r.op(13, {0, 0}).insert(9);
    s.push_back({"repeats-8x4", r.done()});
  }
  // Growing filters: rebuilds (small start), splits (two chunks), both kinds, several rates.
  for (std::uint8_t rate = 0; rate < 5; ++rate) {
    const auto kind = static_cast<std::uint8_t>(3 | (rate % 2 != 0 ? 4 : 0));
    script g(kind, static_cast<std::uint8_t>(rate + 5 * (rate % 3)), 10);
    g.op(12, {255}).op(12, {255}).op(10, {0}).op(12, {200}).op(10, {1});
    for (int i = 0; i < 30; ++i)
      g.insert(static_cast<std::uint8_t>(i % 7));
    g.erase(1).erase(2).op(13, {0, 0}).op(7, {4, 1, 1, 2, 2}).op(9, {0, 3, 5, 6, 7}).op(11);
    g.op(12, {150});
    s.push_back({"growing-rate-" + std::to_string(rate), g.done()});
  }
  {
    script g(3 | 0x80, 0, 100);
    g.op(12, {255}).op(10, {0}).op(12, {255}).erase(5).op(10, {1}).op(11).insert(1);
    s.push_back({"growing-two-chunks", g.done()});
  }
  s.push_back({"lockfree-unsupported-32x8", mixed(2, 4 + 5 * 2, 50)});
  s.push_back({"seed-and-kicks-0", mixed(0x40 | 0x08, 1 + 5, 30)});
  s.push_back({"empty", {}});
  return s;
}

}  // namespace

namespace ccf_fuzz {
const target_hooks& hooks() {
  static const target_hooks h{target, &seeds, nullptr, nullptr};
  return h;
}
}  // namespace ccf_fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > max_input) return 0;
  input_reader in(data, size);
  try {
    session(in).run();
  } catch (const std::exception& e) {
    ccf_fuzz::fail(target, std::string("unexpected exception: ") + e.what());
  }
  return 0;
}
