// ccf: build, query and inspect cuckoo filter files from the command line.
//
//   ccf build --keys keys.txt --out set.ccf [--fpr 0.001 | --bits 16 --slots 4] [--capacity N]
//   ccf query set.ccf KEY...            (or --keys FILE; prints "KEY<TAB>yes|no")
//   ccf info set.ccf
//
// Keys are lines of text (a trailing '\r' is dropped, empty lines skipped; '-' reads standard
// input). Repeated keys are stored once. The filter file is written to a temporary name and
// renamed into place only when complete, so a failed build never leaves a partial or clobbered
// file. Exit status: 0 success, 1 usage error, 2 unreadable or corrupt input, 3 filter full.
#include <CLI/CLI.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <ccf/ccf.hpp>

namespace {

struct cli_error : std::runtime_error {
  int code;
  cli_error(int c, const std::string& what) : std::runtime_error(what), code(c) {}
};

template <unsigned Bits, unsigned Slots>
using string_filter = ccf::cuckoo_filter<std::string, Bits, Slots>;

/// Calls fn.template operator()<Bits, Slots>() for a runtime (bits, slots) pair.
template <class Fn>
auto dispatch(unsigned bits, unsigned slots, Fn&& fn) {
  auto by_slots = [&]<unsigned B>() {
    switch (slots) {
      case 2:
        return fn.template operator()<B, 2>();
      case 4:
        return fn.template operator()<B, 4>();
      case 8:
        return fn.template operator()<B, 8>();
    }
    throw cli_error(1, "slots per bucket must be 2, 4 or 8, not " + std::to_string(slots));
  };
  switch (bits) {
    case 8:
      return by_slots.template operator()<8>();
    case 12:
      return by_slots.template operator()<12>();
    case 16:
      return by_slots.template operator()<16>();
    case 32:
      return by_slots.template operator()<32>();
  }
  throw cli_error(1, "fingerprint bits must be 8, 12, 16 or 32, not " + std::to_string(bits));
}

std::vector<std::string> read_keys(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) throw cli_error(2, "cannot open key file '" + path + "'");
    in = &file;
  }
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(*in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) keys.push_back(std::move(line));
  }
  if (in->bad()) throw cli_error(2, "error reading key file '" + path + "'");
  return keys;
}

ccf::detail::file_header peek_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw cli_error(2, "cannot open filter file '" + path + "'");
  std::array<unsigned char, ccf::detail::file_header_bytes> bytes{};
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<std::size_t>(in.gcount()) != bytes.size()) {
    throw ccf::format_error("ccf: truncated filter file (shorter than its header)");
  }
  return ccf::detail::decode_header(bytes);
}

template <unsigned Bits, unsigned Slots>
string_filter<Bits, Slots> load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw cli_error(2, "cannot open filter file '" + path + "'");
  return string_filter<Bits, Slots>(in);
}

int cmd_build(const std::string& keys_path, const std::string& out, std::optional<double> fpr,
              unsigned bits, unsigned slots, std::size_t capacity, std::uint64_t seed) {
  const std::vector<std::string> keys = read_keys(keys_path);
  if (keys.empty()) throw cli_error(2, "no keys in '" + keys_path + "'");
  const std::size_t n = capacity != 0 ? capacity : keys.size();
  if (fpr) {
    const ccf::filter_params p = ccf::params_for(n, *fpr);
    bits = p.fingerprint_bits < 8 ? 8 : p.fingerprint_bits;
    slots = p.slots_per_bucket;
  }
  return dispatch(bits, slots, [&]<unsigned B, unsigned S>() {
    string_filter<B, S> f(n, seed);
    std::size_t stored = 0, skipped = 0;
    for (const std::string& k : keys) {
      if (f.contains(k)) {  // a repeat (or a false positive: its lookups say yes anyway)
        ++skipped;
        continue;
      }
      if (!f.insert(k)) {
        throw cli_error(3, "filter full after " + std::to_string(stored) + " of " +
                               std::to_string(keys.size()) + " keys; raise --capacity");
      }
      ++stored;
    }
    const std::string tmp = out + ".tmp";
    {
      std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
      if (!file) throw cli_error(2, "cannot write '" + tmp + "'");
      f.save(file);
      file.flush();
      if (!file) throw cli_error(2, "error writing '" + tmp + "'");
    }
    std::filesystem::rename(tmp, out);
    std::fprintf(stderr,
                 "ccf: %zu keys -> %s: %zu stored, %zu already answered yes (repeats or false "
                 "positives); %u-bit tags, %u slots, %zu bytes, %.2f bits/key\n",
                 keys.size(), out.c_str(), stored, skipped, B, S, f.size_in_bytes(),
                 static_cast<double>(f.size_in_bytes()) * 8.0 / static_cast<double>(keys.size()));
    return 0;
  });
}

int cmd_query(const std::string& path, const std::vector<std::string>& args,
              const std::string& keys_path) {
  const ccf::detail::file_header h = peek_header(path);
  std::vector<std::string> keys = args;
  if (!keys_path.empty()) {
    auto more = read_keys(keys_path);
    keys.insert(keys.end(), more.begin(), more.end());
  }
  return dispatch(h.fingerprint_bits, h.slots_per_bucket, [&]<unsigned B, unsigned S>() {
    const auto f = load<B, S>(path);
    std::size_t yes = 0;
    for (const std::string& k : keys) {
      const bool hit = f.contains(k);
      yes += hit ? 1 : 0;
      std::printf("%s\t%s\n", k.c_str(), hit ? "yes" : "no");
    }
    std::fprintf(stderr, "ccf: %zu of %zu keys may be present\n", yes, keys.size());
    return 0;
  });
}

int cmd_info(const std::string& path) {
  const ccf::detail::file_header h = peek_header(path);
  return dispatch(h.fingerprint_bits, h.slots_per_bucket, [&]<unsigned B, unsigned S>() {
    const auto f = load<B, S>(path);
    const double tags = std::ldexp(1.0, static_cast<int>(B)) - 1.0;
    std::printf(
        "fingerprint bits  %u\nslots per bucket  %u\nbuckets           %zu\n"
        "items             %zu\ncapacity          %zu\nload factor       %.4f\n"
        "bytes             %zu\nbits per item     %.2f\nexpected FPR      %.3g\n"
        "seed              %llu\n",
        B, S, f.num_buckets(), f.size(), f.capacity(), f.load_factor(), f.size_in_bytes(),
        f.size() == 0 ? 0.0 : f.size_in_bytes() * 8.0 / static_cast<double>(f.size()),
        1.0 - std::pow(1.0 - 1.0 / tags, 2.0 * S * f.load_factor()),
        static_cast<unsigned long long>(f.seed()));
    return 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ccf: cuckoo filter files"};
  app.require_subcommand(1);
  std::string keys_path, out, filter_path;
  std::optional<double> fpr;
  unsigned bits = 16, slots = 4;
  std::size_t capacity = 0;
  std::uint64_t seed = ccf::default_seed;
  std::vector<std::string> query_keys;

  auto* build = app.add_subcommand("build", "build a filter file from a file of keys");
  build->add_option("-k,--keys", keys_path, "key file, one key per line ('-': stdin)")->required();
  build->add_option("-o,--out", out, "filter file to write")->required();
  auto* fpr_opt =
      build->add_option("--fpr", fpr, "target false-positive rate (chooses bits, slots)")
          ->check(CLI::Range(1e-9, 0.5));
  build->add_option("--bits", bits, "fingerprint bits: 8, 12, 16 or 32")->excludes(fpr_opt);
  build->add_option("--slots", slots, "slots per bucket: 2, 4 or 8")->excludes(fpr_opt);
  build->add_option("--capacity", capacity, "items the filter must hold (default: the key count)");
  build->add_option("--seed", seed, "hash seed");

  auto* query = app.add_subcommand("query", "look keys up in a filter file");
  query->add_option("filter", filter_path, "filter file")->required();
  query->add_option("keys", query_keys, "keys to look up");
  query->add_option("-k,--keys-file", keys_path, "more keys, one per line ('-': stdin)");

  auto* info = app.add_subcommand("info", "describe a filter file");
  info->add_option("filter", filter_path, "filter file")->required();

  CLI11_PARSE(app, argc, argv);
  try {
    if (*build) return cmd_build(keys_path, out, fpr, bits, slots, capacity, seed);
    if (*query) return cmd_query(filter_path, query_keys, keys_path);
    return cmd_info(filter_path);
  } catch (const cli_error& e) {
    std::fprintf(stderr, "ccf: %s\n", e.what());
    return e.code;
  } catch (const ccf::format_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ccf: %s\n", e.what());
    return 2;
  }
}
