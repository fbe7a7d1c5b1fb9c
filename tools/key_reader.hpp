// The ccf tool's key reader: keys separated by newlines (or NULs with -z), read in pieces from a
// file descriptor or any other source, without holding more than the keys of one piece.
//
// Rules (docs/cli.md): with '\n' as the delimiter a trailing '\r' is dropped from each key (files
// written on Windows); with '\0' a key is taken byte for byte (it may hold tabs, newlines, '\r').
// Empty keys are skipped. The last key needs no delimiter after it. A key longer than
// max_key_bytes is an error (a file that is not a key list, or has no delimiters), not an
// unbounded allocation.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "cli_support.hpp"

namespace ccf_tool {

class key_reader {
 public:
  /// Fills up to n bytes at p; returns how many (0: end of input). Throws cli_error on failure.
  using source = std::function<std::size_t(char* p, std::size_t n)>;
  static constexpr std::size_t piece_bytes = std::size_t{1} << 16;
  static constexpr std::size_t max_key_bytes = std::size_t{1} << 24;

  key_reader(source read, char delimiter, std::string name)
      : read_(std::move(read)),
        delimiter_(delimiter),
        name_(std::move(name)),
        buffer_(piece_bytes) {}

  /// The next key, or false at the end of input. The view stays valid until the next call that
  /// must read (a call with has_buffered_key() false).
  bool next(std::string_view& key) {
    for (;;) {
      const char* begin = buffer_.data() + start_;
      const char* end = buffer_.data() + fill_;
      // The bytes of a partial key searched before the last read are not searched again: a long
      // key that comes in small reads costs its length, not its length squared.
      const char* from = begin + scanned_;
      const char* stop = static_cast<const char*>(std::memchr(from, delimiter_, end - from));
      if (stop == nullptr && !eof_) {
        scanned_ = fill_ - start_;
        refill();
        continue;
      }
      if (stop == nullptr && begin == end) return false;  // end of input
      const std::size_t length = static_cast<std::size_t>((stop == nullptr ? end : stop) - begin);
      start_ += length + (stop == nullptr ? 0 : 1);
      scanned_ = 0;
      ++keys_seen_;
      key = std::string_view(begin, length);
      if (delimiter_ == '\n' && !key.empty() && key.back() == '\r') key.remove_suffix(1);
      if (key.size() > max_key_bytes) too_long(keys_seen_);
      if (!key.empty()) return true;
    }
  }
  /// Whether next() can answer without reading (a whole non-empty key is buffered, or the input
  /// ended).
  bool has_buffered_key() const noexcept {
    if (eof_) return true;
    const char* p = buffer_.data() + start_;
    const char* end = buffer_.data() + fill_;
    while (const char* stop = static_cast<const char*>(std::memchr(p, delimiter_, end - p))) {
      const std::size_t length = static_cast<std::size_t>(stop - p);
      if (length > 1 || (length == 1 && !(delimiter_ == '\n' && *p == '\r'))) return true;
      p = stop + 1;
    }
    return false;
  }
  /// Runs f before every read from the source (while the views next() gave are still valid): a
  /// streaming caller answers what it holds before it may wait for input.
  void before_read(std::function<void()> f) { before_read_ = std::move(f); }
  /// Bytes read from the source so far.
  std::uint64_t bytes_read() const noexcept { return bytes_read_; }
  const std::string& name() const noexcept { return name_; }

  /// A source reading file descriptor fd (named `name` in errors).
  static source from_fd(int fd, const std::string& name) {
    return [fd, name](char* p, std::size_t n) -> std::size_t {
      for (;;) {
        const ssize_t got = ::read(fd, p, n);
        if (got >= 0) return static_cast<std::size_t>(got);
        if (errno != EINTR) throw cli_error(2, "cannot read '" + name + "': " + errno_text());
      }
    };
  }

 private:
  /// Moves the partial key to the front and reads more after it.
  void refill() {
    if (before_read_) before_read_();
    if (start_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + start_, fill_ - start_);
      fill_ -= start_;
      start_ = 0;
    }
    if (fill_ == buffer_.size()) {
      if (buffer_.size() >= longest_line()) too_long(keys_seen_ + 1);
      buffer_.resize(std::min(buffer_.size() * 2, longest_line()));
    }
    const std::size_t got = read_(buffer_.data() + fill_, buffer_.size() - fill_);
    if (got == 0) eof_ = true;
    fill_ += got;
    bytes_read_ += got;
  }

  /// Room for the longest key, the '\r' that '\n' as the delimiter drops, and the delimiter.
  std::size_t longest_line() const noexcept { return max_key_bytes + (delimiter_ == '\n' ? 2 : 1); }
  [[noreturn]] void too_long(std::uint64_t key) const {
    throw cli_error(2, "'" + name_ + "': key " + std::to_string(key) + " is longer than " +
                           std::to_string(max_key_bytes) + " bytes (is it a key list" +
                           (delimiter_ == '\0' ? " separated by NULs?)" : "?)"));
  }

  source read_;
  std::function<void()> before_read_;
  char delimiter_;
  std::string name_;
  std::vector<char> buffer_;
  std::size_t start_ = 0, fill_ = 0;
  std::size_t scanned_ = 0;  // bytes after start_ that hold no delimiter (a partial key's)
  std::uint64_t bytes_read_ = 0, keys_seen_ = 0;
  bool eof_ = false;
};

}  // namespace ccf_tool
