// ccf_fill_phases: where the time of filling a cuckoo filter goes. Fills
// ccf::cuckoo_filter<uint64_t, 16, 4> from empty to 95 % with insert_many in four steps
// (50, 80, 90, 95 % of the slots) and prints the insert rate of each step.
//
//   ccf_fill_phases [log2-buckets = 26]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include <ccf/cuckoo_filter.hpp>

int main(int argc, char** argv) {
  const int log2_buckets = argc > 1 ? std::atoi(argv[1]) : 26;
  if (log2_buckets < 10 || log2_buckets > 32) {
    std::fprintf(stderr, "usage: ccf_fill_phases [log2-buckets in 10..32]\n");
    return 1;
  }
  // A capacity that gives about 2^log2_buckets buckets.
  const double buckets = static_cast<double>(std::size_t{1} << log2_buckets);
  ccf::cuckoo_filter<std::uint64_t, 16, 4> f(static_cast<std::size_t>(buckets * 4 * 0.94 / 1.02));
  const double slots = static_cast<double>(f.size_in_tags());
  std::vector<std::uint64_t> keys(static_cast<std::size_t>(slots * 0.95));
  for (std::size_t i = 0; i < keys.size(); ++i)
    keys[i] = ccf::mix64(i);
  std::printf("%zu buckets, %zu keys\n", f.num_buckets(), keys.size());
  std::size_t done = 0;
  for (const double mark : {0.5, 0.8, 0.9, 0.95}) {
    const auto upto = std::min(keys.size(), static_cast<std::size_t>(slots * mark));
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t inserted =
        f.insert_many(std::span<const std::uint64_t>(keys.data() + done, upto - done));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("to %2.0f %%: %6.2f M inserts/s\n", mark * 100, inserted / s / 1e6);
    if (inserted != upto - done) {
      std::printf("refused an insert at load %.4f\n", f.load_factor());
      return 1;
    }
    done = upto;
  }
  return 0;
}
