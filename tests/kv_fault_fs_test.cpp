// The fault-injecting, in-memory file system of the key-value store's crash tests
// (tests/kv_fault_fs.hpp), tested on its own: unsynced writes and directory entries vanish at a
// crash, torn writes apply any subset of their sectors and leave holes, injected failures, locks
// and views behave as documented there.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "kv_fault_fs.hpp"

namespace ccf_test {
namespace {

namespace kv = ccf::kv;
using fs_ptr = std::shared_ptr<kv_fault_fs>;
const std::string dir = "/db";

std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
std::string as_string(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

TEST(kv_fault_fs, unsynced_writes_and_entries_vanish_at_a_crash) {
  std::mt19937_64 rng(1);
  fs_ptr fs = kv_fault_fs::make(1 << 20);
  fs->create_directory(dir);
  auto f = fs->open(dir + "/a", kv_fault_fs::open_mode::create);
  f->write_at(0, as_bytes("hello"));
  EXPECT_EQ(as_string(fs->read_file(dir + "/a")), "hello");
  auto drop_all = [](const std::string&, std::size_t) { return kv_fault_fs::fate::dropped; };
  EXPECT_FALSE(fs->crash(drop_all, rng)->exists(dir + "/a"));  // entry not durable
  fs->sync_directory(dir);
  EXPECT_EQ(as_string(fs->crash(drop_all, rng)->read_file(dir + "/a")), "");  // data not synced
  f->sync();
  f->write_at(5, as_bytes(" world"));
  f->truncate(3);
  EXPECT_EQ(as_string(fs->read_file(dir + "/a")), "hel");
  EXPECT_EQ(as_string(fs->crash(drop_all, rng)->read_file(dir + "/a")), "hello");
  auto apply_all = [](const std::string&, std::size_t) { return kv_fault_fs::fate::applied; };
  EXPECT_EQ(as_string(fs->crash(apply_all, rng)->read_file(dir + "/a")), "hel");
  // Renames and removes are undone until the directory is synced; a removed file comes back.
  fs->rename(dir + "/a", dir + "/b");
  EXPECT_TRUE(fs->exists(dir + "/b"));
  EXPECT_FALSE(fs->exists(dir + "/a"));
  fs_ptr crashed = fs->crash(drop_all, rng);
  EXPECT_TRUE(crashed->exists(dir + "/a"));
  EXPECT_FALSE(crashed->exists(dir + "/b"));
  fs->sync_directory(dir);
  fs->remove(dir + "/b");
  EXPECT_EQ(fs->list(dir).size(), 0u);
  EXPECT_EQ(as_string(fs->crash(drop_all, rng)->read_file(dir + "/b")), "hello");
}

TEST(kv_fault_fs, torn_writes_apply_any_subset_of_sectors_and_leave_holes) {
  std::mt19937_64 rng(2);
  fs_ptr fs = kv_fault_fs::make(1 << 20);
  fs->create_directory(dir);
  auto f = fs->open(dir + "/t", kv_fault_fs::open_mode::create);
  fs->sync_directory(dir);
  const std::string old_bytes(2048, 'o'), new_bytes(4096, 'n');
  f->write_at(0, as_bytes(old_bytes));
  f->sync();
  f->write_at(1024, as_bytes(new_bytes));  // sectors 2..9
  bool saw_hole = false, saw_torn = false;
  for (int i = 0; i < 200; ++i) {
    const std::string got = as_string(fs->crash(rng)->read_file(dir + "/t"));
    ASSERT_GE(got.size(), 2048u);
    ASSERT_EQ(got.size() % 512, 0u);
    int applied = 0;
    for (std::size_t s = 0; s < got.size() / 512; ++s) {
      const std::string sector = got.substr(s * 512, 512);
      const char want_old = s < 4 ? 'o' : '\0';
      ASSERT_TRUE(sector == std::string(512, 'n') || sector == std::string(512, want_old)) << s;
      applied += sector[0] == 'n';
      saw_hole |= s >= 4 && sector[0] == '\0';
    }
    saw_torn |= applied != 0 && applied != 6 && applied != 8;
  }
  EXPECT_TRUE(saw_hole);
  EXPECT_TRUE(saw_torn);
}

TEST(kv_fault_fs, injected_failures_locks_and_views) {
  fs_ptr fs = kv_fault_fs::make(1 << 16);
  fs->create_directory(dir);
  auto f = fs->open(dir + "/x", kv_fault_fs::open_mode::create);
  fs->fail(kv_fault_fs::op_write, 2);
  f->write_at(0, as_bytes("a"));
  EXPECT_THROW(f->write_at(1, as_bytes("b")), kv::io_error);
  f->write_at(1, as_bytes("c"));  // only the 2nd failed
  EXPECT_EQ(as_string(fs->read_file(dir + "/x")), "ac");
  fs->fail(kv_fault_fs::op_sync | kv_fault_fs::op_rename, 1, true);
  EXPECT_THROW(f->sync(), kv::io_error);
  EXPECT_THROW(fs->rename(dir + "/x", dir + "/y"), kv::io_error);
  EXPECT_THROW(f->sync(), kv::io_error);
  EXPECT_EQ(fs->fired(), 4u);
  EXPECT_EQ(fs->count(kv_fault_fs::op_write), 3u);
  EXPECT_EQ(fs->count(kv_fault_fs::op_sync), 2u);
  fs->heal();
  f->sync();
  // A view stays valid while the file grows, up to its capacity.
  const std::byte* v = f->view();
  f->write_at(60000, as_bytes("z"));
  EXPECT_EQ(f->view(), v);
  EXPECT_EQ(static_cast<char>(v[60000]), 'z');
  EXPECT_EQ(static_cast<char>(v[100]), '\0');
  EXPECT_THROW(f->write_at(1 << 16, as_bytes("q")), kv::io_error);
  fs->set_viewable(false);
  EXPECT_EQ(f->view(), nullptr);
  // One lock per path while its handle lives; a crash releases them.
  auto lock = fs->lock(dir + "/LOCK");
  EXPECT_THROW(fs->lock(dir + "/LOCK"), kv::store_locked_error);
  std::mt19937_64 rng(3);
  EXPECT_NO_THROW(fs->crash(rng)->lock(dir + "/LOCK"));
  lock.reset();
  EXPECT_NO_THROW(fs->lock(dir + "/LOCK"));
}

}  // namespace
}  // namespace ccf_test
