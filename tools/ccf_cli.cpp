// ccf: build, query and inspect cuckoo filter files from the command line.
//
//   ccf build -k keys.txt -o set.ccf [--fpr 0.001 | --bits 16 --slots 4] [--capacity N]
//             [--threads T] [--seed S]
//   ccf query set.ccf KEY...            (or -k FILE; prints "KEY<TAB>yes|no")
//   ccf info set.ccf
//   ccf --version
//
//   ccf db ...                          the key-value store: tools/ccf_db.cpp
//
// Keys are lines of text (a trailing '\r' is dropped, empty lines skipped; '-' reads standard
// input). Repeated keys are stored once. The filter is built in parallel (ccf::build's bulk
// insert) into the layout of least memory that meets --fpr, written to a temporary file in the
// same directory, flushed to disk and renamed into place only when complete, so a failed build
// never leaves a partial or clobbered file. Exit status: 0 success, 1 usage error, 2 unreadable
// or corrupt input or an I/O error, 3 filter full.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ccf/runtime_filter.hpp>
#include <ccf/version.hpp>

#include "ccf_db.hpp"
#include "cli_support.hpp"

namespace {

using ccf_tool::cli_error;
using ccf_tool::errno_text;
using ccf_tool::message_of;

std::vector<std::string> read_keys(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) throw cli_error(2, "cannot open key file '" + path + "': " + errno_text());
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

ccf::runtime_filter load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw cli_error(2, "cannot open filter file '" + path + "': " + errno_text());
  try {
    return ccf::runtime_filter::load(in);
  } catch (const ccf::format_error& e) {
    throw cli_error(2, "'" + path + "': " + message_of(e));
  }
}

struct build_args {
  std::string keys_path, out;
  std::optional<double> fpr;
  unsigned bits = 16, slots = 4, threads = 0;
  std::size_t capacity = 0;
  std::uint64_t seed = ccf::default_seed;
};

int cmd_build(const build_args& a) {
  const std::vector<std::string> keys = read_keys(a.keys_path);
  if (keys.empty()) throw cli_error(2, "no keys in '" + a.keys_path + "'");
  const std::size_t n = a.capacity != 0 ? a.capacity : keys.size();
  ccf::filter_config c = a.fpr ? ccf::filter_config::for_rate(n, *a.fpr) : ccf::filter_config{};
  if (!a.fpr) {
    c.fingerprint_bits = a.bits;
    c.slots_per_bucket = a.slots;
  }
  c.capacity = n;
  c.seed = a.seed;
  ccf::runtime_filter f(c);
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  const ccf::bulk_result r = f.bulk_insert(views, a.threads, true);
  if (r.refused != 0) {
    throw cli_error(3, "filter full: " + std::to_string(r.refused) + " of " +
                           std::to_string(keys.size()) + " keys did not fit in a filter for " +
                           std::to_string(f.capacity()) + " keys; raise --capacity");
  }
  const std::vector<std::byte> bytes = f.to_bytes();
  ccf_tool::output_file out(a.out);
  out.write(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  out.commit();
  std::fprintf(stderr,
               "ccf: %zu keys -> %s: %zu stored, %zu already answered yes (repeats or false "
               "positives); %u-bit tags, %u slots, %zu bytes, %.2f bits/key, expected FPR %.3g\n",
               keys.size(), a.out.c_str(), r.inserted, r.duplicates, f.fingerprint_bits(),
               f.slots_per_bucket(), f.size_in_bytes(),
               static_cast<double>(f.size_in_bytes()) * 8.0 / static_cast<double>(keys.size()),
               f.expected_fpr());
  return 0;
}

int cmd_query(const std::string& path, const std::vector<std::string>& args,
              const std::string& keys_path) {
  const ccf::runtime_filter f = load(path);
  std::vector<std::string> keys = args;
  if (!keys_path.empty()) {
    auto more = read_keys(keys_path);
    keys.insert(keys.end(), more.begin(), more.end());
  }
  std::size_t yes = 0;
  for (const std::string& k : keys) {
    const bool hit = f.contains(k);
    yes += hit ? 1 : 0;
    std::printf("%s\t%s\n", k.c_str(), hit ? "yes" : "no");
  }
  std::fprintf(stderr, "ccf: %zu of %zu keys may be present\n", yes, keys.size());
  return 0;
}

int cmd_info(const std::string& path) {
  const ccf::runtime_filter f = load(path);
  std::printf(
      "fingerprint bits  %u\nslots per bucket  %u\nbuckets           %zu\nchunks            %zu\n"
      "items             %zu\ncapacity          %zu\nload factor       %.4f\n"
      "bytes             %zu\nbits per item     %.2f\nexpected FPR      %.3g\n"
      "seed              %llu\n",
      f.fingerprint_bits(), f.slots_per_bucket(), f.num_buckets(), f.chunks(), f.size(),
      f.capacity(), f.load_factor(), f.size_in_bytes(),
      f.size() == 0 ? 0.0
                    : static_cast<double>(f.size_in_bytes()) * 8.0 / static_cast<double>(f.size()),
      f.expected_fpr(), static_cast<unsigned long long>(f.seed()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ccf: cuckoo filter files"};
  app.set_version_flag("--version", std::string("ccf ") + ccf::version_string);
  app.require_subcommand(1);
  build_args b;
  std::string filter_path, keys_path;
  std::vector<std::string> query_keys;

  auto* build = app.add_subcommand("build", "build a filter file from a file of keys");
  build->add_option("-k,--keys", b.keys_path, "key file, one key per line ('-': stdin)")
      ->required();
  build->add_option("-o,--out", b.out, "filter file to write")->required();
  auto* fpr_opt =
      build->add_option("--fpr", b.fpr, "target false-positive rate (picks the smallest layout)")
          ->check(CLI::Range(1e-9, 0.5));
  build->add_option("--bits", b.bits, "fingerprint bits: 4, 8, 12, 16 or 32")->excludes(fpr_opt);
  build->add_option("--slots", b.slots, "slots per bucket: 2, 4 or 8")->excludes(fpr_opt);
  build->add_option("--capacity", b.capacity, "keys the filter must hold (default: the key count)");
  build->add_option("--threads", b.threads, "threads that fill the filter (default: all cores)");
  build->add_option("--seed", b.seed, "hash seed");

  auto* query = app.add_subcommand("query", "look keys up in a filter file");
  query->add_option("filter", filter_path, "filter file")->required();
  query->add_option("keys", query_keys, "keys to look up");
  query->add_option("-k,--keys", keys_path, "more keys, one per line ('-': stdin)");

  auto* info = app.add_subcommand("info", "describe a filter file");
  info->add_option("filter", filter_path, "filter file")->required();

  ccf_tool::db_args db_args;
  CLI::App* db = ccf_tool::add_db_commands(app, db_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 1;
  }
  try {
    if (*build) return cmd_build(b);
    if (*query) return cmd_query(filter_path, query_keys, keys_path);
    if (*db) return ccf_tool::run_db_command(*db, db_args);
    return cmd_info(filter_path);
  } catch (const cli_error& e) {
    std::fprintf(stderr, "ccf: %s\n", e.what());
    return e.code;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ccf: %s\n", message_of(e).c_str());
    return 1;
  } catch (const std::length_error& e) {
    std::fprintf(stderr, "ccf: %s\n", message_of(e).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ccf: %s\n", message_of(e).c_str());
    return 2;
  }
}
