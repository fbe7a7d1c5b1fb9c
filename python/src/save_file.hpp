// ccf — concurrent cuckoo filters.
// python/src/save_file.hpp: the file a filter's save writes.
//
// A save to a regular file, or to a path that does not exist yet, writes a temporary file in the
// same directory, syncs it and renames it over the target, then syncs the directory: a save that
// fails partway (a full disk, a file size limit) leaves the old file as it was, and the temporary
// file is removed. The new file keeps the permission bits (and, where the process may, the owner)
// of the file it replaces; a symbolic link to a regular file stays, and the file it names is
// replaced. A path that exists and is not a regular file (a FIFO, /dev/null, /dev/full) is written
// directly, as is a regular file in a directory that refuses the temporary file (EACCES, EPERM).
//
// Everything here runs without the GIL and reports errors as errno values, never as exceptions.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <streambuf>
#include <string>
#include <vector>

namespace ccf_py {

/// A stream buffer writing to a file descriptor its owner keeps open; error() is the errno of the
/// first failed write (0 if none).
class fd_out_buffer : public std::streambuf {
 public:
  explicit fd_out_buffer(int fd) : fd_(fd), buffer_(1 << 16) { reset(); }
  int error() const noexcept { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!flush()) return traits_type::eof();
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n <= epptr() - pptr()) {
      traits_type::copy(pptr(), s, static_cast<std::size_t>(n));
      pbump(static_cast<int>(n));
      return n;
    }
    if (!flush() || !write_all(s, static_cast<std::size_t>(n))) return 0;
    return n;
  }
  int sync() override { return flush() ? 0 : -1; }

 private:
  void reset() { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  bool flush() {
    const bool ok = write_all(pbase(), static_cast<std::size_t>(pptr() - pbase()));
    reset();
    return ok;
  }
  bool write_all(const char* s, std::size_t n) {
    while (error_ == 0 && n > 0) {
      const ssize_t w = ::write(fd_, s, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = w < 0 ? errno : EIO;
        break;
      }
      s += w;
      n -= static_cast<std::size_t>(w);
    }
    return error_ == 0;
  }

  int fd_;
  int error_ = 0;
  std::vector<char> buffer_;
};

/// The destination of one save: open() it, write through buffer(), then commit(). Dropped
/// uncommitted, it closes the file and removes the temporary one.
class save_file {
 public:
  save_file() = default;
  save_file(const save_file&) = delete;
  save_file& operator=(const save_file&) = delete;
  ~save_file() {
    if (fd_ >= 0) ::close(fd_);
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
  }

  /// Opens the file to write (a FIFO waits here for its reader); returns 0 or an errno.
  int open(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      struct stat link {};
      if (errno != ENOENT || ::lstat(path.c_str(), &link) == 0) return open_directly(path);
      return open_temporary(path);  // a new file
    }
    if (!S_ISREG(st.st_mode)) return open_directly(path);
    if (::access(path.c_str(), W_OK) != 0) return errno;  // as opening it would refuse
    target_ = resolved(path);
    existing_ = st;
    replacing_ = true;
    const int err = open_temporary(target_);
    if (err == EACCES || err == EPERM) return open_directly(path);
    return err;
  }
  std::streambuf& buffer() { return *buffer_; }
  /// errno of the first failed write (EIO if the stream failed otherwise).
  int write_error() const noexcept { return buffer_->error() != 0 ? buffer_->error() : EIO; }

  /// Closes the file and, for a temporary one, syncs it, gives it the old file's mode and
  /// renames it over the target, then syncs the directory; returns 0 or an errno.
  int commit() {
    if (buffer_->pubsync() != 0) return write_error();
    if (tmp_.empty()) return close_file();
    if (replacing_) {
      // Only a privileged user may give a file away: others keep it as theirs.
      [[maybe_unused]] const int owned = ::fchown(fd_, existing_.st_uid, existing_.st_gid);
      if (::fchmod(fd_, existing_.st_mode & 07777) != 0) return errno;
    }
    if (::fsync(fd_) != 0) return errno;
    if (const int err = close_file(); err != 0) return err;
    if (::rename(tmp_.c_str(), target_.c_str()) != 0) return errno;
    tmp_.clear();
    return sync_directory();
  }

 private:
  int open_directly(const std::string& path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0) return errno;
    buffer_ = std::make_unique<fd_out_buffer>(fd_);
    return 0;
  }
  /// Creates a new file beside `path` (mode 0666 less the umask, as open() gives a new file).
  int open_temporary(const std::string& path) {
    if (!replacing_) target_ = path;
    static std::atomic<unsigned> made{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
      const auto tick = std::chrono::steady_clock::now().time_since_epoch().count();
      char name[64];
      std::snprintf(name, sizeof name, ".ccf-save-%ld-%u-%llx.tmp", static_cast<long>(::getpid()),
                    made.fetch_add(1), static_cast<unsigned long long>(tick) & 0xffffff);
      std::string tmp = directory_of(path) + "/" + name;
      fd_ = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) {
        tmp_ = std::move(tmp);
        buffer_ = std::make_unique<fd_out_buffer>(fd_);
        return 0;
      }
      if (errno != EEXIST) return errno;
    }
    return EEXIST;
  }
  int close_file() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0 ? 0 : errno;
  }
  /// Makes the rename durable. A file system that cannot sync a directory (EINVAL) has nothing
  /// to sync, and a directory that may be written but not read (EACCES) cannot be opened to sync.
  int sync_directory() const {
    const int fd = ::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno == EACCES ? 0 : errno;
    const int err = ::fsync(fd) == 0 || errno == EINVAL ? 0 : errno;
    ::close(fd);
    return err;
  }
  /// The file a path names, its symbolic links followed (the path itself if that fails).
  static std::string resolved(const std::string& path) {
    const std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr),
                                                           &std::free);
    return real ? std::string(real.get()) : path;
  }
  static std::string directory_of(const std::string& path) {
    const std::size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
  }

  int fd_ = -1;
  std::unique_ptr<fd_out_buffer> buffer_;
  std::string target_;  // the file renamed over (symbolic links followed)
  std::string tmp_;     // the temporary file, until renamed
  bool replacing_ = false;
  struct stat existing_ {};
};

}  // namespace ccf_py
