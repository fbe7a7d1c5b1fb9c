// ccf — concurrent cuckoo filters.
// detail/serialization.hpp: the file format of a saved cuckoo filter.
//
// A filter file is an 80-byte header, the table's 64-bit words, and a 16-byte trailer, all
// little-endian:
//
//   offset  size  field
//        0     8  magic "CCFILTER"
//        8     4  format version (1)
//       12     4  fingerprint bits          16     4  slots per bucket
//       20     4  reserved (0)              24     8  bucket count
//       32     8  seed                      40     8  max kicks
//       48     8  capacity                  56     8  word count (must be what the buckets need)
//       64     8  hash probe: Hash(probe key, seed), tells a different hash function apart
//       72     8  reserved (0)
//       80     -  payload: word count x 8 bytes
//   trailer:   8  item count
//              8  XXH3-64 of header, payload and item count
//
// The item count sits after the table so that a concurrent filter is saved in one pass while
// all of its locks are held. Loading checks every field against the filter type it is loaded
// into and throws ccf::format_error, naming what is wrong, on a truncated file, a bad magic or
// version, another tag layout, another hash function, an impossible size, a checksum mismatch,
// non-zero bits past the last bucket, or an item count that does not match the tags in the
// table. Nothing is half-loaded: the filter exists only once every check has passed. The
// sequential and the lock-based concurrent filters share the format, so a file saved by one loads
// into the other.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <xxhash.h>

namespace ccf {

/// A filter file that cannot be loaded: truncated, corrupt, or made for another filter type.
class format_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

inline constexpr std::size_t file_header_bytes = 80;
inline constexpr std::uint32_t file_format_version = 1;
inline constexpr char file_magic[8] = {'C', 'C', 'F', 'I', 'L', 'T', 'E', 'R'};

struct file_header {
  std::uint32_t version = file_format_version;
  std::uint32_t fingerprint_bits = 0;
  std::uint32_t slots_per_bucket = 0;
  std::uint64_t num_buckets = 0;
  std::uint64_t seed = 0;
  std::uint64_t max_kicks = 0;
  std::uint64_t capacity = 0;
  std::uint64_t word_count = 0;
  std::uint64_t hash_probe = 0;
};

inline void put_le(unsigned char* p, std::uint64_t v, int bytes) noexcept {
  for (int i = 0; i < bytes; ++i)
    p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline std::uint64_t get_le(const unsigned char* p, int bytes) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

inline std::array<unsigned char, file_header_bytes> encode_header(const file_header& h) {
  std::array<unsigned char, file_header_bytes> b{};
  for (int i = 0; i < 8; ++i)
    b[i] = static_cast<unsigned char>(file_magic[i]);
  put_le(&b[8], h.version, 4);
  put_le(&b[12], h.fingerprint_bits, 4);
  put_le(&b[16], h.slots_per_bucket, 4);
  put_le(&b[24], h.num_buckets, 8);
  put_le(&b[32], h.seed, 8);
  put_le(&b[40], h.max_kicks, 8);
  put_le(&b[48], h.capacity, 8);
  put_le(&b[56], h.word_count, 8);
  put_le(&b[64], h.hash_probe, 8);
  return b;
}

inline file_header decode_header(const std::array<unsigned char, file_header_bytes>& b) {
  for (int i = 0; i < 8; ++i) {
    if (b[i] != static_cast<unsigned char>(file_magic[i])) {
      throw format_error("ccf: not a ccf filter file (bad magic)");
    }
  }
  file_header h;
  h.version = static_cast<std::uint32_t>(get_le(&b[8], 4));
  if (h.version != file_format_version) {
    throw format_error("ccf: unsupported filter file version " + std::to_string(h.version) +
                       " (this ccf reads version " + std::to_string(file_format_version) + ")");
  }
  h.fingerprint_bits = static_cast<std::uint32_t>(get_le(&b[12], 4));
  h.slots_per_bucket = static_cast<std::uint32_t>(get_le(&b[16], 4));
  h.num_buckets = get_le(&b[24], 8);
  h.seed = get_le(&b[32], 8);
  h.max_kicks = get_le(&b[40], 8);
  h.capacity = get_le(&b[48], 8);
  h.word_count = get_le(&b[56], 8);
  h.hash_probe = get_le(&b[64], 8);
  if (get_le(&b[20], 4) != 0 || get_le(&b[72], 8) != 0) {
    throw format_error("ccf: corrupt filter file (reserved header fields are not zero)");
  }
  return h;
}

/// Hash of a fixed probe key, stored in the file so that a file written with one hash function
/// is not read with another (0 for key types that cannot be made from a string or an integer).
template <class Key, class Hash>
std::uint64_t hash_probe(std::uint64_t seed) {
  if constexpr (std::is_integral_v<Key>) {
    return Hash{}(static_cast<Key>(0x5a), seed);
  } else if constexpr (std::is_constructible_v<Key, const char*>) {
    return Hash{}(Key("ccf hash probe"), seed);
  } else {
    return 0;
  }
}

/// Writes the header, then 64-bit words as little-endian bytes, then the trailer, checksumming
/// all of it.
class word_writer {
 public:
  word_writer(std::ostream& out, const file_header& h) : out_(out) {
    XXH3_64bits_reset(&state_);
    const auto bytes = encode_header(h);
    XXH3_64bits_update(&state_, bytes.data(), bytes.size());
    out_.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  void operator()(std::uint64_t w) {
    put_le(&buffer_[fill_], w, 8);
    fill_ += 8;
    if (fill_ == buffer_.size()) flush();
  }
  /// Writes the trailer (item count and checksum); throws std::runtime_error on a stream error.
  void finish(std::uint64_t items) {
    (*this)(items);
    flush();
    std::array<unsigned char, 8> sum{};
    put_le(sum.data(), XXH3_64bits_digest(&state_), 8);
    out_.write(reinterpret_cast<const char*>(sum.data()), 8);
    if (!out_) throw std::runtime_error("ccf: writing the filter failed");
  }

 private:
  void flush() {
    XXH3_64bits_update(&state_, buffer_.data(), fill_);
    out_.write(reinterpret_cast<const char*>(buffer_.data()), static_cast<std::streamsize>(fill_));
    fill_ = 0;
  }
  std::ostream& out_;
  XXH3_state_t state_{};
  std::array<unsigned char, 8192> buffer_{};
  std::size_t fill_ = 0;
};

/// Reads the header, then little-endian 64-bit words, then the trailer, checksumming all of it;
/// throws format_error when the stream ends early or the checksum does not match.
class word_reader {
 public:
  explicit word_reader(std::istream& in) : in_(in) {
    XXH3_64bits_reset(&state_);
    std::array<unsigned char, file_header_bytes> bytes{};
    in_.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (static_cast<std::size_t>(in_.gcount()) != bytes.size()) {
      throw format_error("ccf: truncated filter file (shorter than its header)");
    }
    header_ = decode_header(bytes);
    XXH3_64bits_update(&state_, bytes.data(), bytes.size());
    left_ = header_.word_count + 1;  // the payload and the trailer's item count
  }
  const file_header& header() const noexcept { return header_; }
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
    in_.read(reinterpret_cast<char*>(sum.data()), 8);
    if (in_.gcount() != 8) throw format_error("ccf: truncated filter file (no checksum)");
    if (get_le(sum.data(), 8) != expected) {
      throw format_error("ccf: corrupt filter file (checksum mismatch)");
    }
    return items;
  }

 private:
  void refill() {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(left_, buffer_.size() / 8)) * 8;
    in_.read(reinterpret_cast<char*>(buffer_.data()), static_cast<std::streamsize>(want));
    if (want == 0 || static_cast<std::size_t>(in_.gcount()) != want) {
      throw format_error("ccf: truncated filter file (the table ends early)");
    }
    XXH3_64bits_update(&state_, buffer_.data(), want);
    left_ -= want / 8;
    fill_ = want;
    pos_ = 0;
  }
  std::istream& in_;
  file_header header_;
  XXH3_state_t state_{};
  std::array<unsigned char, 8192> buffer_{};
  std::uint64_t left_ = 0;
  std::size_t fill_ = 0, pos_ = 0;
};

}  // namespace detail
}  // namespace ccf
