// A program outside the ccf tree that finds an installed ccf with find_package(ccf).
#include <ccf/ccf.hpp>

#include <cstdio>
#include <string>

int main() {
  ccf::cuckoo_filter<std::string> seq(1000);
  ccf::concurrent_cuckoo_filter<std::uint64_t> conc(1000);
  ccf::bloom_filter<std::uint64_t> bloom(1000, 0.01);
  for (int i = 0; i < 1000; ++i) {
    if (!seq.insert("item" + std::to_string(i)) || !conc.insert(i)) return 1;
    bloom.insert(i);
  }
  for (int i = 0; i < 1000; ++i) {
    if (!seq.contains("item" + std::to_string(i)) || !conc.contains(i) || !bloom.contains(i)) {
      return 2;
    }
  }
  std::printf("consumer ok: %zu + %zu items\n", seq.size(), conc.size());
  return 0;
}
