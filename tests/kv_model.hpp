// The oracle of the key-value store's crash tests (tests/kv_fault_test.cpp): what a store may hold
// after a crash, given the writes made to it and which of them returned normally.
//
// Per key it keeps the value as of the last durable point and the values written after it, each
// marked acknowledged (returned normally) or uncertain (threw, or was in flight). A durable point
// is where every acknowledged write before it is on disk: with durability::every_write each
// acknowledged write is one for its key; with group and none, a successful sync() or close().
// After a crash a key may hold its durable value or any value written after it, nothing else.
//
// With no uncertain write since the last reset, the store must also hold the state after some
// prefix of the writes (the log is replayed in order and cut at its first hole), a prefix that
// includes every write known durable.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ccf/kv/store.hpp"

namespace ccf_test {

class kv_model {
 public:
  using value = std::optional<std::string>;  // nullopt: absent

  /// A put (v) or erase (nullopt) of `key`; `acked`: it returned normally; `durable`: and it is
  /// on disk (every_write).
  void write(const std::string& key, const value& v, bool acked, bool durable) {
    key_state& k = keys_[key];
    if (acked && durable) {
      k.durable = v;
      k.later.clear();
    } else {
      k.later.emplace_back(v, acked);
    }
    if (!acked) exact_ = false;
    since_.emplace_back(key, v);
    if (acked && durable) min_prefix_ = since_.size();
  }
  /// Every acknowledged write so far is on disk.
  void durable_point() {
    for (auto& [key, k] : keys_) {
      for (std::size_t i = k.later.size(); i-- > 0;) {
        if (k.later[i].second) {
          k.durable = k.later[i].first;
          k.later.erase(k.later.begin(), k.later.begin() + static_cast<std::ptrdiff_t>(i) + 1);
          break;
        }
      }
    }
    min_prefix_ = since_.size();
  }
  /// The value a live store must show for `key` (its last write, when no write failed).
  value latest(const std::string& key) const {
    const auto it = keys_.find(key);
    if (it == keys_.end()) return std::nullopt;
    return it->second.later.empty() ? it->second.durable : it->second.later.back().first;
  }
  bool exact() const { return exact_; }

  /// Checks the reopened store `s` against the model. After a power loss (the crashed file system
  /// holds only durable bytes) what it holds becomes the model: all durable. After a process
  /// crash (the disk kept everything) the model stays: what was replayed but never synced may
  /// still go.
  void check(const ccf::kv::store& s, bool power_loss, const std::string& context) {
    std::map<std::string, std::string> seen;
    bool duplicate = false;
    s.for_each([&](std::string_view k, std::string_view v) {
      duplicate |= !seen.emplace(std::string(k), std::string(v)).second;
    });
    EXPECT_FALSE(duplicate) << context << ": for_each gave a key twice";
    EXPECT_EQ(seen.size(), s.size()) << context;
    for (const auto& [key, v] : seen) {
      EXPECT_EQ(keys_.count(key), 1u) << context << ": key '" << key << "' was never written";
      EXPECT_EQ(s.get(key), value(v))
          << context << ": get and for_each disagree on '" << key << "'";
    }
    for (const auto& [key, k] : keys_) {
      const auto it = seen.find(key);
      const value got = it == seen.end() ? value() : value(it->second);
      bool allowed = got == k.durable;
      for (const auto& [v, acked] : k.later)
        allowed |= got == v;
      EXPECT_TRUE(allowed) << context << ": key '" << key << "' holds "
                           << (got ? "'" + got->substr(0, 40) + "'" : "nothing")
                           << ", last durable value "
                           << (k.durable ? "'" + k.durable->substr(0, 40) + "'" : "nothing") << ", "
                           << k.later.size() << " later writes";
    }
    if (exact_) check_prefix(seen, context);
    if (!power_loss) return;
    for (auto& [key, k] : keys_) {
      const auto it = seen.find(key);
      k.durable = it == seen.end() ? value() : value(it->second);
      k.later.clear();
    }
    base_ = std::move(seen);
    exact_ = true;
    since_.clear();
    min_prefix_ = 0;
  }

 private:
  struct key_state {
    value durable;
    std::vector<std::pair<value, bool>> later;  // (value, acknowledged)
  };

  void check_prefix(const std::map<std::string, std::string>& seen, const std::string& context) {
    std::map<std::string, std::string> state = base_;
    bool found = false;
    for (std::size_t i = 0; i <= since_.size() && !found; ++i) {
      if (i > 0) {
        const auto& [key, v] = since_[i - 1];
        if (v) {
          state[key] = *v;
        } else {
          state.erase(key);
        }
      }
      found = i >= min_prefix_ && state == seen;
    }
    EXPECT_TRUE(found) << context << ": the store holds no prefix of the " << since_.size()
                       << " writes since the last reset (at least " << min_prefix_
                       << " of them durable)";
  }

  std::map<std::string, key_state> keys_;
  std::map<std::string, std::string> base_;  // the store at the last reset
  std::vector<std::pair<std::string, value>> since_;
  std::size_t min_prefix_ = 0;
  bool exact_ = true;
};

}  // namespace ccf_test
