// ccf benchmarks — targets_concurrent.cpp: ccf::concurrent_cuckoo_filter with each lock policy
// (striped, global, elided MCS) as ccf-bench targets, for 8-, 12- and 16-bit tags.
#include <cstddef>
#include <memory>

#include "adapters.hpp"

#include <ccf/concurrent_cuckoo_filter.hpp>

namespace ccf::bench {
namespace {

template <unsigned Bits, class Policy>
std::unique_ptr<bench_target> make_concurrent(const build_request& r) {
  using filter = ccf::concurrent_cuckoo_filter<key_type, Bits, 4, ccf::hash<key_type>, Policy>;
  target_traits traits;
  traits.concurrent = true;
  traits.concurrent_erase = true;
  return wrap(make_with_slots<filter>(r.target_slots, r.seed), traits, r.batch_size);
}

template <class Policy>
std::unique_ptr<bench_target> make_for_bits(const build_request& r) {
  switch (r.bits) {
    case 8:
      return make_concurrent<8, Policy>(r);
    case 12:
      return make_concurrent<12, Policy>(r);
    case 16:
      return make_concurrent<16, Policy>(r);
    default:
      return nullptr;
  }
}

const filter_registrar striped_entry{
    filter_entry{20,
                 "striped",
                 "ccf::concurrent_cuckoo_filter, striped_locking (default)",
                 true,
                 0,
                 false,
                 {8, 12, 16},
                 make_for_bits<ccf::striped_locking>}};
const filter_registrar global_entry{
    filter_entry{21,
                 "global",
                 "ccf::concurrent_cuckoo_filter, global_locking (one std::mutex)",
                 true,
                 0,
                 false,
                 {8, 12, 16},
                 make_for_bits<ccf::global_locking>}};
const filter_registrar elided_entry{
    filter_entry{22,
                 "elided_mcs",
                 "ccf::concurrent_cuckoo_filter, elided_mcs_locking (MCS + RTM)",
                 true,
                 0,
                 false,
                 {8, 12, 16},
                 make_for_bits<ccf::elided_mcs_locking>}};

}  // namespace
}  // namespace ccf::bench
