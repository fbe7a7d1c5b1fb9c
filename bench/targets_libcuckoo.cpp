// ccf benchmarks — targets_libcuckoo.cpp: libcuckoo's concurrent cuckoo hash map used as an exact
// set of 64-bit keys, the baseline a user would take instead of a filter. CMake compiles this
// file only when <libcuckoo/cuckoohash_map.hh> was found.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include <libcuckoo/cuckoohash_map.hh>

#include "adapters.hpp"

namespace ccf::bench {
namespace {

class libcuckoo_set {
 public:
  explicit libcuckoo_set(std::size_t capacity) : map_(capacity) {}

  bool insert(key_type k) { return map_.insert(k, true); }
  bool contains(key_type k) const { return map_.contains(k); }
  bool erase(key_type k) { return map_.erase(k); }
  /// Bucket array only (slots of key, value, partial-key byte and occupied flag); the lock array
  /// and allocator slack are not counted.
  std::size_t size_in_bytes() const {
    return map_.bucket_count() * map_.slot_per_bucket() * (sizeof(std::pair<key_type, bool>) + 2);
  }
  std::size_t size_in_tags() const { return map_.capacity(); }
  std::string info() const {
    return "libcuckoo::cuckoohash_map<uint64_t, bool>: " + std::to_string(map_.bucket_count()) +
           " buckets x " + std::to_string(map_.slot_per_bucket()) + " slots";
  }

 private:
  libcuckoo::cuckoohash_map<key_type, bool> map_;
};

const filter_registrar libcuckoo_entry{
    filter_entry{45,
                 "libcuckoo",
                 "libcuckoo::cuckoohash_map as an exact set (baseline)",
                 true,
                 0,
                 true,
                 {},
                 [](const build_request& r) -> std::unique_ptr<bench_target> {
                   target_traits traits;
                   traits.concurrent = true;
                   traits.concurrent_erase = true;
                   traits.exact = true;
                   return wrap(std::make_unique<libcuckoo_set>(r.items), traits, r.batch_size);
                 }}};

}  // namespace
}  // namespace ccf::bench
