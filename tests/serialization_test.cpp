// Saving and loading filters (include/ccf/detail/serialization.hpp, canonical_table.hpp, the
// save / to_bytes / load members of every filter): round trips of the sequential, lock-based and
// lock-free filters through streams, byte buffers and non-seekable (pipe-like) streams, string
// keys, loading one kind's file into another (identical canonical bytes), and a clear
// ccf::format_error (nothing half-loaded) for every kind of bad file: bad magic, version 1 or
// other versions, another tag width, bucket size, alternate function, key type or hash, an
// inconsistent header, truncation at every length, junk after the filter, corrupted bytes
// (checksum), consistent checksums over wrong contents, and a forged header claiming a huge table,
// which must be refused without allocating it.
#include <sys/resource.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <istream>
#include <optional>
#include <span>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "ccf/config.hpp"
#include "ccf/detail/packed_tag_layout.hpp"
#include "ccf/detail/serialization.hpp"
#include "ccf/growing_cuckoo_filter.hpp"
#include "filter_types.hpp"

namespace ccf_test {
namespace {

namespace cd = ccf::detail;

/// A stream buffer like a pipe: it cannot seek (tellg() gives -1) and hands out its bytes in
/// small pieces.
class pipe_buf : public std::streambuf {
 public:
  explicit pipe_buf(std::string data, std::size_t piece = 1000)
      : data_(std::move(data)), piece_(piece) {}

 protected:
  int_type underflow() override {
    if (pos_ >= data_.size()) return traits_type::eof();
    const std::size_t n = std::min(piece_, data_.size() - pos_);
    char* p = data_.data() + pos_;
    setg(p, p, p + n);
    pos_ += n;
    return traits_type::to_int_type(*p);
  }

 private:
  std::string data_;
  std::size_t piece_;
  std::size_t pos_ = 0;
};

enum class from { stream, buffer, pipe };
constexpr from all_sources[] = {from::stream, from::buffer, from::pipe};

const char* name_of(from s) {
  return s == from::stream ? "seekable stream" : (s == from::buffer ? "byte buffer" : "pipe");
}

std::span<const std::byte> as_span(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}
std::string as_string(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

template <class F>
std::string saved(const F& f) {
  std::ostringstream out(std::ios::binary);
  f.save(out);
  return out.str();
}

/// Loads an F from `bytes` through `src` and runs body(filter). (Lock-free filters cannot be
/// returned by value.)
template <class F, class Body>
void load_and(const std::string& bytes, from src, Body&& body) {
  if (src == from::stream) {
    std::istringstream in(bytes, std::ios::binary);
    F g(in);
    body(g);
  } else if (src == from::buffer) {
    F g(as_span(bytes));
    body(g);
  } else {
    pipe_buf buf(bytes);
    std::istream in(&buf);
    F g(in);
    body(g);
  }
}

/// Whether `message` contains one of the '|'-separated alternatives in `what`.
bool mentions(const std::string& message, const std::string& what) {
  for (std::size_t from = 0;;) {
    const std::size_t bar = what.find('|', from);
    if (message.find(what.substr(from, bar - from)) != std::string::npos) return true;
    if (bar == std::string::npos) return false;
    from = bar + 1;
  }
}

/// Every source must refuse `bytes` with a ccf::format_error whose message contains `what` (or
/// one of its '|'-separated alternatives).
template <class F>
void expect_format_error(const std::string& bytes, const std::string& what) {
  for (from src : all_sources) {
    try {
      load_and<F>(bytes, src, [](F&) {});
      ADD_FAILURE() << "loaded a bad file from a " << name_of(src) << "; expected an error "
                    << "mentioning '" << what << "'";
    } catch (const ccf::format_error& e) {
      EXPECT_TRUE(mentions(e.what(), what)) << name_of(src) << ": " << e.what();
    }
  }
}

/// The file with its checksum recomputed (XXH3-64 of everything before it).
std::string resealed(std::string bytes) {
  const std::uint64_t sum = XXH3_64bits(bytes.data(), bytes.size() - 8);
  cd::put_le(reinterpret_cast<unsigned char*>(bytes.data() + bytes.size() - 8), sum, 8);
  return bytes;
}

void put_field(std::string& bytes, std::size_t offset, std::uint64_t v, int width) {
  cd::put_le(reinterpret_cast<unsigned char*>(bytes.data() + offset), v, width);
}
std::uint64_t get_field(const std::string& bytes, std::size_t offset, int width) {
  return cd::get_le(reinterpret_cast<const unsigned char*>(bytes.data() + offset), width);
}

// ---------------------------------------------------------------------------------------------
// Round trips

template <class From, class To>
void round_trip(std::size_t capacity = 20000, double fill = 0.95) {
  SCOPED_TRACE(testing::Message() << "capacity " << capacity);
  From f(capacity, 77);
  const auto keys = make_keys(static_cast<std::size_t>(static_cast<double>(capacity) * fill), 3);
  ASSERT_EQ(f.insert_many(std::span<const u64>(keys)), keys.size());
  ASSERT_TRUE(f.erase(keys[0]));
  const std::string file = saved(f);
  ASSERT_EQ(as_string(f.to_bytes()), file) << "save() and to_bytes() write the same bytes";
  const auto probes = make_keys(20000, 9);
  std::vector<bool> fp;
  for (u64 k : probes)
    fp.push_back(f.contains(k));
  for (from src : all_sources) {
    SCOPED_TRACE(name_of(src));
    load_and<To>(file, src, [&](To& g) {
      EXPECT_EQ(g.size(), f.size());
      EXPECT_EQ(g.num_buckets(), f.num_buckets());
      EXPECT_EQ(g.chunks(), f.chunks());
      EXPECT_EQ(g.capacity(), f.capacity());
      EXPECT_EQ(g.max_kicks(), f.max_kicks());
      EXPECT_EQ(g.seed(), 77u);
      EXPECT_EQ(g.size_in_bytes(), To(capacity, 77).size_in_bytes());
      EXPECT_EQ(g.contains(keys[0]), f.contains(keys[0]));
      for (std::size_t i = 1; i < keys.size(); ++i)
        ASSERT_TRUE(g.contains(keys[i])) << i;
      // Same false positives too: the tables hold the same tags.
      for (std::size_t i = 0; i < probes.size(); ++i)
        ASSERT_EQ(g.contains(probes[i]), fp[i]);
      // The canonical form is the same whatever the kind: saving again gives the same bytes.
      EXPECT_EQ(as_string(g.to_bytes()), file);
      // The loaded filter is fully usable.
      ASSERT_TRUE(g.insert(keys[0]));
      EXPECT_TRUE(g.contains(keys[0]));
      EXPECT_EQ(g.size(), keys.size());
      EXPECT_EQ(g.contains_many(std::span<const u64>(keys)), keys.size());
    });
  }
}

template <unsigned B, unsigned S>
using seq = ccf::cuckoo_filter<u64, B, S>;
template <unsigned B, unsigned S>
using conc = ccf::concurrent_cuckoo_filter<u64, B, S>;
template <unsigned B, unsigned S>
using lockfree = ccf::lockfree_cuckoo_filter<u64, B, S>;
using seq_global = ccf::cuckoo_filter<u64, 12, 4, ccf::hash<u64>, ccf::global_alternate>;
using lf_global = ccf::lockfree_cuckoo_filter<u64, 12, 4, ccf::hash<u64>, ccf::global_alternate>;

TEST(serialization, round_trips_of_every_layout) {
  round_trip<seq<16, 4>, seq<16, 4>>();
  round_trip<seq<12, 4>, seq<12, 4>>();
  round_trip<seq<4, 8>, seq<4, 8>>();
  round_trip<seq<8, 2>, seq<8, 2>>();
  round_trip<seq<32, 2>, seq<32, 2>>();
  round_trip<seq<16, 8>, seq<16, 8>>();
  round_trip<seq_global, seq_global>();
}

TEST(serialization, round_trips_of_the_concurrent_filters) {
  round_trip<conc<16, 4>, conc<16, 4>>();
  round_trip<seq<12, 8>, conc<12, 8>>();
  round_trip<conc<16, 4>, seq<16, 4>>();
  using global_locked =
      ccf::concurrent_cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::global_locking>;
  round_trip<global_locked, conc<16, 4>>();
  round_trip<lockfree<12, 4>, lockfree<12, 4>>();
  round_trip<lockfree<8, 4>, lockfree<8, 4>>();
  round_trip<lockfree<16, 2>, lockfree<16, 2>>();
  round_trip<lf_global, lf_global>();
}

TEST(serialization, files_load_across_filter_kinds) {
  round_trip<seq<12, 4>, lockfree<12, 4>>();
  round_trip<lockfree<12, 4>, seq<12, 4>>();
  round_trip<lockfree<12, 4>, conc<12, 4>>();
  round_trip<conc<12, 4>, lockfree<12, 4>>();
  round_trip<seq<8, 4>, lockfree<8, 4>>();
  round_trip<lockfree<8, 4>, seq<8, 4>>();
  round_trip<lockfree<8, 4>, conc<8, 4>>();
  round_trip<conc<8, 4>, lockfree<8, 4>>();
  round_trip<seq_global, lf_global>();
  round_trip<lf_global, seq_global>();
}

TEST(serialization, many_chunk_tables_round_trip) {
  const std::size_t capacity = ccf::chunked_alternate::max_chunk_buckets(4) * 6;
  EXPECT_GT((seq<16, 4>(capacity).chunks()), 1u);
  EXPECT_GT((lockfree<12, 4>(capacity).chunks()), 1u);
  round_trip<seq<16, 4>, conc<16, 4>>(capacity, 0.2);
  round_trip<lockfree<12, 4>, seq<12, 4>>(capacity, 0.2);
}

// to_bytes() sizes its vector from the header at once: the file in one block of its size (it grew
// the vector as it wrote, so a large filter's bytes took up to twice their size, and copies).
TEST(serialization, to_bytes_allocates_the_file_once) {
  const auto exact = [](const std::vector<std::byte>& b) {
    EXPECT_EQ(b.capacity(), b.size());
    EXPECT_GT(b.size(), 3u * 8192) << "a file of several writer buffers";
  };
  seq<16, 4> s(100000);
  conc<12, 4> c(100000);
  lockfree<12, 4> l(100000);
  ccf::growing_cuckoo_filter<u64> small(1000, 1e-3), large(200000, 1e-3);
  for (u64 k = 0; k < 50000; ++k) {
    s.insert(k);
    c.insert(k);
    l.insert(k);
    small.insert(k);  // doubles while it keeps its items' hashes, which its file holds
    large.insert(k);
  }
  exact(s.to_bytes());
  exact(c.to_bytes());
  exact(l.to_bytes());
  exact(small.to_bytes());
  exact(large.to_bytes());
}

TEST(serialization, string_keys) {
  ccf::cuckoo_filter<std::string> f(1000);
  ccf::lockfree_cuckoo_filter<std::string> l(1000);
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(f.insert("key " + std::to_string(i)));
    ASSERT_TRUE(l.insert("key " + std::to_string(i)));
  }
  for (from src : all_sources) {
    load_and<ccf::cuckoo_filter<std::string>>(saved(f), src, [&](auto& g) {
      EXPECT_EQ(g.size(), 500u);
      for (int i = 0; i < 500; ++i)
        ASSERT_TRUE(g.contains("key " + std::to_string(i)));
    });
    load_and<ccf::concurrent_cuckoo_filter<std::string, 12, 4>>(saved(l), src, [&](auto& g) {
      EXPECT_EQ(g.size(), 500u);
      for (int i = 0; i < 500; ++i)
        ASSERT_TRUE(g.contains("key " + std::to_string(i)));
    });
  }
  // Another key type hashes differently: refused both ways.
  expect_format_error<ccf::cuckoo_filter<u64>>(saved(f), "another key type or hash");
  expect_format_error<ccf::cuckoo_filter<std::string>>(saved(seq<16, 4>(1000)), "hash");
  expect_format_error<lockfree<12, 4>>(saved(l), "hash");
}

TEST(serialization, saving_to_a_failed_stream_throws) {
  seq<16, 4> f(1000);
  lockfree<12, 4> l(1000);
  std::ostringstream out(std::ios::binary);
  out.setstate(std::ios::badbit);
  EXPECT_THROW(f.save(out), std::runtime_error);
  EXPECT_THROW(l.save(out), std::runtime_error);
  EXPECT_TRUE(l.insert(1)) << "a failed save must not leave the table sealed";
  EXPECT_EQ(l.size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Bad files

struct other_hash {
  std::uint64_t operator()(u64 key, std::uint64_t seed) const noexcept {
    return ccf::mix64(key + seed + 1);
  }
};

TEST(serialization, files_of_another_filter_type_are_refused) {
  seq<16, 4> f(5000, 5);
  for (u64 i = 0; i < 4000; ++i)
    ASSERT_TRUE(f.insert(key_of(i)));
  const std::string good = saved(f);
  expect_format_error<seq<12, 4>>(good, "16-bit tags");
  expect_format_error<seq<16, 8>>(good, "4-slot");
  expect_format_error<lockfree<12, 4>>(good, "16-bit tags");
  expect_format_error<conc<16, 2>>(good, "4-slot");
  expect_format_error<ccf::cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::global_alternate>>(
      good, "alternate");
  expect_format_error<ccf::cuckoo_filter<u64, 16, 4, other_hash>>(good, "hash function");
  // Global files do not load into chunked filters either, whatever the kind.
  seq_global g(5000);
  ASSERT_TRUE(g.insert(1));
  expect_format_error<seq<12, 4>>(saved(g), "alternate");
  expect_format_error<lockfree<12, 4>>(saved(g), "alternate");
  lf_global lg(5000);
  expect_format_error<conc<12, 4>>(saved(lg), "alternate");
  round_trip<lf_global, ccf::concurrent_cuckoo_filter<u64, 12, 4, ccf::hash<u64>,
                                                      ccf::striped_locking, ccf::global_alternate>>(
      5000);
}

TEST(serialization, files_of_a_narrow_signed_key_type_do_not_load_into_a_wider_one) {
  // ccf::hash zero-extends a narrow signed key, so an int32_t file's -7 is not an int64_t
  // filter's -7: loaded into one, the file answered "absent" for every negative key.
  using i32 = ccf::cuckoo_filter<std::int32_t>;
  using i64 = ccf::cuckoo_filter<std::int64_t>;
  i32 f(1000, 9);
  for (std::int32_t k = -50; k < 50; ++k)
    ASSERT_TRUE(f.insert(k));
  const std::string file = saved(f);
  expect_format_error<i64>(file, "key type");
  expect_format_error<ccf::cuckoo_filter<std::int16_t>>(file, "key type");
  expect_format_error<ccf::growing_cuckoo_filter<std::int64_t>>(
      saved(ccf::growing_cuckoo_filter<std::int32_t>(1000, 1e-3)), "key type");
  auto holds_all = [](const i32& g) {
    for (std::int32_t k = -50; k < 50; ++k)
      EXPECT_TRUE(g.contains(k)) << k;
  };
  load_and<i32>(file, from::buffer, holds_all);
  // A file written before the negative probe (its probe that of the positive key alone, as a
  // wider type's is) still loads into its own type.
  std::string older = file;
  put_field(older, 64, get_field(saved(i64(1000, 9)), 64, 8), 8);
  ASSERT_NE(older, file);
  load_and<i32>(resealed(older), from::buffer, holds_all);
}

TEST(serialization, a_load_leaves_the_stream_s_exception_mask_as_it_was) {
  // The mask lost the bits the load's end had set in the stream's state (failbit, eofbit).
  const auto mask = std::ios::failbit | std::ios::badbit;
  std::istringstream junk("not a filter");
  junk.exceptions(mask);
  EXPECT_THROW((seq<16, 4>{junk}), ccf::format_error);
  EXPECT_EQ(junk.exceptions(), mask);
  seq<16, 4> f(1000);
  ASSERT_TRUE(f.insert(1));
  pipe_buf buf(saved(f));
  std::istream in(&buf);
  in.exceptions(mask);
  const seq<16, 4> g(in);
  EXPECT_TRUE(g.contains(1));
  EXPECT_EQ(in.exceptions(), mask);
}

TEST(serialization, bad_headers_are_refused_with_a_reason) {
  using F = seq<16, 4>;
  F f(5000, 5);
  for (u64 i = 0; i < 4000; ++i)
    ASSERT_TRUE(f.insert(key_of(i)));
  const std::string good = saved(f);
  ASSERT_EQ(get_field(good, 24, 8), f.num_buckets());
  ASSERT_EQ(get_field(good, 72, 8), f.chunks());
  ASSERT_EQ(good.size(), 80 + get_field(good, 56, 8) * 8 + 16);
  auto with = [&](std::size_t offset, std::uint64_t v, int width) {
    std::string bad = good;
    put_field(bad, offset, v, width);
    return bad;
  };
  std::string bad = good;
  bad[0] = 'X';
  expect_format_error<F>(bad, "magic");
  expect_format_error<F>(with(8, 1, 4), "version 1");
  expect_format_error<F>(with(8, 1, 4), "rebuild");
  expect_format_error<F>(with(8, 3, 4), "version 3");
  // Other bits or slots with this table's word count: a corrupt header (a real file of another
  // layout is refused for its layout: files_of_another_filter_type_are_refused above).
  expect_format_error<F>(with(12, 12, 4), "does not match 1352 buckets of 4 12-bit slots");
  expect_format_error<F>(with(16, 8, 4), "does not match 1352 buckets of 8 16-bit slots");
  expect_format_error<F>(with(20, 1, 4), "alternate");
  expect_format_error<F>(with(20, 3, 4), "alternate");  // a growing filter's file
  expect_format_error<F>(with(20, 4, 4), "do not fit together");
  expect_format_error<F>(with(24, 0, 8), "do not fit together");
  expect_format_error<F>(with(24, f.num_buckets() + 1, 8), "does not match");
  expect_format_error<F>(with(24, std::uint64_t{1} << 55, 8), "do not fit together");
  expect_format_error<F>(with(32, 6, 8), "hash");  // another seed: another hash function
  expect_format_error<F>(with(40, 501, 8), "checksum");
  expect_format_error<F>(with(48, 0, 8), "do not fit together");
  expect_format_error<F>(with(48, 5001, 8), "checksum");
  const std::uint64_t words = get_field(good, 56, 8);
  // A word count one off is a corrupt header, refused as such before the size is checked.
  expect_format_error<F>(with(56, words + 1, 8), "does not match");
  expect_format_error<F>(with(56, words - 1, 8), "does not match");
  // A word count that matches the bytes present but not the bucket count.
  expect_format_error<F>(with(56, words + 1, 8) + std::string(8, '\0'), "does not match");
  expect_format_error<F>(with(64, get_field(good, 64, 8) ^ 1, 8), "hash");
  expect_format_error<F>(with(72, 0, 8), "do not fit together");
  expect_format_error<F>(with(72, f.num_buckets() + 1, 8), "do not fit together");
}

TEST(serialization, truncated_files_are_refused_at_every_length) {
  seq<16, 4> f(50, 1);
  lockfree<12, 4> l(50, 1);
  for (u64 i = 0; i < 40; ++i) {
    ASSERT_TRUE(f.insert(key_of(i)));
    ASSERT_TRUE(l.insert(key_of(i)));
  }
  const std::string good = saved(f), good_lf = saved(l);
  ASSERT_LT(good.size(), 1000u);
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    SCOPED_TRACE(testing::Message() << "cut at " << cut << " of " << good.size());
    expect_format_error<seq<16, 4>>(good.substr(0, cut), "truncated");
  }
  for (std::size_t cut = 0; cut < good_lf.size(); ++cut) {
    SCOPED_TRACE(testing::Message() << "cut at " << cut << " of " << good_lf.size());
    expect_format_error<lockfree<12, 4>>(good_lf.substr(0, cut), "truncated");
    expect_format_error<seq<12, 4>>(good_lf.substr(0, cut), "truncated");
  }
}

TEST(serialization, junk_after_the_filter_is_refused) {
  seq<16, 4> f(1000);
  lockfree<12, 4> l(1000);
  ASSERT_TRUE(f.insert(1));
  ASSERT_TRUE(l.insert(1));
  expect_format_error<seq<16, 4>>(saved(f) + '\0', "junk");
  expect_format_error<seq<16, 4>>(saved(f) + 'x', "junk");
  expect_format_error<seq<16, 4>>(saved(f) + saved(f), "junk");
  // How many bytes follow where the length is known; from a pipe, read one byte past the end,
  // only that more follow (it said "1 bytes past its end" of four).
  for (from src : all_sources) {
    try {
      load_and<seq<16, 4>>(saved(f) + "junk", src, [](seq<16, 4>&) {});
      ADD_FAILURE() << "junk after the filter was accepted from a " << name_of(src);
    } catch (const ccf::format_error& e) {
      EXPECT_TRUE(mentions(
          e.what(), src == from::pipe ? "more bytes follow its end" : "(4 bytes past its end)"))
          << name_of(src) << ": " << e.what();
    }
  }
  expect_format_error<lockfree<12, 4>>(saved(l) + '\0', "junk");
  std::vector<std::byte> bytes = l.to_bytes();
  bytes.push_back(std::byte{0});
  using lf12 = lockfree<12, 4>;
  EXPECT_THROW(lf12 g{std::span<const std::byte>(bytes)}, ccf::format_error);
}

TEST(serialization, corrupted_bytes_are_refused) {
  using F = seq<12, 4>;
  F f(300, 2);
  for (u64 i = 0; i < 250; ++i)
    ASSERT_TRUE(f.insert(key_of(i)));
  const std::string good = saved(f);
  const std::size_t bucket_bytes = f.num_buckets() * 48 / 8;  // whole bytes of bucket bits
  for (std::size_t p = 0; p < good.size(); ++p) {
    for (unsigned char flip : {0x01, 0x80}) {
      std::string bad = good;
      bad[p] = static_cast<char>(bad[p] ^ flip);
      const bool checksum = (p >= 80 && p < 80 + bucket_bytes) || p >= good.size() - 16;
      for (from src : {from::buffer, from::pipe}) {
        try {
          load_and<F>(bad, src, [](F&) {});
          ADD_FAILURE() << "byte " << p << " ^ " << int{flip} << " was not noticed";
        } catch (const ccf::format_error& e) {
          if (checksum) {
            ASSERT_NE(std::string(e.what()).find("checksum"), std::string::npos)
                << "byte " << p << ": " << e.what();
          }
        }
      }
      if (checksum && p % 7 == 0) expect_format_error<lockfree<12, 4>>(bad, "checksum");
    }
  }
}

/// Loading F refuses versions of `good` (saved from `f`, 12-bit x 4) whose checksum is right but
/// whose contents are not.
template <class F>
void refuse_wrong_contents(const std::string& good, const seq<12, 4>& f) {
  const std::size_t items_at = good.size() - 16;
  std::string bad = good;
  put_field(bad, items_at, 2001, 8);
  expect_format_error<F>(resealed(bad), "2001 items");
  put_field(bad, items_at, 1999, 8);
  expect_format_error<F>(resealed(bad), "items");
  // A tag written into an empty slot: the table holds one more tag than the count says.
  bad = good;
  std::size_t empty = 0;
  while (f.read_tag(empty / 4, empty % 4) != 0)
    ++empty;
  const std::size_t bit = empty * 12;
  bad[80 + bit / 8] = static_cast<char>(bad[80 + bit / 8] | (1 << (bit % 8)));
  expect_format_error<F>(resealed(bad), "items");
  // Bits past the last bucket: in the last bucket's word, and in the spare word.
  const std::size_t used = f.num_buckets() * 48;
  ASSERT_NE(used % 64, 0u);
  bad = good;
  bad[80 + used / 8 + 1] = static_cast<char>(bad[80 + used / 8 + 1] | 0x40);
  expect_format_error<F>(resealed(bad), "past the last bucket");
  bad = good;
  bad[items_at - 1] = 1;  // the spare word's top byte
  expect_format_error<F>(resealed(bad), "past the last bucket");
}

// Files whose checksum is right but whose contents are not.
TEST(serialization, consistent_checksum_but_wrong_contents_is_refused) {
  // A table whose last bucket ends inside a word, so that there are spare bits in that word.
  std::size_t capacity = 3000;
  while (seq<12, 4>(capacity).num_buckets() * 48 % 64 == 0)
    ++capacity;
  seq<12, 4> f(capacity);
  for (u64 i = 0; i < 2000; ++i)
    ASSERT_TRUE(f.insert(key_of(i)));
  const std::string good = saved(f);
  ASSERT_EQ(resealed(good), good) << "the checksum is XXH3-64 of everything before it";

  // Read the file with the format's reader and write it back with its writer: same bytes.
  cd::filter_source src(as_span(good));
  const cd::file_header h = src.header;
  cd::word_reader reader(src.body(), h);
  std::vector<u64> words(h.word_count);
  for (auto& w : words)
    w = reader();
  ASSERT_EQ(reader.finish(), 2000u);
  std::vector<std::byte> again;
  cd::word_writer writer(cd::buffer_out{&again}, h);
  for (u64 w : words)
    writer(w);
  writer.finish(2000);
  ASSERT_EQ(as_string(again), good);

  refuse_wrong_contents<seq<12, 4>>(good, f);
  refuse_wrong_contents<lockfree<12, 4>>(good, f);
}

// ---------------------------------------------------------------------------------------------
// Huge claims, pipes

#if defined(__SANITIZE_ADDRESS__)
constexpr bool sanitized_by_asan = true;
#else
constexpr bool sanitized_by_asan = false;
#endif

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;  // KiB on Linux
}

/// An 80-byte file whose header claims 10^9 buckets (8 GB of table) for filter type F.
template <class F>
std::string forged_huge_header() {
  F f(1000);
  const std::string good = saved(f);
  cd::header_bytes raw{};
  std::memcpy(raw.data(), good.data(), raw.size());
  cd::file_header h = cd::decode_header(raw);
  h.num_buckets = 1000000000;
  h.chunks = 15625;  // chunks of 64,000 buckets
  h.capacity = 3700000000;
  h.word_count =
      cd::packed_tag_layout<F::fingerprint_bits, F::slots_per_bucket>::words_for(h.num_buckets);
  const cd::header_bytes forged = cd::encode_header(h);
  return std::string(reinterpret_cast<const char*>(forged.data()), forged.size());
}

TEST(serialization, a_forged_huge_header_is_refused_without_allocating_the_table) {
  const std::string huge16 = forged_huge_header<seq<16, 4>>();
  const std::string huge12 = forged_huge_header<lockfree<12, 4>>();
  ASSERT_EQ(huge16.size(), 80u);
  const long before = peak_rss_kib();
  expect_format_error<seq<16, 4>>(huge16, "truncated");
  expect_format_error<conc<16, 4>>(huge16, "truncated");
  expect_format_error<lockfree<12, 4>>(huge12, "truncated");
  expect_format_error<seq<12, 4>>(huge12, "truncated");
  // With a megabyte of the claimed payload present.
  expect_format_error<seq<16, 4>>(huge16 + std::string(1 << 20, '\0'), "truncated");
  expect_format_error<lockfree<12, 4>>(huge12 + std::string(1 << 20, '\0'), "truncated");
  const long grown_kib = peak_rss_kib() - before;
  // The pipe reader's 16 MiB read piece is allowed; sanitizers add shadow memory for it.
  constexpr long limit_mib = CCF_TSAN || sanitized_by_asan ? 512 : 64;
  // Peak RSS, not wall time, is the check: allocating the claimed table would add gigabytes.
  EXPECT_LT(grown_kib, limit_mib * 1024) << "peak RSS grew by " << grown_kib << " KiB";
}

/// An endless stream: `head`, then zeros, counting the bytes handed out (at most 256 MiB).
class endless_buf : public std::streambuf {
 public:
  explicit endless_buf(std::string head) : head_(std::move(head)), zeros_(1 << 16, '\0') {}
  std::size_t handed_out = 0;

 protected:
  int_type underflow() override {
    if (handed_out >= (std::size_t{256} << 20)) return traits_type::eof();
    std::string& piece = handed_out < head_.size() ? head_ : zeros_;
    setg(piece.data(), piece.data(), piece.data() + piece.size());
    handed_out += piece.size();
    return traits_type::to_int_type(piece[0]);
  }

 private:
  std::string head_, zeros_;
};

TEST(serialization, a_header_claiming_more_words_than_its_buckets_hold_is_refused_unread) {
  // 10 buckets claiming 2^40 words, then zeros from a pipe: the loader read the whole pipe (2 GB
  // of memory for 2 GB of input) before looking at the word count.
  seq<16, 4> f(30, 3);
  std::string head = saved(f).substr(0, cd::file_header_bytes);
  for (int i = 0; i < 8; ++i)
    head[56 + i] = static_cast<char>(i == 5 ? 1 : 0);  // word count 2^40, little-endian
  endless_buf buf(head);
  std::istream in(&buf);
  try {
    const seq<16, 4> g(in);
    ADD_FAILURE() << "a header claiming 2^40 words for " << f.num_buckets() << " buckets loaded";
  } catch (const ccf::format_error& e) {
    EXPECT_NE(std::string(e.what()).find("word count"), std::string::npos) << e.what();
  }
  EXPECT_LE(buf.handed_out, std::size_t{1} << 20) << "read before the header was checked";
}

TEST(serialization, a_piped_file_of_another_layout_is_refused_unread) {
  // A 12-bit file of 2^22 buckets into a 16-bit filter: the loader read the whole body from the
  // pipe before it compared the layouts.
  const std::string head = forged_huge_header<seq<12, 4>>();
  endless_buf buf(head);
  std::istream in(&buf);
  try {
    const seq<16, 4> g(in);
    ADD_FAILURE() << "a 12-bit file loaded into a 16-bit filter";
  } catch (const ccf::format_error& e) {
    EXPECT_NE(std::string(e.what()).find("12-bit tags"), std::string::npos) << e.what();
  }
  EXPECT_LE(buf.handed_out, std::size_t{1} << 20) << "read before the header was checked";
}

TEST(serialization, a_piped_header_claiming_more_than_the_memory_is_refused_unread) {
  // A header of the right type claiming 2^49 buckets (4 PiB): from a pipe the loader read (and
  // kept) everything the pipe held, up to the claim, before finding it truncated.
  seq<16, 4> f(1000);
  cd::header_bytes raw{};
  std::memcpy(raw.data(), saved(f).data(), raw.size());
  cd::file_header h = cd::decode_header(raw);
  h.num_buckets = std::uint64_t{1} << 49;
  h.chunks = h.num_buckets >> 15;
  h.capacity = h.num_buckets;
  h.word_count = cd::packed_tag_layout<16, 4>::words_for(h.num_buckets);
  const cd::header_bytes forged = cd::encode_header(h);
  endless_buf buf(std::string(reinterpret_cast<const char*>(forged.data()), forged.size()));
  std::istream in(&buf);
  try {
    const seq<16, 4> g(in);
    ADD_FAILURE() << "a 4 PiB header loaded";
  } catch (const ccf::format_error& e) {  // as from a file, which would be "truncated"
    EXPECT_NE(std::string(e.what()).find("memory"), std::string::npos) << e.what();
  }
  EXPECT_LE(buf.handed_out, std::size_t{1} << 20) << "read before the claim was checked";
}

// A growing filter's file whose table is full of entries with no fingerprint bits left (what
// splits copy into both halves) and whose item count is 0 loaded; then each insert doubled the
// table (14 inserts took it from 0.4 MB to 6 GiB), and an erase made size() 2^64 - 1.
TEST(serialization, a_growing_file_full_of_uncounted_entries_does_not_double_on_each_insert) {
  using G = ccf::growing_cuckoo_filter<std::uint64_t>;
  const G f(200000, 0.05);
  ASSERT_EQ(f.fingerprint_bits(), 12u);
  ASSERT_GT(f.chunks(), 1u);  // split: no kept hashes to rebuild from
  std::string bytes = as_string(f.to_bytes());
  const unsigned width = 12;
  const std::size_t table_at = 80 + 5 * 8;  // the header, then the five prefix words
  for (std::size_t slot = 0; slot < f.num_buckets() * 4; ++slot) {
    if (slot % 25 == 0) continue;  // 96 % of the slots
    // An 8-bit anchor, then the marker bit right after the L = 0 fingerprint bits left.
    const std::uint64_t entry = (std::uint64_t{1} << (width - 1)) | ((slot * 37) & 255);
    for (unsigned bit = 0; bit < width; ++bit) {
      const std::size_t at = slot * width + bit;
      if ((entry >> bit) & 1) bytes[table_at + at / 8] |= static_cast<char>(1 << (at % 8));
    }
  }
  G g(as_span(resealed(bytes)));
  ASSERT_EQ(g.size(), 0u);
  std::uint64_t erased = 0;
  for (std::uint64_t k = 1000; k < 101000 && erased == 0; ++k)
    erased = g.erase(k) ? k : 0;
  ASSERT_NE(erased, 0u) << "no key matched an entry";
  EXPECT_EQ(g.size(), 0u);
  const std::size_t table = g.size_in_bytes();
  std::size_t inserted = 0;
  for (std::uint64_t k = 1; k <= 64; ++k) {
    if (!g.insert(k)) continue;
    ++inserted;
    EXPECT_TRUE(g.contains(k)) << k;
  }
  EXPECT_GT(inserted, 0u);
  EXPECT_EQ(g.size(), inserted);
  EXPECT_LE(g.size_in_bytes(), 2 * table) << g.doublings() << " doublings";
}

// A growing filter's file with bits set past its last bucket loaded, and saved them back; a
// static filter's was refused (the format says they are zero).
TEST(serialization, a_growing_file_with_bits_past_the_last_bucket_is_refused) {
  using G = ccf::growing_cuckoo_filter<std::uint64_t>;
  for (std::size_t capacity : {std::size_t{1000}, std::size_t{200000}}) {  // kept hashes, split
    G f(capacity, 0.05);
    for (std::uint64_t k = 0; k < capacity / 2; ++k)
      ASSERT_TRUE(f.insert(k));
    const std::string good = as_string(f.to_bytes());
    const std::size_t used = f.num_buckets() * 4 * f.fingerprint_bits();
    ASSERT_EQ(used % 64, 0u);  // the buckets end a word: the spare word follows
    const std::size_t spare_at = 80 + 5 * 8 + used / 8;
    ASSERT_EQ(get_field(good, spare_at, 8), 0u);
    std::string bad = good;
    put_field(bad, spare_at, 0xdeadbeefcafef00d, 8);
    EXPECT_THROW(G(as_span(resealed(bad))), ccf::format_error) << capacity;
    EXPECT_EQ(as_string(G(as_span(good)).to_bytes()), good);
  }
}

TEST(serialization, a_capacity_beyond_the_slots_is_refused) {
  // The capacity field was only reported: a file claiming 2^63 items for 1,000 loaded, and its
  // design rate said 1.
  seq<16, 4> f(1000);
  for (u64 i = 0; i < 100; ++i)
    ASSERT_TRUE(f.insert(key_of(i)));
  std::string file = saved(f);
  cd::header_bytes raw{};
  std::memcpy(raw.data(), file.data(), raw.size());
  cd::file_header h = cd::decode_header(raw);
  h.capacity = h.num_buckets * 4 + 1;
  const cd::header_bytes forged = cd::encode_header(h);
  file.replace(0, forged.size(), reinterpret_cast<const char*>(forged.data()), forged.size());
  expect_format_error<seq<16, 4>>(resealed(file), "capacity");
  h.capacity = h.num_buckets * 4;  // the most a table of these buckets holds
  const cd::header_bytes full = cd::encode_header(h);
  file.replace(0, full.size(), reinterpret_cast<const char*>(full.data()), full.size());
  const std::string ok = resealed(file);
  const seq<16, 4> g(as_span(ok));
  EXPECT_EQ(g.capacity(), h.num_buckets * 4);
}

TEST(serialization, non_seekable_streams_load_and_refuse_junk) {
  {
    pipe_buf buf("0123");
    std::istream in(&buf);
    ASSERT_EQ(in.tellg(), std::istream::pos_type(-1)) << "the test stream must not seek";
  }
  // Larger than one 16 MiB read piece of the loader.
  seq<16, 4> f(9000000, 3);
  const auto keys = make_keys(1000, 5);
  ASSERT_EQ(f.insert_many(std::span<const u64>(keys)), keys.size());
  const std::string file = saved(f);
  ASSERT_GT(file.size(), std::size_t{17} << 20);
  {
    pipe_buf buf(file, 1 << 16);
    std::istream in(&buf);
    const conc<16, 4> g(in);
    EXPECT_EQ(g.size(), keys.size());
    EXPECT_EQ(g.contains_many(std::span<const u64>(keys)), keys.size());
    EXPECT_EQ(as_string(g.to_bytes()), file);
  }
  for (const std::string& tail : {std::string(1, '\0'), std::string(5000, 'j')}) {
    pipe_buf buf(file + tail, 1 << 16);
    std::istream in(&buf);
    try {
      const seq<16, 4> g(in);
      ADD_FAILURE() << "junk after the filter was accepted";
    } catch (const ccf::format_error& e) {
      EXPECT_NE(std::string(e.what()).find("junk"), std::string::npos) << e.what();
    }
  }
  pipe_buf buf(file.substr(0, file.size() - 1), 1 << 16);
  std::istream in(&buf);
  using seq16 = seq<16, 4>;
  EXPECT_THROW(seq16 g(in), ccf::format_error);
}

}  // namespace
}  // namespace ccf_test
