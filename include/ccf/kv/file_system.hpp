// ccf — concurrent cuckoo filters.
// kv/file_system.hpp: the file operations the key-value store uses, and their POSIX
// implementation.
//
// ccf::kv::store does all of its I/O through a kv::file_system, so that tests can put a
// fault-injecting one underneath (tests/kv_fault_fs.hpp drops or tears unsynced writes and fails
// writes and syncs, as SQLite's crash tests do). The POSIX one:
//   - write_at is pwrite (retried on EINTR and short writes), read_at is pread;
//   - sync is fdatasync; sync_dir opens the directory and fsyncs it (after a rename or a create,
//     so the directory entry itself is durable);
//   - view() maps the file read-only and shared, with a reservation of address space far larger
//     than the file (1 TiB, or less if the system refuses: down to 4 GiB), so the mapping keeps
//     covering the file as it grows by appends: readers read records in place, with no system
//     call. A caller only reads bytes it knows were written (below a size it saw), never past the
//     end of the file, and only below view_size(), the reservation: past it, with read_at;
//   - lock takes an exclusive flock on a file and writes the owner's pid into it; a second taker
//     (another process, or the same one) gets kv::store_locked_error naming that pid.
// Every failure throws kv::io_error with the path, the operation and the errno text.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ccf::kv {

/// An operation on a store's files failed (the message names the file and the reason).
class io_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A store's files are corrupt beyond what recovery repairs, or are not a store's.
class corrupt_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The log has a bad record with intact records after it, and options::strict_recovery refused
/// to cut them off (a recovery without it keeps them in a dropped-<offset> file).
class damaged_log_error : public corrupt_error {
 public:
  using corrupt_error::corrupt_error;
};

/// Another process (or another store object of this process) has the store open.
class store_locked_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An open file.
class file {
 public:
  virtual ~file() = default;
  virtual std::uint64_t size() const = 0;
  /// Writes all of `bytes` at `offset` (the file grows as needed).
  virtual void write_at(std::uint64_t offset, std::span<const std::byte> bytes) = 0;
  /// Reads up to bytes.size() bytes at `offset`; returns how many (fewer only at the end).
  virtual std::size_t read_at(std::uint64_t offset, std::span<std::byte> bytes) const = 0;
  /// Makes everything written so far durable.
  virtual void sync() = 0;
  virtual void truncate(std::uint64_t size) = 0;
  /// The file's bytes in memory, valid at [0, min(s, view_size())) for any size s the file had
  /// when the caller looked, and for as long as the file object lives; nullptr when the file
  /// cannot be viewed (then read_at must be used).
  virtual const std::byte* view() = 0;
  /// How far from the start of the file view() can reach (bytes past it are read with read_at);
  /// by default every size.
  virtual std::uint64_t view_size() const { return std::numeric_limits<std::uint64_t>::max(); }
};

/// Held while a store is open; releases the lock when destroyed.
class lock_handle {
 public:
  virtual ~lock_handle() = default;
};

class file_system {
 public:
  enum class open_mode { existing, create };
  virtual ~file_system() = default;
  virtual std::unique_ptr<file> open(const std::string& path, open_mode mode) = 0;
  virtual bool exists(const std::string& path) = 0;
  virtual void remove(const std::string& path) = 0;
  /// Atomically replaces `to` with `from` (POSIX rename).
  virtual void rename(const std::string& from, const std::string& to) = 0;
  virtual void create_directory(const std::string& path) = 0;
  /// Makes the directory's entries (creates, renames, removes) durable.
  virtual void sync_directory(const std::string& path) = 0;
  /// The names of the directory's entries (not "." and "..").
  virtual std::vector<std::string> list(const std::string& path) = 0;
  /// Takes the exclusive lock of `path` (creating the file); throws store_locked_error when
  /// someone else holds it.
  virtual std::unique_ptr<lock_handle> lock(const std::string& path) = 0;
  /// `path` as the store keeps it: one that names the same file whatever the process's working
  /// directory is later. The default keeps it as given (paths that need no working directory).
  virtual std::string absolute(const std::string& path) { return path; }
};

namespace detail {

[[noreturn]] inline void throw_io(const std::string& what, const std::string& path, int err) {
  throw io_error("ccf::kv: cannot " + what + " '" + path + "': " + std::strerror(err));
}

/// The address space a file's view reserves at most (1 TiB).
inline constexpr std::uint64_t default_view_reserve = std::uint64_t{1} << 40;

class posix_file final : public file {
 public:
  posix_file(int fd, std::string path, std::uint64_t view_reserve)
      : fd_(fd), path_(std::move(path)), max_reserve_(view_reserve) {}
  posix_file(const posix_file&) = delete;
  posix_file& operator=(const posix_file&) = delete;
  ~posix_file() override {
    if (map_ != nullptr) ::munmap(map_, reserved_);
    ::close(fd_);
  }

  std::uint64_t size() const override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw_io("stat", path_, errno);
    return static_cast<std::uint64_t>(st.st_size);
  }
  void write_at(std::uint64_t offset, std::span<const std::byte> bytes) override {
    while (!bytes.empty()) {
      const ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw_io("write", path_, n < 0 ? errno : EIO);
      bytes = bytes.subspan(static_cast<std::size_t>(n));
      offset += static_cast<std::uint64_t>(n);
    }
  }
  std::size_t read_at(std::uint64_t offset, std::span<std::byte> bytes) const override {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n =
          ::pread(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw_io("read", path_, errno);
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  }
  void sync() override {
    if (::fdatasync(fd_) != 0) throw_io("sync", path_, errno);
  }
  void truncate(std::uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) throw_io("truncate", path_, errno);
  }
  /// Reserves the largest of max_reserve_, a quarter of it, ... down to 4 GiB (or max_reserve_
  /// when smaller) that the system grants.
  const std::byte* view() override {
    if (map_ == nullptr && max_reserve_ != 0) {
      const std::uint64_t least = std::min(max_reserve_, std::uint64_t{1} << 32);
      for (std::uint64_t reserve = max_reserve_; reserve >= least; reserve >>= 2) {
        void* p = ::mmap(nullptr, static_cast<std::size_t>(reserve), PROT_READ,
                         MAP_SHARED | MAP_NORESERVE, fd_, 0);
        if (p != MAP_FAILED) {
          map_ = p;
          reserved_ = static_cast<std::size_t>(reserve);
          break;
        }
      }
    }
    return static_cast<const std::byte*>(map_);
  }
  std::uint64_t view_size() const override { return reserved_; }

 private:
  int fd_;
  std::string path_;
  std::uint64_t max_reserve_;
  void* map_ = nullptr;
  std::size_t reserved_ = 0;
};

class posix_lock final : public lock_handle {
 public:
  explicit posix_lock(int fd) : fd_(fd) {}
  posix_lock(const posix_lock&) = delete;
  posix_lock& operator=(const posix_lock&) = delete;
  ~posix_lock() override { ::close(fd_); }  // closing the descriptor releases the flock

 private:
  int fd_;
};

class posix_file_system final : public file_system {
 public:
  explicit posix_file_system(std::uint64_t view_reserve) : view_reserve_(view_reserve) {}
  std::unique_ptr<file> open(const std::string& path, open_mode mode) override {
    const int flags = O_RDWR | O_CLOEXEC | (mode == open_mode::create ? O_CREAT : 0);
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) throw_io("open", path, errno);
    return std::make_unique<posix_file>(fd, path, view_reserve_);
  }
  bool exists(const std::string& path) override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  }
  void remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_io("remove", path, errno);
  }
  void rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) throw_io("rename to '" + to + "'", from, errno);
  }
  void create_directory(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      throw_io("create directory", path, errno);
    }
  }
  void sync_directory(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw_io("open directory", path, errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) throw_io("sync directory", path, err);
  }
  std::vector<std::string> list(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) throw_io("list", path, errno);
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
    return names;
  }
  std::unique_ptr<lock_handle> lock(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw_io("open", path, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char owner[32] = {};
      const ssize_t n = ::pread(fd, owner, sizeof owner - 1, 0);
      ::close(fd);
      if (err == EWOULDBLOCK) {
        throw store_locked_error(
            "ccf::kv: the store is open in another process or object (lock file '" + path + "', " +
            (n > 0 ? "held by pid " + std::string(owner, static_cast<std::size_t>(n))
                   : std::string("whose owner has not written its pid yet")) +
            ")");
      }
      throw_io("lock", path, err);
    }
    const std::string pid = std::to_string(::getpid());
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      const int err = errno;
      ::close(fd);
      throw_io("write", path, err);
    }
    return std::make_unique<posix_lock>(fd);
  }
  /// A relative path joined to the working directory of now, without a trailing slash (as given
  /// when the working directory cannot be read). No step is resolved or removed: "a/link/.." is
  /// not "a" when link is a symbolic link.
  std::string absolute(const std::string& path) override {
    std::error_code ec;
    const std::filesystem::path p = std::filesystem::absolute(path, ec);
    if (ec || path.empty()) return path;
    std::string joined = p.string();
    while (joined.size() > 1 && joined.back() == '/')
      joined.pop_back();
    return joined;
  }

 private:
  std::uint64_t view_reserve_;
};

}  // namespace detail

/// The file system of the machine (POSIX calls). A file's view reserves at most `view_reserve`
/// bytes of address space (0: no view, every read a pread).
inline std::shared_ptr<file_system> posix_file_system(
    std::uint64_t view_reserve = detail::default_view_reserve) {
  return std::make_shared<detail::posix_file_system>(view_reserve);
}

}  // namespace ccf::kv
