// The ccf tool's shared pieces: its error type, messages, and writing output files atomically.
#pragma once

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <signal.h>
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

/// Flushes standard output; a write that failed (a full disk, /dev/full, a closed descriptor) is
/// an error, exit 2.
inline void flush_standard_output() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    throw cli_error(2, "cannot write to standard output: " + errno_text());
  }
}

/// Why `text` is not a number from `min` to `max` ("" if it is): decimal with no leading 0 (CLI11
/// reads such a number as octal), or 0x hexadecimal (CLI11 alone takes -1 as the largest value).
inline std::string unsigned_error(const std::string& text, std::uint64_t max,
                                  std::uint64_t min = 0) {
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const char* first = text.data() + (hex ? 2 : 0);
  const char* last = text.data() + text.size();
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(first, last, value, hex ? 16 : 10);
  const bool octal = !hex && text.size() > 1 && text[0] == '0';
  if (first == last || end != last || ec != std::errc() || octal || value > max || value < min) {
    return "'" + text + "' is not an integer from " + std::to_string(min) + " to " +
           std::to_string(max) + " (decimal with no leading 0, or 0x hexadecimal)";
  }
  return "";
}

/// An empty output path (an unset shell variable) is a usage error, refused before any work.
inline std::string not_empty_output(const std::string& path) {
  return path.empty() ? "an empty path names no file ('-' is standard output)" : "";
}

/// Puts /dev/null on each of descriptors 0, 1 and 2 that is closed, so that no file the tool opens
/// takes its number: a filter file opened as descriptor 0 was read again as the keys of standard
/// input, and one opened as 1 would receive the output. It is opened write-only for standard
/// input and read-only for the others, so using them still fails (EBADF) as it would have. In
/// order from 0, each open takes the closed number: the lowest free one.
inline void hold_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF)
      static_cast<void>(::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY));
  }
}

/// A library message without its "ccf: " / "ccf::kv: " prefix (the tool adds its own, once).
inline std::string message_of(const std::exception& e) {
  std::string_view m = e.what();
  for (std::string_view prefix : {"ccf::kv: ", "ccf: "}) {
    if (m.starts_with(prefix)) m.remove_prefix(prefix.size());
  }
  return std::string(m);
}

/// The whole contents of a file of at most `max_bytes` bytes; a longer one is refused once that
/// many are read (/dev/zero grew the tool to gigabytes before the store refused the value).
inline std::string read_file(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw cli_error(2, "cannot open '" + path + "': " + errno_text());
  std::string data;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n > max_bytes - data.size()) {
      throw cli_error(2, "'" + path + "' holds more than " + std::to_string(max_bytes) + " bytes");
    }
    data.append(buf, n);
  }
  if (in.bad()) throw cli_error(2, "error reading '" + path + "': " + errno_text());
  return data;
}

/// The temporary file being written, removed by SIGINT, SIGTERM or SIGHUP before the signal
/// ends the process (the tool writes one output file at a time). The handler only unlinks and
/// re-raises, both async-signal-safe. A signal the tool was started ignoring (nohup, a background
/// job of a script) stays ignored.
struct pending_temporary {
  static inline char path[4096];
  static inline volatile std::sig_atomic_t set = 0;

  static void on_signal(int sig) {
    if (set != 0) ::unlink(path);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  static void hold(const std::string& p) {
    static const bool installed = [] {
      for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction now {};
        if (::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN) continue;
        std::signal(sig, on_signal);
      }
      return true;
    }();
    (void)installed;
    set = 0;
    if (p.size() >= sizeof path) return;  // too long to keep: left to the destructor
    std::memcpy(path, p.c_str(), p.size() + 1);
    set = 1;
  }
  static void release() { set = 0; }
};

/// An output file written atomically: a temporary file in the same directory, synced and renamed
/// over the target by commit(); removed if commit() is never reached, or if the tool is
/// interrupted (pending_temporary). "-" writes to standard output. A target that exists and is
/// not a regular file (a directory, a device, a symbolic link) is refused rather than replaced;
/// one that exists keeps its mode (and, where the tool may, its owner), and one that the user may
/// not write is refused.
class output_file {
 public:
  explicit output_file(std::string path) : path_(std::move(path)) {
    if (path_ == "-") return;
    if (const std::optional<struct stat> st = check_target(path_)) {
      existing_ = *st;
      replacing_ = true;
    }
    const std::size_t slash = path_.find_last_of('/');
    tmp_ =
        (slash == std::string::npos ? std::string() : path_.substr(0, slash + 1)) + ".ccf-XXXXXX";
    fd_ = ::mkstemp(tmp_.data());
    if (fd_ < 0)
      throw cli_error(2, "cannot create a file next to '" + path_ + "': " + errno_text());
    pending_temporary::hold(tmp_);
  }
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;
  /// Refuses a target that exists and is not a regular file, that the user may not write, or
  /// whose directory the user cannot create a file in (missing, read-only); returns its status
  /// when it exists. The tool checks before its work, and again when it writes.
  static std::optional<struct stat> check_target(const std::string& path) {
    if (path == "-") return std::nullopt;
    struct stat st {};
    const bool exists = ::lstat(path.c_str(), &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
      throw cli_error(2, "'" + path + "' exists and is not a regular file; not replacing it");
    }
    if (exists && ::access(path.c_str(), W_OK) != 0) {
      throw cli_error(2, "cannot write '" + path + "': " + errno_text());
    }
    // The temporary file that replaces it goes next to it.
    const std::size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      throw cli_error(2, "cannot create a file next to '" + path + "': " + errno_text());
    }
    if (!exists) return std::nullopt;
    return st;
  }
  ~output_file() {
    if (fd_ >= 0) {
      ::close(fd_);
      discard();
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
    const mode_t mode = replacing_ ? existing_.st_mode & 07777 : 0666 & ~mask;
    if (replacing_) {
      // Only a privileged user may give a file away: others keep it as theirs, as an editor does.
      [[maybe_unused]] const int owned = ::fchown(fd_, existing_.st_uid, existing_.st_gid);
    }
    if (::fchmod(fd_, mode) != 0 || ::fsync(fd_) != 0) fail("write");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      const std::string reason = errno_text();
      discard();
      throw cli_error(2, "cannot write '" + path_ + "': " + reason);
    }
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const std::string reason = errno_text();
      discard();
      throw cli_error(2, "cannot replace '" + path_ + "': " + reason);
    }
    pending_temporary::release();
    sync_directory();
  }

 private:
  /// Removes the temporary file, which no signal need remove any more.
  void discard() noexcept {
    ::unlink(tmp_.c_str());
    pending_temporary::release();
  }
  [[noreturn]] void fail(const char* what) {
    const std::string target = path_ == "-" ? "to standard output" : "'" + path_ + "'";
    throw cli_error(2, std::string("cannot ") + what + " " + target + ": " + errno_text());
  }
  /// Syncs the directory that holds the file, so that the rename is durable too: a crash after
  /// the tool exited 0 could otherwise bring back the old file, or none. A file system that
  /// cannot sync a directory (EINVAL) has nothing to sync, and a directory the user may write
  /// but not read (EACCES) cannot be opened to sync: the rename stands as the system keeps it.
  void sync_directory() {
    const std::size_t slash = path_.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : path_.substr(0, slash);
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == EACCES) return;
    const bool synced = fd >= 0 && (::fsync(fd) == 0 || errno == EINVAL);
    const std::string reason = synced ? std::string() : errno_text();
    if (fd >= 0) ::close(fd);
    if (!synced) throw cli_error(2, "cannot sync the directory of '" + path_ + "': " + reason);
  }
  std::string path_, tmp_;
  int fd_ = -1;
  bool replacing_ = false;
  struct stat existing_ {};
};

/// A stream buffer writing to an output_file, for the library's save(std::ostream&): a filter
/// goes to the file as it is written, with no copy of it in memory. Give the stream
/// exceptions(std::ios::badbit): a failed write then throws output_file's own error (naming the
/// file and the reason).
class output_streambuf : public std::streambuf {
 public:
  explicit output_streambuf(output_file& out) noexcept : out_(out) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.write(std::string_view(s, static_cast<std::size_t>(n)));
    return n;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    out_.write(std::string_view(&ch, 1));
    return c;
  }

 private:
  output_file& out_;
};

}  // namespace ccf_tool
