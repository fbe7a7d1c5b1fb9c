// ccf — concurrent cuckoo filters.
// redis/dump_commands.cpp: CF.SCANDUMP and CF.LOADCHUNK.
//
// The iterator protocol is RedisBloom's: CF.SCANDUMP key 0 starts, each reply is (iterator, data)
// and the iterator is passed to the next CF.SCANDUMP, until (0, nil); each (iterator, data) pair
// is given to CF.LOADCHUNK in the same order. Here the dump is the bytes of cf_value.hpp cut into
// chunks of the module's CHUNK_SIZE, and the iterator of a chunk is 1 + the offset of its end, so
// CF.LOADCHUNK knows where each chunk goes: the chunk at offset 0 starts a new value (replacing
// the key's filter), the others must follow the bytes already received, and the last one loads
// the filter into that value, so the key keeps an expiry set meanwhile; ccf's loader checks the
// dump in full. A refused first chunk (bad headers, or a whole dump in one chunk that does not
// load) is an error that changes nothing, as a refused RESTORE: the key keeps its filter, or the
// restore under way. A dump found bad at a later chunk deletes the key it had replaced.
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "commands.hpp"

namespace ccf_redis {
namespace {

int scandump(api::context* ctx, api::string** argv, int argc) {
  if (argc != 3) return api::wrong_arity(ctx);
  const std::optional<long long> iter = to_integer(argv[2]);
  if (!iter || *iter < 0) return api::reply_with_error(ctx, "ERR Invalid iterator");
  key_handle key(ctx, argv[1], api::mode_read);
  const auto s = key.lookup();
  if (s == key_handle::state::missing) return api::reply_with_error(ctx, err_not_found);
  if (s != key_handle::state::filter) return reply_not_filter(ctx, s);
  const std::size_t offset = *iter == 0 ? 0 : static_cast<std::size_t>(*iter - 1);
  std::vector<std::byte> chunk;
  const std::size_t size = read_dump_range(*key.value(), offset, settings.chunk_size, chunk);
  api::reply_with_array(ctx, 2);
  if (offset >= size) {
    api::reply_with_long_long(ctx, 0);
    return api::reply_with_null(ctx);
  }
  api::reply_with_long_long(ctx, static_cast<long long>(offset + chunk.size() + 1));
  return api::reply_with_string_buffer(ctx, reinterpret_cast<const char*>(chunk.data()),
                                       chunk.size());
}

/// Appends a chunk to a pending value; when the dump is complete, loads it. An error text, or
/// an empty string; `changed` tells whether the key changed (a bad dump deletes it).
std::string continue_load(key_handle& key, std::size_t offset, std::string_view data,
                          bool& changed) {
  cf_value* v = key.value();
  if (offset != v->pending_bytes().size()) {
    return "ERR invalid chunk: at offset " + std::to_string(offset) + ", expected offset " +
           std::to_string(v->pending_bytes().size());
  }
  if (data.size() > v->pending_total() - offset)
    return "ERR invalid chunk: longer than the dump its header describes";
  if (data.empty()) return {};  // changes nothing: no event, nothing to replicate
  v->append(data);
  changed = true;
  if (v->pending_bytes().size() < v->pending_total()) return {};
  // The filter goes into the key's value, not a new one: a new value would drop the key's expiry.
  std::string error;
  if (!finish_pending(*v, error)) key.remove();  // replicas get the DEL this is
  return error;
}

int loadchunk(api::context* ctx, api::string** argv, int argc) {
  if (argc != 4) return api::wrong_arity(ctx);
  const std::optional<long long> iter = to_integer(argv[2]);
  const std::string_view data = arg(argv[3]);
  if (!iter || *iter < 1 || static_cast<unsigned long long>(*iter) < data.size() + 1)
    return api::reply_with_error(ctx, "ERR Invalid iterator");
  const std::size_t offset = static_cast<std::size_t>(*iter) - 1 - data.size();
  key_handle key(ctx, argv[1], api::mode_read | api::mode_write);
  const auto s = key.lookup();
  if (s == key_handle::state::wrong_type) return reply_not_filter(ctx, s);
  std::string error;
  bool changed = false;
  if (offset == 0 && s == key_handle::state::filter) {
    // As RedisBloom (and RESTORE without REPLACE): a restore into the wrong key, or one a
    // client has just filled, replaced its filter with an OK.
    error = "ERR item exists";
  } else if (offset == 0) {
    cf_value* v = load_first_chunk(data, error);
    if (v != nullptr && !key.set(v)) error = "ERR could not store the filter";
    changed = error.empty();
  } else if (s != key_handle::state::pending) {
    error = "ERR invalid chunk: no CF.LOADCHUNK of this key's first chunk";
  } else {
    error = continue_load(key, offset, data, changed);
  }
  // A replica runs the same chunk to the same end. A bad last chunk deleted the key: the replica
  // and the AOF get a DEL, not the failing chunk (replayed, it would report the error to the
  // master, or stop an AOF from loading).
  if (changed && error.empty()) {
    api::replicate_verbatim(ctx);
    notify(ctx, "cf.loadchunk", argv[1]);
  }
  if (changed && !error.empty()) {
    api::replicate(ctx, "DEL", "s", argv[1]);
    api::notify_keyspace_event(ctx, api::notify_generic, "del", argv[1]);
  }
  if (!error.empty()) return api::reply_with_error(ctx, error.c_str());
  return api::reply_with_simple_string(ctx, "OK");
}

}  // namespace

int dump_commands_register(api::context* ctx) {
  const command_spec scandump_spec{"CF.SCANDUMP",
                                   guarded<scandump>,
                                   "readonly",
                                   3,
                                   api::key_ro | api::key_access,
                                   "Returns the next chunk of the filter's dump"};
  // Like RESTORE: the first chunk makes the key's value (a key holding a filter is refused).
  const command_spec loadchunk_spec{"CF.LOADCHUNK",
                                    guarded<loadchunk>,
                                    "write deny-oom",
                                    4,
                                    api::key_ow | api::key_update,
                                    "Restores a filter from its dump, one chunk at a time"};
  return register_command(ctx, scandump_spec) && register_command(ctx, loadchunk_spec) ? api::ok
                                                                                       : api::err;
}

}  // namespace ccf_redis
