// The ccf tool's filter files: read from a descriptor (its header alone, or the whole filter),
// locked against other ccf add / remove / build while they change (flock on the file itself),
// and written atomically (cli_support.hpp's output_file).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <istream>
#include <new>
#include <ostream>
#include <stdexcept>
#include <streambuf>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <ccf/filter_file.hpp>
#include <ccf/runtime_filter.hpp>

#include "cli_support.hpp"

namespace ccf_tool {

/// A file descriptor closed on scope exit.
class fd_holder {
 public:
  explicit fd_holder(int fd = -1) noexcept : fd_(fd) {}
  fd_holder(const fd_holder&) = delete;
  fd_holder& operator=(const fd_holder&) = delete;
  ~fd_holder() {
    if (fd_ > STDERR_FILENO) ::close(fd_);
  }
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

/// An input stream buffer over a file descriptor its owner keeps open. It seeks: the library's
/// loader finds the length of the file by seeking to its end, and checks it against the header
/// before it allocates the table. A read error is kept for the message.
class fd_streambuf : public std::streambuf {
 public:
  explicit fd_streambuf(int fd) noexcept : fd_(fd) {}
  /// errno of a failed read, or 0.
  int read_error() const noexcept { return error_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    ssize_t n;
    while ((n = ::read(fd_, buffer_, sizeof buffer_)) < 0 && errno == EINTR) {
    }
    if (n <= 0) {
      if (n < 0) error_ = errno;
      return traits_type::eof();
    }
    setg(buffer_, buffer_, buffer_ + n);
    return traits_type::to_int_type(*gptr());
  }
  pos_type seekoff(off_type off, std::ios::seekdir dir, std::ios::openmode) override {
    if (dir == std::ios::cur) off -= egptr() - gptr();  // the descriptor is ahead of the reader
    const int whence = dir == std::ios::beg ? SEEK_SET : dir == std::ios::cur ? SEEK_CUR : SEEK_END;
    const off_t at = ::lseek(fd_, off, whence);
    if (at < 0) return pos_type(off_type(-1));  // the buffered bytes stay readable
    setg(buffer_, buffer_, buffer_);
    return pos_type(at);
  }
  pos_type seekpos(pos_type pos, std::ios::openmode which) override {
    return seekoff(off_type(pos), std::ios::beg, which);
  }

 private:
  int fd_;
  int error_ = 0;
  char buffer_[1 << 16];
};

/// The filter in `in` (the file `path`). Every way the file can fail to load names it, exit 2: a
/// bad or truncated file, a header that claims more memory than this machine has, a table that
/// does not fit in the memory the tool may use.
inline ccf::runtime_filter load_stream(std::istream& in, const std::string& path) {
  try {
    return ccf::runtime_filter::load(in);
  } catch (const ccf::format_error& e) {
    throw cli_error(2, "'" + path + "': " + message_of(e));
  } catch (const std::length_error& e) {
    throw cli_error(2, "'" + path + "': " + message_of(e));
  } catch (const std::bad_alloc&) {
    throw cli_error(2, "'" + path + "': out of memory for its table");
  }
}

inline ccf::runtime_filter load(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw cli_error(2, "cannot read '" + path + "': Is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw cli_error(2, "cannot open '" + path + "': " + errno_text());
  return load_stream(in, path);
}

/// `path` opened to read, and its status in `st`; -1 (errno set) where it cannot be opened. A file
/// that is not a regular one is refused. O_NONBLOCK: opening a FIFO to read would wait for a
/// writer.
inline int open_regular(const std::string& path, struct stat& st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw cli_error(2, "'" + path + "' is not a regular file");
  }
  return fd;
}

/// read(in) over the file open as fd (named path); a read error of the descriptor is named as one,
/// not as the bad file the reader took the short read for.
template <class Read>
auto read_through(const std::string& path, int fd, Read&& read) {
  fd_streambuf buffer(fd);
  std::istream in(&buffer);
  try {
    return read(in);
  } catch (const cli_error&) {
    if (buffer.read_error() == 0) throw;
    errno = buffer.read_error();
    throw cli_error(2, "cannot read '" + path + "': " + errno_text());
  }
}

/// The filter in the file open as fd (named path), read from the descriptor: its header is
/// checked, and its claimed size against the file's, before the table is allocated.
inline ccf::runtime_filter load(const std::string& path, int fd) {
  return read_through(path, fd, [&](std::istream& in) { return load_stream(in, path); });
}

/// The header of the filter file at `path`, read without the lock: add and remove read and hash
/// their keys with its seed before they wait for the lock, so a slow input (a pipe, a large key
/// file) holds no other writer back.
inline ccf::filter_file_info read_header(const std::string& path) {
  struct stat st {};
  const fd_holder file(open_regular(path, st));
  if (file.get() < 0) throw cli_error(2, "cannot open '" + path + "': " + errno_text());
  return read_through(path, file.get(), [&](std::istream& in) {
    try {
      return ccf::read_filter_info(in);
    } catch (const ccf::format_error& e) {
      throw cli_error(2, "'" + path + "': " + message_of(e));
    }
  });
}

/// The filter file at `path` once locked, checked against the header its keys were hashed for.
inline ccf::runtime_filter load_as_read(const std::string& path, int fd,
                                        const ccf::filter_file_info& read) {
  ccf::runtime_filter f = load(path, fd);
  if (f.seed() != read.seed || f.growing() != (read.alternate == "growing")) {
    throw cli_error(2, "'" + path + "' was replaced by a filter of another seed or kind while " +
                           "the keys were read; it is unchanged: run the command again");
  }
  return f;
}

/// The filter file at `path`, open and locked (flock) against other ccf add / remove / build, as
/// long as it lives. It is the file the path names once locked (a change that renamed another
/// file over it meanwhile is waited for); a lock held by another process is waited for, saying
/// so once on standard error unless `quiet`. `lock::to_replace` (build) locks where it can: a
/// file that is missing, that cannot be opened to read, or that its file system cannot lock is
/// replaced without the lock (fd() -1).
///
/// Each waiter of a queue gets the lock on the file it opened, finds it replaced by the holder
/// before it, and locks the new one: behind N writers, up to N tries. Those tries are not
/// counted (each follows a change another writer made); only tries where the lock was free and
/// the file was replaced all the same (by something that does not lock) are, up to 100.
class locked_file {
 public:
  enum class lock { to_change, to_replace };

  locked_file(const std::string& path, lock purpose, bool quiet) : quiet_(quiet) {
    const bool best_effort = purpose == lock::to_replace;
    for (int unlocked_changes = 0; unlocked_changes < 100;) {
      struct stat st {};
      fd_ = open_regular(path, st);
      if (fd_ < 0 && best_effort && (errno == ENOENT || errno == EACCES)) return;
      if (fd_ < 0) throw cli_error(2, "cannot open '" + path + "': " + errno_text());
      bool waited = false;
      if (const int rc = take(path, waited); rc != 0) {
        ::close(fd_);
        fd_ = -1;
        if (best_effort) return;
        throw cli_error(2, "cannot lock '" + path + "': " + std::strerror(rc));
      }
      struct stat now {};
      if (::stat(path.c_str(), &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev) {
        return;
      }
      ::close(fd_);  // replaced while we waited: lock the new file
      if (!waited) ++unlocked_changes;
    }
    throw cli_error(2, "'" + path + "' keeps being replaced; cannot lock it");
  }
  locked_file(const locked_file&) = delete;
  locked_file& operator=(const locked_file&) = delete;
  ~locked_file() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const noexcept { return fd_; }

 private:
  /// Takes the lock, waiting (and saying so, the first time) while another holds it; 0 or the
  /// error. `waited`: whether another held it.
  int take(const std::string& path, bool& waited) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return 0;
    if (errno != EWOULDBLOCK && errno != EINTR) return errno;
    waited = true;
    if (!quiet_ && !said_waiting_) {
      std::fprintf(stderr,
                   "ccf: waiting for the lock on '%s' (another ccf add, remove or build is "
                   "changing it)\n",
                   path.c_str());
      said_waiting_ = true;
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) return errno;
    }
    return 0;
  }

  int fd_ = -1;
  bool quiet_ = false;
  bool said_waiting_ = false;
};

/// Writes `f` to `path` as it is saved: no copy of the file in memory. With `replacing` (build),
/// the rename over an existing file is done under the lock add and remove take.
inline void save(const ccf::runtime_filter& f, const std::string& path, bool replacing = false,
                 bool quiet = false) {
  ccf_tool::output_file out(path);
  ccf_tool::output_streambuf buffer(out);
  std::ostream stream(&buffer);
  stream.exceptions(std::ios::badbit);  // output_file's error, naming the file and the reason
  f.save(stream);
  if (!replacing || path == "-") {
    out.commit();
    return;
  }
  const locked_file held(path, locked_file::lock::to_replace, quiet);
  out.commit();
}

}  // namespace ccf_tool
