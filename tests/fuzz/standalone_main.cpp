// A main() for the key-value store's fuzz target (tests/fuzz/kv_log_fuzz.cpp) without libFuzzer:
// the CTest case kv_log_fuzz_smoke. It builds a seed corpus in code — stores made with
// ccf::kv::store over tests/kv_fault_fs.hpp (empty, small, grown, compacted, with a snapshot and
// a tail after it, with a torn tail and a hole; and a forged snapshot whose table size wraps),
// their files copied out into the target's input format — feeds each seed, then a few thousand
// deterministic mutations of them (bit flips, interesting values, truncations, insertions,
// erasures, copies, snapshot header fields), half of them resealed (log header, record and
// snapshot checksums recomputed, so that the mutations reach past them).
//
//   kv_log_fuzz_smoke                        seeds and 3000 mutations (CCF_FUZZ_ITERATIONS=n,
//                                            CCF_FUZZ_SEED=s for other mutations)
//   kv_log_fuzz_smoke --write-corpus DIR     writes the seeds to DIR (a corpus for kv_log_fuzz)
//   kv_log_fuzz_smoke FILE...                runs the target on each file (reproducing a finding)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "ccf/kv/store.hpp"
#include "kv_fault_fs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace kv = ccf::kv;
namespace d = ccf::kv::detail;
using bytes = std::vector<std::uint8_t>;

/// The target's input: flags, then the log, or (flags & 1) the log's size, the log and the index.
bytes encode(unsigned flags, const std::vector<std::byte>& log,
             const std::vector<std::byte>* index) {
  bytes in{static_cast<std::uint8_t>(flags | (index != nullptr ? 1 : 0))};
  if (index != nullptr) {
    for (int i = 0; i < 4; ++i)
      in.push_back(static_cast<std::uint8_t>(log.size() >> (8 * i)));
  }
  for (const std::byte b : log)
    in.push_back(static_cast<std::uint8_t>(b));
  if (index != nullptr) {
    for (const std::byte b : *index)
      in.push_back(static_cast<std::uint8_t>(b));
  }
  return in;
}

/// Adds the seeds of the store in `fs` (log alone, log and index, with each flag).
void add_store(std::vector<bytes>& seeds, ccf_test::kv_fault_fs& fs) {
  const auto log = fs.read_file("/db/log"), index = fs.read_file("/db/index");
  seeds.push_back(encode(0, log, nullptr));
  if (!index.empty()) {
    for (const unsigned flags : {0u, 2u, 4u, 8u, 14u})
      seeds.push_back(encode(flags, log, &index));
  }
}

/// prefix + i (not "..." + std::to_string(i): GCC 12 warns, wrongly, of an overlapping copy).
std::string name(const char* prefix, long i) {
  return std::string(prefix).append(std::to_string(i));
}

kv::options seed_store_options(const std::shared_ptr<ccf_test::kv_fault_fs>& fs) {
  kv::options o;
  o.fs = fs;
  o.sync = kv::durability::none;
  o.snapshot_every_bytes = 0;
  return o;
}

std::vector<bytes> build_seeds() {
  std::vector<bytes> seeds;
  std::mt19937_64 rng(7);
  auto fresh = [] { return ccf_test::kv_fault_fs::make(); };
  {  // empty
    auto fs = fresh();
    kv::store::open("/db", seed_store_options(fs))->close();
    add_store(seeds, *fs);
  }
  {  // small: puts, overwrites, erases, values across sectors
    auto fs = fresh();
    auto s = kv::store::open("/db", seed_store_options(fs));
    for (int i = 0; i < 40; ++i)
      s->put(name("key-", i % 12), std::string(rng() % 700, char('a' + i % 26)));
    s->put("a", "1");
    s->put("b", "");
    s->erase("key-3");
    s->erase("key-5");
    s->close();
    add_store(seeds, *fs);
  }
  {  // grown: thousands of keys (the index doubled), then compacted
    auto fs = fresh();
    auto s = kv::store::open("/db", seed_store_options(fs));
    for (int i = 0; i < 3000; ++i)
      s->put(name("k", i), std::to_string(i));
    for (int i = 0; i < 3000; i += 3)
      s->erase(name("k", i));
    s->close();
    add_store(seeds, *fs);
    s = kv::store::open("/db", seed_store_options(fs));
    s->compact();
    s->close();
    add_store(seeds, *fs);
  }
  {  // a snapshot, then records after it (the process died: no snapshot at close)
    auto fs = fresh();
    auto s = kv::store::open("/db", seed_store_options(fs));
    for (int i = 0; i < 20; ++i)
      s->put(name("key-", i), name("v", i));
    s->snapshot();
    for (int i = 0; i < 10; ++i)
      s->put(name("key-", i), name("w", i));
    s->erase("key-1");
    fs->fail(ccf_test::kv_fault_fs::op_all, 1, true);
    s.reset();
    add_store(seeds, *fs);
    // ... and a power loss: unsynced writes dropped, applied or torn (holes)
    for (int i = 0; i < 4; ++i) {
      auto crashed = fs->crash(rng);
      add_store(seeds, *crashed);
    }
  }
  {  // a forged snapshot (valid checksum): 2^31 chunks of 2^31 buckets, whose word count wraps to 0
    auto fs = fresh();
    kv::store::open("/db", seed_store_options(fs))->put("a", "1");
    const auto log = fs->read_file("/db/log");
    std::vector<std::byte> ix(d::snapshot_header_size + 8);
    std::memcpy(ix.data(), d::snapshot_magic, 8);
    d::put_u32(&ix[8], 1);
    d::put_u32(&ix[12], d::kv_index::layout::slots);
    std::memcpy(&ix[16], &log[16], 16);
    d::put_u64(&ix[32], d::log_header_size);
    d::put_u64(&ix[40], std::uint64_t{1} << 31);
    d::put_u64(&ix[48], std::uint64_t{1} << 31);
    d::put_u64(&ix[88], d::kv_index::layout::words_for(std::uint64_t{1} << 62));
    d::put_u64(&ix[ix.size() - 8], XXH3_64bits(ix.data(), ix.size() - 8));
    seeds.push_back(encode(0, log, &ix));
  }
  return seeds;
}

/// Where the log and the index lie in an input (see encode()); index_at == in.size(): no index.
struct layout {
  std::size_t log_at = 1, log_size = 0, index_at = 0;
};
layout locate(const bytes& in) {
  layout l;
  l.log_size = in.size() - 1;
  if ((in[0] & 1) != 0 && in.size() >= 5) {
    l.log_at = 5;
    l.log_size = d::get_u32(reinterpret_cast<const std::byte*>(&in[1])) % (in.size() - 5 + 1);
  }
  l.index_at = l.log_at == 5 ? l.log_at + l.log_size : in.size();
  return l;
}

/// Recomputes the checksums a mutation broke: the log header's, those of the records that chain
/// from the header, and the snapshot's.
void reseal(bytes& in) {
  if (in.empty()) return;
  const auto [log_at, log_size, index_at] = locate(in);
  auto* log = reinterpret_cast<std::byte*>(in.data() + log_at);
  if (log_size >= d::log_header_size) {
    d::put_u64(log + 56, XXH3_64bits(log, 56));
    const std::uint64_t id_low = d::get_u64(log + 16);
    for (std::uint64_t at = d::log_header_size; at + d::record_header_size <= log_size;) {
      const std::uint32_t k = d::get_u32(log + at), v = d::get_u32(log + at + 4) & ~d::delete_flag;
      const std::uint64_t size = d::record_size(k, v);
      if (k == 0 || k > kv::max_key_size || size > log_size - at) break;
      d::put_u64(log + at + 8,
                 d::record_checksum(log + at, log + at + d::record_header_size, k + v, at, id_low));
      at += size;
    }
  }
  if (in.size() - index_at >= d::snapshot_header_size + 8) {
    auto* ix = reinterpret_cast<std::byte*>(in.data() + index_at);
    const std::size_t n = in.size() - index_at;
    d::put_u64(ix + n - 8, XXH3_64bits(ix, n - 8));
  }
}

void mutate(bytes& in, std::mt19937_64& rng) {
  static const std::uint64_t interesting[] = {
      0,          1,          7,          8,          16,         64,         0x7f,
      0xff,       65535,      65536,      65537,      0x3fffffff, 0x40000000, 0x7fffffff,
      0x80000000, 0xffffffff, 1ull << 31, 1ull << 32, ~0ull};
  const int n = 1 + static_cast<int>(rng() % 4);
  bool seal = rng() % 2 == 0;
  for (int m = 0; m < n; ++m) {
    const std::size_t size = in.size();
    const std::size_t at = size == 0 ? 0 : rng() % size;
    switch (rng() % 9) {
      case 0:  // bit flips
        for (int i = 0; i < 1 + static_cast<int>(rng() % 8) && size != 0; ++i)
          in[rng() % size] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
        break;
      case 1:  // an interesting 4- or 8-byte value, aligned
      case 2: {
        const std::size_t width = rng() % 2 == 0 ? 4 : 8, pos = at & ~std::size_t{3};
        const std::uint64_t v = interesting[rng() % std::size(interesting)];
        for (std::size_t i = 0; i < width && pos + i < size; ++i)
          in[pos + i] = static_cast<std::uint8_t>(v >> (8 * i));
        break;
      }
      case 3:  // truncate
        in.resize(size == 0 ? 0 : rng() % size);
        break;
      case 4: {  // insert random bytes
        bytes ins(1 + rng() % 64);
        for (auto& b : ins)
          b = static_cast<std::uint8_t>(rng());
        in.insert(in.begin() + static_cast<std::ptrdiff_t>(at), ins.begin(), ins.end());
        break;
      }
      case 5: {  // erase a range
        const std::size_t len = std::min<std::size_t>(size - at, 1 + rng() % 128);
        in.erase(in.begin() + static_cast<std::ptrdiff_t>(at),
                 in.begin() + static_cast<std::ptrdiff_t>(at + len));
        break;
      }
      case 6: {  // copy a range over another (a stale record elsewhere)
        if (size < 16) break;
        const std::size_t len = 1 + rng() % std::min<std::size_t>(size / 2, 512);
        const std::size_t from = rng() % (size - len + 1), to = rng() % (size - len + 1);
        std::memmove(in.data() + to, in.data() + from, len);
        break;
      }
      case 7: {  // a field of the snapshot's header: 2^k, 2^k - 1 or 2^k + 1 (resealed below)
        if (size == 0) break;
        seal = true;
        const std::size_t field = locate(in).index_at + 32 + 8 * (rng() % 10);
        const std::uint64_t v = (std::uint64_t{1} << (rng() % 64)) + (rng() % 3) - 1;
        for (std::size_t i = 0; i < 8 && field + i < in.size(); ++i)
          in[field + i] = static_cast<std::uint8_t>(v >> (8 * i));
        break;
      }
      default:  // the flags
        if (size != 0) in[0] = static_cast<std::uint8_t>(rng());
        break;
    }
  }
  if (seal) reseal(in);
}

void run(const bytes& in) {
  LLVMFuzzerTestOneInput(in.data(), in.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-corpus") {
    const std::vector<bytes> seeds = build_seeds();
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      std::ofstream out(std::string(argv[2]) + "/seed-" + std::to_string(i), std::ios::binary);
      out.write(reinterpret_cast<const char*>(seeds[i].data()),
                static_cast<std::streamsize>(seeds[i].size()));
      if (!out) {
        std::fprintf(stderr, "cannot write into %s\n", argv[2]);
        return 1;
      }
    }
    std::printf("%zu seeds written to %s\n", seeds.size(), argv[2]);
    return 0;
  }
  if (argc > 1) {
    for (int i = 1; i < argc; ++i) {
      std::ifstream f(argv[i], std::ios::binary);
      const bytes in((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      std::printf("%s: %zu bytes\n", argv[i], in.size());
      run(in);
    }
    return 0;
  }
  const char* env = std::getenv("CCF_FUZZ_ITERATIONS");
  const long iterations = env != nullptr ? std::atol(env) : 3000;
  const std::vector<bytes> seeds = build_seeds();
  for (const bytes& s : seeds)
    run(s);
  const char* seed = std::getenv("CCF_FUZZ_SEED");
  std::mt19937_64 rng(seed != nullptr ? std::strtoull(seed, nullptr, 10) : 20240611);
  for (long i = 0; i < iterations; ++i) {
    bytes in = seeds[rng() % seeds.size()];
    mutate(in, rng);
    run(in);
  }
  std::printf("kv_log_fuzz_smoke: %zu seeds and %ld mutations: no crash, no unexpected exception\n",
              seeds.size(), iterations);
  return 0;
}
