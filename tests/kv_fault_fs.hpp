// A fault-injecting, in-memory ccf::kv::file_system for the key-value store's crash tests (as
// SQLite's crash tests do it).
//
// Files. Each file (an inode) has the bytes readers see now and the bytes that are durable.
// write_at and truncate change the visible bytes at once and are remembered, in order, as pending
// until the file's sync(), which makes the visible bytes durable.
//
// Directory entries. Creating a file (open with open_mode::create, lock), rename and remove change
// the visible names at once; the durable names of a directory catch up only at sync_directory of
// that directory. Until then a crash undoes them: a created file disappears, a rename is undone, a
// removed file comes back with its durable bytes. (Directories themselves are durable when made.)
//
// crash(rng) returns the file system as a power loss leaves it: every durably named file holds its
// durable bytes plus each of its pending changes in order, each one dropped, applied, or — a write
// — torn (a random subset of its 512-byte sectors applied), in any combination; no locks held.
// Bytes between the old end and a write past it read as zeros (holes).
//
// Faults. fail(ops, n) makes the n-th operation of the kinds in `ops` (counting from now) throw
// ccf::kv::io_error without doing anything; with and_after, every later one of them throws too
// (fail(op_all, n, true) freezes the disk from the n-th change on: a crash at that instant).
// count() says how many operations of some kinds were attempted, so that a test can fail each one
// in turn.
// A hook, called before each operation, lets a test block a thread at an exact point.
//
// view() returns the file's buffer, reserved once at a fixed capacity (64 MiB by default, address
// space only) so that it stays valid while the file grows; growing past it throws io_error.
// set_viewable(false) makes view() return nullptr (the store then reads with read_at).
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ccf/kv/file_system.hpp"
#include "ccf/kv/options.hpp"

namespace ccf_test {

class kv_fault_fs final : public ccf::kv::file_system,
                          public std::enable_shared_from_this<kv_fault_fs> {
 public:
  /// Kinds of operations (a mask selects several).
  enum op : unsigned {
    op_write = 1,
    op_sync = 2,
    op_rename = 4,
    op_sync_directory = 8,
    op_truncate = 16,
    op_remove = 32,
    op_create = 64,
    op_all = 127,
  };
  /// What a crash does with one pending change.
  enum class fate { dropped, applied, torn };
  /// Chooses the fate of the i-th pending change (in order) of the file durably named `path`.
  using chooser = std::function<fate(const std::string& path, std::size_t i)>;

  static std::shared_ptr<kv_fault_fs> make(std::size_t capacity = std::size_t{64} << 20) {
    return std::shared_ptr<kv_fault_fs>(new kv_fault_fs(capacity));
  }

  // ---- faults -----------------------------------------------------------------------------------
  void fail(unsigned ops, std::uint64_t nth, bool and_after = false) {
    std::lock_guard<std::mutex> lk(m_);
    fault_ops_ = ops;
    fault_left_ = std::max<std::uint64_t>(nth, 1);
    fault_sticky_ = and_after;
  }
  void heal() {
    std::lock_guard<std::mutex> lk(m_);
    fault_ops_ = 0;
  }
  /// How many injected faults have fired.
  std::uint64_t fired() const {
    std::lock_guard<std::mutex> lk(m_);
    return fired_;
  }
  /// The kind and file of the last injected fault that fired.
  std::pair<op, std::string> last_fault() const {
    std::lock_guard<std::mutex> lk(m_);
    return last_fault_;
  }
  /// Operations of the kinds in `ops` attempted so far (failed ones included).
  std::uint64_t count(unsigned ops) const {
    std::lock_guard<std::mutex> lk(m_);
    std::uint64_t n = 0;
    for (unsigned i = 0; i < 7; ++i)
      if ((ops >> i) & 1) n += counts_[i];
    return n;
  }
  void set_hook(std::function<void(op, const std::string& path)> hook) {
    std::lock_guard<std::mutex> lk(m_);
    hook_ = std::make_shared<std::function<void(op, const std::string&)>>(std::move(hook));
  }
  void set_viewable(bool viewable) {
    std::lock_guard<std::mutex> lk(m_);
    viewable_ = viewable;
  }

  // ---- crashes ----------------------------------------------------------------------------------
  std::shared_ptr<kv_fault_fs> crash(std::mt19937_64& rng) const {
    return crash([&](const std::string&, std::size_t) { return fate(rng() % 3); }, rng);
  }
  /// A crash where choose() decides each pending change's fate (torn writes use rng).
  std::shared_ptr<kv_fault_fs> crash(const chooser& choose, std::mt19937_64& rng) const {
    std::lock_guard<std::mutex> lk(m_);
    std::shared_ptr<kv_fault_fs> after = make(capacity_);
    after->dirs_ = dirs_;
    std::map<const inode*, std::shared_ptr<inode>> done;  // one result per inode
    for (const auto& [path, node] : durable_) {
      std::shared_ptr<inode>& result = done[node.get()];
      if (!result) {
        std::vector<std::byte> bytes = node->durable;
        for (std::size_t i = 0; i < node->pending.size(); ++i) {
          const change& c = node->pending[i];
          const fate f = choose(path, i);
          if (f == fate::dropped) continue;
          if (f == fate::applied || c.is_truncate) {
            apply(bytes, c, c.offset, c.offset + c.bytes.size());
            continue;
          }
          for (std::uint64_t at = c.offset; at < c.offset + c.bytes.size();) {  // torn
            const std::uint64_t end =
                std::min<std::uint64_t>((at / 512 + 1) * 512, c.offset + c.bytes.size());
            if (rng() % 2 == 0) apply(bytes, c, at, end);
            at = end;
          }
        }
        result = std::make_shared<inode>(capacity_);
        result->set(bytes);
      }
      after->visible_[path] = after->durable_[path] = result;
    }
    return after;
  }

  // ---- inspection and set-up --------------------------------------------------------------------
  /// The visible bytes of a file (empty when there is none).
  std::vector<std::byte> read_file(const std::string& path) const {
    std::lock_guard<std::mutex> lk(m_);
    const auto it = visible_.find(path);
    if (it == visible_.end()) return {};
    return std::vector<std::byte>(it->second->data, it->second->data + it->second->size);
  }
  /// Makes `path` a file holding `bytes`, durably (name and contents).
  void write_file(const std::string& path, std::span<const std::byte> bytes) {
    std::lock_guard<std::mutex> lk(m_);
    dirs_.insert(parent(path));
    auto node = std::make_shared<inode>(capacity_);
    node->set(bytes);
    visible_[path] = durable_[path] = node;
  }
  /// Whether the file has changes not yet synced.
  bool has_pending(const std::string& path) const {
    std::lock_guard<std::mutex> lk(m_);
    const auto it = visible_.find(path);
    return it != visible_.end() && !it->second->pending.empty();
  }

  // ---- file_system ------------------------------------------------------------------------------
  std::unique_ptr<ccf::kv::file> open(const std::string& path, open_mode mode) override {
    if (mode == open_mode::create) before(op_create, path);
    std::lock_guard<std::mutex> lk(m_);
    auto it = visible_.find(path);
    if (it == visible_.end()) {
      if (mode != open_mode::create) throw ccf::kv::io_error("fault fs: no file '" + path + "'");
      if (dirs_.count(parent(path)) == 0) {
        throw ccf::kv::io_error("fault fs: no directory for '" + path + "'");
      }
      check(op_create, path);
      it = visible_.emplace(path, std::make_shared<inode>(capacity_)).first;
    }
    return std::make_unique<fault_file>(shared_from_this(), it->second, path);
  }
  bool exists(const std::string& path) override {
    std::lock_guard<std::mutex> lk(m_);
    return visible_.count(path) != 0 || dirs_.count(path) != 0;
  }
  void remove(const std::string& path) override {
    before(op_remove, path);
    std::lock_guard<std::mutex> lk(m_);
    check(op_remove, path);
    visible_.erase(path);
  }
  void rename(const std::string& from, const std::string& to) override {
    before(op_rename, from);
    std::lock_guard<std::mutex> lk(m_);
    check(op_rename, from);
    const auto it = visible_.find(from);
    if (it == visible_.end()) throw ccf::kv::io_error("fault fs: no file '" + from + "'");
    std::shared_ptr<inode> node = it->second;
    visible_.erase(it);
    visible_[to] = std::move(node);
  }
  void create_directory(const std::string& path) override {
    std::lock_guard<std::mutex> lk(m_);
    dirs_.insert(path);
  }
  void sync_directory(const std::string& path) override {
    before(op_sync_directory, path);
    std::lock_guard<std::mutex> lk(m_);
    check(op_sync_directory, path);
    if (dirs_.count(path) == 0) throw ccf::kv::io_error("fault fs: no directory '" + path + "'");
    std::erase_if(durable_, [&](const auto& e) { return parent(e.first) == path; });
    for (const auto& [name, node] : visible_)
      if (parent(name) == path) durable_[name] = node;
  }
  std::vector<std::string> list(const std::string& path) override {
    std::lock_guard<std::mutex> lk(m_);
    if (dirs_.count(path) == 0) throw ccf::kv::io_error("fault fs: no directory '" + path + "'");
    std::vector<std::string> names;
    for (const auto& [name, node] : visible_)
      if (parent(name) == path) names.push_back(name.substr(path.size() + 1));
    return names;
  }
  std::unique_ptr<ccf::kv::lock_handle> lock(const std::string& path) override {
    std::lock_guard<std::mutex> lk(m_);
    if (locks_.count(path) != 0) {
      throw ccf::kv::store_locked_error("fault fs: '" + path + "' is locked");
    }
    if (dirs_.count(parent(path)) == 0) {
      throw ccf::kv::io_error("fault fs: no directory for '" + path + "'");
    }
    if (visible_.count(path) == 0) visible_[path] = std::make_shared<inode>(capacity_);
    locks_.insert(path);
    return std::make_unique<fault_lock>(shared_from_this(), path);
  }

 private:
  /// A pending change: a write of `bytes` at `offset`, or a truncate to `offset`.
  struct change {
    bool is_truncate = false;
    std::uint64_t offset = 0;
    std::vector<std::byte> bytes;
  };
  /// Applies bytes [from, to) of the file (a part of change c) to `bytes`, or c's truncate.
  static void apply(std::vector<std::byte>& bytes, const change& c, std::uint64_t from,
                    std::uint64_t to) {
    if (c.is_truncate) {
      bytes.resize(c.offset);
      return;
    }
    if (from == to) return;
    if (bytes.size() < to) bytes.resize(to);  // zeros up to a write past the end: a hole
    std::memcpy(bytes.data() + from, c.bytes.data() + (from - c.offset), to - from);
  }
  struct inode {
    explicit inode(std::size_t cap) : capacity(cap) {
      void* p = ::mmap(nullptr, cap, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) throw ccf::kv::io_error("fault fs: cannot reserve a file buffer");
      data = static_cast<std::byte*>(p);
    }
    inode(const inode&) = delete;
    inode& operator=(const inode&) = delete;
    ~inode() { ::munmap(data, capacity); }

    /// Visible and durable bytes := bytes.
    void set(std::span<const std::byte> bytes) {
      resize(bytes.size());
      if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
      durable.assign(bytes.begin(), bytes.end());
      pending.clear();
    }
    /// The visible size := n (new bytes are zeros).
    void resize(std::uint64_t n) {
      if (n > capacity) throw ccf::kv::io_error("fault fs: file larger than its capacity");
      if (n > size) std::memset(data + size, 0, n - size);
      size = n;
    }

    std::byte* data = nullptr;  // visible bytes [0, size); the buffer holds `capacity`
    std::size_t capacity = 0;
    std::size_t size = 0;
    std::vector<std::byte> durable;
    std::vector<change> pending;
  };

  class fault_file final : public ccf::kv::file {
   public:
    fault_file(std::shared_ptr<kv_fault_fs> fs, std::shared_ptr<inode> node, std::string path)
        : fs_(std::move(fs)), node_(std::move(node)), path_(std::move(path)) {}
    std::uint64_t size() const override {
      std::lock_guard<std::mutex> lk(fs_->m_);
      return node_->size;
    }
    void write_at(std::uint64_t offset, std::span<const std::byte> bytes) override {
      fs_->before(op_write, path_);
      std::lock_guard<std::mutex> lk(fs_->m_);
      fs_->check(op_write, path_);
      if (bytes.empty()) return;
      if (offset + bytes.size() > node_->size) node_->resize(offset + bytes.size());
      std::memcpy(node_->data + offset, bytes.data(), bytes.size());
      node_->pending.push_back(change{false, offset, {bytes.begin(), bytes.end()}});
    }
    std::size_t read_at(std::uint64_t offset, std::span<std::byte> bytes) const override {
      std::lock_guard<std::mutex> lk(fs_->m_);
      if (offset >= node_->size) return 0;
      const std::size_t n = std::min<std::uint64_t>(bytes.size(), node_->size - offset);
      std::memcpy(bytes.data(), node_->data + offset, n);
      return n;
    }
    void sync() override {
      fs_->before(op_sync, path_);
      std::lock_guard<std::mutex> lk(fs_->m_);
      fs_->check(op_sync, path_);
      for (const change& c : node_->pending)
        apply(node_->durable, c, c.offset, c.offset + c.bytes.size());
      node_->pending.clear();
    }
    void truncate(std::uint64_t size) override {
      fs_->before(op_truncate, path_);
      std::lock_guard<std::mutex> lk(fs_->m_);
      fs_->check(op_truncate, path_);
      node_->resize(size);
      node_->pending.push_back(change{true, size, {}});
    }
    const std::byte* view() override {
      std::lock_guard<std::mutex> lk(fs_->m_);
      return fs_->viewable_ ? node_->data : nullptr;
    }

   private:
    std::shared_ptr<kv_fault_fs> fs_;
    std::shared_ptr<inode> node_;
    std::string path_;
  };

  class fault_lock final : public ccf::kv::lock_handle {
   public:
    fault_lock(std::shared_ptr<kv_fault_fs> fs, std::string path)
        : fs_(std::move(fs)), path_(std::move(path)) {}
    ~fault_lock() override {
      std::lock_guard<std::mutex> lk(fs_->m_);
      fs_->locks_.erase(path_);
    }

   private:
    std::shared_ptr<kv_fault_fs> fs_;
    std::string path_;
  };

  explicit kv_fault_fs(std::size_t capacity) : capacity_(capacity) {}

  static std::string parent(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
  }
  /// Calls the hook (outside the lock, so that it may block).
  void before(op o, const std::string& path) {
    std::shared_ptr<std::function<void(op, const std::string&)>> hook;
    {
      std::lock_guard<std::mutex> lk(m_);
      hook = hook_;
    }
    if (hook && *hook) (*hook)(o, path);
  }
  /// Counts the operation; throws when an injected fault fires (m_ held).
  void check(op o, const std::string& path) {
    const auto kind = static_cast<unsigned>(std::countr_zero(static_cast<unsigned>(o)));
    if (kind < 7) ++counts_[kind];
    if ((o & fault_ops_) == 0) return;
    if (fault_left_ > 1) {
      --fault_left_;
      return;
    }
    ++fired_;
    last_fault_ = {o, path};
    if (!fault_sticky_) fault_ops_ = 0;
    throw ccf::kv::io_error("fault fs: injected failure (operation " + std::to_string(o) + " on '" +
                            path + "')");
  }

  mutable std::mutex m_;
  std::size_t capacity_;
  std::map<std::string, std::shared_ptr<inode>> visible_, durable_;
  std::set<std::string> dirs_{".", "/"};
  std::set<std::string> locks_;
  bool viewable_ = true;
  unsigned fault_ops_ = 0;
  std::uint64_t fault_left_ = 0;
  bool fault_sticky_ = false;
  std::uint64_t fired_ = 0;
  std::pair<op, std::string> last_fault_{op_all, ""};
  std::uint64_t counts_[7] = {};
  std::shared_ptr<std::function<void(op, const std::string&)>> hook_;
};

/// The store the fault tests open: "/db" on a kv_fault_fs, its log "/db/log".
inline const std::string fault_dir = "/db";
inline const std::string fault_log_path = fault_dir + "/log";

/// A file's bytes (read_file) as a string.
inline std::string as_string(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

/// Options for a store on `fs`: durability `d`, snapshots only when asked, and group mode's
/// syncer every millisecond.
inline ccf::kv::options fault_options(const std::shared_ptr<kv_fault_fs>& fs,
                                      ccf::kv::durability d = ccf::kv::durability::every_write) {
  ccf::kv::options o;
  o.fs = fs;
  o.sync = d;
  o.snapshot_every_bytes = 0;
  o.group_interval = std::chrono::milliseconds(1);
  return o;
}

}  // namespace ccf_test
