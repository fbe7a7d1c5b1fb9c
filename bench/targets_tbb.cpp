// ccf benchmarks — targets_tbb.cpp: tbb::concurrent_unordered_set of 64-bit keys, the other exact
// baseline. Its erase is not thread-safe (unsafe_erase), so ccf-bench uses it only single-threaded.
// CMake compiles this file only when TBB was found.
#include <cstddef>
#include <memory>
#include <string>

#include <tbb/concurrent_unordered_set.h>

#include "adapters.hpp"

namespace ccf::bench {
namespace {

class tbb_set {
 public:
  explicit tbb_set(std::size_t capacity) : set_(capacity) {}

  bool insert(key_type k) { return set_.insert(k).second; }
  bool contains(key_type k) const { return set_.count(k) != 0; }
  bool erase(key_type k) { return set_.unsafe_erase(k) != 0; }
  /// Estimate: one list node (key, next pointer, order key: 24 bytes, 32 with allocator rounding)
  /// per element plus one pointer per bucket.
  std::size_t size_in_bytes() const { return set_.size() * 32 + set_.unsafe_bucket_count() * 8; }
  std::string info() const {
    return "tbb::concurrent_unordered_set<uint64_t>: " + std::to_string(set_.size()) +
           " elements, " + std::to_string(set_.unsafe_bucket_count()) + " buckets";
  }

 private:
  tbb::concurrent_unordered_set<key_type> set_;
};

const filter_registrar tbb_entry{
    filter_entry{46,
                 "tbb",
                 "tbb::concurrent_unordered_set as an exact set (baseline)",
                 true,
                 0,
                 true,
                 {},
                 [](const build_request& r) -> std::unique_ptr<bench_target> {
                   target_traits traits;
                   traits.concurrent = true;
                   traits.concurrent_erase = false;
                   traits.exact = true;
                   return wrap(std::make_unique<tbb_set>(r.items), traits, r.batch_size);
                 }}};

}  // namespace
}  // namespace ccf::bench
