// Fuzz target for the key-value store's record parser and log recovery (include/ccf/kv/detail/
// record.hpp, log.hpp, snapshot.hpp, store_impl.hpp), over the in-memory tests/kv_fault_fs.hpp.
// Every input is used twice:
//   (a) as the bytes after a valid log header: parse_record at every 8-byte offset (on an
//       exact-size copy, so that ASan sees any read past it), then log_file::scan over a file
//       holding header and input, with the file's view and with read_at; the records the scan
//       reports must chain;
//   (b) as a store directory: byte 0 holds flags (1: an index file follows the log, its split given
//       by the next 4 bytes; 2: no view, the store reads with read_at; 4: strict_recovery; 8: also
//       write, erase and compact after opening), the rest the files "log" and "index". The store is
//       opened, a few keys read, every key walked, and closed.
// Only ccf::kv::corrupt_error, io_error and std::length_error may come out; anything else, a crash,
// a hang or a leak is a finding. Built with tests/fuzz/standalone_main.cpp into the CTest case
// kv_log_fuzz_smoke, and with -fsanitize=fuzzer into kv_log_fuzz (tests/fuzz.cmake).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ccf/kv/store.hpp"
#include "kv_fault_fs.hpp"

namespace {

namespace kv = ccf::kv;
namespace d = ccf::kv::detail;

constexpr std::size_t max_input = std::size_t{1} << 20;
constexpr std::size_t file_capacity = std::size_t{8} << 20;

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "kv_log_fuzz: %s\n", what);
    std::abort();
  }
}

/// Reads every byte of a record (so that a view past the buffer is caught).
std::uint64_t touch(const d::record_view& r) {
  return XXH3_64bits(r.key.data(), r.key.size()) ^ XXH3_64bits(r.value.data(), r.value.size());
}

d::log_header fixed_header() {
  d::log_header h;
  for (std::size_t i = 0; i < h.id.size(); ++i)
    h.id[i] = static_cast<std::byte>(0x5a + i);
  h.seed = 0x1234567;
  return h;
}

void fuzz_records(const std::uint8_t* data, std::size_t size) {
  const d::log_header h = fixed_header();
  const std::vector<std::byte> body(reinterpret_cast<const std::byte*>(data),
                                    reinterpret_cast<const std::byte*>(data) + size);
  std::uint64_t sink = 0;
  for (std::size_t p = 0; p < size; p += 8) {
    const auto r = d::parse_record(body.data() + p, size - p, d::log_header_size + p, h.id_low());
    if (!r) continue;
    require(r->size <= size - p && r->size % 8 == 0, "parse_record: a record past the bytes");
    sink ^= touch(*r);
  }
  const auto header = h.encode();
  std::vector<std::byte> file(header.begin(), header.end());
  file.insert(file.end(), body.begin(), body.end());
  for (const bool viewable : {true, false}) {
    auto fs = ccf_test::kv_fault_fs::make(file_capacity);
    fs->write_file("/l", file);
    fs->set_viewable(viewable);
    auto log = d::log_file::open(*fs, "/l");
    std::uint64_t next = d::log_header_size, count = 0;
    const auto res = log->scan(
        d::log_header_size,
        [&](std::uint64_t at, const d::record_view& r) {
          require(at == next, "scan: records do not chain");
          require(at + r.size <= file.size(), "scan: a record past the file");
          next = at + r.size;
          ++count;
          sink ^= touch(r);
        },
        [](std::uint64_t tail) { return 64 * tail + 4096; });
    require(res.end == next && res.records == count, "scan: wrong end or count");
  }
  if (sink == 42) std::fprintf(stderr, " ");  // keep the reads
}

void fuzz_store(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return;
  const unsigned flags = data[0];
  const auto* rest = reinterpret_cast<const std::byte*>(data + 1);
  std::size_t left = size - 1, log_size = left;
  bool has_index = false;
  if ((flags & 1) != 0 && left >= 4) {
    rest += 4;
    left -= 4;
    log_size = d::get_u32(reinterpret_cast<const std::byte*>(data + 1)) % (left + 1);
    has_index = true;
  }
  auto fs = ccf_test::kv_fault_fs::make(file_capacity);
  fs->create_directory("/db");
  fs->write_file("/db/log", std::span<const std::byte>(rest, log_size));
  if (has_index)
    fs->write_file("/db/index", std::span<const std::byte>(rest + log_size, left - log_size));
  fs->set_viewable((flags & 2) == 0);
  kv::options o;
  o.fs = fs;
  o.sync = kv::durability::none;
  o.snapshot_every_bytes = 0;
  o.create_if_missing = false;
  o.strict_recovery = (flags & 4) != 0;
  try {
    auto s = kv::store::open("/db", o);
    std::string value;
    for (const char* key : {"a", "b", "key-0", "key-1", "key-7", "k0", "k1"})
      s->get(key, value);
    std::size_t walked = 0;
    s->for_each([&](std::string_view k, std::string_view v) {
      walked += k.size() + v.size() > 0;
      s->contains(k);
    });
    (void)s->stats();
    if ((flags & 8) != 0) {
      s->put("key-0", "fuzz");
      s->erase("a");
      s->compact();
      s->put("key-1", std::string(100, 'z'));
      s->sync();
    }
    s->close();
  } catch (const kv::corrupt_error&) {
  } catch (const kv::io_error&) {
  } catch (const std::length_error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > max_input) return 0;
  try {
    fuzz_records(data, size);
    fuzz_store(data, size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kv_log_fuzz: unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
