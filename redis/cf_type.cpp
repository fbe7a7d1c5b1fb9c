// ccf — concurrent cuckoo filters.
// redis/cf_type.cpp: the type methods of "ccfcuckoo".
//
// RDB encoding (version 1): an unsigned (0 a filter, 1 a dump still being loaded by CF.LOADCHUNK),
// then two string buffers: the dump's head and body (cf_value.hpp: the module header and the ccf
// filter file; for a pending value, the bytes received so far and an empty string). Everything
// read back (RDB files, RESTORE payloads, full syncs) is checked by load_dump; a bad value makes
// rdb_load return NULL, which Redis reports as an error.
#include <exception>
#include <string>

#include "cf_type.hpp"
#include "cf_value.hpp"

namespace ccf_redis {
namespace {

constexpr std::uint64_t state_filter = 0;
constexpr std::uint64_t state_pending = 1;

/// Reads a string buffer into `out`; false on an I/O error.
bool load_buffer(api::io* rdb, std::string& out) {
  std::size_t len = 0;
  char* buf = api::load_string_buffer(rdb, &len);
  if (api::is_io_error(rdb)) {
    if (buf != nullptr) api::dealloc(buf);
    return false;
  }
  if (buf == nullptr) return false;
  try {
    out.assign(buf, len);
  } catch (...) {
    api::dealloc(buf);
    throw;
  }
  api::dealloc(buf);
  return true;
}

// The methods that cannot report an error are noexcept: running out of memory while saving ends
// the process, as it does in Redis itself.
void* rdb_load(api::io* rdb, int encver) {
  if (encver != cf_encoding_version) return nullptr;
  try {
    const std::uint64_t state = api::load_unsigned(rdb);
    if (api::is_io_error(rdb)) return nullptr;
    std::string head, body, error;
    if (!load_buffer(rdb, head) || !load_buffer(rdb, body)) return nullptr;
    if (state == state_filter) return load_dump(head, body, error);
    if (state == state_pending && body.empty()) {
      cf_value* v = load_first_chunk(head, error, false);
      if (v != nullptr && !v->pending()) {
        cf_value::destroy(v);  // a pending dump is incomplete by definition
        return nullptr;
      }
      return v;
    }
  } catch (const std::exception&) {
  }
  return nullptr;
}

void rdb_save(api::io* rdb, void* value) noexcept {
  const auto* v = static_cast<const cf_value*>(value);
  const dump_bytes d(*v);
  api::save_unsigned(rdb, v->pending() ? state_pending : state_filter);
  api::save_string_buffer(rdb, d.head().data(), d.head().size());
  api::save_string_buffer(rdb, d.body().data(), d.body().size());
}

/// The AOF rewrite: the CF.LOADCHUNK commands of a CF.SCANDUMP of the value.
void aof_rewrite(api::io* aof, api::string* key, void* value) noexcept {
  const dump_bytes d(*static_cast<const cf_value*>(value));
  std::string chunk;
  for (std::size_t offset = 0; offset < d.size();) {
    const std::size_t len = std::min(settings.chunk_size, d.size() - offset);
    d.read(offset, len, chunk);
    offset += len;
    api::emit_aof(aof, "CF.LOADCHUNK", "slb", key, static_cast<long long>(offset + 1), chunk.data(),
                  chunk.size());
  }
}

std::size_t mem_usage(const void* value) noexcept {
  return static_cast<const cf_value*>(value)->memory_usage();
}

void digest(api::digest* md, void* value) noexcept {
  const dump_bytes d(*static_cast<const cf_value*>(value));
  api::digest_add_string_buffer(md, d.head().data(), d.head().size());
  api::digest_add_string_buffer(md, d.body().data(), d.body().size());
  api::digest_end_sequence(md);
}

void free_value(void* value) noexcept {
  cf_value::destroy(static_cast<cf_value*>(value));
}

void* copy(api::string*, api::string*, const void* value) {
  try {
    const auto* v = static_cast<const cf_value*>(value);
    const dump_bytes d(*v);
    std::string error;
    if (v->pending()) return load_first_chunk(d.head(), error, false);
    return load_dump(d.head(), d.body(), error);
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace

bool register_type(api::context* ctx) {
  api::type_methods tm;
  tm.rdb_load = rdb_load;
  tm.rdb_save = rdb_save;
  tm.aof_rewrite = aof_rewrite;
  tm.mem_usage = mem_usage;
  tm.digest = digest;
  tm.free = free_value;
  tm.copy = copy;
  cf_type = api::create_data_type(ctx, cf_type_name, cf_encoding_version, &tm);
  return cf_type != nullptr;
}

}  // namespace ccf_redis
