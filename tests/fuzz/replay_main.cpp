// A main() without libFuzzer for the fuzz targets filter_load_fuzz, runtime_ops_fuzz and
// key_reader_fuzz (each linked with this file into <target>_replay): the CTest cases
// <target>_replay. It runs the target's self-test, then every file of the corpus directory and
// every seed the target builds in code (so that the run stays meaningful if the files go stale),
// then deterministic mutations of them: bit flips, interesting values, truncations, insertions,
// erasures, copies, splices of two inputs, and the target's own structure-aware mutations.
//
//   <target>_replay --replay DIR [--mutations N]   the CTest case (N defaults to 2000;
//                                                  CCF_FUZZ_ITERATIONS=n and CCF_FUZZ_SEED=s
//                                                  in the environment override N and the seed)
//   <target>_replay --write-corpus DIR             writes the seeds built in code to DIR
//   <target>_replay FILE...                        runs the target on each file (a finding)
//
// CCF_FUZZ_LAST=FILE writes each input to FILE before running it: after a failure, FILE holds the
// input that failed.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

using ccf_fuzz::bytes;

/// Runs the target on `in`, first writing it to the file CCF_FUZZ_LAST names, if set (so that the
/// input of a failed run is at hand).
void run(const bytes& in) {
  static const char* last = std::getenv("CCF_FUZZ_LAST");
  if (last != nullptr) {
    std::ofstream out(last, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(in.data()), static_cast<std::streamsize>(in.size()));
  }
  LLVMFuzzerTestOneInput(in.data(), in.size());
}

bool read_file(const std::filesystem::path& p, bytes& out) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return !f.bad();
}

/// Generic mutations (at most 4 per input); `other` is another input to splice from.
void mutate(bytes& in, const bytes& other, std::mt19937_64& rng) {
  static constexpr std::uint64_t interesting[] = {
      0,          1,          2,          7,          8,       16,         0x7f,
      0x80,       0xff,       0x100,      0xffff,     0x10000, 0x7fffffff, 0x80000000,
      0xffffffff, 1ull << 32, 1ull << 48, 1ull << 63, ~0ull};
  const int n = 1 + static_cast<int>(rng() % 4);
  for (int m = 0; m < n; ++m) {
    const std::size_t size = in.size();
    const std::size_t at = size == 0 ? 0 : rng() % size;
    switch (rng() % 9) {
      case 0:  // bit flips
        for (int i = 0; i < 1 + static_cast<int>(rng() % 8) && size != 0; ++i)
          in[rng() % size] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
        break;
      case 1: {  // a byte set
        if (size != 0) in[at] = static_cast<std::uint8_t>(rng() % 4 == 0 ? 0 : rng());
        break;
      }
      case 2: {  // an interesting 1-, 2-, 4- or 8-byte value
        const int width = 1 << (rng() % 4);
        ccf_fuzz::put_le(in, at, interesting[rng() % std::size(interesting)], width);
        break;
      }
      case 3:  // truncate
        in.resize(size == 0 ? 0 : rng() % size);
        break;
      case 4: {  // insert random bytes, or repeats of one byte
        bytes ins(1 + rng() % 32);
        const bool same = rng() % 2 == 0;
        const auto fill = static_cast<std::uint8_t>(rng());
        for (auto& b : ins)
          b = same ? fill : static_cast<std::uint8_t>(rng());
        in.insert(in.begin() + static_cast<std::ptrdiff_t>(at), ins.begin(), ins.end());
        break;
      }
      case 5: {  // erase a range
        const std::size_t len = std::min<std::size_t>(size - at, 1 + rng() % 64);
        in.erase(in.begin() + static_cast<std::ptrdiff_t>(at),
                 in.begin() + static_cast<std::ptrdiff_t>(at + len));
        break;
      }
      case 6: {  // copy a range over another
        if (size < 8) break;
        const std::size_t len = 1 + rng() % std::min<std::size_t>(size / 2, 256);
        const std::size_t from = rng() % (size - len + 1), to = rng() % (size - len + 1);
        std::memmove(in.data() + to, in.data() + from, len);
        break;
      }
      case 7: {  // splice: a piece of another input inserted or appended
        if (other.empty()) break;
        const std::size_t from = rng() % other.size();
        const std::size_t len = std::min<std::size_t>(other.size() - from, 1 + rng() % 512);
        const std::size_t to = rng() % 2 == 0 ? size : at;
        in.insert(in.begin() + static_cast<std::ptrdiff_t>(to),
                  other.begin() + static_cast<std::ptrdiff_t>(from),
                  other.begin() + static_cast<std::ptrdiff_t>(from + len));
        break;
      }
      default:  // the first bytes (flags and configuration)
        if (size != 0)
          in[rng() % std::min<std::size_t>(size, 4)] = static_cast<std::uint8_t>(rng());
        break;
    }
  }
}

int write_corpus(const ccf_fuzz::target_hooks& t, const std::filesystem::path& dir) {
  const std::vector<ccf_fuzz::seed> seeds = t.seeds();
  std::filesystem::create_directories(dir);
  for (const ccf_fuzz::seed& s : seeds) {
    std::ofstream out(dir / s.name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(s.data.data()),
              static_cast<std::streamsize>(s.data.size()));
    if (!out) {
      std::fprintf(stderr, "%s: cannot write %s\n", t.name, (dir / s.name).c_str());
      return 1;
    }
  }
  std::printf("%s: %zu seeds written to %s\n", t.name, seeds.size(), dir.c_str());
  return 0;
}

int replay(const ccf_fuzz::target_hooks& t, const std::filesystem::path& dir, long mutations) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  if (t.self_test != nullptr) t.self_test();

  std::vector<bytes> inputs;
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
  } else {
    std::fprintf(stderr, "%s: no corpus directory %s (only the seeds built in code are run)\n",
                 t.name, dir.c_str());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    bytes in;
    if (!read_file(f, in)) {
      std::fprintf(stderr, "%s: cannot read %s\n", t.name, f.c_str());
      return 1;
    }
    run(in);
    inputs.push_back(std::move(in));
  }
  for (ccf_fuzz::seed& s : t.seeds()) {
    run(s.data);
    inputs.push_back(std::move(s.data));
  }
  const std::size_t originals = inputs.size();

  const char* seed_env = std::getenv("CCF_FUZZ_SEED");
  std::mt19937_64 rng(seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : 20240617);
  for (long i = 0; i < mutations; ++i) {
    bytes in = inputs[rng() % originals];
    const bytes& other = inputs[rng() % originals];
    if (t.mutate != nullptr && rng() % 2 == 0) {
      t.mutate(in, rng);
      if (rng() % 3 == 0) mutate(in, other, rng);
    } else {
      mutate(in, other, rng);
    }
    run(in);
  }
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  std::printf(
      "%s: %zu corpus files, %zu seeds built in code and %ld mutations in %.1f s: every "
      "check held\n",
      t.name, files.size(), originals - files.size(), mutations, seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const ccf_fuzz::target_hooks& t = ccf_fuzz::hooks();
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "--write-corpus") return write_corpus(t, args[1]);
  if (!args.empty() && args[0] == "--replay") {
    long mutations = 2000;
    if (args.size() == 4 && args[2] == "--mutations") {
      mutations = std::atol(args[3].c_str());
    } else if (args.size() != 2) {
      std::fprintf(stderr, "usage: %s --replay DIR [--mutations N]\n", argv[0]);
      return 2;
    }
    if (const char* env = std::getenv("CCF_FUZZ_ITERATIONS")) mutations = std::atol(env);
    return replay(t, args[1], mutations);
  }
  if (args.empty() || args[0].starts_with("--")) {
    std::fprintf(stderr, "usage: %s --replay DIR [--mutations N] | --write-corpus DIR | FILE...\n",
                 argv[0]);
    return 2;
  }
  for (const std::string& file : args) {
    bytes in;
    if (!read_file(file, in)) {
      std::fprintf(stderr, "%s: cannot read %s\n", t.name, file.c_str());
      return 1;
    }
    std::printf("%s: %zu bytes\n", file.c_str(), in.size());
    run(in);
  }
  return 0;
}
