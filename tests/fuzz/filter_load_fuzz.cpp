// Fuzz target for ccf's filter file loader (include/ccf/detail/serialization.hpp, filter_file.hpp,
// the loading constructors of filter_frontend.hpp and growing_cuckoo_filter.hpp, and
// runtime_filter::load). The input is a filter file. It is given, as it is and (when its checksum
// does not match) resealed with the right checksum, so that changes reach past the checksum, to:
//   read_filter_info            over the bytes, a std::istringstream and a non-seekable stream
//                               read in small pieces;
//   runtime_filter::load        over the bytes (sequential), a std::istringstream with exceptions
//                               enabled (concurrent) and the non-seekable stream (lock-free);
//   typed loading constructors  cuckoo_filter<std::string, 16, 4>, the lock-free <12, 4>, the
//                               global-alternate cuckoo_filter<std::string, 16, 4>, and the
//                               growing filters over std::string_view (one of them from the
//                               non-seekable stream).
// Only ccf::format_error may come out (the lock-free runtime kind may also refuse a layout it
// does not have, or a growing filter, with std::invalid_argument). The loaders must agree with
// one another: a file loads into a typed filter exactly when the runtime filter loads it and the
// header names that type; read_filter_info accepts every file a loader accepts, with the same
// fields; a stream of unknown length is read no further than the header claims plus one byte.
// A filter that loads is exercised: size() within its slots, count() > 0 exactly when contains(),
// contains_many() agrees with contains(); to_bytes() gives back the very file (static filters) and
// loads again into a filter with the same size and answers; clear() leaves a filter that answers
// no to everything; a key inserted is found and counted, erasing it succeeds, and afterwards
// every answer is what it was (static filters; a growing filter that did not double answers yes
// at least where it did). A static filter may refuse the insert (full), changing nothing.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <istream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "ccf/cuckoo_filter.hpp"
#include "ccf/filter_file.hpp"
#include "ccf/growing_cuckoo_filter.hpp"
#include "ccf/lockfree_cuckoo_filter.hpp"
#include "ccf/runtime_filter.hpp"
#include "fuzz_support.hpp"

namespace {

using ccf::filter_kind;
using ccf_fuzz::bytes;
using ccf_fuzz::require;

constexpr const char* target = "filter_load_fuzz";
constexpr std::size_t max_input = std::size_t{1} << 20;
constexpr std::size_t header_size = 80;
constexpr std::size_t trailer_size = 16;

using typed_16x4 = ccf::cuckoo_filter<std::string, 16, 4>;
using typed_lockfree_12x4 = ccf::lockfree_cuckoo_filter<std::string, 12, 4>;
using typed_global_16x4 =
    ccf::cuckoo_filter<std::string, 16, 4, ccf::hash<std::string>, ccf::global_alternate>;
using growing = ccf::growing_cuckoo_filter<std::string_view>;
using concurrent_growing = ccf::concurrent_growing_cuckoo_filter<std::string_view>;

/// The step running now (named when an unexpected exception comes out).
const char* stage = "";

std::span<const std::byte> as_span(const bytes& b) {
  return {reinterpret_cast<const std::byte*>(b.data()), b.size()};
}
bool same_bytes(const std::vector<std::byte>& a, const bytes& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

/// The header fields of a file, read straight from its bytes.
struct header_view {
  bool whole = false;  // at least a header's bytes
  std::uint32_t version = 0, bits = 0, slots = 0, alternate = 0;
  std::uint64_t num_buckets = 0, capacity = 0, word_count = 0, chunks = 0;

  explicit header_view(const bytes& b) : whole(b.size() >= header_size) {
    using ccf_fuzz::get_le;
    version = static_cast<std::uint32_t>(get_le(b, 8, 4));
    bits = static_cast<std::uint32_t>(get_le(b, 12, 4));
    slots = static_cast<std::uint32_t>(get_le(b, 16, 4));
    alternate = static_cast<std::uint32_t>(get_le(b, 20, 4));
    num_buckets = get_le(b, 24, 8);
    capacity = get_le(b, 48, 8);
    word_count = get_le(b, 56, 8);
    chunks = get_le(b, 72, 8);
  }
  bool is_growing() const noexcept { return alternate == 3; }
  bool static_layout() const noexcept {
    return (bits == 4 || bits == 8 || bits == 12 || bits == 16 || bits == 32) &&
           (slots == 2 || slots == 4 || slots == 8);
  }
  bool names(unsigned b, unsigned s, unsigned alt) const noexcept {
    return bits == b && slots == s && alternate == alt;
  }
  /// The most a loader may read from a stream of unknown length: the header, what it claims and
  /// one byte more.
  std::uint64_t read_bound() const noexcept {
    return header_size +
           (word_count < (std::uint64_t{1} << 58) ? word_count * 8 + trailer_size + 1 : 0);
  }
};

/// Writes the right checksum into a file's last 8 bytes.
void reseal(bytes& b) {
  if (b.size() < header_size + trailer_size) return;
  ccf_fuzz::put_le(b, b.size() - 8, XXH3_64bits(b.data(), b.size() - 8), 8);
}

/// A stream buffer that cannot seek and hands out the bytes `piece` at a time (a pipe).
class piece_buf : public std::streambuf {
 public:
  piece_buf(const bytes& b, std::size_t piece) : data_(b), piece_(piece) {}
  /// Bytes taken from it so far.
  std::size_t consumed() const noexcept {
    return given_ - static_cast<std::size_t>(egptr() - gptr());
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (given_ == data_.size()) return traits_type::eof();
    const std::size_t k = std::min(piece_, data_.size() - given_);
    char* p = const_cast<char*>(reinterpret_cast<const char*>(data_.data()) + given_);
    setg(p, p, p + k);
    given_ += k;
    return traits_type::to_int_type(*gptr());
  }

 private:
  const bytes& data_;
  std::size_t piece_;
  std::size_t given_ = 0;
};

std::string as_string(const bytes& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// ---- reading a file's header ----

std::optional<ccf::filter_file_info> info_of(const char* who, auto&& read) {
  stage = who;
  try {
    return read();
  } catch (const ccf::format_error&) {
    return std::nullopt;
  }
}

bool same_info(const ccf::filter_file_info& a, const ccf::filter_file_info& b) {
  return a.fingerprint_bits == b.fingerprint_bits && a.slots_per_bucket == b.slots_per_bucket &&
         a.alternate == b.alternate && a.num_buckets == b.num_buckets && a.chunks == b.chunks &&
         a.seed == b.seed && a.max_kicks == b.max_kicks && a.capacity == b.capacity &&
         a.file_bytes == b.file_bytes;
}

// ---- exercising a loaded filter ----

/// The keys every loaded filter is asked about: fixed ones and pieces of the input.
std::vector<std::string> probe_keys(const bytes& in) {
  std::vector<std::string> keys = {"", "a", "key-0", "key-1", "key-7", "key-42", "k1", "fuzz"};
  for (std::size_t at = 0; at + 8 <= in.size() && keys.size() < 12; at += 8 + in.size() / 5)
    keys.push_back(std::string(reinterpret_cast<const char*>(in.data() + at), 8));
  return keys;
}

struct answers {
  std::vector<char> has;
  std::vector<std::size_t> count;
  bool operator==(const answers&) const = default;
};

template <class F>
unsigned doublings_of(const F& f) {
  if constexpr (requires { f.doublings(); }) {
    return f.doublings();
  } else {
    return 0;
  }
}

template <class Key, class F>
answers ask(const F& f, const std::vector<Key>& keys, const std::string& who) {
  answers a;
  for (const Key& k : keys) {
    const bool has = f.contains(k);
    const std::size_t count = f.count(k);
    require((count > 0) == has, target, who + ": count() > 0 is not contains()");
    a.has.push_back(has ? 1 : 0);
    a.count.push_back(count);
  }
  const std::unique_ptr<bool[]> found(new bool[keys.size()]());
  const std::size_t hits =
      f.contains_many(std::span<const Key>(keys), std::span<bool>(found.get(), keys.size()));
  std::size_t expected = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    require(found[i] == (a.has[i] != 0), target, who + ": contains_many differs from contains");
    expected += a.has[i] != 0 ? 1 : 0;
  }
  require(hits == expected, target, who + ": contains_many's count is wrong");
  return a;
}

/// Whether `after` answers yes wherever `before` did, with counts at least as high.
bool covers(const answers& after, const answers& before) {
  for (std::size_t i = 0; i < before.has.size(); ++i) {
    if ((before.has[i] != 0 && after.has[i] == 0) || after.count[i] < before.count[i]) {
      return false;
    }
  }
  return true;
}

/// Inserts keys (one by one or as a batch), checks that they are found, erases them again and
/// checks what the filter answers afterwards.
template <class Key, class F>
void insert_and_erase(F& f, const std::vector<Key>& probes, const std::vector<Key>& added,
                      bool batch, bool is_growing, const std::string& who) {
  const answers before = ask(f, probes, who);
  const std::size_t size0 = f.size();
  const unsigned doublings0 = doublings_of(f);
  std::size_t inserted = 0;
  if (batch) {
    inserted = f.insert_many(std::span<const Key>(added));
    require(inserted <= added.size(), target, who + ": insert_many claims too many");
  } else {
    while (inserted < added.size() && f.insert(added[inserted]))
      ++inserted;
  }
  require(is_growing ? inserted == added.size() : true, target,
          who + ": a growing filter refused an insert");
  require(f.size() == size0 + inserted, target, who + ": size() after inserts is wrong");
  for (std::size_t i = 0; i < inserted; ++i) {
    require(f.contains(added[i]) && f.count(added[i]) >= 1, target,
            who + ": a key just inserted is not found");
  }
  for (std::size_t i = inserted; i-- > 0;)
    require(f.erase(added[i]), target, who + ": erasing a key just inserted failed");
  require(f.size() == size0, target, who + ": size() after erasing the inserted keys is wrong");
  const answers after = ask(f, probes, who);
  if (!is_growing) {
    require(after == before, target, who + ": insert then erase changed the filter's answers");
  } else if (doublings_of(f) == doublings0) {
    require(covers(after, before), target, who + ": insert then erase lost an answer");
  }
}

/// Checks and exercises a filter that loaded. `file` is what it must save as (static filters).
template <class Key, class F, class Reload>
void exercise(F& f, const bytes& in, const bytes* file, bool is_growing, const std::string& who,
              Reload&& reload) {
  require(f.size() <= f.size_in_tags(), target, who + ": size() exceeds the slots");
  const std::vector<std::string> names = probe_keys(in);
  const std::vector<Key> probes(names.begin(), names.end());
  const answers before = ask(f, probes, who);

  const std::vector<std::byte> saved = f.to_bytes();
  if (file != nullptr) {
    require(same_bytes(saved, *file), target, who + ": to_bytes() is not the file loaded");
  }
  {
    F copy = reload(saved);
    require(copy.size() == f.size() && copy.num_buckets() == f.num_buckets() &&
                copy.chunks() == f.chunks(),
            target, who + ": the filter saved and loaded again differs in size or shape");
    require(ask(copy, probes, who) == before, target,
            who + ": the filter saved and loaded again answers differently");
    copy.clear();
    require(copy.size() == 0, target, who + ": size() after clear() is not 0");
    const answers cleared = ask(copy, probes, who);
    for (char h : cleared.has)
      require(h == 0, target, who + ": a cleared filter answers yes");
    const F empty = reload(copy.to_bytes());
    require(empty.size() == 0, target, who + ": a cleared filter loads with items");
  }

  const std::vector<std::string> added_names = {"ccf-fuzz-probe", "ccf-fuzz-probe-1",
                                                "ccf-fuzz-probe-2"};
  const std::vector<Key> added(added_names.begin(), added_names.end());
  insert_and_erase(f, probes, std::vector<Key>(added.begin(), added.begin() + 1), false, is_growing,
                   who);
  insert_and_erase(f, probes, added, true, is_growing, who);
}

// ---- the loaders ----

/// runtime_filter::load; nullopt when the file is refused.
std::optional<ccf::runtime_filter> load_runtime(const char* who, const header_view& h,
                                                filter_kind kind, auto&& load) {
  stage = who;
  try {
    return load();
  } catch (const ccf::format_error&) {
    return std::nullopt;
  } catch (const std::invalid_argument&) {
    // The lock-free kind has no layout of more than 48 bits per bucket, and no growing filter.
    if (kind == filter_kind::lockfree &&
        (h.is_growing() ||
         (h.static_layout() && !ccf::detail::versioned_layout_supported(h.bits, h.slots)))) {
      return std::nullopt;
    }
    throw;
  }
}

template <class F>
std::optional<F> load_typed(const char* who, auto&& load) {
  stage = who;
  try {
    return std::optional<F>(load());
  } catch (const ccf::format_error&) {
    return std::nullopt;
  }
}

void run(const bytes& in) {
  const header_view h(in);
  const std::span<const std::byte> span = as_span(in);
  const std::string text = as_string(in);
  const std::size_t piece = 1 + in.size() % 61;

  // read_filter_info, three ways.
  const auto info = info_of("read_filter_info(span)", [&] { return ccf::read_filter_info(span); });
  {
    std::istringstream s(text);
    s.exceptions(std::ios::failbit | std::ios::badbit);
    const auto info2 =
        info_of("read_filter_info(istringstream)", [&] { return ccf::read_filter_info(s); });
    require(info.has_value() == info2.has_value() && (!info || same_info(*info, *info2)), target,
            "read_filter_info differs between bytes and std::istringstream");
  }
  {
    piece_buf buf(in, piece);
    std::istream s(&buf);
    const auto info3 = info_of("read_filter_info(pipe)", [&] { return ccf::read_filter_info(s); });
    require(!info || (info3 && same_info(*info, *info3)), target,
            "read_filter_info refuses from a pipe what it accepts from bytes");
    require(!info3 || buf.consumed() == header_size, target,
            "read_filter_info from a pipe did not stop after the header");
    if (info3) {
      require(info3->fingerprint_bits == h.bits && info3->slots_per_bucket == h.slots &&
                  info3->num_buckets == h.num_buckets && info3->chunks == h.chunks &&
                  info3->capacity == h.capacity,
              target, "read_filter_info reports other fields than the header's");
    }
  }

  // The runtime filter, three ways.
  auto rt = load_runtime("runtime_filter::load(span, sequential)", h, filter_kind::sequential,
                         [&] { return ccf::runtime_filter::load(span, filter_kind::sequential); });
  require(!rt || info, target, "runtime_filter::load accepts a file read_filter_info refuses");
  {
    std::istringstream s(text);
    s.exceptions(std::ios::failbit | std::ios::badbit);
    auto rt2 =
        load_runtime("runtime_filter::load(istringstream, concurrent)", h, filter_kind::concurrent,
                     [&] { return ccf::runtime_filter::load(s, filter_kind::concurrent); });
    require(rt.has_value() == rt2.has_value(), target,
            "runtime_filter::load differs between bytes (sequential) and a stream (concurrent)");
    // The exception mask comes back whole, whatever states the load left set.
    require(s.exceptions() == (std::ios::failbit | std::ios::badbit), target,
            "runtime_filter::load did not restore the stream's exception mask");
    if (rt2) {
      const bytes* file = h.is_growing() ? nullptr : &in;
      exercise<std::string_view>(*rt2, in, file, h.is_growing(), "runtime(concurrent)",
                                 [](std::span<const std::byte> b) {
                                   return ccf::runtime_filter::load(b, filter_kind::concurrent);
                                 });
    }
  }
  {
    piece_buf buf(in, piece);
    std::istream s(&buf);
    auto rt3 = load_runtime("runtime_filter::load(pipe, lockfree)", h, filter_kind::lockfree,
                            [&] { return ccf::runtime_filter::load(s, filter_kind::lockfree); });
    require(buf.consumed() <= h.read_bound(), target,
            "runtime_filter::load read more from a pipe than the header claims plus one byte");
    const bool lockfree_layout =
        !h.is_growing() && ccf::detail::versioned_layout_supported(h.bits, h.slots);
    require(!rt3 || (rt && lockfree_layout), target,
            "the lock-free runtime filter loads what the sequential one refuses");
    require(!rt || !lockfree_layout || rt3, target,
            "the lock-free runtime filter refuses what the sequential one loads");
    if (rt3) {
      require(buf.consumed() == in.size(), target, "a filter loaded from a pipe left bytes unread");
      exercise<std::string_view>(*rt3, in, &in, false, "runtime(lockfree)",
                                 [](std::span<const std::byte> b) {
                                   return ccf::runtime_filter::load(b, filter_kind::lockfree);
                                 });
    }
  }
  if (rt) {
    require(rt->fingerprint_bits() == h.bits && rt->slots_per_bucket() == h.slots &&
                rt->num_buckets() == h.num_buckets && rt->chunks() == h.chunks &&
                rt->growing() == h.is_growing() && rt->size() <= rt->size_in_tags(),
            target, "the runtime filter's shape is not the header's");
    const bytes* file = h.is_growing() ? nullptr : &in;
    exercise<std::string_view>(*rt, in, file, h.is_growing(), "runtime(sequential)",
                               [](std::span<const std::byte> b) {
                                 return ccf::runtime_filter::load(b, filter_kind::sequential);
                               });
  }

  // Typed filters: each loads exactly what the runtime filter loads of its type.
  {
    auto f = load_typed<typed_16x4>("cuckoo_filter<16, 4>(span)", [&] { return typed_16x4(span); });
    require(f.has_value() == (rt.has_value() && h.names(16, 4, 2)), target,
            "cuckoo_filter<std::string, 16, 4> and the runtime filter disagree on the file");
    if (f) {
      exercise<std::string>(*f, in, &in, false, "cuckoo_filter<16, 4>",
                            [](std::span<const std::byte> b) { return typed_16x4(b); });
    }
  }
  {
    auto f = load_typed<typed_lockfree_12x4>("lockfree_cuckoo_filter<12, 4>(span)",
                                             [&] { return typed_lockfree_12x4(span); });
    require(f.has_value() == (rt.has_value() && h.names(12, 4, 2)), target,
            "lockfree_cuckoo_filter<std::string, 12, 4> and the runtime filter disagree");
    if (f) {
      exercise<std::string>(*f, in, &in, false, "lockfree_cuckoo_filter<12, 4>",
                            [](std::span<const std::byte> b) { return typed_lockfree_12x4(b); });
    }
  }
  {
    std::istringstream s(text);
    auto f = load_typed<typed_global_16x4>("cuckoo_filter<16, 4, global>(istringstream)",
                                           [&] { return typed_global_16x4(s); });
    require(!f || (info && !rt && h.names(16, 4, 1)), target,
            "the global-alternate filter loads a file that is not one");
    if (f) {
      exercise<std::string>(*f, in, &in, false, "cuckoo_filter<16, 4, global>",
                            [](std::span<const std::byte> b) { return typed_global_16x4(b); });
    }
  }
  {
    auto f = load_typed<growing>("growing_cuckoo_filter(span)", [&] { return growing(span); });
    require(f.has_value() == (rt.has_value() && h.is_growing()), target,
            "growing_cuckoo_filter and the runtime filter disagree on the file");
    if (f) {
      require(f->fingerprint_bits() == h.bits && f->num_buckets() == h.num_buckets, target,
              "the growing filter's shape is not the header's");
      exercise<std::string_view>(*f, in, nullptr, true, "growing_cuckoo_filter",
                                 [](std::span<const std::byte> b) { return growing(b); });
    }
  }
  {
    piece_buf buf(in, piece);
    std::istream s(&buf);
    auto f = load_typed<concurrent_growing>("concurrent_growing_cuckoo_filter(pipe)",
                                            [&] { return concurrent_growing(s); });
    require(buf.consumed() <= h.read_bound(), target,
            "the growing filter read more from a pipe than the header claims plus one byte");
    require(f.has_value() == (rt.has_value() && h.is_growing()), target,
            "concurrent_growing_cuckoo_filter and the runtime filter disagree on the file");
    if (f) {
      exercise<std::string_view>(
          *f, in, nullptr, true, "concurrent_growing_cuckoo_filter",
          [](std::span<const std::byte> b) { return concurrent_growing(b); });
    }
  }
}

void run_checked(const bytes& in) {
  try {
    run(in);
  } catch (const std::exception& e) {
    ccf_fuzz::fail(target, std::string("unexpected exception from ") + stage + ": " + e.what());
  }
}

// ---- seeds ----

std::string key(int i) {
  return std::string("key-").append(std::to_string(i));
}

bytes bytes_of(const std::vector<std::byte>& v) {
  bytes b(v.size());
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size());
  return b;
}

/// A runtime filter of `c` holding keys 0 .. n-1 (stopping when full).
bytes runtime_file(const ccf::filter_config& c, int n, int erase_every = 0) {
  ccf::runtime_filter f(c);
  for (int i = 0; i < n && f.insert(key(i)); ++i) {
  }
  for (int i = 0; erase_every != 0 && i < n; i += erase_every)
    f.erase(key(i));
  return bytes_of(f.to_bytes());
}

ccf::filter_config config(std::size_t capacity, unsigned bits, unsigned slots,
                          filter_kind kind = filter_kind::sequential) {
  ccf::filter_config c;
  c.capacity = capacity;
  c.fingerprint_bits = bits;
  c.slots_per_bucket = slots;
  c.kind = kind;
  return c;
}

/// `b` with a header field changed (and the checksum made right again).
bytes with_field(bytes b, std::size_t at, std::uint64_t v, int width, bool seal = true) {
  ccf_fuzz::put_le(b, at, v, width);
  if (seal) reseal(b);
  return b;
}

/// A growing filter's file without its kept hashes (a table that splits when it grows).
bytes without_hashes(const bytes& g) {
  const std::uint64_t kept = ccf_fuzz::get_le(g, header_size + 24, 8);
  bytes b(g.begin(), g.end() - static_cast<std::ptrdiff_t>(trailer_size + kept * 8));
  b.insert(b.end(), g.end() - static_cast<std::ptrdiff_t>(trailer_size), g.end());
  ccf_fuzz::put_le(b, 56, ccf_fuzz::get_le(b, 56, 8) - kept, 8);
  ccf_fuzz::put_le(b, header_size + 16, 0, 8);
  ccf_fuzz::put_le(b, header_size + 24, 0, 8);
  reseal(b);
  return b;
}

/// An empty 8-bit x 4 table of two chunks of 64 buckets, then `n` keys inserted into it.
bytes two_chunk_file(int n) {
  namespace d = ccf::detail;
  d::file_header h;
  h.fingerprint_bits = 8;
  h.slots_per_bucket = 4;
  h.alternate = static_cast<std::uint32_t>(d::alternate_kind::chunked);
  h.num_buckets = 128;
  h.chunks = 2;
  h.seed = ccf::default_seed;
  h.max_kicks = 500;
  h.capacity = 400;
  h.word_count = d::packed_tag_layout<8, 4>::words_for(128);
  h.hash_probe =
      d::hash_probe<std::string_view, ccf::hash<std::string_view>>(ccf::key_seed(h.seed));
  const auto head = d::encode_header(h);
  bytes b(head.begin(), head.end());
  b.resize(header_size + h.word_count * 8 + trailer_size);
  reseal(b);
  auto f = ccf::runtime_filter::load(as_span(b));
  for (int i = 0; i < n; ++i)
    f.insert(key(i));
  return bytes_of(f.to_bytes());
}

std::vector<ccf_fuzz::seed> seeds() {
  std::vector<ccf_fuzz::seed> s;
  const auto add = [&](std::string name, bytes b) { s.push_back({std::move(name), std::move(b)}); };
  // Static filters of several layouts and kinds (the file does not depend on the kind).
  const bytes base = runtime_file(config(60, 8, 4), 40);
  add("valid-8x4", base);
  add("valid-16x4", runtime_file(config(100, 16, 4), 70));
  add("valid-16x4-erased", runtime_file(config(100, 16, 4, filter_kind::concurrent), 90, 3));
  add("valid-4x2-full", runtime_file(config(16, 4, 2), 1000));
  add("valid-4x8", runtime_file(config(40, 4, 8), 30));
  add("valid-12x4-lockfree", runtime_file(config(64, 12, 4, filter_kind::lockfree), 50));
  add("valid-12x2", runtime_file(config(30, 12, 2), 25));
  add("valid-16x2-concurrent", runtime_file(config(40, 16, 2, filter_kind::concurrent), 30));
  add("valid-8x8-full", runtime_file(config(50, 8, 8), 1000));
  add("valid-32x8", runtime_file(config(30, 32, 8), 20));
  add("valid-32x2", runtime_file(config(20, 32, 2), 20));
  add("empty-16x4", runtime_file(config(1, 16, 4), 0));
  add("empty-32x4", runtime_file(config(5, 32, 4), 0));
  add("valid-8x4-two-chunks", two_chunk_file(300));
  {
    typed_global_16x4 g(50);
    for (int i = 0; i < 40; ++i)
      g.insert(key(i));
    add("valid-16x4-global", bytes_of(g.to_bytes()));
  }
  {
    ccf::filter_config c = config(40, 8, 4);
    c.seed = 7;
    c.max_kicks = 3;
    add("valid-8x4-seed-kicks", runtime_file(c, 30));
  }
  // Growing filters: keeping hashes (one grown), empty, wide slots, repeats and erases, without
  // hashes.
  const bytes grown = runtime_file(ccf::filter_config::growing_for_rate(10, 0.01), 300);
  add("growing-grown", grown);
  add("growing-empty", runtime_file(ccf::filter_config::growing_for_rate(1, 0.05), 0));
  add("growing-32bit", runtime_file(ccf::filter_config::growing_for_rate(20, 1e-7), 15));
  add("growing-concurrent-erased",
      runtime_file(ccf::filter_config::growing_for_rate(50, 0.001, filter_kind::concurrent), 60,
                   4));
  {
    ccf::runtime_filter g(
        ccf::filter_config::growing_for_rate(30, 0.02, filter_kind::sequential, 3));
    for (int i = 0; i < 20; ++i)
      g.insert(key(i % 6));
    add("growing-repeats", bytes_of(g.to_bytes()));
  }
  add("growing-no-hashes", without_hashes(grown));
  // Damaged files.
  add("truncated-empty", {});
  add("truncated-header-40", bytes(base.begin(), base.begin() + 40));
  add("truncated-header-79", bytes(base.begin(), base.begin() + 79));
  add("truncated-after-header", bytes(base.begin(), base.begin() + header_size));
  add("truncated-payload", bytes(base.begin(), base.end() - 9));
  add("truncated-last-byte", bytes(base.begin(), base.end() - 1));
  {
    bytes junk = base;
    junk.push_back(0);
    add("junk-after", junk);
  }
  add("bad-magic", with_field(base, 0, 0x5245544c49464343ull ^ 1, 8));
  add("version-1", with_field(base, 8, 1, 4));
  add("version-3", with_field(base, 8, 3, 4));
  add("bad-checksum", with_field(base, base.size() - 1, base.back() ^ 0x40u, 1, false));
  add("items-off-by-one",
      with_field(base, base.size() - 16, ccf_fuzz::get_le(base, base.size() - 16, 8) + 1, 8));
  add("padding-bits-set", with_field(base, base.size() - 24, 0x8000000000000000ull, 8));
  add("slots-2-same-length", with_field(base, 16, 2, 4));
  add("alternate-0", with_field(base, 20, 0, 4));
  add("alternate-global", with_field(base, 20, 1, 4));
  add("chunks-3", with_field(base, 72, 3, 8));
  add("buckets-0", with_field(base, 24, 0, 8));
  add("capacity-0", with_field(base, 48, 0, 8));
  add("capacity-huge", with_field(base, 48, ~0ull, 8));
  add("max-kicks-65537", with_field(base, 40, 65537, 8));
  add("hash-probe-wrong", with_field(base, 64, 12345, 8));
  {
    bytes huge = with_field(base, 24, std::uint64_t{1} << 49, 8);
    add("huge-claim", with_field(huge, 56, std::uint64_t{1} << 55, 8));
  }
  add("growing-rate-0", with_field(grown, header_size, 0, 8));
  add("growing-rate-nan", with_field(grown, header_size, 0x7ff8000000000000ull, 8));
  add("growing-keeps-2", with_field(grown, header_size + 16, 2, 8));
  add("growing-kept-too-many", with_field(grown, header_size + 24, 1000, 8));
  add("growing-width-13", with_field(grown, 12, 13, 4));
  add("growing-items-more", with_field(grown, grown.size() - 16, 1u << 20, 8));
  return s;
}

// ---- structure-aware mutation (the replay driver) ----

void mutate(bytes& in, std::mt19937_64& rng) {
  static constexpr std::uint64_t interesting[] = {0,
                                                  1,
                                                  2,
                                                  3,
                                                  4,
                                                  5,
                                                  8,
                                                  12,
                                                  13,
                                                  16,
                                                  31,
                                                  32,
                                                  33,
                                                  63,
                                                  64,
                                                  65,
                                                  128,
                                                  0x7fff,
                                                  0x8000,
                                                  65536,
                                                  65537,
                                                  0x7fffffff,
                                                  0xffffffff,
                                                  std::uint64_t{1} << 32,
                                                  std::uint64_t{1} << 49,
                                                  std::uint64_t{1} << 50,
                                                  std::uint64_t{1} << 58,
                                                  0x3ff0000000000000ull,  // 1.0
                                                  0x3f847ae147ae147bull,  // 0.01
                                                  ~std::uint64_t{0}};
  static constexpr std::size_t fields[] = {8, 12, 16, 20, 24, 32, 40, 48, 56, 64, 72};
  if (in.size() < header_size) return;
  switch (rng() % 5) {
    case 0:
    case 1: {  // a header field
      const std::size_t at = fields[rng() % std::size(fields)];
      const int width = at < 24 ? 4 : 8;
      std::uint64_t v = interesting[rng() % std::size(interesting)];
      if (rng() % 3 == 0) v = ccf_fuzz::get_le(in, at, width) + (rng() % 3) - 1;
      ccf_fuzz::put_le(in, at, v, width);
      break;
    }
    case 2: {  // a growing filter's prefix word, or the item count
      const std::size_t at =
          rng() % 2 == 0 ? header_size + 8 * (rng() % 4) : in.size() - trailer_size;
      const std::uint64_t v = rng() % 2 == 0 ? interesting[rng() % std::size(interesting)]
                                             : ccf_fuzz::get_le(in, at, 8) + (rng() % 3) - 1;
      ccf_fuzz::put_le(in, at, v, 8);
      break;
    }
    case 3: {  // a payload word set to all ones, zero or a random value
      if (in.size() <= header_size + trailer_size) break;
      const std::size_t words = (in.size() - header_size - trailer_size) / 8;
      if (words == 0) break;
      const std::size_t at = header_size + 8 * (rng() % words);
      const std::uint64_t choices[] = {~std::uint64_t{0}, 0, rng()};
      ccf_fuzz::put_le(in, at, choices[rng() % 3], 8);
      break;
    }
    default: {  // the length made to match the header's claim
      const std::uint64_t words = ccf_fuzz::get_le(in, 56, 8);
      if (words < 100000) in.resize(header_size + words * 8 + trailer_size);
      break;
    }
  }
  if (rng() % 4 != 0) reseal(in);
}

}  // namespace

namespace ccf_fuzz {
const target_hooks& hooks() {
  static const target_hooks h{target, &seeds, &mutate, nullptr};
  return h;
}
}  // namespace ccf_fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > max_input) return 0;
  const bytes in(data, data + size);
  run_checked(in);
  bytes sealed = in;
  reseal(sealed);
  if (sealed != in) run_checked(sealed);
  return 0;
}
