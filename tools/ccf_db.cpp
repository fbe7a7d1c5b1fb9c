// ccf db: the key-value store (ccf::kv::store) from the command line.
//
//   ccf db put DB KEY VALUE        (or --value-file F, "-": standard input; durable on exit 0)
//   ccf db get DB KEY              the value's bytes on standard output; exit 1 when absent
//   ccf db del DB KEY              exit 1 when absent
//   ccf db stats DB
//   ccf db compact DB
//   ccf db import DB FILE [--name N] [--chunk-size B]   (FILE "-": standard input, with --name)
//   ccf db export DB OUT [--name N]
//   ccf db rm DB NAME | --unlisted the file, and the chunks no other file lists
//   ccf db --recover ...           open a store whose log is damaged in the middle (see below)
//
// import stores FILE as chunks of B bytes (default 4096) keyed by their content hash
// ("c:" + 32 hex digits of XXH3-128; a chunk seen before is stored once, and a different chunk
// with the same hash gets a suffixed key), and then a manifest under "m:" + N (default: FILE's
// base name): its size, its XXH3-128 and its chunk keys in order (a file of more chunks than a
// manifest of the largest value can list, 30,678,335, is refused: a larger B takes fewer). export
// writes the chunks back in order to a temporary file next to OUT, checks size and hash against
// the manifest, syncs it and renames it to OUT ("-": standard output), and syncs OUT's directory;
// an OUT in the store's own directory is refused, as it would replace a file of the store.
// Every command syncs the store before it exits 0.
// A store whose log has intact records after a bad one is refused (exit 2) unless --recover is
// given, which replays the whole log, checking every record (a record that rotted below the
// index snapshot's position is found then, not by the command that reads it); a recovery that
// cuts the log says so on standard error, and where the rest was kept.
#include "ccf_db.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>

#include <ccf/kv/store.hpp>

namespace ccf_tool {
namespace {

std::string hex128(const XXH128_hash_t& h) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::string base_name(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Opens the store. A log damaged in the middle (intact records after a bad one) is refused
/// unless `recover` (--recover) is given; what a recovery cut off is said on standard error.
std::unique_ptr<ccf::kv::store> open_store(const std::string& dir, bool create, bool recover) {
  ccf::kv::options o;
  o.create_if_missing = create;
  o.strict_recovery = !recover;
  o.verify_log = recover;
  o.sync = ccf::kv::durability::none;  // each command syncs once before it exits
  std::unique_ptr<ccf::kv::store> s;
  try {
    s = ccf::kv::store::open(dir, o);
  } catch (const ccf::kv::damaged_log_error& e) {  // only thrown without --recover
    throw cli_error(
        2,
        message_of(e) +
            " (--recover cuts the log at its first bad record and keeps a copy of what follows)");
  } catch (const ccf::kv::corrupt_error& e) {  // a bad log header: nothing --recover can cut
    throw cli_error(2, message_of(e));
  } catch (const std::invalid_argument& e) {  // no store, nor a place to create one
    throw cli_error(2, message_of(e));
  }
  const ccf::kv::open_report& r = s->opened();
  if (r.snapshot_discarded) {
    std::fprintf(stderr,
                 "ccf: the index snapshot of '%s' names a record that is not valid: the log was "
                 "replayed without it\n",
                 dir.c_str());
  }
  if (r.truncated_bytes != 0) {
    std::fprintf(stderr, "ccf: recovery cut %llu bytes off the log of '%s'",
                 static_cast<unsigned long long>(r.truncated_bytes), dir.c_str());
    if (r.dropped_records != 0) {
      std::fprintf(stderr, ", dropping %llu intact records after a bad one",
                   static_cast<unsigned long long>(r.dropped_records));
    }
    if (!r.dropped_file.empty()) std::fprintf(stderr, "; kept in %s", r.dropped_file.c_str());
    std::fprintf(stderr, "\n");
  }
  if (r.lost_synced_bytes != 0) {
    std::fprintf(stderr,
                 "ccf: the log of '%s' lost its last %llu synced bytes (its index snapshot was "
                 "written after they were synced): the records there are gone\n",
                 dir.c_str(), static_cast<unsigned long long>(r.lost_synced_bytes));
  }
  return s;
}

/// Stores one chunk under its content key and returns that key.
std::string put_chunk(ccf::kv::store& s, std::string_view chunk, std::size_t& stored) {
  const std::string base = "c:" + hex128(XXH3_128bits(chunk.data(), chunk.size()));
  std::string key = base, existing;
  for (unsigned n = 1;; ++n) {
    if (!s.get(key, existing)) break;
    if (existing == chunk) return key;     // a chunk seen before
    key = base + ":" + std::to_string(n);  // another chunk with the same hash
  }
  s.put(key, chunk);
  ++stored;
  return key;
}

struct manifest {
  std::uint64_t size = 0;
  std::string hash;
  std::vector<std::string> chunks;
};

/// The most bytes of a manifest before its chunk keys: the first line, a 64-bit size, the hash.
constexpr std::size_t manifest_header_max = 15 + 21 + 33;
/// The fewest bytes a chunk key takes in a manifest: "c:", 32 hex digits and a newline.
constexpr std::size_t manifest_line_min = 35;
/// The most chunks a manifest lists: it is one value, of at most max_value_size bytes.
constexpr std::uint64_t manifest_max_lines =
    (ccf::kv::max_value_size - manifest_header_max) / manifest_line_min;  // 30,678,335

/// The first line of every manifest.
constexpr std::string_view manifest_magic = "ccf-manifest 1\n";

/// The manifest of a file of `size` bytes and XXH3-128 `hash`, whose chunk keys are `lines`
/// (each ending in a newline).
std::string encode(std::uint64_t size, const std::string& hash, const std::string& lines) {
  return std::string(manifest_magic) + std::to_string(size) + "\n" + hash + "\n" + lines;
}

/// A file whose manifest would be longer than the largest value: refused before its chunks are
/// stored where its size is known, else as soon as the manifest passes that size.
cli_error manifest_too_long(const std::string& shown, std::size_t chunk_size) {
  return cli_error(1, shown + " is too large to import in chunks of " + std::to_string(chunk_size) +
                          " bytes: a manifest lists at most " + std::to_string(manifest_max_lines) +
                          " chunks (a larger --chunk-size takes fewer)");
}

/// "/dev/stdin" for reading "-", once standard input is known to be open for reading: the tool
/// puts a write-only /dev/null on a closed one (hold_standard_descriptors), which reopening
/// /dev/stdin would read as an empty file.
std::string standard_input_path() {
  const int mode = ::fcntl(0, F_GETFL);
  if (mode == -1 || (mode & O_ACCMODE) == O_WRONLY) {
    throw cli_error(2, "cannot read standard input: it is closed");
  }
  return "/dev/stdin";
}

manifest decode(const std::string& name, const std::string& text) {
  // A value of the user's under "m:" without a newline was called a damaged manifest.
  if (!text.starts_with(manifest_magic)) throw cli_error(2, "'" + name + "' is not a manifest");
  manifest m;
  std::size_t pos = 0;
  auto line = [&]() -> std::string {
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) throw cli_error(2, "the manifest of '" + name + "' is damaged");
    std::string l = text.substr(pos, nl - pos);
    pos = nl + 1;
    return l;
  };
  line();  // manifest_magic
  const std::string size = line();
  const char* last = size.data() + size.size();
  const auto [end, ec] = std::from_chars(size.data(), last, m.size);
  if (size.empty() || end != last || ec != std::errc()) {
    throw cli_error(2, "the manifest of '" + name + "' is damaged (its size is '" + size + "')");
  }
  m.hash = line();
  while (pos < text.size()) {
    std::string key = line();
    // Every chunk key import writes is "c:" and a hash (a suffix after a collision).
    if (!key.starts_with("c:") || key.size() > ccf::kv::max_key_size) {
      throw cli_error(
          2, "the manifest of '" + name + "' is damaged (a chunk key '" + key.substr(0, 80) + "')");
    }
    m.chunks.push_back(std::move(key));
  }
  return m;
}

/// Reads up to `want` bytes of `in` into `chunk`, which grows as they come (a large --chunk-size
/// costs no memory for a small file or pipe); returns how many were read.
std::size_t read_chunk(std::istream& in, std::string& chunk, std::size_t want) {
  constexpr std::size_t piece = std::size_t{1} << 20;
  chunk.clear();
  while (chunk.size() < want && in) {
    const std::size_t old = chunk.size();
    const std::size_t n = std::min(piece, want - old);
    chunk.resize(old + n);
    in.read(chunk.data() + old, static_cast<std::streamsize>(n));
    chunk.resize(old + static_cast<std::size_t>(in.gcount()));
  }
  return chunk.size();
}

/// Refuses a file name whose manifest key ("m:" and the name) no store can hold: before, an
/// import stored every chunk first and then failed on the manifest ("a key must have ..."),
/// leaving the chunks behind.
void check_name_length(const std::string& name) {
  if (name.size() + 2 > ccf::kv::max_key_size) {
    throw cli_error(1, "a name must have at most " + std::to_string(ccf::kv::max_key_size - 2) +
                           " bytes (its manifest's key is \"m:\" and the name), not " +
                           std::to_string(name.size()));
  }
}

int cmd_import(const std::string& dir, const std::string& path, std::string name,
               std::size_t chunk_size, bool recover) {
  check_name_length(name);
  if (chunk_size == 0 || chunk_size > ccf::kv::max_value_size) {
    throw cli_error(1, "--chunk-size: " + std::to_string(chunk_size) +
                           " is not an integer from 1 to " +
                           std::to_string(ccf::kv::max_value_size));
  }
  // "-" is standard input, read to its end (a pipe; a redirected file up to its size), and needs
  // a --name: every import from it would otherwise go under one name.
  const bool standard_input = path == "-";
  if (standard_input && name.empty()) {
    throw cli_error(1, "an import from standard input ('-') needs --name");
  }
  const std::string source = standard_input ? standard_input_path() : path;
  const std::string shown = standard_input ? "standard input" : "'" + path + "'";
  std::ifstream in(source, std::ios::binary);
  if (!in) throw cli_error(2, "cannot open " + shown + ": " + errno_text());
  if (std::filesystem::is_directory(source)) throw cli_error(2, shown + " is a directory");
  if (name.empty()) name = base_name(path);
  check_name_length(name);
  // A regular file is read up to its size now: one that grows meanwhile (the store's own log)
  // cannot make the import read forever. One that says it holds 0 bytes (a file of /proc or
  // /sys) is read to its end: its size was imported as an empty file.
  std::error_code ec;
  std::uint64_t left = std::filesystem::is_regular_file(source, ec)
                           ? std::filesystem::file_size(source, ec)
                           : std::numeric_limits<std::uint64_t>::max();
  if (ec) throw cli_error(2, "cannot read the size of " + shown + ": " + ec.message());
  if (left == 0) left = std::numeric_limits<std::uint64_t>::max();
  if (left != std::numeric_limits<std::uint64_t>::max() &&
      left / chunk_size + (left % chunk_size != 0) > manifest_max_lines) {
    throw manifest_too_long(shown, chunk_size);
  }
  auto s = open_store(dir, true, recover);
  std::uint64_t size = 0;
  std::string lines;  // the chunk keys, one a line
  std::size_t chunks = 0, stored = 0;
  XXH3_state_t state{};
  XXH3_128bits_reset(&state);
  std::string chunk;
  while (left != 0) {
    const std::size_t got = read_chunk(in, chunk, std::min<std::uint64_t>(chunk_size, left));
    if (got == 0) break;
    left -= got;
    const std::string_view piece(chunk.data(), got);
    XXH3_128bits_update(&state, piece.data(), piece.size());
    size += got;
    const std::string key = put_chunk(*s, piece, stored);
    if (chunks == manifest_max_lines ||
        lines.size() + key.size() + 1 > ccf::kv::max_value_size - manifest_header_max) {
      throw manifest_too_long(shown, chunk_size);
    }
    lines += key;
    lines += '\n';
    ++chunks;
  }
  if (in.bad()) throw cli_error(2, "error reading " + shown + ": " + errno_text());
  s->sync();  // the chunks are durable before the manifest that names them
  s->put("m:" + name, encode(size, hex128(XXH3_128bits_digest(&state)), lines));
  s->sync();
  std::fprintf(stderr, "ccf: %s -> %s as '%s': %llu bytes in %zu chunks (%zu new)\n",
               standard_input ? "standard input" : path.c_str(), dir.c_str(), name.c_str(),
               static_cast<unsigned long long>(size), chunks, stored);
  s->close();
  return 0;
}

/// The manifest to export: `name`, or the store's only one (a key under "m:" whose value is no
/// manifest, a key of the user's, is not counted).
std::string manifest_name(ccf::kv::store& s, const std::string& name) {
  if (!name.empty()) return name;
  std::vector<std::string> names;
  s.for_each([&](std::string_view k, std::string_view v) {
    if (k.starts_with("m:") && v.starts_with(manifest_magic)) names.emplace_back(k.substr(2));
  });
  if (names.size() == 1) return names[0];
  std::string list;
  for (const std::string& n : names)
    list += (list.empty() ? "" : ", ") + n;
  throw cli_error(1, names.empty() ? "the store holds no imported file"
                                   : "the store holds " + std::to_string(names.size()) +
                                         " files; say which with --name (" + list + ")");
}

/// Refuses an output path whose directory is the store's: `ccf db export DB DB/log` would replace
/// the live log with the export. The directories are compared by device and inode, so another
/// spelling of the store's path or a symbolic link to it is refused too.
void check_outside_store(const std::string& dir, const std::string& out) {
  if (out == "-") return;
  const std::size_t slash = out.find_last_of('/');
  const std::string parent = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : out.substr(0, slash);
  struct stat store {};
  struct stat target {};
  if (::stat(dir.c_str(), &store) == 0 && ::stat(parent.c_str(), &target) == 0 &&
      store.st_dev == target.st_dev && store.st_ino == target.st_ino) {
    throw cli_error(2, "cannot export to '" + out + "': it is in the directory of the store '" +
                           dir + "' (a file of the store is never replaced)");
  }
}

int cmd_export(const std::string& dir, const std::string& out, const std::string& wanted,
               bool recover) {
  check_name_length(wanted);
  check_outside_store(dir, out);
  auto s = open_store(dir, false, recover);
  const std::string name = manifest_name(*s, wanted);
  const std::optional<std::string> text = s->get("m:" + name);
  if (!text) throw cli_error(1, "no file '" + name + "' in the store");
  const manifest m = decode(name, *text);
  output_file dest(out);
  XXH3_state_t state{};
  XXH3_128bits_reset(&state);
  std::uint64_t size = 0;
  std::string chunk;
  for (const std::string& key : m.chunks) {
    if (!s->get(key, chunk)) throw cli_error(2, "chunk '" + key + "' of '" + name + "' is missing");
    XXH3_128bits_update(&state, chunk.data(), chunk.size());
    size += chunk.size();
    dest.write(chunk);
  }
  if (size != m.size || hex128(XXH3_128bits_digest(&state)) != m.hash) {
    throw cli_error(2, "the chunks of '" + name + "' do not add up to the file imported");
  }
  dest.commit();
  s->close();
  return 0;
}

/// Whether `key` is a chunk key import writes: "c:", 32 hex digits, and ":N" after a collision.
bool is_chunk_key(std::string_view key) {
  if (key.size() < 34 || !key.starts_with("c:")) return false;
  const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (!std::all_of(key.begin() + 2, key.begin() + 34, hex)) return false;
  const std::string_view rest = key.substr(34);
  return rest.empty() ||
         (rest.size() > 1 && rest[0] == ':' &&
          std::all_of(rest.begin() + 1, rest.end(), [](char c) { return c >= '0' && c <= '9'; }));
}

/// Removes the imported file `name` ("" for none), then every chunk key that no manifest lists:
/// the file's own chunks that no other file shares, and those an import that failed or was killed
/// left behind. Every other manifest is read first: one that cannot be read (damaged, or a key of
/// the user's under "m:") stops the command before it changes anything, as its chunks are not
/// known. The manifest goes first, then the chunks, so a command killed meanwhile leaves only
/// unlisted chunks, which the next rm frees. `compact` then gives the space back.
int cmd_rm(const std::string& dir, const std::string& name, bool recover) {
  check_name_length(name);
  auto s = open_store(dir, false, recover);
  if (!name.empty() && !s->contains("m:" + name))
    throw cli_error(1, "no file '" + name + "' in the store");
  std::unordered_set<std::string> listed;
  std::vector<std::string> chunks;
  s->for_each([&](std::string_view k, std::string_view v) {
    if (k.starts_with("m:") && (name.empty() || k.substr(2) != name)) {
      try {
        for (std::string& c : decode(std::string(k.substr(2)), std::string(v)).chunks)
          listed.insert(std::move(c));
      } catch (const cli_error& e) {
        throw cli_error(2, e.what() + std::string("; nothing was removed (its chunks are not "
                                                  "known: remove it with `ccf db del` first)"));
      }
    } else if (is_chunk_key(k)) {
      chunks.emplace_back(k);
    }
  });
  if (!name.empty()) s->erase("m:" + name);
  std::size_t freed = 0;
  for (const std::string& k : chunks) {
    if (!listed.contains(k)) freed += s->erase(k) ? 1 : 0;
  }
  s->close();
  if (name.empty()) {
    std::fprintf(stderr, "ccf: removed %zu chunks no file lists\n", freed);
  } else {
    std::fprintf(stderr, "ccf: removed '%s' and %zu chunks no other file lists\n", name.c_str(),
                 freed);
  }
  return 0;
}

int cmd_stats(const std::string& dir, bool recover) {
  auto s = open_store(dir, false, recover);
  const ccf::kv::store_stats st = s->stats();
  const ccf::kv::open_report& r = s->opened();
  std::printf(
      "keys              %zu\nindex buckets     %zu\nindex bytes       %zu\n"
      "index load        %.4f\nindex bytes/key   %.2f\nindex doublings   %zu\n"
      "log bytes         %llu\nlive bytes        %llu\nrecords           %llu\n"
      "opened from       %s, %llu records replayed\n",
      st.keys, st.index_buckets, st.index_bytes, st.index_load, st.index_bytes_per_key, st.rehashes,
      static_cast<unsigned long long>(st.log_bytes), static_cast<unsigned long long>(st.live_bytes),
      static_cast<unsigned long long>(st.records), r.snapshot_used ? "snapshot" : "log",
      static_cast<unsigned long long>(r.replayed_records));
  if (r.truncated_bytes != 0) {
    // A cut in the middle of the log drops intact records: it is no torn tail.
    // So is a cut below a position the log was synced up to: the bytes are kept.
    const std::string what =
        r.dropped_records != 0
            ? "with " + std::to_string(r.dropped_records) + " intact records after a bad one"
            : (r.dropped_file.empty() ? "of torn tail" : "of damaged records");
    std::printf("recovered         %llu bytes %s cut off%s%s\n",
                static_cast<unsigned long long>(r.truncated_bytes), what.c_str(),
                r.dropped_file.empty() ? "" : "; kept in ", r.dropped_file.c_str());
  }
  if (r.lost_synced_bytes != 0) {
    std::printf("lost              %llu synced bytes at the log's end\n",
                static_cast<unsigned long long>(r.lost_synced_bytes));
  }
  flush_standard_output();
  s->close();
  return 0;
}

/// An empty --name (an unset shell variable) is a usage error: taken as no name, it imported under
/// the file's name or exported "the only one".
std::string not_empty_name(const std::string& name) {
  return name.empty() ? "an empty name names no imported file" : "";
}

}  // namespace

CLI::App* add_db_commands(CLI::App& app, db_args& a) {
  auto* db = app.add_subcommand("db", "the key-value store (ccf::kv)");
  db->require_subcommand(1);
  db->add_flag("--recover", a.recover,
               "open a store whose log is damaged in the middle: replay the whole log, checking "
               "every record, and cut it at the first bad one, keeping a copy of the rest in "
               "DB/dropped-<offset> (without it such a store is refused)");
  auto* put = db->add_subcommand("put", "set a key (durable when the command succeeds)");
  put->add_option("db", a.dir, "store directory (created if missing)")->required();
  put->add_option("key", a.key, "key")->required();
  auto* value = put->add_option("value", a.value, "value");
  put->add_option("--value-file", a.value_file,
                  "read the value from this file ('-': standard input)")
      ->excludes(value);
  for (const char* cmd : {"get", "del"}) {
    auto* c = db->add_subcommand(cmd, std::string(cmd) == "get"
                                          ? "print a key's value (exit 1 when absent)"
                                          : "remove a key (exit 1 when absent)");
    c->add_option("db", a.dir, "store directory")->required();
    c->add_option("key", a.key, "key")->required();
  }
  for (const char* cmd : {"stats", "compact"}) {
    auto* c = db->add_subcommand(cmd, std::string(cmd) == "stats"
                                          ? "describe the store"
                                          : "rewrite the live records to a new log");
    c->add_option("db", a.dir, "store directory")->required();
  }
  auto* imp = db->add_subcommand("import", "store a file as content-addressed chunks");
  imp->add_option("db", a.dir, "store directory (created if missing)")->required();
  imp->add_option("file", a.file, "file to import ('-': standard input, with --name)")->required();
  imp->add_option("--name", a.name, "name to store it under (default: the file's name)")
      ->check(not_empty_name);
  imp->add_option("--chunk-size", a.chunk_size, "bytes per chunk (default 4096)")
      ->check(
          [](const std::string& text) { return unsigned_error(text, ccf::kv::max_value_size, 1); });
  auto* exp = db->add_subcommand("export", "write an imported file back, byte for byte");
  exp->add_option("db", a.dir, "store directory")->required();
  exp->add_option("out", a.file, "file to write ('-': standard output)")
      ->required()
      ->check(not_empty_output);
  exp->add_option("--name", a.name, "which imported file (default: the only one)")
      ->check(not_empty_name);
  auto* rm = db->add_subcommand(
      "rm", "remove an imported file, and the chunks no other imported file lists");
  rm->add_option("db", a.dir, "store directory")->required();
  auto* rm_name = rm->add_option("name", a.name, "the imported file's name")->check(not_empty_name);
  auto* unlisted = rm->add_flag("--unlisted", a.unlisted,
                                "no file: only the chunks no file lists (a failed import's)");
  unlisted->excludes(rm_name);
  for (CLI::App* c : db->get_subcommands({})) {
    c->fallthrough();  // --recover after the subcommand too, and its help says so
    c->footer("--recover: open a store whose log is damaged in the middle (ccf db --help)");
  }
  return db;
}

namespace {

int run_db_subcommand(CLI::App& db, const db_args& a) {
  const std::string cmd = db.get_subcommands().front()->get_name();
  if (cmd == "import") return cmd_import(a.dir, a.file, a.name, a.chunk_size, a.recover);
  if (cmd == "export") return cmd_export(a.dir, a.file, a.name, a.recover);
  if (cmd == "stats") return cmd_stats(a.dir, a.recover);
  if (cmd == "rm") {
    if (!a.unlisted && a.name.empty())
      throw std::invalid_argument("db rm needs the imported file's NAME, or --unlisted");
    return cmd_rm(a.dir, a.name, a.recover);
  }
  // A key no store can hold is refused before the store is opened: a put created the store
  // first, and a get exited 1 with no message, as for an absent key.
  if ((cmd == "put" || cmd == "get" || cmd == "del") &&
      (a.key.empty() || a.key.size() > ccf::kv::max_key_size)) {
    throw std::invalid_argument("a key must have 1 to " + std::to_string(ccf::kv::max_key_size) +
                                " bytes, not " + std::to_string(a.key.size()));
  }
  const CLI::App* put = db.get_subcommand("put");
  if (cmd == "put" && put->count("value") == 0 && put->count("--value-file") == 0) {
    throw std::invalid_argument("db put needs a VALUE or --value-file (\"\" for an empty value)");
  }
  const bool from_file = cmd == "put" && put->count("--value-file") != 0;
  if (from_file && a.value_file.empty()) {
    throw std::invalid_argument("--value-file: an empty path names no file");
  }
  // The value first: a value that cannot be read creates no store.
  const std::string value =
      cmd != "put" ? std::string()
      : from_file  ? read_file(a.value_file == "-" ? standard_input_path() : a.value_file,
                              ccf::kv::max_value_size)
                  : a.value;
  auto s = open_store(a.dir, cmd == "put", a.recover);
  int rc = 0;
  if (cmd == "put") {
    s->put(a.key, value);
  } else if (cmd == "get") {
    std::string v;
    if (s->get(a.key, v)) {
      std::fwrite(v.data(), 1, v.size(), stdout);
      if (std::fflush(stdout) != 0) throw cli_error(2, "cannot write the value: " + errno_text());
    } else {
      rc = 1;
    }
  } else if (cmd == "del") {
    rc = s->erase(a.key) ? 0 : 1;
  } else if (cmd == "compact") {
    s->compact();
  }
  s->close();
  return rc;
}

}  // namespace

int run_db_command(CLI::App& db, const db_args& a) {
  try {
    return run_db_subcommand(db, a);
  } catch (const ccf::kv::corrupt_error& e) {
    // A record found bad where it was read (a get, a compaction): only a replay of the whole log
    // checks every record, and cuts the log at the first bad one.
    if (a.recover) throw;
    throw cli_error(2, message_of(e) +
                           " (--recover replays the whole log, cuts it at its first bad record "
                           "and keeps a copy of what follows)");
  }
}

}  // namespace ccf_tool
