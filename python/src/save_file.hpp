// ccf — concurrent cuckoo filters.
// python/src/save_file.hpp: the file a filter's save writes.
//
// A save to a regular file, or to a path that does not exist yet, writes a temporary file in the
// same directory, syncs it and renames it over the target, then syncs the directory: a save that
// fails partway (a full disk, a file size limit) leaves the old file as it was, and the temporary
// file is removed. The new file keeps the permission bits (and, where the process may, the owner
// and group) of the file it replaces. A path that exists and is not a regular file (a symbolic
// link, also /dev/stdout; a FIFO; /dev/null, /dev/full) is written directly, as is a regular file
// in a directory that refuses the temporary file (EACCES, EPERM, EROFS), or one the new file
// cannot be renamed over (a file bind-mounted on its own: EBUSY; another user's file in a sticky
// directory: EPERM; EXDEV, EACCES), which is then written again, in place.
//
// A regular file is locked (flock) while it is replaced or written, as the ccf tool's add, remove
// and build lock it while they change it: a save waits for such a change to end (which would
// otherwise rename its file over the saved one), and a change that starts meanwhile waits for
// the save. A file that cannot be opened to read, or whose file system cannot lock, is saved
// without the lock, as the tool's build does.
//
// Everything here runs without the GIL and reports errors as errno values, never as exceptions.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
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

/// A stream buffer writing into `size` bytes at `data` and failing past them.
class fixed_out_buffer : public std::streambuf {
 public:
  fixed_out_buffer(char* data, std::size_t size) { setp(data, data + size); }
  std::size_t written() const noexcept { return static_cast<std::size_t>(pptr() - pbase()); }
};

/// The destination of one save: open() it, write through buffer(), then commit(). Dropped
/// uncommitted, it closes the file and removes the temporary one.
class save_file {
 public:
  /// commit()'s answer when the new file cannot be renamed over the old one (a file bind-mounted
  /// on its own, another user's file in a sticky directory): the temporary file is removed, and
  /// the caller writes again with a save_file that writes in place.
  static constexpr int write_in_place = -1;

  explicit save_file(bool in_place = false) : in_place_(in_place) {}
  save_file(const save_file&) = delete;
  save_file& operator=(const save_file&) = delete;
  ~save_file() {
    if (fd_ >= 0) ::close(fd_);
    if (!tmp_.empty()) ::unlinkat(dir_fd_, tmp_.c_str(), 0);
    if (dir_fd_ >= 0) ::close(dir_fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);  // last: the new file is in place; releases the lock
  }

  /// Opens the file to write (a FIFO waits here for its reader, a locked file for its lock);
  /// returns 0 or an errno (EINTR: a signal came while it waited).
  int open(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      // A new file; anything else wrong is for the open to report, as it always did.
      return errno == ENOENT && !in_place_ ? open_temporary(path) : open_directly(path);
    }
    // Only a regular file named as such is replaced by a rename: a symbolic link (also
    // /dev/stdout), a FIFO or a device is written as it is.
    if (!S_ISREG(st.st_mode)) return open_directly(path);
    if (const int err = lock(path); err != 0) return err;
    if (in_place_) return open_directly(path);
    // The file must be one this process may write, as open() would judge it (permissions, ACLs,
    // a read-only mount): opened for writing, not truncated, and its owner and mode read there.
    const int probe = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (probe < 0) return errno == ELOOP ? open_directly(path) : errno;  // a link swapped in
    const int probed = ::fstat(probe, &existing_) == 0 ? 0 : errno;
    ::close(probe);
    if (probed != 0) return probed;
    replacing_ = true;
    const int err = open_temporary(path);
    // A directory that takes no new file (EACCES, EPERM; EROFS: a file bind-mounted writable in a
    // read-only directory) leaves the file to be written in place.
    return err == EACCES || err == EPERM || err == EROFS ? open_directly(path) : err;
  }
  std::streambuf& buffer() { return *buffer_; }
  /// errno of the first failed write (EIO if the stream failed otherwise).
  int write_error() const noexcept { return buffer_->error() != 0 ? buffer_->error() : EIO; }

  /// Closes the file and, for a temporary one, syncs it, gives it the old file's owner and mode
  /// and renames it over the target, then syncs the directory; returns 0, an errno, or
  /// write_in_place.
  int commit() {
    if (buffer_->pubsync() != 0) return write_error();
    if (tmp_.empty()) return close_file();
    if (replacing_) {
      // Only a privileged user may give a file away: others keep its group where they may.
      if (::fchown(fd_, existing_.st_uid, existing_.st_gid) != 0 &&
          ::fchown(fd_, static_cast<uid_t>(-1), existing_.st_gid) != 0) {
      }
      if (::fchmod(fd_, existing_.st_mode & 07777) != 0) return errno;
    }
    if (::fsync(fd_) != 0) return errno;
    if (const int err = close_file(); err != 0) return err;
    if (::renameat(dir_fd_, tmp_.c_str(), dir_fd_, name_.c_str()) != 0) {
      const int err = errno;
      if (err != EBUSY && err != EXDEV && err != EPERM && err != EACCES) return err;
      if (::unlinkat(dir_fd_, tmp_.c_str(), 0) == 0) tmp_.clear();  // else the destructor tries
      return write_in_place;
    }
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
  /// Creates a new file in the directory of `path`, held open (a later change of the working
  /// directory changes nothing): mode 0600 while it replaces a file (whose mode it takes at
  /// commit), else 0666 less the umask, as open() gives a new file.
  int open_temporary(const std::string& path) {
    const std::size_t slash = path.find_last_of('/');
    name_ = slash == std::string::npos ? path : path.substr(slash + 1);
    if (name_.empty()) return open_directly(path);  // "dir/": the open says what is wrong
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : path.substr(0, slash);
    dir_fd_ = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd_ < 0) return errno;
    static std::atomic<unsigned> made{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
      const auto tick = std::chrono::steady_clock::now().time_since_epoch().count();
      char name[64];
      std::snprintf(name, sizeof name, ".ccf-save-%ld-%u-%llx.tmp", static_cast<long>(::getpid()),
                    made.fetch_add(1), static_cast<unsigned long long>(tick) & 0xffffff);
      fd_ = ::openat(dir_fd_, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                     replacing_ ? 0600 : 0666);
      if (fd_ >= 0) {
        tmp_ = name;
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
    const int fd = ::openat(dir_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno == EACCES ? 0 : errno;
    const int err = ::fsync(fd) == 0 || errno == EINVAL ? 0 : errno;
    ::close(fd);
    return err;
  }

  /// Takes the flock on the regular file at `path` (the file the path names once locked: one
  /// renamed over it meanwhile is locked instead); 0 also when it cannot be taken, EINTR when a
  /// signal came while it waited.
  int lock(const std::string& path) {
    for (int attempt = 0; attempt < 100; ++attempt) {
      lock_fd_ = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      if (lock_fd_ < 0) return 0;  // the open for writing says what is wrong, if anything
      struct stat held {};
      if (::fstat(lock_fd_, &held) != 0 || ::flock(lock_fd_, LOCK_EX) != 0) {
        const int err = errno;
        ::close(lock_fd_);
        lock_fd_ = -1;
        return err == EINTR ? EINTR : 0;
      }
      struct stat now {};
      if (::stat(path.c_str(), &now) == 0 && now.st_ino == held.st_ino &&
          now.st_dev == held.st_dev) {
        return 0;
      }
      ::close(lock_fd_);  // replaced while it waited: lock the new file
      lock_fd_ = -1;
    }
    return 0;
  }

  bool in_place_;
  int lock_fd_ = -1;  // the locked target, held until the new file is in place
  int fd_ = -1;
  int dir_fd_ = -1;  // the target's directory (O_PATH), for a temporary file
  std::unique_ptr<fd_out_buffer> buffer_;
  std::string name_;  // the target's name in that directory
  std::string tmp_;   // the temporary file's name there, until renamed
  bool replacing_ = false;
  struct stat existing_ {};
};

}  // namespace ccf_py
