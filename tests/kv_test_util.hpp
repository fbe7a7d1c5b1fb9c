// Helpers shared by the key-value store tests (kv_store_test, kv_recovery_test,
// kv_concurrent_test): a temporary directory made with mkdtemp under /tmp and removed at the end,
// whole-file reads and writes, copying a store's directory, random byte strings, and a model of a
// store (std::map plus the order of each key's last write) that a store is checked against.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ccf/kv/store.hpp>

#include "filter_types.hpp"

namespace ccf_test {

/// A fresh directory /tmp/ccf-kv-XXXXXX, removed with everything in it when destroyed.
class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = "/tmp/ccf-kv-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const noexcept { return path_; }
  /// A path inside the directory.
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_all(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline void append_to(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot append to " + path);
}

/// XORs byte `offset` of a file in place (no truncation: a store that maps the file sees it).
inline void flip_byte(const std::string& path, std::uint64_t offset, unsigned char mask) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ static_cast<char>(mask)));
  if (!f) throw std::runtime_error("cannot patch " + path);
}

inline std::uint64_t file_size(const std::string& path) {
  return static_cast<std::uint64_t>(std::filesystem::file_size(path));
}

/// Copies every regular file of directory `from` into `to` (created if missing).
inline void copy_dir(const std::string& from, const std::string& to) {
  std::filesystem::create_directories(to);
  for (const auto& e : std::filesystem::directory_iterator(from)) {
    if (e.is_regular_file()) {
      std::filesystem::copy_file(e.path(), to + "/" + e.path().filename().string(),
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }
}

/// prefix followed by the decimal digits of i ("k" + std::to_string(i) without GCC 12's
/// -Wrestrict false positive on short literals).
inline std::string numbered(std::string_view prefix, long long i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

/// `n` random bytes (any of the 256 values).
inline std::string random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::string s(n, '\0');
  for (char& c : s)
    c = static_cast<char>(rng() & 0xff);
  return s;
}

/// Loops run `n` times the CCF_TEST_SCALE factor, at least `floor` times.
inline std::size_t scaled(std::size_t n, std::size_t floor = 1) {
  return std::max(floor, static_cast<std::size_t>(static_cast<double>(n) * test_scale()));
}

/// What a store should hold: each key's value and the sequence number of its last write.
class store_model {
 public:
  void put(const std::string& key, const std::string& value) { data_[key] = {value, ++clock_}; }
  bool erase(const std::string& key) { return data_.erase(key) != 0; }
  const std::map<std::string, std::pair<std::string, std::uint64_t>>& data() const { return data_; }
  std::size_t size() const { return data_.size(); }

  /// The live keys and values in the order of their last write (a store's log order).
  std::vector<std::pair<std::string, std::string>> in_log_order() const {
    std::vector<std::pair<std::uint64_t, const std::string*>> order;
    for (const auto& [k, v] : data_)
      order.emplace_back(v.second, &k);
    std::sort(order.begin(), order.end());
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [seq, k] : order)
      out.emplace_back(*k, data_.at(*k).first);
    return out;
  }

 private:
  std::map<std::string, std::pair<std::string, std::uint64_t>> data_;
  std::uint64_t clock_ = 0;
};

/// Every (key, value) for_each visits, in its order.
inline std::vector<std::pair<std::string, std::string>> visit_all(const ccf::kv::store& s) {
  std::vector<std::pair<std::string, std::string>> seen;
  s.for_each([&](std::string_view k, std::string_view v) { seen.emplace_back(k, v); });
  return seen;
}

/// Checks that `s` holds exactly what `m` says: every key's value, absent keys in `absent`,
/// size(), and for_each (each live key once, in the order of its last write).
inline void expect_matches(const ccf::kv::store& s, const store_model& m,
                           const std::vector<std::string>& absent, const std::string& phase) {
  SCOPED_TRACE(phase);
  ASSERT_EQ(s.size(), m.size());
  std::size_t wrong = 0;
  std::string buffer;
  for (const auto& [k, v] : m.data()) {
    if (!s.get(k, buffer) || buffer != v.first) ++wrong;
  }
  EXPECT_EQ(wrong, 0u) << "keys with a wrong or missing value";
  std::size_t ghosts = 0;
  for (const std::string& k : absent) {
    if (m.data().count(k) == 0 && s.contains(k)) ++ghosts;
  }
  EXPECT_EQ(ghosts, 0u) << "erased or never-written keys reported present";
  EXPECT_TRUE(visit_all(s) == m.in_log_order()) << "for_each differs from the log order";
}

}  // namespace ccf_test
