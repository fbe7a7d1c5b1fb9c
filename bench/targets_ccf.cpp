// ccf benchmarks — targets_ccf.cpp: the registry itself, and ccf's sequential cuckoo filter, Bloom
// filters and lock-free cuckoo filter as ccf-bench targets. Each block is compiled only when its
// header exists, so ccf-bench builds with whatever part of ccf is there.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "adapters.hpp"

#include <ccf/bloom_filter.hpp>
#include <ccf/cuckoo_filter.hpp>
#include <ccf/lockfree_cuckoo_filter.hpp>

namespace ccf::bench {

std::vector<filter_entry>& filter_registry() {
  static std::vector<filter_entry> entries;
  return entries;
}

filter_registrar::filter_registrar(filter_entry entry) {
  auto& entries = filter_registry();
  entries.push_back(std::move(entry));
  std::sort(entries.begin(), entries.end(), [](const filter_entry& a, const filter_entry& b) {
    return std::tie(a.order, a.name) < std::tie(b.order, b.name);
  });
}

namespace {

template <unsigned Bits>
std::unique_ptr<bench_target> make_sequential(const build_request& r) {
  using filter = ccf::cuckoo_filter<key_type, Bits, 4>;
  target_traits traits;
  traits.concurrent = false;
  return wrap(make_with_slots<filter>(r.target_slots, r.seed), traits, r.batch_size);
}

const filter_registrar sequential_entry{
    filter_entry{10,
                 "cuckoo",
                 "ccf::cuckoo_filter (sequential), 4 slots per bucket",
                 false,
                 0,
                 false,
                 {8, 12, 16},
                 [](const build_request& r) -> std::unique_ptr<bench_target> {
                   switch (r.bits) {
                     case 8:
                       return make_sequential<8>(r);
                     case 12:
                       return make_sequential<12>(r);
                     case 16:
                       return make_sequential<16>(r);
                     default:
                       return nullptr;
                   }
                 }}};

template <unsigned Bits>
std::unique_ptr<bench_target> make_lockfree(const build_request& r) {
  using filter = ccf::lockfree_cuckoo_filter<key_type, Bits, 4>;
  target_traits traits;
  traits.concurrent = true;
  traits.concurrent_erase = true;
  return wrap(make_with_slots<filter>(r.target_slots, r.seed), traits, r.batch_size);
}

// One 64-bit word per bucket holds the tags and a version counter: 8 or 12 bits x 4 slots (16-bit
// tags do not fit), so with --bits 16 the lock-free filter runs with 12-bit tags.
const filter_registrar lockfree_entry{
    filter_entry{40,
                 "lockfree",
                 "ccf::lockfree_cuckoo_filter, 4 slots (8- or 12-bit tags)",
                 true,
                 12,
                 false,
                 {8, 12},
                 [](const build_request& r) -> std::unique_ptr<bench_target> {
                   return r.bits == 8 ? make_lockfree<8>(r) : make_lockfree<12>(r);
                 }}};

const filter_registrar bloom_entry{filter_entry{
    50,
    "bloom",
    "ccf::bloom_filter at the cuckoo filter's FPR",
    false,
    0,
    false,
    {},
    [](const build_request& r) -> std::unique_ptr<bench_target> {
      using filter = ccf::bloom_filter<key_type>;
      return wrap(std::make_unique<filter>(r.items, r.bloom_fpr), target_traits{}, r.batch_size);
    }}};

const filter_registrar blocked_bloom_entry{filter_entry{
    51,
    "blocked_bloom",
    "ccf::blocked_bloom_filter at the cuckoo filter's FPR",
    false,
    0,
    false,
    {},
    [](const build_request& r) -> std::unique_ptr<bench_target> {
      using filter = ccf::blocked_bloom_filter<key_type>;
      return wrap(std::make_unique<filter>(r.items, r.bloom_fpr), target_traits{}, r.batch_size);
    }}};

}  // namespace
}  // namespace ccf::bench
