// ccf — concurrent cuckoo filters.
// redis/cf_value.cpp: key values and their dumps.
#include "cf_value.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <new>

namespace ccf_redis {
namespace {

constexpr std::string_view dump_magic = "CCFREDIS";
constexpr std::string_view ccf_magic = "CCFILTER";
constexpr std::uint32_t dump_version = 1;
constexpr std::size_t ccf_word_count_offset = 56;

std::uint64_t read_le(std::string_view bytes, std::size_t offset, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return v;
}

void write_le(std::string& out, std::uint64_t v, std::size_t width) {
  for (std::size_t i = 0; i < width; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string dump_header(const filter_meta& m) {
  std::string h(dump_magic);
  write_le(h, dump_version, 4);
  write_le(h, 0, 4);
  write_le(h, m.expansion, 8);
  write_le(h, m.max_iterations, 8);
  write_le(h, m.deleted, 8);
  return h;
}

/// The size of the ccf filter file starting at `offset`, from its header's word count.
std::optional<std::size_t> ccf_file_size(std::string_view bytes, std::size_t offset,
                                         std::string& error) {
  if (bytes.size() < offset + ccf_header_size) {
    error = "ERR invalid chunk: the first chunk must hold the whole header";
    return std::nullopt;
  }
  if (bytes.substr(offset, ccf_magic.size()) != ccf_magic) {
    error = "ERR invalid chunk: not a ccf filter";
    return std::nullopt;
  }
  const std::uint64_t words = read_le(bytes, offset + ccf_word_count_offset, 8);
  const std::uint64_t max_words =
      (std::numeric_limits<std::size_t>::max() - offset - ccf_header_size - ccf_trailer_size) / 8;
  if (words > max_words) {
    error = "ERR invalid chunk: the header claims an impossible size";
    return std::nullopt;
  }
  return offset + ccf_header_size + 8 * static_cast<std::size_t>(words) + ccf_trailer_size;
}

}  // namespace

cf_value* cf_value::create(filter&& f, const filter_meta& meta) {
  void* p = api::alloc(sizeof(cf_value));
  return new (p) cf_value(std::move(f), meta);
}

cf_value* cf_value::create(const ccf::filter_config& c, const filter_meta& meta) {
  return create(filter(c), meta);
}

cf_value* cf_value::create_pending(std::string_view first_chunk, std::size_t total) {
  void* p = api::alloc(sizeof(cf_value));
  try {
    return new (p) cf_value(first_chunk, total);
  } catch (...) {
    api::dealloc(p);
    throw;
  }
}

cf_value::cf_value(std::string_view first_chunk, std::size_t total)
    : pending_(first_chunk.begin(), first_chunk.end()), total_(total) {}

void cf_value::complete(filter&& f, const filter_meta& meta) {
  filter_.emplace(std::move(f));
  meta_ = meta;
  byte_buffer().swap(pending_);
  total_ = 0;
}

void cf_value::destroy(cf_value* v) noexcept {
  if (v == nullptr) return;
  v->~cf_value();
  api::dealloc(v);
}

std::size_t cf_value::memory_usage() const noexcept {
  std::size_t bytes = sizeof(cf_value) + pending_.capacity();
  if (filter_) {
    // The table in the block Redis's allocator gives it; the rest (kept hashes) as counted.
    const std::size_t table = filter_->size_in_bytes();
    bytes += filter_->memory_in_bytes() - table + table_block_bytes(table);
  }
  return bytes;
}

dump_bytes::dump_bytes(const cf_value& v) {
  if (v.pending()) {
    head_.assign(v.pending_bytes().begin(), v.pending_bytes().end());
  } else {
    head_ = dump_header(v.meta());
    body_ = v.get().to_bytes();
  }
}

void dump_bytes::read(std::size_t offset, std::size_t len, std::string& out) const {
  out.resize(len);
  std::size_t done = 0;
  if (offset < head_.size()) {
    done = std::min(len, head_.size() - offset);
    std::memcpy(out.data(), head_.data() + offset, done);
  }
  if (done < len) {
    const std::size_t from = offset + done - head_.size();
    std::memcpy(out.data() + done, body_.data() + from, len - done);
  }
}

std::size_t read_dump_range(const cf_value& v, std::size_t offset, std::size_t len,
                            std::vector<std::byte>& out) {
  const std::string head = dump_header(v.meta());
  const std::size_t in_head = offset < head.size() ? std::min(len, head.size() - offset) : 0;
  const std::size_t from = std::max(offset, head.size()) - head.size();
  const std::uint64_t file = v.get().read_bytes(from, len - in_head, out);
  if (in_head != 0) {
    const auto* h = reinterpret_cast<const std::byte*>(head.data()) + offset;
    out.insert(out.begin(), h, h + in_head);
  }
  return head.size() + static_cast<std::size_t>(file);
}

std::optional<std::size_t> dump_size(std::string_view prefix, std::string& error) {
  if (prefix.substr(0, dump_magic.size()) == dump_magic) {
    if (prefix.size() < dump_header_size) {
      error = "ERR invalid chunk: the first chunk must hold the whole header";
      return std::nullopt;
    }
    if (read_le(prefix, 8, 4) != dump_version) {
      error = "ERR invalid chunk: unknown dump version";
      return std::nullopt;
    }
    return ccf_file_size(prefix, dump_header_size, error);
  }
  return ccf_file_size(prefix, 0, error);
}

namespace {

/// A loaded dump: its filter and the settings of its module header.
struct dump_contents {
  filter f;
  filter_meta meta;
};

/// The settings of a dump's module header (`head`, empty for a bare ccf file) for its filter;
/// nullopt for values CF.RESERVE never takes (a growing filter's iterations 0 or past 65535; a
/// bare file's max kicks too), and a static filter's iterations that are not its own (a forged
/// header: CF.INFO showed "Max iterations -1"). A static filter's max kicks in a dump with the
/// module's header are taken as its file has them (0 to 65536): a module that did not check them
/// saved such filters, loaded from bare files, in databases that must still load.
/// `growing` and `max_kicks`: the filter's, from its file's header.
std::optional<filter_meta> meta_of(std::string_view head, bool growing, std::uint64_t max_kicks) {
  const auto reserve_takes = [](std::uint64_t iterations) {
    return iterations >= 1 && iterations <= max_max_iterations;
  };
  filter_meta m;
  if (!head.empty()) {
    m.expansion = read_le(head, 16, 8);
    m.max_iterations = read_le(head, 24, 8);
    m.deleted = read_le(head, 32, 8);
    const bool iterations_ok =
        growing ? reserve_takes(m.max_iterations) : m.max_iterations == max_kicks;
    if (!iterations_ok || m.expansion > max_expansion ||
        m.deleted > max_deleted)
      return std::nullopt;
  } else {
    m.expansion = growing ? 1 : 0;
    m.max_iterations = max_kicks;
    if (!reserve_takes(m.max_iterations)) return std::nullopt;
  }
  if (!growing) m.expansion = 0;
  if (growing && m.expansion == 0) m.expansion = 1;
  return m;
}

constexpr const char* bad_module_header = "ERR invalid dump: bad module header";

/// The error for settings meta_of refuses.
std::string meta_error(std::string_view head, std::uint64_t max_kicks) {
  if (!head.empty()) return bad_module_header;
  return "ERR invalid dump: max kicks " + std::to_string(max_kicks) +
         ", where CF.RESERVE takes MAXITERATIONS 1 to " + std::to_string(max_max_iterations);
}

/// Whether `head` is a module header of this module's (magic, version, zero bytes).
bool module_header_ok(std::string_view head) {
  return head.size() == dump_header_size && head.substr(0, dump_magic.size()) == dump_magic &&
         read_le(head, 8, 4) == dump_version && read_le(head, 12, 4) == 0;
}

/// The checks of a dump's two headers that need no table, for its first chunk (which holds them,
/// as dump_size checked): a chunk they refuse changes nothing, where a bad dump found at its last
/// chunk deletes the key.
bool headers_ok(std::string_view chunk, std::string& error) {
  const bool wrapped = chunk.substr(0, dump_magic.size()) == dump_magic;
  const std::string_view head = chunk.substr(0, wrapped ? dump_header_size : 0);
  if (wrapped && !module_header_ok(head)) {
    error = bad_module_header;
    return false;
  }
  try {
    const auto* data = reinterpret_cast<const std::byte*>(chunk.data() + head.size());
    const ccf::filter_file_info info =
        filter::read_header(std::span<const std::byte>(data, ccf_header_size));
    // A growing filter searches growing_max_kicks buckets, whatever its file says.
    const bool growing = info.alternate == "growing";
    const std::uint64_t kicks = growing ? ccf::detail::growing_max_kicks : info.max_kicks;
    if (!meta_of(head, growing, kicks)) {
      error = meta_error(head, kicks);
      return false;
    }
  } catch (const std::exception& e) {
    error = std::string("ERR invalid dump: ") + e.what();
    return false;
  }
  return true;
}

std::optional<dump_contents> read_dump(std::string_view head, std::string_view body,
                                       std::string& error) {
  if (!head.empty() && !module_header_ok(head)) {
    error = bad_module_header;
    return std::nullopt;
  }
  const auto* data = reinterpret_cast<const std::byte*>(body.data());
  try {
    filter f =
        filter::load(std::span<const std::byte>(data, body.size()), ccf::filter_kind::sequential);
    const std::optional<filter_meta> m = meta_of(head, f.growing(), f.max_kicks());
    if (!m) {
      error = meta_error(head, f.max_kicks());
      return std::nullopt;
    }
    return dump_contents{std::move(f), *m};
  } catch (const std::exception& e) {
    error = std::string("ERR invalid dump: ") + e.what();
    return std::nullopt;
  }
}

/// read_dump of a whole dump (a module header and a filter file, or a bare filter file).
std::optional<dump_contents> read_dump(std::string_view bytes, std::string& error) {
  const std::optional<std::size_t> size = dump_size(bytes, error);
  if (!size) return std::nullopt;
  if (*size != bytes.size()) {
    error = "ERR invalid dump: " + std::to_string(bytes.size()) + " bytes where the header says " +
            std::to_string(*size);
    return std::nullopt;
  }
  const bool wrapped = bytes.substr(0, dump_magic.size()) == dump_magic;
  const std::size_t skip = wrapped ? dump_header_size : 0;
  return read_dump(bytes.substr(0, skip), bytes.substr(skip), error);
}

cf_value* create_from(std::optional<dump_contents>&& d) {
  return d ? cf_value::create(std::move(d->f), d->meta) : nullptr;
}

}  // namespace

cf_value* load_dump(std::string_view bytes, std::string& error) {
  return create_from(read_dump(bytes, error));
}

cf_value* load_dump(std::string_view head, std::string_view body, std::string& error) {
  return create_from(read_dump(head, body, error));
}

bool finish_pending(cf_value& v, std::string& error) {
  const byte_buffer& all = v.pending_bytes();
  std::optional<dump_contents> d = read_dump(std::string_view(all.data(), all.size()), error);
  if (!d) return false;
  v.complete(std::move(d->f), d->meta);
  return true;
}

cf_value* load_first_chunk(std::string_view chunk, std::string& error, bool check_headers) {
  const std::optional<std::size_t> size = dump_size(chunk, error);
  if (!size || (check_headers && !headers_ok(chunk, error))) return nullptr;
  if (*size == chunk.size()) return load_dump(chunk, error);
  if (*size < chunk.size()) {
    error = "ERR invalid chunk: longer than the dump its header describes";
    return nullptr;
  }
  return cf_value::create_pending(chunk, *size);
}

}  // namespace ccf_redis
