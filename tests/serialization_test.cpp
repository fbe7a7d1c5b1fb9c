// Saving and loading filters: round trips across layouts and between the sequential and the
// concurrent filter, and clear errors (nothing half-loaded) for every kind of bad file.
#include <sstream>

#include "filter_types.hpp"

namespace ccf_test {
namespace {

template <class F>
std::string saved(const F& f) {
  std::ostringstream out(std::ios::binary);
  f.save(out);
  return out.str();
}

template <class F>
void expect_format_error(const std::string& bytes, const std::string& what) {
  std::istringstream in(bytes, std::ios::binary);
  try {
    F f(in);
    FAIL() << "loaded a bad file; expected an error mentioning '" << what << "'";
  } catch (const ccf::format_error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

template <class From, class To>
void round_trip() {
  From f(20000, 77);
  const auto keys = make_keys(19000, 3);
  ASSERT_EQ(f.insert_many(std::span<const u64>(keys)), keys.size());
  ASSERT_TRUE(f.erase(keys[0]));
  std::istringstream in(saved(f), std::ios::binary);
  To g(in);
  EXPECT_EQ(g.size(), f.size());
  EXPECT_EQ(g.num_buckets(), f.num_buckets());
  EXPECT_EQ(g.capacity(), f.capacity());
  EXPECT_EQ(g.seed(), 77u);
  EXPECT_EQ(g.size_in_bytes(), f.size_in_bytes());
  for (std::size_t i = 1; i < keys.size(); ++i)
    ASSERT_TRUE(g.contains(keys[i]));
  // Same false positives too: the tables are identical.
  for (u64 i = 0; i < 20000; ++i)
    ASSERT_EQ(g.contains(key_of(i, 9)), f.contains(key_of(i, 9)));
  // The loaded filter is fully usable.
  ASSERT_TRUE(g.insert(keys[0]));
  EXPECT_TRUE(g.contains(keys[0]));
}

TEST(serialization, round_trips) {
  round_trip<ccf::cuckoo_filter<u64>, ccf::cuckoo_filter<u64>>();
  round_trip<ccf::cuckoo_filter<u64, 12, 4>, ccf::cuckoo_filter<u64, 12, 4>>();
  round_trip<ccf::cuckoo_filter<u64, 4, 8>, ccf::cuckoo_filter<u64, 4, 8>>();
  round_trip<ccf::cuckoo_filter<u64, 32, 2>, ccf::cuckoo_filter<u64, 32, 2>>();
  round_trip<ccf::cuckoo_filter<u64, 12, 8>, ccf::concurrent_cuckoo_filter<u64, 12, 8>>();
  round_trip<ccf::concurrent_cuckoo_filter<u64>, ccf::cuckoo_filter<u64>>();
}

TEST(serialization, string_keys) {
  ccf::cuckoo_filter<std::string> f(1000);
  ASSERT_TRUE(f.insert("alpha"));
  std::istringstream in(saved(f), std::ios::binary);
  ccf::cuckoo_filter<std::string> g(in);
  EXPECT_TRUE(g.contains("alpha"));
  // Another key type hashes differently: refused.
  expect_format_error<ccf::cuckoo_filter<u64>>(saved(f), "hash");
}

TEST(serialization, bad_files_are_refused_with_a_reason) {
  using F = ccf::cuckoo_filter<u64, 16, 4>;
  F f(5000, 5);
  for (u64 i = 0; i < 4000; ++i)
    ASSERT_TRUE(f.insert(key_of(i)));
  const std::string good = saved(f);

  expect_format_error<F>("", "truncated");
  expect_format_error<F>(good.substr(0, 40), "truncated");
  expect_format_error<F>(good.substr(0, good.size() / 2), "truncated");
  expect_format_error<F>(good.substr(0, good.size() - 3), "truncated");
  std::string bad = good;
  bad[0] = 'X';
  expect_format_error<F>(bad, "magic");
  bad = good;
  bad[8] = 9;
  expect_format_error<F>(bad, "version");
  bad = good;
  bad[100] ^= 0x10;  // a table bit
  expect_format_error<F>(bad, "checksum");
  bad = good;
  bad[bad.size() - 1] ^= 1;  // the checksum itself
  expect_format_error<F>(bad, "checksum");
  bad = good;
  bad[24] ^= 1;  // bucket count no longer matches the word count
  expect_format_error<F>(bad, "bucket count");
  bad = good;
  bad[72] = 1;  // reserved
  expect_format_error<F>(bad, "reserved");
  expect_format_error<ccf::cuckoo_filter<u64, 12, 4>>(good, "16-bit tags");
  expect_format_error<ccf::cuckoo_filter<u64, 16, 8>>(good, "4-slot");
}

// Files with a valid checksum but inconsistent contents, written with the format's own writer.
TEST(serialization, consistent_checksum_but_wrong_contents_is_refused) {
  using F = ccf::cuckoo_filter<u64, 12, 4>;
  F f(3000);
  for (u64 i = 0; i < 2000; ++i)
    ASSERT_TRUE(f.insert(key_of(i)));
  const std::string good = saved(f);
  std::istringstream in(good, std::ios::binary);
  ccf::detail::word_reader reader(in);
  const ccf::detail::file_header h = reader.header();
  std::vector<u64> words(h.word_count);
  for (auto& w : words)
    w = reader();
  ASSERT_EQ(reader.finish(), 2000u);

  auto write = [&](const std::vector<u64>& ws, u64 items) {
    std::ostringstream out(std::ios::binary);
    ccf::detail::word_writer writer(out, h);
    for (u64 w : ws)
      writer(w);
    writer.finish(items);
    return out.str();
  };
  EXPECT_NO_THROW({
    std::istringstream again(write(words, 2000), std::ios::binary);
    F g(again);
  });
  expect_format_error<F>(write(words, 2001), "items");
  auto padded = words;
  padded.back() = 1;  // the spare word
  expect_format_error<F>(write(padded, 2000), "past the last bucket");
}

}  // namespace
}  // namespace ccf_test
