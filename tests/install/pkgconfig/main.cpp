// A program outside the ccf tree, compiled with `g++ -std=c++20 main.cpp $(pkg-config --cflags
// --libs ccf)` against an installed ccf. Usage: main VERSION (the version ccf should report).
// Exits 1 on any wrong answer.
#include <ccf/concurrent_cuckoo_filter.hpp>
#include <ccf/cuckoo_filter.hpp>
#include <ccf/version.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "pkg-config consumer: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: main VERSION");
  if (std::string_view(ccf::version_string) != argv[1]) return fail("ccf::version_string differs");

  constexpr std::uint64_t n = 20'000;
  ccf::concurrent_cuckoo_filter<std::uint64_t> f(2 * n);
  if (f.contains(12345)) return fail("an empty filter contains a key");

  // Keys 0..n-1 inserted from two threads (the filter is thread-safe; -pthread links).
  bool ok[2] = {true, true};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&f, &ok, t] {
      for (std::uint64_t k = static_cast<std::uint64_t>(t); k < n; k += 2)
        ok[t] &= f.insert(k);
    });
  }
  for (auto& th : threads)
    th.join();
  if (!ok[0] || !ok[1]) return fail("insert returned false below capacity");
  if (f.size() != n) return fail("size() is not the number of keys inserted");
  for (std::uint64_t k = 0; k < n; ++k) {
    if (!f.contains(k)) return fail("an inserted key is missing");
  }
  // Keys not inserted: at 16-bit fingerprints about 0.012 % are false positives; 1 % is wrong.
  std::uint64_t false_positives = 0;
  for (std::uint64_t k = n; k < 2 * n; ++k)
    false_positives += f.contains(k) ? 1 : 0;
  if (false_positives > n / 100) return fail("too many keys not inserted are reported present");

  // A sequential filter over strings (xxHash through ccf/hash.hpp).
  ccf::cuckoo_filter<std::string> words(100);
  if (!words.insert("cuckoo") || !words.contains("cuckoo")) return fail("string insert/contains");
  if (words.contains("bloom")) return fail("a one-key filter contains a key not inserted");
  if (!words.erase("cuckoo") || words.contains("cuckoo")) return fail("string erase");

  std::printf("pkg-config consumer ok: ccf %s, %llu keys, %llu false positives in %llu\n",
              ccf::version_string, static_cast<unsigned long long>(f.size()),
              static_cast<unsigned long long>(false_positives), static_cast<unsigned long long>(n));
  return 0;
}
