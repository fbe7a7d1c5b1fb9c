// ccf: build, change, query and inspect cuckoo filter files from the command line.
//
//   ccf build  [-k FILE|-] -o OUT [--fpr R | --bits B --slots S] [--grow] [--capacity N]
//              [--threads T] [--seed S] [-z] [-q]
//   ccf add    FILTER [-k FILE|-] [KEY...] [-z] [-q]
//   ccf remove FILTER [-k FILE|-] [KEY...] [-z] [-q]
//   ccf query  FILTER [-k FILE|-] [KEY...] [--all | -v] [-z]
//   ccf info   FILTER
//   ccf db ...                            the key-value store: tools/ccf_db.cpp
//   ccf --version
//
// docs/cli.md is the manual. Keys come from the command line, then from -k FILE ('-': standard
// input; with neither, standard input), one per line (-z: NUL-separated), read piece by piece
// (tools/key_reader.hpp). query streams: it answers each piece of input before it reads the
// next, and prints the keys that may be present, one per line, as grep prints matching lines.
// build, add and remove write the filter to a temporary file in the same directory, sync it and
// rename it over the target only when complete; add and remove lock the filter file
// (tools/filter_io.hpp), so that concurrent changes to one filter all land. Exit status: 0 success
// (query: a key was selected), 1 usage error (query: no key selected), 2 bad input or I/O error
// (query: any error), 3 filter full.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <istream>
#include <memory>
#include <new>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ccf/filter_file.hpp>
#include <ccf/hash.hpp>
#include <ccf/runtime_filter.hpp>
#include <ccf/version.hpp>

#include "ccf_db.hpp"
#include "cli_support.hpp"
#include "filter_io.hpp"
#include "key_reader.hpp"
#include "progress.hpp"

namespace {

using ccf_tool::cli_error;
using ccf_tool::errno_text;
using ccf_tool::fd_holder;
using ccf_tool::load;
using ccf_tool::load_as_read;
using ccf_tool::locked_file;
using ccf_tool::message_of;
using ccf_tool::read_header;
using ccf_tool::save;

/// Where keys come from: the command line, then a file (or standard input).
struct key_args {
  std::vector<std::string> keys;
  std::string path;
  bool null_separated = false;

  /// Whether the file of keys is standard input (no -k, or -k -).
  bool standard_input() const noexcept { return path.empty() || path == "-"; }
};

/// Calls on_key(key) for every key of `a` (progress shown on `shown`). The views given stay valid
/// until drain() runs: before every read of the key file, and at its end. Returns the number of
/// keys.
template <class OnKey>
std::uint64_t for_each_key(const key_args& a, ccf_tool::progress& shown, OnKey&& on_key,
                           const std::function<void()>& drain = {}) {
  std::uint64_t n = 0;
  for (const std::string& k : a.keys) {
    if (!k.empty()) {
      on_key(std::string_view(k));
      ++n;
    }
  }
  if (a.path.empty() && !a.keys.empty()) return n;
  const bool standard_input = a.standard_input();
  const std::string name = standard_input ? "standard input" : a.path;
  fd_holder fd(standard_input ? STDIN_FILENO : ::open(a.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw cli_error(2, "cannot open '" + name + "': " + errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode))
    shown.set_total(static_cast<std::uint64_t>(st.st_size));
  ccf_tool::key_reader reader(ccf_tool::key_reader::from_fd(fd.get(), name),
                              a.null_separated ? '\0' : '\n', name);
  if (drain) reader.before_read(drain);
  std::string_view key;
  while (reader.next(key)) {
    on_key(key);
    shown.update(reader.bytes_read(), ++n);
  }
  if (drain) drain();
  return n;
}

/// The distinct hashes of the keys of `a` (keys with equal hashes are the same key to a filter).
/// For a growing filter (`growing`) they come in the order of mix64 of each, not increasing: its
/// chunk is a hash's top bits, so hashes in increasing order fill one chunk after another, and
/// the first full chunk refused keys while the table was far from full (docs/growing.md). mix64
/// is a bijection: equal hashes still end up next to each other. A static filter's batches and
/// bulk builds group hashes by chunk themselves.
std::vector<std::uint64_t> distinct_hashes(const key_args& a, const char* what, std::uint64_t seed,
                                           bool growing, std::uint64_t& keys) {
  std::vector<std::uint64_t> hashes;
  ccf_tool::progress shown(what);
  keys = for_each_key(a, shown, [&](std::string_view k) {
    hashes.push_back(ccf::runtime_filter::key_hash(k, seed));
  });
  if (growing) {
    std::sort(hashes.begin(), hashes.end(),
              [](std::uint64_t x, std::uint64_t y) { return ccf::mix64(x) < ccf::mix64(y); });
  } else {
    std::sort(hashes.begin(), hashes.end());
  }
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  return hashes;
}

/// What a refusal says: a static filter needs more room (`for_static`), unless it is less than
/// half full, where copies of one key crowd their two buckets and more room cannot help; a
/// growing one doubles whenever it fills and refuses a key only where copies crowd its buckets
/// (docs/growing.md, "When").
std::string full_advice(const ccf::runtime_filter& f, const char* for_static) {
  if (f.growing()) {
    return "a growing filter refuses a key only where copies crowd its buckets: the ninth copy "
           "of a key, a copy that finds no room while the filter is less than half full, any key "
           "while copies keep it less than an eighth full";
  }
  if (f.load_factor() < 0.5) {
    return "a key can be stored at most 2 x " + std::to_string(f.slots_per_bucket()) + " = " +
           std::to_string(2 * f.slots_per_bucket()) + " times (" +
           std::to_string(f.slots_per_bucket()) +
           " for the rare key whose two buckets are one): copies of a key crowd its buckets";
  }
  return for_static;
}

// ---- build ----

struct build_args {
  key_args in;
  std::string out;
  std::optional<double> fpr;
  std::optional<unsigned> bits, slots;
  bool grow = false, quiet = false;
  unsigned threads = 0;
  std::size_t capacity = 0;
  std::uint64_t seed = ccf::default_seed;
};

ccf::filter_config build_config(const build_args& a, std::size_t n) {
  if (a.grow) {
    const ccf::filter_kind kind =
        a.threads == 1 ? ccf::filter_kind::sequential : ccf::filter_kind::concurrent;
    ccf::filter_config c = ccf::filter_config::growing_for_rate(n, a.fpr.value_or(0.001), kind);
    c.seed = a.seed;
    return c;
  }
  ccf::filter_config c = a.fpr ? ccf::filter_config::for_rate(n, *a.fpr) : ccf::filter_config{};
  if (!a.fpr) {
    c.fingerprint_bits = a.bits.value_or(16);
    c.slots_per_bucket = a.slots.value_or(4);
  }
  c.capacity = n;
  c.seed = a.seed;
  return c;
}

/// The table's bits per item held, "-" for an empty filter (whose table is not free).
std::string bits_per_item(const ccf::runtime_filter& f) {
  if (f.size() == 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f",
                static_cast<double>(f.size_in_bytes()) * 8.0 / static_cast<double>(f.size()));
  return text;
}

void describe(const ccf::runtime_filter& f, const std::string& path, const std::string& done) {
  std::fprintf(stderr,
               "ccf: %s -> %s: %zu items, %s%u-bit slots x %u, %zu bytes (%s bits/item), "
               "false-positive rate %s%.3g\n",
               done.c_str(), path.c_str(), f.size(), f.growing() ? "growing, " : "",
               f.fingerprint_bits(), f.slots_per_bucket(), f.size_in_bytes(),
               bits_per_item(f).c_str(), f.growing() ? "<= " : "~", f.expected_fpr());
}

/// Refuses an output file that is the key file (given by -k, or as standard input): the filter
/// would replace the keys it was built from.
void refuse_output_over_keys(const build_args& a) {
  if (a.out == "-") return;
  const bool standard_input = a.in.standard_input();
  struct stat keys {};
  struct stat out {};
  const int found =
      standard_input ? ::fstat(STDIN_FILENO, &keys) : ::stat(a.in.path.c_str(), &keys);
  if (found != 0 || ::stat(a.out.c_str(), &out) != 0 || !S_ISREG(keys.st_mode)) return;
  if (keys.st_dev == out.st_dev && keys.st_ino == out.st_ino) {
    throw cli_error(1, "-o '" + a.out + "' is the file the keys are read from" +
                           (standard_input ? " (standard input)" : "") +
                           ": the filter would replace them; write it to another file");
  }
}

int cmd_build(const build_args& a) {
  refuse_output_over_keys(a);
  ccf_tool::output_file::check_target(a.out);  // before any key is read
  std::uint64_t keys = 0;
  const std::vector<std::uint64_t> hashes = distinct_hashes(a.in, "build", a.seed, a.grow, keys);
  const bool standard_input = a.in.standard_input();
  const std::string from = standard_input ? "on standard input" : "in '" + a.in.path + "'";
  if (hashes.empty() && a.capacity == 0) throw cli_error(2, "no keys " + from);
  const std::size_t n = a.capacity != 0 ? a.capacity : hashes.size();
  ccf::runtime_filter f(build_config(a, n));
  const ccf::bulk_result r = f.bulk_insert_hashes(hashes, a.threads, false);
  if (r.refused != 0) {
    throw cli_error(3, "filter full: " + std::to_string(r.refused) + " of " +
                           std::to_string(hashes.size()) + " distinct keys did not fit in a " +
                           "filter for " + std::to_string(f.capacity()) + " items; " +
                           full_advice(f, "raise --capacity or use --grow"));
  }
  // Replaced under the lock of ccf add and remove: a change under way does not undo the build.
  save(f, a.out, true, a.quiet);
  if (!a.quiet) {
    describe(f, a.out,
             std::to_string(keys) + " keys (" + std::to_string(hashes.size()) + " distinct)");
  }
  return 0;
}

// ---- add, remove ----

struct change_args {
  std::string filter;
  key_args in;
  bool quiet = false;
};

int cmd_add(const change_args& a) {
  ccf_tool::output_file::check_target(a.filter);  // before the keys are read
  const ccf::filter_file_info header = read_header(a.filter);
  std::uint64_t keys = 0;
  const std::vector<std::uint64_t> hashes =
      distinct_hashes(a.in, "add", header.seed, header.alternate == "growing", keys);
  const locked_file lock(a.filter, locked_file::lock::to_change, a.quiet);
  ccf::runtime_filter f = load_as_read(a.filter, lock.fd(), header);
  const std::size_t added = f.insert_many_hashes(hashes);
  if (added != hashes.size()) {
    throw cli_error(3, "filter full: '" + a.filter + "' took " + std::to_string(added) + " of " +
                           std::to_string(hashes.size()) + " distinct keys; it is unchanged (" +
                           full_advice(f, "rebuild it with a larger --capacity, or with --grow") +
                           ")");
  }
  save(f, a.filter);
  if (!a.quiet) describe(f, a.filter, "added " + std::to_string(hashes.size()) + " keys");
  return 0;
}

int cmd_remove(const change_args& a) {
  ccf_tool::output_file::check_target(a.filter);  // before the keys are read
  const ccf::filter_file_info header = read_header(a.filter);
  std::uint64_t keys = 0;
  const std::vector<std::uint64_t> hashes =
      distinct_hashes(a.in, "remove", header.seed, false, keys);
  const locked_file lock(a.filter, locked_file::lock::to_change, a.quiet);
  ccf::runtime_filter f = load_as_read(a.filter, lock.fd(), header);
  std::size_t removed = 0;
  for (std::uint64_t h : hashes)
    removed += f.erase_hash(h) ? 1 : 0;
  save(f, a.filter);
  if (!a.quiet) {
    describe(f, a.filter,
             "removed " + std::to_string(removed) + " keys (" +
                 std::to_string(hashes.size() - removed) + " not in the filter)");
  }
  return 0;
}

// ---- query ----

enum class select { present, absent, all };

struct query_args {
  std::string filter;
  key_args in;
  bool all = false, invert = false;
};

/// Answers keys in batches, writing the selected ones to standard output; before_output() runs
/// before a batch writes anything.
class query_writer {
 public:
  query_writer(const ccf::runtime_filter& f, select which, char end,
               std::function<void()> before_output)
      : f_(f), which_(which), end_(end), before_output_(std::move(before_output)) {}

  void add(std::string_view key) {
    keys_.push_back(key);
    if (keys_.size() == batch) answer();
  }
  /// Answers the keys held (their views must still be valid) and flushes the output.
  void answer() {
    hashes_.resize(keys_.size());
    for (std::size_t i = 0; i < keys_.size(); ++i)
      hashes_[i] = f_.hash_of(keys_[i]);
    f_.contains_many_hashes(hashes_, std::span<bool>(found_.get(), keys_.size()));
    writing_ = false;
    for (std::size_t i = 0; i < keys_.size(); ++i)
      emit(keys_[i], found_[i]);
    keys_.clear();
    if (std::fflush(stdout) != 0) fail();
  }
  bool selected_any() const noexcept { return selected_; }

 private:
  static constexpr std::size_t batch = 4096;

  void emit(std::string_view key, bool present) {
    const bool chosen = which_ == select::all || present == (which_ == select::present);
    if (which_ == select::all ? present : chosen) selected_ = true;
    if (!chosen) return;
    if (!writing_) {
      writing_ = true;
      before_output_();
    }
    if (which_ == select::all && std::fputs(present ? "1\t" : "0\t", stdout) < 0) fail();
    if (std::fwrite(key.data(), 1, key.size(), stdout) != key.size() ||
        std::fputc(end_, stdout) == EOF) {
      fail();
    }
  }
  [[noreturn]] static void fail() {
    throw cli_error(2, "cannot write to standard output: " + errno_text());
  }

  const ccf::runtime_filter& f_;
  select which_;
  char end_;
  std::function<void()> before_output_;
  bool selected_ = false, writing_ = false;
  std::vector<std::string_view> keys_;
  std::vector<std::uint64_t> hashes_;
  std::unique_ptr<bool[]> found_ = std::make_unique<bool[]>(batch);
};

int cmd_query(const query_args& a) {
  const ccf::runtime_filter f = load(a.filter);
  const select which = a.all ? select::all : a.invert ? select::absent : select::present;
  ccf_tool::progress shown("query");
  // Answers written to the terminal the progress line is drawn on would be glued to its end.
  const bool same_terminal = ::isatty(STDOUT_FILENO) == 1;
  query_writer out(f, which, a.in.null_separated ? '\0' : '\n', [&] {
    if (same_terminal) shown.finish();
  });
  for_each_key(
      a.in, shown, [&](std::string_view k) { out.add(k); }, [&] { out.answer(); });
  out.answer();  // keys given on the command line only
  return out.selected_any() ? 0 : 1;
}

// ---- info ----

int cmd_info(const std::string& path) {
  const ccf::runtime_filter f = load(path);
  std::printf("filter            %s\n", f.growing() ? "growing" : "static");
  std::printf(
      "fingerprint bits  %u\nslots per bucket  %u\nbuckets           %zu\n"
      "chunks            %zu\nitems             %zu\ncapacity          %zu\n"
      "load factor       %.4f\nbytes             %zu\nbits per item     %s\n",
      f.fingerprint_bits(), f.slots_per_bucket(), f.num_buckets(), f.chunks(), f.size(),
      f.capacity(), f.load_factor(), f.size_in_bytes(), bits_per_item(f).c_str());
  if (f.growing()) {
    std::printf("doublings         %u\nFPR bound         %.3g\n", f.doublings(), f.expected_fpr());
  } else {
    std::printf("expected FPR      %.3g\n", f.expected_fpr());
  }
  std::printf("seed              %llu\n", static_cast<unsigned long long>(f.seed()));
  ccf_tool::flush_standard_output();
  return 0;
}

// ---- command line ----

/// An empty path (an unset shell variable) is an error, not standard input.
std::string not_empty_path(const std::string& path) {
  return path.empty() ? "an empty path names no file ('-' is standard input)" : "";
}

/// A non-negative integer that fits in 64 bits (--capacity, --seed) or in an unsigned (--bits,
/// --slots, --threads), decimal or 0x hexadecimal: CLI11 alone takes -1 as 2^64 - 1, clamps
/// larger numbers to it, and reads a number with a leading 0 as octal.
std::string unsigned_64(const std::string& text) {
  return ccf_tool::unsigned_error(text, UINT64_MAX);
}
std::string unsigned_32(const std::string& text) {
  return ccf_tool::unsigned_error(text, UINT32_MAX);
}

/// --fpr: a rate from min_fpr to max_fpr. The message gives the bounds as --help does
/// (CLI::Range's message writes them with std::to_string, which shows 1e-9 as 0.000000).
constexpr double min_fpr = 1e-9, max_fpr = 0.5;
CLI::Validator fpr_range() {
  const auto text_of = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return std::string(buf);
  };
  const std::string bounds = text_of(min_fpr) + " to " + text_of(max_fpr);
  return CLI::Validator(
      [bounds](std::string& text) -> std::string {
        // The whole text a decimal number, as unsigned_error asks of integers: no space around
        // it (strtod, under CLI11's own conversion, skips leading white space).
        double value = 0;
        const char* last = text.data() + text.size();
        const auto [end, ec] = std::from_chars(text.data(), last, value);
        if (!text.empty() && end == last && ec == std::errc() && value >= min_fpr &&
            value <= max_fpr) {
          return "";
        }
        return "'" + text + "' is not a false-positive rate from " + bounds;
      },
      "FLOAT in [" + text_of(min_fpr) + " - " + text_of(max_fpr) + "]");
}

void add_key_options(CLI::App* cmd, key_args& in) {
  cmd->add_option("-k,--keys", in.path, "key file, one key per line ('-': standard input)")
      ->check(not_empty_path);
  cmd->add_flag("-z,--null", in.null_separated, "keys are separated by NUL bytes, not newlines");
}

/// The word of the command line given where a subcommand is due that names none (`ccf frob`,
/// `ccf db frob`), or "". The options of ccf and of ccf db take no values: every other word
/// before the subcommand is one.
std::string unknown_subcommand(CLI::App& app, int argc, char** argv) {
  CLI::App* level = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("-")) continue;
    const std::vector<CLI::App*> names = level->get_subcommands({});
    const auto named =
        std::find_if(names.begin(), names.end(), [&](CLI::App* c) { return c->check_name(arg); });
    if (named == names.end()) return arg;
    if ((*named)->get_subcommands({}).empty()) return "";  // the rest are its arguments
    level = *named;
  }
  return "";
}

/// The message of a failed parse. CLI11 checks required arguments before unknown ones, so
/// `ccf build --frob` said "--out is required": a missing argument is reported only when the
/// command line, parsed again with nothing required, has no unknown argument.
std::string parse_error_message(CLI::App& app, int argc, char** argv, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::RequiredError*>(&e) == nullptr) return e.what();
  std::vector<CLI::App*> levels = app.get_subcommands({});
  levels.push_back(&app);
  for (std::size_t i = 0; i < levels.size(); ++i) {
    for (CLI::App* sub : levels[i]->get_subcommands({})) {
      if (std::find(levels.begin(), levels.end(), sub) == levels.end()) levels.push_back(sub);
    }
    for (CLI::Option* opt : levels[i]->get_options())
      opt->required(false);
  }
  app.clear();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& extra) {
    return extra.what();
  } catch (const CLI::ParseError&) {
  }
  return e.what();
}

/// Runs the parsed command; exceptions become messages and exit codes.
template <class F>
int run_reporting(F&& f, int usage_code) {
  try {
    return f();
  } catch (const cli_error& e) {
    std::fprintf(stderr, "ccf: %s\n", e.what());
    return e.code;
  } catch (const ccf::filter_full_error& e) {
    std::fprintf(stderr, "ccf: %s\n", message_of(e).c_str());
    return 3;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ccf: %s\n", message_of(e).c_str());
    return usage_code;
  } catch (const std::length_error& e) {  // a key or value outside the store's limits
    std::fprintf(stderr, "ccf: %s\n", message_of(e).c_str());
    return usage_code;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "ccf: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ccf: %s\n", message_of(e).c_str());
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A file past the size limit (ulimit -f) is a write error, exit 2 with a message and the
  // temporary file removed: SIGXFSZ killed the tool with neither.
  std::signal(SIGXFSZ, SIG_IGN);
  ccf_tool::hold_standard_descriptors();
  CLI::App app{"ccf: cuckoo filter files (docs/cli.md is the manual)"};
  app.set_version_flag("--version", std::string("ccf ") + ccf::version_string);
  app.require_subcommand(1);

  build_args b;
  auto* build = app.add_subcommand("build", "build a filter file from keys");
  add_key_options(build, b.in);
  build->add_option("-o,--out", b.out, "filter file to write ('-': standard output)")
      ->required()
      ->check(ccf_tool::not_empty_output);
  auto* fpr = build->add_option("--fpr", b.fpr,
                                "target false-positive rate: the layout of least memory that "
                                "meets it (default with --grow: 0.001)");
  fpr->check(fpr_range());
  auto* bits = build->add_option("--bits", b.bits, "fingerprint bits: 4, 8, 12, 16 or 32")
                   ->check(unsigned_32);
  auto* slots =
      build->add_option("--slots", b.slots, "slots per bucket: 2, 4 or 8")->check(unsigned_32);
  bits->excludes(fpr);
  slots->excludes(fpr);
  auto* grow = build->add_flag("--grow", b.grow, "a growing filter: doubles when full");
  grow->excludes(bits)->excludes(slots);
  build
      ->add_option("--capacity", b.capacity,
                   "items the filter holds (with --grow: before it first doubles; default: the "
                   "number of distinct keys)")
      ->check(unsigned_64);
  build->add_option("--threads", b.threads, "threads that fill the filter (default: all cores)")
      ->check(unsigned_32);
  build->add_option("--seed", b.seed, "hash seed")->check(unsigned_64);
  build->add_flag("-q,--quiet", b.quiet, "no summary on standard error");

  change_args add_a, remove_a;
  auto* add = app.add_subcommand("add", "add keys to a filter file, in place");
  auto* remove = app.add_subcommand("remove", "remove keys from a filter file, in place");
  for (auto [cmd, args] : {std::pair{add, &add_a}, std::pair{remove, &remove_a}}) {
    cmd->add_option("filter", args->filter, "filter file")->required();
    cmd->add_option("key", args->in.keys, "keys (then those of -k)");
    add_key_options(cmd, args->in);
    cmd->add_flag("-q,--quiet", args->quiet, "no summary on standard error");
  }

  query_args q;
  auto* query = app.add_subcommand(
      "query", "print the keys a filter may hold; exit 0 if any, 1 if none, 2 on error");
  query->add_option("filter", q.filter, "filter file")->required();
  query->add_option("key", q.in.keys, "keys (then those of -k)");
  add_key_options(query, q.in);
  auto* all = query->add_flag("--all", q.all, "print 1<TAB>key or 0<TAB>key for every key");
  query->add_flag("-v,--invert-match", q.invert, "print the keys the filter does not hold")
      ->excludes(all);

  std::string info_path;
  auto* info = app.add_subcommand("info", "describe a filter file");
  info->add_option("filter", info_path, "filter file")->required();

  ccf_tool::db_args db_args;
  CLI::App* db = ccf_tool::add_db_commands(app, db_args);

  const bool querying = argc > 1 && std::string_view(argv[1]) == "query";
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      app.exit(e);
      if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "ccf: error writing standard output: %s\n", std::strerror(errno));
        return 2;
      }
      return 0;
    }
    // One line, as every other error: "ccf: " and CLI11's message.
    const std::string unknown = unknown_subcommand(app, argc, argv);
    if (!unknown.empty()) {
      std::fprintf(stderr, "ccf: unknown subcommand '%s' (ccf --help shows the usage)\n",
                   unknown.c_str());
    } else {
      std::fprintf(stderr, "ccf: %s (ccf --help shows the usage)\n",
                   parse_error_message(app, argc, argv, e).c_str());
    }
    return querying ? 2 : 1;
  }
  return run_reporting(
      [&] {
        if (*build) return cmd_build(b);
        if (*add) return cmd_add(add_a);
        if (*remove) return cmd_remove(remove_a);
        if (*query) return cmd_query(q);
        if (*db) return ccf_tool::run_db_command(*db, db_args);
        return cmd_info(info_path);
      },
      querying ? 2 : 1);
}
