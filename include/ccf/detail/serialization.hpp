// ccf — concurrent cuckoo filters.
// detail/serialization.hpp: the file format of a saved cuckoo filter, and reading it safely.
//
// A filter file is an 80-byte header, the table's canonical words (canonical_table.hpp) and a
// 16-byte trailer, all little-endian:
//
//   offset  size  field
//        0     8  magic "CCFILTER"
//        8     4  format version (2)
//       12     4  fingerprint bits          16     4  slots per bucket
//       20     4  alternate function: 1 global, 2 chunked (indexer.hpp), 3 the growing filter's
//                 (chunked, fingerprints that shorten as it grows: growing_cuckoo_filter.hpp)
//       24     8  bucket count              32     8  seed
//       40     8  max kicks                 48     8  capacity
//       56     8  word count (must be what the buckets need)
//       64     8  hash probe: Hash(probe key, seed), tells a different hash function apart
//       72     8  chunk count (bucket count = chunk count x chunk size)
//       80     -  payload: word count x 8 bytes
//   trailer:   8  item count
//              8  XXH3-64 of header, payload and item count
//
// The item count sits after the table so that a concurrent filter is saved in one pass from a
// snapshot. Loading checks every header field against the filter type it is loaded into before
// anything is allocated, and the claimed size against the bytes actually there: a seekable stream
// or a buffer must hold exactly header + payload + trailer (fewer: "truncated", more: "junk after
// the filter"); a stream of unknown length (a pipe) is read only after the header passed the filter
// type's checks and claims no more than the machine's memory, in bounded pieces, never more than
// the header claims plus one byte, before the table is allocated. Then the checksum, bits past the
// last bucket, and the item count against the tags in the table. Any failure throws
// ccf::format_error naming what is wrong; nothing is half-loaded. Version 1 files (ccf 0.1, with
// another alternate function) are refused with a message saying so.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <istream>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "ccf/detail/indexer.hpp"
#include "ccf/detail/packed_tag_layout.hpp"
#include "ccf/detail/sizing.hpp"
#include "ccf/hash.hpp"

namespace ccf {

/// A filter file that cannot be loaded: truncated, corrupt, or made for another filter type.
class format_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

inline constexpr std::size_t file_header_bytes = 80;
inline constexpr std::size_t file_trailer_bytes = 16;
inline constexpr std::uint32_t file_format_version = 2;
inline constexpr char file_magic[8] = {'C', 'C', 'F', 'I', 'L', 'T', 'E', 'R'};

struct file_header {
  std::uint32_t version = file_format_version;
  std::uint32_t fingerprint_bits = 0;
  std::uint32_t slots_per_bucket = 0;
  std::uint32_t alternate = 0;
  std::uint64_t num_buckets = 0;
  std::uint64_t seed = 0;
  std::uint64_t max_kicks = 0;
  std::uint64_t capacity = 0;
  std::uint64_t word_count = 0;
  std::uint64_t hash_probe = 0;
  std::uint64_t chunks = 0;

  /// Bytes of the whole file this header describes (word_count is checked to be sane first).
  std::uint64_t file_bytes() const noexcept {
    return file_header_bytes + word_count * 8 + file_trailer_bytes;
  }
};

inline void put_le(unsigned char* p, std::uint64_t v, int bytes) noexcept {
  if (std::endian::native == std::endian::little && bytes == 8) {
    std::memcpy(p, &v, 8);  // one store: a table's words are written this way
    return;
  }
  for (int i = 0; i < bytes; ++i)
    p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline std::uint64_t get_le(const unsigned char* p, int bytes) noexcept {
  std::uint64_t v = 0;
  if (std::endian::native == std::endian::little && bytes == 8) {
    std::memcpy(&v, p, 8);
    return v;
  }
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

using header_bytes = std::array<unsigned char, file_header_bytes>;

inline header_bytes encode_header(const file_header& h) {
  header_bytes b{};
  std::memcpy(b.data(), file_magic, 8);
  put_le(&b[8], h.version, 4);
  put_le(&b[12], h.fingerprint_bits, 4);
  put_le(&b[16], h.slots_per_bucket, 4);
  put_le(&b[20], h.alternate, 4);
  put_le(&b[24], h.num_buckets, 8);
  put_le(&b[32], h.seed, 8);
  put_le(&b[40], h.max_kicks, 8);
  put_le(&b[48], h.capacity, 8);
  put_le(&b[56], h.word_count, 8);
  put_le(&b[64], h.hash_probe, 8);
  put_le(&b[72], h.chunks, 8);
  return b;
}

/// Decodes a header and checks what can be checked without knowing the filter type.
inline file_header decode_header(const header_bytes& b) {
  if (std::memcmp(b.data(), file_magic, 8) != 0) {
    throw format_error("ccf: not a ccf filter file (bad magic)");
  }
  file_header h;
  h.version = static_cast<std::uint32_t>(get_le(&b[8], 4));
  if (h.version != file_format_version) {
    throw format_error("ccf: unsupported filter file version " + std::to_string(h.version) +
                       " (this ccf reads version " + std::to_string(file_format_version) +
                       (h.version == 1 ? "; version 1 files come from ccf 0.1: rebuild them" : "") +
                       ")");
  }
  h.fingerprint_bits = static_cast<std::uint32_t>(get_le(&b[12], 4));
  h.slots_per_bucket = static_cast<std::uint32_t>(get_le(&b[16], 4));
  h.alternate = static_cast<std::uint32_t>(get_le(&b[20], 4));
  h.num_buckets = get_le(&b[24], 8);
  h.seed = get_le(&b[32], 8);
  h.max_kicks = get_le(&b[40], 8);
  h.capacity = get_le(&b[48], 8);
  h.word_count = get_le(&b[56], 8);
  h.hash_probe = get_le(&b[64], 8);
  h.chunks = get_le(&b[72], 8);
  const bool shape_ok = (h.alternate >= 1 && h.alternate <= 3) && h.num_buckets != 0 &&
                        h.num_buckets < (std::uint64_t{1} << 50) && h.chunks != 0 &&
                        h.num_buckets % h.chunks == 0 && (h.alternate != 1 || h.chunks == 1) &&
                        (h.chunks == 1 || (h.num_buckets / h.chunks) % 64 == 0) &&
                        h.word_count < (std::uint64_t{1} << 58) && h.capacity != 0;
  if (!shape_ok) {
    throw format_error("ccf: corrupt filter file (bucket count " + std::to_string(h.num_buckets) +
                       ", chunks " + std::to_string(h.chunks) + ", alternate " +
                       std::to_string(h.alternate) + ", word count " +
                       std::to_string(h.word_count) + ", capacity " + std::to_string(h.capacity) +
                       " do not fit together)");
  }
  // The most words a table of these buckets, bits and slots can have: its bit-packed tags, a
  // spare word, and a growing filter's prefix and kept hashes (at most one per slot). Checked
  // here, before any body is read: a pipe would otherwise be read up to the size claimed.
  __extension__ using wide = unsigned __int128;
  const wide slots = static_cast<wide>(h.num_buckets) * h.slots_per_bucket;
  const wide most_words =
      (slots * std::max<std::uint32_t>(h.fingerprint_bits, 1) + 63) / 64 + slots + 64;
  // A static filter's table is exactly its bit-packed tags and the spare word (the canonical
  // form of every layout): a word count off by one is a corrupt header, which the size check
  // would otherwise report as a truncated file or junk after the filter.
  const bool growing = h.alternate == static_cast<std::uint32_t>(alternate_kind::growing);
  const wide static_words =
      packed_words<wide>(h.num_buckets, h.slots_per_bucket, h.fingerprint_bits);
  if (h.word_count > most_words || (!growing && h.word_count != static_words)) {
    throw format_error("ccf: corrupt filter file (word count " + std::to_string(h.word_count) +
                       " does not match " + std::to_string(h.num_buckets) + " buckets of " +
                       std::to_string(h.slots_per_bucket) + " " +
                       std::to_string(h.fingerprint_bits) + "-bit slots)");
  }
  return h;
}

/// Integer key types narrower than 64 bits and signed: ccf::hash zero-extends them (hash.hpp), so
/// their negative keys hash unlike the same values of a wider type.
template <class Key>
constexpr bool narrow_signed_key() noexcept {
  if constexpr (std::is_integral_v<Key>) {
    return std::is_signed_v<Key> && sizeof(Key) < sizeof(std::uint64_t);
  }
  return false;
}

/// Hash of a fixed probe key, stored in the file so that a file written with one hash function
/// or key type is not read with another (0 for key types that cannot be made from a string or
/// an integer). A narrow signed type adds the hash of a negative probe: its files are refused by
/// wider types, whose lookups of its negative keys would miss.
template <class Key, class Hash>
std::uint64_t hash_probe(std::uint64_t key_seed) {
  if constexpr (narrow_signed_key<Key>()) {
    return Hash{}(static_cast<Key>(0x5a), key_seed) ^ Hash {}(static_cast<Key>(-0x5a), key_seed);
  } else if constexpr (std::is_integral_v<Key>) {
    return Hash{}(static_cast<Key>(0x5a), key_seed);
  } else if constexpr (std::is_constructible_v<Key, const char*>) {
    return Hash{}(Key("ccf hash probe"), key_seed);
  } else {
    return 0;
  }
}

/// Whether a file's hash probe is this key type's and hash function's. A narrow signed type
/// also takes the probe its files had before the negative probe was added (the positive probe
/// alone, which a wider type still takes too: such older files cannot be told apart).
template <class Key, class Hash>
bool hash_probe_matches(std::uint64_t probe, std::uint64_t key_seed) {
  if (probe == hash_probe<Key, Hash>(key_seed)) return true;
  if constexpr (narrow_signed_key<Key>()) {
    return probe == Hash{}(static_cast<Key>(0x5a), key_seed);
  }
  return false;
}

/// Where a filter's bytes come from: a stream or a buffer. The length still to come is known for
/// buffers and seekable streams.
class byte_source {
 public:
  explicit byte_source(std::span<const std::byte> buffer) noexcept : buffer_(buffer) {}
  explicit byte_source(std::istream& in) : in_(&in), saved_exceptions_(in.exceptions()) {
    // Short reads are reported as format errors, not as std::ios_base::failure.
    in.exceptions(std::ios::goodbit);
    const std::istream::pos_type here = in.tellg();
    if (here == std::istream::pos_type(-1)) {
      in.clear(in.rdstate() & ~std::ios::failbit);
      return;
    }
    in.seekg(0, std::ios::end);
    const std::istream::pos_type end = in.tellg();
    in.seekg(here);
    if (end != std::istream::pos_type(-1) && in) {
      remaining_ = static_cast<std::uint64_t>(end - here);
    } else {
      in.clear();
    }
  }
  byte_source(const byte_source&) = delete;
  byte_source& operator=(const byte_source&) = delete;
  ~byte_source() {
    if (in_ == nullptr) return;
    // The caller's mask back, whole: exceptions() sets it, then throws where the stream's state
    // has one of its bits (a load that failed, or one that read a pipe to its end). That throw
    // is not the load's outcome; the mask is set all the same.
    try {
      in_->exceptions(saved_exceptions_);
    } catch (const std::ios_base::failure&) {
    }
  }

  std::optional<std::uint64_t> remaining() const noexcept {
    if (in_ == nullptr) return buffer_.size() - pos_;
    return remaining_;
  }
  /// Reads up to n bytes; returns how many were read (fewer only at the end).
  std::size_t read(unsigned char* dst, std::size_t n) {
    if (in_ == nullptr) {
      const std::size_t k = std::min(n, buffer_.size() - pos_);
      if (k != 0) std::memcpy(dst, buffer_.data() + pos_, k);
      pos_ += k;
      return k;
    }
    in_->read(reinterpret_cast<char*>(dst), static_cast<std::streamsize>(n));
    const auto k = static_cast<std::size_t>(in_->gcount());
    if (remaining_) *remaining_ -= std::min<std::uint64_t>(*remaining_, k);
    if (k < n && in_->bad()) throw format_error("ccf: error reading the filter file");
    return k;
  }

 private:
  std::istream* in_ = nullptr;
  std::ios::iostate saved_exceptions_ = std::ios::goodbit;
  std::optional<std::uint64_t> remaining_;
  std::span<const std::byte> buffer_;
  std::size_t pos_ = 0;
};

/// Reads and decodes the header at `src`'s position.
inline file_header read_header_only(byte_source& src) {
  header_bytes bytes{};
  if (src.read(bytes.data(), bytes.size()) != bytes.size()) {
    throw format_error("ccf: truncated filter file (shorter than its header)");
  }
  return decode_header(bytes);
}

/// Throws unless exactly the rest of the file that header `h` describes, `left` bytes, follows
/// the header: fewer is a truncated file, more is junk after the filter. `whole`: `left` is all
/// there is (a file's or buffer's length), not only what was read of a stream.
inline void check_body_length(const file_header& h, std::uint64_t left, bool whole = true) {
  const std::uint64_t body = h.file_bytes() - file_header_bytes;
  if (left < body) {
    throw format_error("ccf: truncated filter file (the header claims " +
                       std::to_string(h.file_bytes()) + " bytes, the file has " +
                       std::to_string(file_header_bytes + left) + ")");
  }
  if (left > body) {
    throw format_error(whole
                           ? "ccf: junk after the filter (" + std::to_string(left - body) +
                                 " bytes past its end)"
                           : std::string("ccf: junk after the filter (more bytes follow its end)"));
  }
}

/// For a stream of unknown length after header `h`: reads the rest into `spill` (at most what
/// the header claims plus one byte, in bounded pieces, so a forged size costs only the bytes
/// actually present) and checks its length. A header that claims more than this machine's memory
/// is refused before anything is read: format_error, as the same bytes from a file would be (a
/// file that large cannot be there to read).
inline void spill_body(const file_header& h, byte_source& src, std::vector<std::byte>& spill) {
  const std::uint64_t body = h.file_bytes() - file_header_bytes;
  const std::uint64_t phys = physical_memory_bytes();
  if (body > phys) {
    throw format_error("ccf: the filter file claims " + std::to_string(h.file_bytes()) +
                       " bytes, more than this machine's " + std::to_string(phys) +
                       " bytes of memory (not read)");
  }
  constexpr std::size_t piece = std::size_t{1} << 24;
  while (spill.size() <= body) {
    const std::size_t old = spill.size();
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(piece, body + 1 - old));
    spill.resize(old + want);
    const std::size_t got = src.read(reinterpret_cast<unsigned char*>(spill.data() + old), want);
    spill.resize(old + got);
    if (got < want) break;
  }
  check_body_length(h, spill.size(), false);  // read up to one byte past the end
}

/// A filter file being read: its header (read, not yet checked against a filter type) and where
/// the rest of its bytes come from. The length of a file or buffer is checked against the header
/// at once; a stream of unknown length is read when body() is first called, which a filter does
/// only after checking the header against its type: a file of another type is refused without
/// reading its body.
class filter_source {
 public:
  explicit filter_source(std::istream& in) : source_(std::in_place, in) { open(); }
  explicit filter_source(std::span<const std::byte> bytes) : source_(std::in_place, bytes) {
    open();
  }
  filter_source(filter_source&&) = delete;

  file_header header;
  /// The bytes after the header, exactly as many as it claims (or format_error).
  byte_source& body() {
    if (!length_checked_) {
      spill_body(header, *source_, spill_);
      rest_.emplace(std::span<const std::byte>(spill_));
      length_checked_ = true;
    }
    return rest_ ? *rest_ : *source_;
  }

 private:
  void open() {
    header = read_header_only(*source_);
    if (const std::optional<std::uint64_t> left = source_->remaining()) {
      check_body_length(header, *left);
      length_checked_ = true;
    }
  }
  std::optional<byte_source> source_;
  std::vector<std::byte> spill_;
  std::optional<byte_source> rest_;
  bool length_checked_ = false;
};

/// Writes the header, then 64-bit words as little-endian bytes, then the trailer, checksumming
/// all of it. `Out` is called as out(const unsigned char*, std::size_t); one with a reserve(n)
/// member is told the file's size first.
template <class Out>
class word_writer {
 public:
  word_writer(Out out, const file_header& h) : out_(std::move(out)) {
    if constexpr (requires { out_.reserve(h.file_bytes()); }) out_.reserve(h.file_bytes());
    XXH3_64bits_reset(&state_);
    const header_bytes bytes = encode_header(h);
    XXH3_64bits_update(&state_, bytes.data(), bytes.size());
    out_(bytes.data(), bytes.size());
  }
  void operator()(std::uint64_t w) {
    put_le(&buffer_[fill_], w, 8);
    fill_ += 8;
    if (fill_ == buffer_.size()) flush();
  }
  /// Writes the trailer (item count and checksum).
  void finish(std::uint64_t items) {
    (*this)(items);
    flush();
    std::array<unsigned char, 8> sum{};
    put_le(sum.data(), XXH3_64bits_digest(&state_), 8);
    out_(sum.data(), sum.size());
  }

 private:
  void flush() {
    XXH3_64bits_update(&state_, buffer_.data(), fill_);
    out_(buffer_.data(), fill_);
    fill_ = 0;
  }
  Out out_;
  XXH3_state_t state_{};
  std::array<unsigned char, 8192> buffer_{};
  std::size_t fill_ = 0;
};

/// Reads little-endian 64-bit words after a header whose length filter_source checked, then the
/// trailer, checksumming all of it; throws format_error when the checksum does not match.
class word_reader {
 public:
  word_reader(byte_source& src, const file_header& h) : src_(src) {
    XXH3_64bits_reset(&state_);
    const header_bytes bytes = encode_header(h);
    XXH3_64bits_update(&state_, bytes.data(), bytes.size());
    left_ = h.word_count + 1;  // the payload and the trailer's item count
  }
  std::uint64_t operator()() {
    if (pos_ == fill_) refill();
    const std::uint64_t w = get_le(&buffer_[pos_], 8);
    pos_ += 8;
    return w;
  }
  /// Reads the trailer's item count and checks the checksum.
  std::uint64_t finish() {
    const std::uint64_t items = (*this)();
    const std::uint64_t expected = XXH3_64bits_digest(&state_);
    std::array<unsigned char, 8> sum{};
    if (src_.read(sum.data(), 8) != 8)
      throw format_error("ccf: truncated filter file (no checksum)");
    if (get_le(sum.data(), 8) != expected) {
      throw format_error("ccf: corrupt filter file (checksum mismatch)");
    }
    return items;
  }

 private:
  void refill() {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(left_, buffer_.size() / 8)) * 8;
    if (want == 0 || src_.read(buffer_.data(), want) != want) {
      throw format_error("ccf: truncated filter file (the table ends early)");
    }
    XXH3_64bits_update(&state_, buffer_.data(), want);
    left_ -= want / 8;
    fill_ = want;
    pos_ = 0;
  }
  byte_source& src_;
  XXH3_state_t state_{};
  std::array<unsigned char, 8192> buffer_{};
  std::uint64_t left_ = 0;
  std::size_t fill_ = 0, pos_ = 0;
};

/// Output to a stream; throws std::runtime_error when the stream fails.
struct stream_out {
  std::ostream* out;
  void operator()(const unsigned char* p, std::size_t n) const {
    out->write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n));
    if (!*out) throw std::runtime_error("ccf: writing the filter failed");
  }
};

/// Output appended to a byte vector, which is given the file's size at once: it holds the file
/// in one block of that size, never a larger one, nor the copies of growing it.
struct buffer_out {
  std::vector<std::byte>* out;
  void reserve(std::uint64_t bytes) const {
    if (bytes > out->max_size() - out->size()) throw std::length_error("ccf: filter too large");
    out->reserve(out->size() + static_cast<std::size_t>(bytes));
  }
  void operator()(const unsigned char* p, std::size_t n) const {
    const auto* bytes = reinterpret_cast<const std::byte*>(p);
    out->insert(out->end(), bytes, bytes + n);  // not resize(), which would zero them first
  }
};

/// Output of which bytes [from, from + limit) are appended to `into` (those the stream has) and
/// the rest only counted: a part of a file, made without the whole file in memory.
struct range_out {
  std::uint64_t from;
  std::uint64_t limit;
  std::vector<std::byte>* into;
  std::uint64_t* streamed;  // bytes given so far: the file's size once it is written
  void operator()(const unsigned char* p, std::size_t n) const {
    const std::uint64_t at = *streamed;
    *streamed += n;
    const std::uint64_t lo = std::max(at, from);
    if (lo >= at + n || lo - from >= limit) return;
    const auto* bytes = reinterpret_cast<const std::byte*>(p) + (lo - at);
    const std::uint64_t take = std::min<std::uint64_t>(at + n - lo, limit - (lo - from));
    into->insert(into->end(), bytes, bytes + take);
  }
};

/// Bytes [from, from + limit) of a file that end before its trailer (fits()), made from its
/// header and the words they cover alone: no checksum is needed, so a part of a large table
/// costs the part's bytes, not the table's. Words are put by their index among the words after
/// the header, at consecutive indices across [first_word(), end_word()) (those outside it are
/// ignored); finish() writes the last of them.
class window_writer {
 public:
  /// Whether bytes [from, from + limit) of a file of header h hold no trailer byte and at least
  /// one byte of the file (or none at all, for a limit of 0 inside it).
  static bool fits(const file_header& h, std::uint64_t from, std::uint64_t limit) noexcept {
    const std::uint64_t words_end = file_header_bytes + h.word_count * 8;
    return from < words_end && limit <= words_end - from;
  }
  window_writer(const file_header& h, std::uint64_t from, std::uint64_t limit,
                std::vector<std::byte>& into)
      : out_{from, limit, &into, &at_} {
    into.reserve(into.size() + static_cast<std::size_t>(limit));
    const header_bytes bytes = encode_header(h);
    out_(bytes.data(), bytes.size());
  }
  window_writer(const window_writer&) = delete;  // out_ points at at_
  window_writer& operator=(const window_writer&) = delete;

  std::uint64_t first_word() const noexcept {
    return out_.from < file_header_bytes ? 0 : (out_.from - file_header_bytes) / 8;
  }
  std::uint64_t end_word() const noexcept {
    const std::uint64_t end = out_.from + out_.limit;
    return end <= file_header_bytes ? 0 : (end - file_header_bytes + 7) / 8;
  }
  void put(std::uint64_t index, std::uint64_t w) {
    if (index < first_word() || index >= end_word()) return;
    if (fill_ == buffer_.size()) finish();
    if (fill_ == 0) at_ = file_header_bytes + index * 8;
    put_le(&buffer_[fill_], w, 8);
    fill_ += 8;
  }
  /// Writes the words put and not written yet.
  void finish() {
    out_(buffer_.data(), fill_);
    fill_ = 0;
  }

 private:
  std::uint64_t at_ = 0;  // the file offset of buffer_[0]
  range_out out_;
  std::array<unsigned char, 8192> buffer_{};
  std::size_t fill_ = 0;
};

}  // namespace detail
}  // namespace ccf
