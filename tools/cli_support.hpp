// The ccf tool's shared pieces: its error type, messages, and writing output files atomically.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ccf_tool {

/// An error the tool reports on standard error before exiting with `code` (1 usage, 2 bad input
/// or I/O, 3 full).
struct cli_error : std::runtime_error {
  int code;
  cli_error(int c, const std::string& what) : std::runtime_error(what), code(c) {}
};

inline std::string errno_text() {
  return std::strerror(errno);
}

/// A library message without its "ccf: " / "ccf::kv: " prefix (the tool adds its own, once).
inline std::string message_of(const std::exception& e) {
  std::string_view m = e.what();
  for (std::string_view prefix : {"ccf::kv: ", "ccf: "}) {
    if (m.starts_with(prefix)) m.remove_prefix(prefix.size());
  }
  return std::string(m);
}

/// The whole contents of a file.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw cli_error(2, "cannot open '" + path + "': " + errno_text());
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw cli_error(2, "error reading '" + path + "': " + errno_text());
  return data;
}

/// An output file written atomically: a temporary file in the same directory, synced and renamed
/// over the target by commit(); removed if commit() is never reached. "-" writes to standard
/// output. A target that exists and is not a regular file (a directory, a device, a symbolic
/// link) is refused rather than replaced.
class output_file {
 public:
  explicit output_file(std::string path) : path_(std::move(path)) {
    if (path_ == "-") return;
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      throw cli_error(2, "'" + path_ + "' exists and is not a regular file; not replacing it");
    }
    const std::size_t slash = path_.find_last_of('/');
    tmp_ =
        (slash == std::string::npos ? std::string() : path_.substr(0, slash + 1)) + ".ccf-XXXXXX";
    fd_ = ::mkstemp(tmp_.data());
    if (fd_ < 0)
      throw cli_error(2, "cannot create a file next to '" + path_ + "': " + errno_text());
  }
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;
  ~output_file() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(tmp_.c_str());
    }
  }

  void write(std::string_view bytes) {
    if (path_ == "-") {
      if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) fail("write");
      return;
    }
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("write");
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  /// Makes the file durable and puts it in place.
  void commit() {
    if (path_ == "-") {
      if (std::fflush(stdout) != 0) fail("write");
      return;
    }
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::fchmod(fd_, 0666 & ~mask) != 0 || ::fsync(fd_) != 0) fail("write");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      const std::string reason = errno_text();
      ::unlink(tmp_.c_str());
      throw cli_error(2, "cannot write '" + path_ + "': " + reason);
    }
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const std::string reason = errno_text();
      ::unlink(tmp_.c_str());
      throw cli_error(2, "cannot replace '" + path_ + "': " + reason);
    }
  }

 private:
  [[noreturn]] void fail(const char* what) {
    throw cli_error(2, std::string("cannot ") + what + " '" + path_ + "': " + errno_text());
  }
  std::string path_, tmp_;
  int fd_ = -1;
};

}  // namespace ccf_tool
