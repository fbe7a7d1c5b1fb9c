// ccf benchmarks — bench_support.hpp: keys, random streams, the Zipf sampler, the thread runner
// and the description of the machine, shared by ccf-bench and ccf_micro.
//
// Keys are 64-bit integers made by a fixed bijection of an index: the present keys of a run are
// key_at(i) for i in [0, items), absent keys come from a disjoint index range, so "present" and
// "absent" never overlap and no set is needed to tell them apart. Every random stream is generated
// before the timed region; the timed loops only read arrays.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#endif

#include <ccf/hash.hpp>

namespace ccf::bench {

/// A bijection of 64-bit integers (xor-shift / odd-multiply rounds, constants distinct from
/// ccf::mix64 so that keys and the filters' hash are unrelated functions).
constexpr std::uint64_t scramble(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/// Index ranges of the three key families; they never overlap for fewer than 2^40 keys each.
inline constexpr std::uint64_t present_base = 0;
inline constexpr std::uint64_t absent_base = std::uint64_t{1} << 40;
inline constexpr std::uint64_t fresh_base = std::uint64_t{2} << 40;

/// The key with index `index` for run seed `seed`: distinct indices give distinct keys.
constexpr std::uint64_t key_at(std::uint64_t index, std::uint64_t seed) noexcept {
  return scramble(index ^ (seed * 0x9e3779b97f4a7c15ULL));
}

__extension__ using uint128 = unsigned __int128;

/// floor(x * n / 2^64): a uniform 64-bit value mapped to [0, n).
constexpr std::uint64_t reduce(std::uint64_t x, std::uint64_t n) noexcept {
  return static_cast<std::uint64_t>((static_cast<uint128>(x) * n) >> 64);
}

/// A counter-based generator (splitmix64 stepping): cheap, seeded, good enough for op streams.
class rng {
 public:
  explicit rng(std::uint64_t seed) noexcept : state_(ccf::mix64(seed)) {}
  std::uint64_t next() noexcept { return ccf::mix64(state_ += 0x9e3779b97f4a7c15ULL); }
  /// Uniform in [0, n).
  std::uint64_t below(std::uint64_t n) noexcept { return reduce(next(), n); }
  /// Uniform in [0, 1).
  double unit() noexcept { return static_cast<double>(next() >> 11) * 0x1p-53; }

 private:
  std::uint64_t state_;
};

/// Zipf-distributed ranks in [0, n) with exponent theta (0 < theta < 1), by the closed-form
/// inversion of Gray et al. (SIGMOD 1994) that YCSB uses. zeta(n, theta) is summed exactly for the
/// first 2^20 terms and by the Euler-Maclaurin formula beyond, so building a sampler for billions
/// of items costs milliseconds. Rank r is mapped to an item by scramble(r) mod n, so the hot items
/// are spread over the whole key set instead of being its first indices.
class zipf_sampler {
 public:
  zipf_sampler(std::uint64_t n, double theta) : n_(n), theta_(theta) {
    zeta_n_ = zeta(n, theta);
    const double zeta2 = zeta(2, theta);
    alpha_ = 1.0 / (1.0 - theta);
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zeta_n_);
    half_pow_theta_ = 1.0 + std::pow(0.5, theta);
  }

  std::uint64_t rank(double u) const noexcept {
    const double uz = u * zeta_n_;
    if (uz < 1.0) return 0;
    if (uz < half_pow_theta_) return 1 % n_;
    const double r = static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_);
    const auto k = static_cast<std::uint64_t>(r);
    return k < n_ ? k : n_ - 1;
  }
  /// An item index in [0, n): the rank scattered over the index range.
  std::uint64_t item(double u) const noexcept { return scramble(rank(u)) % n_; }

  static double zeta(std::uint64_t n, double theta) {
    constexpr std::uint64_t exact_terms = std::uint64_t{1} << 20;
    const std::uint64_t m = std::min(n, exact_terms);
    double sum = 0;
    for (std::uint64_t i = m; i >= 1; --i)
      sum += std::pow(static_cast<double>(i), -theta);
    if (n > m) {
      // sum_{i=m+1}^{n} i^-t ~ integral_m^n x^-t dx + (f(n) - f(m)) / 2 + (f'(n) - f'(m)) / 12
      const auto a = static_cast<double>(m);
      const auto b = static_cast<double>(n);
      const auto f = [theta](double x) { return std::pow(x, -theta); };
      const auto df = [theta](double x) { return -theta * std::pow(x, -theta - 1.0); };
      sum += (std::pow(b, 1.0 - theta) - std::pow(a, 1.0 - theta)) / (1.0 - theta);
      sum += (f(b) - f(a)) / 2.0 + (df(b) - df(a)) / 12.0;
    }
    return sum;
  }

 private:
  std::uint64_t n_;
  double theta_;
  double zeta_n_ = 0;
  double alpha_ = 0;
  double eta_ = 0;
  double half_pow_theta_ = 0;
};

/// CPUs this process may run on, in order (all CPUs when the affinity mask cannot be read).
inline std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
#endif
  if (cpus.empty()) {
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned c = 0; c < n; ++c)
      cpus.push_back(static_cast<int>(c));
  }
  return cpus;
}

inline void pin_this_thread(int cpu) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set);
#else
  (void)cpu;
#endif
}

/// Runs fn(t) for t in [0, threads) on `threads` new threads that start together (std::latch) and
/// returns the seconds taken by the slowest of them. With `pin`, thread t runs on the t-th allowed
/// CPU (round robin when there are more threads than CPUs).
template <class Fn>
double run_threads(unsigned threads, bool pin, Fn&& fn) {
  const std::vector<int> cpus = pin ? allowed_cpus() : std::vector<int>{};
  std::vector<double> seconds(threads, 0.0);
  std::latch start(static_cast<std::ptrdiff_t>(threads));
  {
    std::vector<std::jthread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        if (!cpus.empty()) pin_this_thread(cpus[t % cpus.size()]);
        start.arrive_and_wait();
        const auto t0 = std::chrono::steady_clock::now();
        fn(t);
        const auto t1 = std::chrono::steady_clock::now();
        seconds[t] = std::chrono::duration<double>(t1 - t0).count();
      });
    }
  }
  return *std::max_element(seconds.begin(), seconds.end());
}

/// [begin, end) of part t when `n` items are cut into `parts` contiguous parts.
struct slice {
  std::size_t begin;
  std::size_t end;
  std::size_t size() const noexcept { return end - begin; }
};
constexpr slice slice_of(std::size_t n, unsigned parts, unsigned t) noexcept {
  return {n * t / parts, n * (t + 1) / parts};
}

/// Where and with what a run was made (written into every CSV row).
struct machine_info {
  std::string host;
  std::string cpu_model;
  unsigned cores = 0;
  std::string compiler;
  std::string git_revision;
};

inline std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return c != ' ' && c != '\t' && c != '\n'; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// Written by CMake at configure time (build_info.cpp.in): the source folder and its revision then.
extern const char* const configured_source_dir;
extern const char* const configured_git_revision;

/// The revision of the source tree now (`git describe --always --dirty` run at start-up), or the
/// one recorded at configure time when git cannot answer.
inline std::string git_revision() {
#if defined(__unix__)
  const std::string command =
      std::string("git -C '") + configured_source_dir + "' describe --always --dirty 2>/dev/null";
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    std::array<char, 128> buffer{};
    std::string out;
    while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr)
      out += buffer.data();
    const int status = ::pclose(pipe);
    out = trim(out);
    if (status == 0 && !out.empty()) return out;
  }
#endif
  return configured_git_revision;
}

inline machine_info describe_machine() {
  machine_info m;
#if defined(__linux__)
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) == 0) m.host = name.data();
#endif
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) m.cpu_model = trim(line.substr(colon + 1));
      break;
    }
  }
  if (m.cpu_model.empty()) m.cpu_model = "unknown";
  if (m.host.empty()) m.host = "unknown";
  m.cores = static_cast<unsigned>(allowed_cpus().size());
#if defined(__VERSION__)
#if defined(__clang__)
  m.compiler = std::string("clang ") + __VERSION__;
#elif defined(__GNUC__)
  m.compiler = std::string("gcc ") + __VERSION__;
#else
  m.compiler = __VERSION__;
#endif
#else
  m.compiler = "unknown";
#endif
  m.git_revision = git_revision();
  return m;
}

/// Keeps a value alive so that the optimiser cannot drop the work that produced it.
template <class T>
inline void keep(const T& value) noexcept {
  asm volatile("" : : "r,m"(value) : "memory");
}

}  // namespace ccf::bench
