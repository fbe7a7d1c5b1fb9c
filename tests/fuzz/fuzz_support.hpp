// Shared pieces of ccf's fuzz targets filter_load_fuzz, runtime_ops_fuzz and key_reader_fuzz
// (tests/fuzz/*_fuzz.cpp) and of their replay driver (tests/fuzz/replay_main.cpp).
//
// A target defines LLVMFuzzerTestOneInput (what libFuzzer calls) and ccf_fuzz::hooks(): its name,
// the seeds it builds in code (the files of tests/fuzz/corpus/<name>/ were written from them), an
// optional structure-aware mutation and an optional self-test, which the replay driver uses.
//
// A violated check calls ccf_fuzz::fail, which prints what was wrong and aborts (a crash for
// libFuzzer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace ccf_fuzz {

using bytes = std::vector<std::uint8_t>;

/// A seed input, named after what it holds (the file name in the corpus directory).
struct seed {
  std::string name;
  bytes data;
};

/// What a target gives the replay driver besides LLVMFuzzerTestOneInput.
struct target_hooks {
  const char* name;
  /// The seeds built in code (tests/fuzz/corpus/<name>/ holds them as files).
  std::vector<seed> (*seeds)();
  /// A structure-aware mutation, applied after the driver's generic ones (may be null).
  void (*mutate)(bytes& in, std::mt19937_64& rng);
  /// Checks that need inputs too large for the corpus (may be null).
  void (*self_test)();
};

/// Defined by each target.
const target_hooks& hooks();

/// Prints "<target>: <what>" and aborts.
[[noreturn]] inline void fail(const char* target, const std::string& what) {
  std::fprintf(stderr, "%s: check failed: %s\n", target, what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void require(bool ok, const char* target, const std::string& what) {
  if (!ok) fail(target, what);
}

/// Reads the input front to back; past its end every read gives 0 (so a target's parse of any
/// input is total).
class input_reader {
 public:
  input_reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool done() const noexcept { return pos_ >= size_; }
  std::size_t left() const noexcept { return done() ? 0 : size_ - pos_; }
  std::uint8_t byte() { return done() ? 0 : data_[pos_++]; }
  std::uint16_t u16() {
    const std::uint16_t lo = byte();
    return static_cast<std::uint16_t>(lo | (byte() << 8));
  }
  /// Up to n bytes as a string.
  std::string take(std::size_t n) {
    const std::size_t k = n < left() ? n : left();
    std::string s(reinterpret_cast<const char*>(data_ + pos_), k);
    pos_ += k;
    return s;
  }
  std::string rest() { return take(left()); }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

/// Little-endian fields of a byte vector (reading past its end gives 0, writing past it nothing).
inline std::uint64_t get_le(const bytes& b, std::size_t at, int width) {
  std::uint64_t v = 0;
  for (int i = 0; i < width; ++i) {
    if (at + i < b.size()) v |= static_cast<std::uint64_t>(b[at + i]) << (8 * i);
  }
  return v;
}
inline void put_le(bytes& b, std::size_t at, std::uint64_t v, int width) {
  for (int i = 0; i < width; ++i) {
    if (at + i < b.size()) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  }
}

}  // namespace ccf_fuzz
