// ccf benchmarks — memory_ceiling.hpp: how fast this machine can read random cache lines from a
// buffer as large as a filter's table, with the same number of threads.
//
// A cuckoo filter lookup is at best two independent random cache-line reads (its two buckets) and
// a batched lookup keeps several of them in flight. The ceiling does exactly that and nothing
// else: each thread draws line indices from a counter-based generator (no dependence on loaded
// data), issues `group` operations of `lines_per_op` reads before using any result, and folds the
// loaded words into a checksum. lines_per_op = 1 gives the raw random-line rate; lines_per_op = 2
// is the rate of "two-bucket lookups" and the reference every throughput is divided by. The buffer
// is 2 MiB aligned and advised for transparent huge pages, as ccf's tables are.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "bench_support.hpp"

namespace ccf::bench {

struct ceiling_result {
  std::size_t bytes = 0;
  std::uint64_t ops = 0;  // operations (of lines_per_op lines) over all threads
  double seconds = 0;
  double mops() const noexcept {
    return seconds > 0 ? static_cast<double>(ops) / seconds / 1e6 : 0;
  }
};

class line_buffer {
 public:
  explicit line_buffer(std::size_t bytes) {
    constexpr std::size_t huge_page = std::size_t{2} << 20;
    lines_ = std::max<std::size_t>(64, (bytes + 63) / 64);
    const std::size_t size = (lines_ * 64 + huge_page - 1) / huge_page * huge_page;
    void* raw = std::aligned_alloc(huge_page, size);
    if (raw == nullptr) throw std::bad_alloc();
    data_.reset(static_cast<std::uint64_t*>(raw));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    ::madvise(raw, size, MADV_HUGEPAGE);
#endif
    for (std::size_t w = 0; w < lines_ * 8; ++w)
      data_[w] = w;
  }
  std::size_t lines() const noexcept {
    return lines_;
  }
  const std::uint64_t* data() const noexcept {
    return data_.get();
  }

 private:
  struct free_deleter {
    void operator()(std::uint64_t* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::uint64_t[], free_deleter> data_;
  std::size_t lines_ = 0;
};

/// Random-line reads over `buffer` by `threads` threads, `ops` operations in all.
template <unsigned LinesPerOp>
ceiling_result measure_ceiling(const line_buffer& buffer, unsigned threads, bool pin,
                               std::uint64_t ops, std::uint64_t seed) {
  constexpr unsigned group = 8;
  const std::uint64_t* data = buffer.data();
  const std::uint64_t lines = buffer.lines();
  ceiling_result r;
  r.bytes = lines * 64;
  r.ops = ops / (threads * group) * (threads * group);
  const std::uint64_t per_thread = r.ops / threads;
  r.seconds = run_threads(threads, pin, [&](unsigned t) {
    rng gen(seed + t);
    std::uint64_t sum = 0;
    for (std::uint64_t done = 0; done < per_thread; done += group) {
      std::array<std::uint64_t, group * LinesPerOp> at;
      for (auto& a : at)
        a = reduce(gen.next(), lines) * 8;
      for (const auto a : at)
        sum += data[a];
    }
    keep(sum);
  });
  return r;
}

/// Ceilings measured so far, by (buffer size class, threads): filters of about the same size share
/// one measurement. A size class is the size rounded up to a multiple of 1/32 of the next power of
/// two (at most 1/16 larger than the size itself).
class ceiling_cache {
 public:
  ceiling_cache(bool pin, std::uint64_t seed) : pin_(pin), seed_(seed) {}

  struct entry {
    ceiling_result one_line;
    ceiling_result two_lines;
    bool fresh = false;  // measured by this call (the caller reports it once)
  };

  entry get(std::size_t bytes, unsigned threads, std::uint64_t ops) {
    const std::size_t cls = size_class(bytes);
    const auto key = std::make_pair(cls, threads);
    if (auto it = cache_.find(key); it != cache_.end()) {
      entry e = it->second;
      e.fresh = false;
      return e;
    }
    const line_buffer buffer(cls);
    entry e;
    // A ceiling is an upper bound: the best of three runs, so that one descheduled thread does
    // not lower it.
    for (unsigned run = 0; run < 3; ++run) {
      const auto one = measure_ceiling<1>(buffer, threads, pin_, ops, seed_ + run);
      const auto two = measure_ceiling<2>(buffer, threads, pin_, ops / 2, seed_ + 1000 + run);
      if (run == 0 || one.mops() > e.one_line.mops()) e.one_line = one;
      if (run == 0 || two.mops() > e.two_lines.mops()) e.two_lines = two;
    }
    e.fresh = true;
    cache_.emplace(key, e);
    return e;
  }

  static std::size_t size_class(std::size_t bytes) noexcept {
    std::size_t p = 64 * 16;
    while (p < bytes)
      p *= 2;
    const std::size_t step = p / 32;
    return (bytes + step - 1) / step * step;
  }

 private:
  bool pin_;
  std::uint64_t seed_;
  std::map<std::pair<std::size_t, unsigned>, entry> cache_;
};

}  // namespace ccf::bench
