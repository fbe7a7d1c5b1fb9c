// ccf — concurrent cuckoo filters.
// redis/commands.cpp: CF.RESERVE, CF.ADD, CF.ADDNX, CF.INSERT, CF.INSERTNX, CF.EXISTS,
// CF.MEXISTS, CF.DEL, CF.COUNT, CF.INFO (the dump commands are in dump_commands.cpp).
//
// Every write that changes a filter is replicated: insertion is deterministic (ccf's breadth-first
// search, no randomness), so a replica ends with the same table. A command that makes a filter
// replicates the CF.RESERVE that makes the same one with every option spelled out (capacity,
// EXPANSION, MAXITERATIONS, ERROR), then, when it also added items, itself: a replica, or a server
// loading the AOF, would otherwise make the filter from its own DEFAULT_CAPACITY and DEFAULT_ERROR.
// Other writes that change a filter go verbatim. A write that changes nothing is not replicated (a
// replica would replay a failure). A write that changes a filter also sends a keyspace event
// named after the command ("cf.add" for CF.ADD and CF.ADDNX, "cf.insert" for CF.INSERT and
// CF.INSERTNX).
#include <algorithm>
#include <array>
#include <charconv>
#include <exception>
#include <memory>
#include <string_view>
#include <vector>

#include "commands.hpp"

namespace ccf_redis {

int dump_commands_register(api::context* ctx);

namespace {

constexpr std::uint64_t small_table_bytes = 64 << 10;

struct reserve_options {
  std::size_t capacity = 0;
  std::optional<unsigned> bucket_size;
  std::uint64_t max_iterations = settings.default_max_iterations;
  std::uint64_t expansion = settings.default_expansion;
  double error = settings.default_error;
};

/// Throws reply_error (OOM) when maxmemory is set and a new table of `bytes` would take used
/// memory past it. deny-oom refuses a command only once memory is past maxmemory already, so one
/// CF.RESERVE could allocate gigabytes beyond it (and evict every other key, or end the server).
/// Used memory is what Redis compares with maxmemory: used_memory less the replication and AOF
/// buffers (mem_not_counted_for_evict), which a replica that reads slowly can make large. Under
/// an allkeys-* policy Redis makes room for a write by evicting any key, so only a table that
/// does not fit once every key is gone (past used_memory_startup) is refused: a cache that is
/// full, as such a cache always is, refused every new filter that did not fit in its last few
/// bytes. volatile-* policies evict only keys with a time to live, so they get the full check.
/// Not for the master's commands on a replica, nor while loading: Redis applies those whatever
/// its memory, and a refusal would make the replica or the restarted server differ.
/// A table under small_table_bytes is left to deny-oom, which refuses writes once used memory is
/// past maxmemory, as a SET of a small value is: the INFO this check makes costs as much as a
/// CF.ADD that makes a filter of the default size (those ran 40 % slower with maxmemory set).
void check_maxmemory(api::context* ctx, std::uint64_t bytes) {
  if (bytes < small_table_bytes) return;
  const int flags = api::get_context_flags(ctx);
  if ((flags & api::ctx_flags_maxmemory) == 0) return;  // no INFO to make without maxmemory
  if ((flags & (api::ctx_flags_replicated | api::ctx_flags_loading)) != 0) return;
  api::server_info* info = api::get_server_info(ctx, "memory");
  if (info == nullptr) return;
  // Each call sets its own error flag (ok when the field is there).
  int no_most = api::ok, no_used = api::ok, no_buffers = api::ok, no_startup = api::ok;
  const unsigned long long most = api::server_info_get_field_unsigned(info, "maxmemory", &no_most);
  unsigned long long used = api::server_info_get_field_unsigned(info, "used_memory", &no_used);
  const unsigned long long buffers =
      api::server_info_get_field_unsigned(info, "mem_not_counted_for_evict", &no_buffers);
  const unsigned long long startup =
      api::server_info_get_field_unsigned(info, "used_memory_startup", &no_startup);
  // volatile-* policies evict only keys with a time to live: with none, they evict nothing.
  const char* policy = api::server_info_get_field_c(info, "maxmemory_policy");
  const bool evicts_any_key = policy != nullptr && std::string_view(policy).starts_with("allkeys-");
  api::free_server_info(ctx, info);
  if (no_most != api::ok || no_used != api::ok || most == 0) return;
  if (no_buffers == api::ok) used -= std::min(buffers, used);
  if (evicts_any_key && no_startup == api::ok) {
    used = std::min(startup, used);
  }
  if (used + bytes <= most) return;
  throw reply_error("OOM a filter of " + std::to_string(bytes) + " bytes would take used memory (" +
                    std::to_string(used) + " bytes) past maxmemory (" + std::to_string(most) +
                    " bytes)");
}

/// The buckets of a new static filter of shape `c`: ccf's count for its capacity, cut into
/// chunks of chunked_alternate's size (which rounds each chunk up to a multiple of 64 buckets).
std::uint64_t static_table_buckets(const ccf::filter_config& c) {
  using ccf::detail::cuckoo_indexer;  // plan() is the same for every tag width
  const std::size_t least =
      ccf::detail::buckets_for_capacity(c.capacity, c.slots_per_bucket, c.fingerprint_bits);
  return cuckoo_indexer<16>::plan(least,
                                  ccf::chunked_alternate::max_chunk_buckets(c.slots_per_bucket))
      .num_buckets();
}

/// The bytes of the table a filter of shape `c` allocates: its buckets of slots of its width,
/// bit-packed in 64-bit words, and the one spare word every table has.
std::uint64_t table_bytes(const ccf::filter_config& c) {
  const std::uint64_t buckets =
      c.growing ? ccf::detail::growing_initial_buckets(c.capacity) : static_table_buckets(c);
  const std::uint64_t bits = buckets * c.slots_per_bucket * c.fingerprint_bits;
  return ((bits + 63) / 64 + 1) * 8;
}

/// The shape CF.RESERVE's options ask for. A rate no layout reaches is a reply error naming it
/// (not ccf's message, which names C++ functions).
ccf::filter_config filter_shape(const reserve_options& o) {
  try {
    if (o.expansion != 0) return ccf::filter_config::growing_for_rate(o.capacity, o.error);
    ccf::filter_config c =
        o.bucket_size ? ccf::filter_config::for_rate_with_slots(o.capacity, o.error, *o.bucket_size)
                      : ccf::filter_config::for_rate(o.capacity, o.error);
    c.max_kicks = o.max_iterations;
    return c;
  } catch (const std::invalid_argument& e) {
    std::string_view why = e.what();
    if (why.starts_with("ccf: ")) why.remove_prefix(5);
    throw reply_error("ERR ERROR rate not reached: " + std::string(why));
  }
}

cf_value* make_filter(api::context* ctx, const reserve_options& o) {
  const ccf::filter_config c = filter_shape(o);
  check_maxmemory(ctx, table_block_bytes(table_bytes(c)));
  return cf_value::create(c, filter_meta{o.expansion, o.max_iterations, 0});
}

/// Replicates the CF.RESERVE of `key` that makes the filter `o` describes, every option that a
/// module argument may change spelled out: the replica's or the restarted server's defaults do
/// not apply. The rate goes as the shortest text that reads back as the same double. BUCKETSIZE
/// goes as given (a static filter without it takes for_rate's layout, which no argument changes).
void replicate_reserve(api::context* ctx, api::string* key, const reserve_options& o) {
  std::array<char, 64> rate{};
  const auto end = std::to_chars(rate.data(), rate.data() + rate.size() - 1, o.error).ptr;
  *end = '\0';
  const auto capacity = static_cast<long long>(o.capacity);
  const auto expansion = static_cast<long long>(o.expansion);
  const auto iterations = static_cast<long long>(o.max_iterations);
  if (o.bucket_size) {
    api::replicate(ctx, "CF.RESERVE", "slclclcccl", key, capacity, "EXPANSION", expansion,
                   "MAXITERATIONS", iterations, "ERROR", rate.data(), "BUCKETSIZE",
                   static_cast<long long>(*o.bucket_size));
  } else {
    api::replicate(ctx, "CF.RESERVE", "slclclcc", key, capacity, "EXPANSION", expansion,
                   "MAXITERATIONS", iterations, "ERROR", rate.data());
  }
}

/// Makes the filter `o` describes in the missing key `key` (named `name`) and replicates the
/// CF.RESERVE that makes it; false when the key does not take it.
bool create_filter(api::context* ctx, key_handle& key, api::string* name,
                   const reserve_options& o) {
  if (!key.set(make_filter(ctx, o))) return false;
  replicate_reserve(ctx, name, o);
  return true;
}

/// Parses CF.RESERVE's options (argv[3...]); an error text, or nullptr.
const char* parse_reserve_options(api::string** argv, int argc, reserve_options& o) {
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string_view name = arg(argv[i]);
    const std::optional<long long> n = to_integer(argv[i + 1]);
    if (is_keyword(name, "BUCKETSIZE")) {
      if (!n || *n < 1 || *n > 255)
        return "ERR BUCKETSIZE parameter needs to be a positive integer";
      o.bucket_size = static_cast<unsigned>(*n);
    } else if (is_keyword(name, "MAXITERATIONS")) {
      if (!n || *n < 1 || *n > static_cast<long long>(max_max_iterations))
        return "ERR MAXITERATIONS parameter needs to be a positive integer";
      o.max_iterations = static_cast<std::uint64_t>(*n);
    } else if (is_keyword(name, "EXPANSION")) {
      if (!n || *n < 0 || *n > static_cast<long long>(max_expansion))
        return "ERR EXPANSION parameter needs to be a non-negative integer";
      o.expansion = static_cast<std::uint64_t>(*n);
    } else if (is_keyword(name, "ERROR")) {
      double rate = 0;
      if (api::string_to_double(argv[i + 1], &rate) != api::ok || !(rate > 0.0 && rate < 1.0))
        return "ERR ERROR parameter needs to be a rate between 0 and 1";
      o.error = rate;
    } else {
      return err_syntax;
    }
  }
  if (o.expansion == 0 && o.bucket_size && *o.bucket_size != 2 && *o.bucket_size != 4 &&
      *o.bucket_size != 8)
    return "ERR BUCKETSIZE must be 2, 4 or 8 (EXPANSION 0)";
  return nullptr;
}

int reserve_command(api::context* ctx, api::string** argv, int argc) {
  if (argc < 3 || argc % 2 == 0) return api::wrong_arity(ctx);
  const std::optional<long long> capacity = to_integer(argv[2]);
  if (!capacity || *capacity < 1 || *capacity > max_capacity)
    return api::reply_with_error(ctx, err_capacity);
  reserve_options o;
  o.capacity = static_cast<std::size_t>(*capacity);
  if (const char* e = parse_reserve_options(argv, argc, o)) return api::reply_with_error(ctx, e);
  key_handle key(ctx, argv[1], api::mode_read | api::mode_write);
  const auto s = key.lookup();
  if (s == key_handle::state::wrong_type) return reply_not_filter(ctx, s);
  if (s != key_handle::state::missing) return api::reply_with_error(ctx, err_exists);
  if (!create_filter(ctx, key, argv[1], o))
    return api::reply_with_error(ctx, "ERR could not store the filter");
  notify(ctx, "cf.reserve", argv[1]);
  return api::reply_with_simple_string(ctx, "OK");
}

/// The filter of key `name` for an insert, made with the module's defaults (and replicated as
/// the CF.RESERVE that makes it) when missing; nullptr after an error reply.
cf_value* filter_for_insert(api::context* ctx, key_handle& key, api::string* name,
                            std::size_t capacity, bool create) {
  const auto s = key.lookup();
  if (s == key_handle::state::filter) return key.value();
  if (s != key_handle::state::missing) {
    reply_not_filter(ctx, s);
    return nullptr;
  }
  if (!create) {
    api::reply_with_error(ctx, err_not_found);
    return nullptr;
  }
  reserve_options o;
  o.capacity = capacity;
  if (!create_filter(ctx, key, name, o)) {
    api::reply_with_error(ctx, "ERR could not store the filter");
    return nullptr;
  }
  return key.value();
}

/// CF.ADD (nx false) and CF.ADDNX (nx true).
int add_command(api::context* ctx, api::string** argv, int argc, bool nx) {
  if (argc != 3) return api::wrong_arity(ctx);
  key_handle key(ctx, argv[1], api::mode_read | api::mode_write);
  cf_value* v = filter_for_insert(ctx, key, argv[1], settings.default_capacity, true);
  if (v == nullptr) return api::ok;
  const std::string_view item = arg(argv[2]);
  if (nx && v->get().contains(item)) return api::reply_with_long_long(ctx, 0);  // not new
  const std::size_t buckets = v->get().num_buckets();
  const bool inserted = v->get().insert(item);
  // Only a command that changed the filter goes to replicas and the AOF, and never as one that
  // fails there: a replica that replays a "full" error reports it to its master (or panics, with
  // propagation-error-behavior panic), and such an AOF does not load. A refused insert changes
  // nothing unless a growing filter doubled for it first; that one goes as the CF.INSERT that
  // does the same (a replica doubles the same way and answers -1, not an error). A filter this
  // command made is empty: its item went in (after the CF.RESERVE that made it).
  const bool grew = v->get().num_buckets() != buckets;
  if (inserted) {
    api::replicate_verbatim(ctx);
  } else if (grew) {
    api::replicate(ctx, "CF.INSERT", "sccs", argv[1], "NOCREATE", "ITEMS", argv[2]);
  }
  if (inserted || grew) notify(ctx, "cf.add", argv[1]);
  if (!inserted) return api::reply_with_error(ctx, err_full);
  return api::reply_with_long_long(ctx, 1);
}

int add(api::context* ctx, api::string** argv, int argc) {
  return add_command(ctx, argv, argc, false);
}
int addnx(api::context* ctx, api::string** argv, int argc) {
  return add_command(ctx, argv, argc, true);
}

/// CF.INSERT / CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item...
int insert_command(api::context* ctx, api::string** argv, int argc, bool nx) {
  if (argc < 4) return api::wrong_arity(ctx);
  std::size_t capacity = settings.default_capacity;
  bool create = true;
  int items = 0;
  for (int i = 2; i < argc && items == 0; ++i) {
    const std::string_view name = arg(argv[i]);
    if (is_keyword(name, "ITEMS")) {
      items = i + 1;
    } else if (is_keyword(name, "NOCREATE")) {
      create = false;
    } else if (is_keyword(name, "CAPACITY") && i + 1 < argc) {
      const std::optional<long long> c = to_integer(argv[++i]);
      if (!c || *c < 1 || *c > max_capacity) return api::reply_with_error(ctx, err_capacity);
      capacity = static_cast<std::size_t>(*c);
    } else {
      return api::reply_with_error(ctx, err_syntax);
    }
  }
  if (items == 0 || items >= argc) return api::wrong_arity(ctx);
  key_handle key(ctx, argv[1], api::mode_read | api::mode_write);
  const bool created = key.lookup() == key_handle::state::missing;
  cf_value* v = filter_for_insert(ctx, key, argv[1], capacity, create);
  if (v == nullptr) return api::ok;
  const std::size_t buckets = v->get().num_buckets();
  bool inserted = false;
  api::reply_with_array(ctx, argc - items);
  for (int i = items; i < argc; ++i) {
    const std::string_view item = arg(argv[i]);
    if (nx && v->get().contains(item)) {
      api::reply_with_long_long(ctx, 0);
    } else {
      const bool in = v->get().insert(item);
      inserted = inserted || in;
      api::reply_with_long_long(ctx, in ? 1 : -1);
    }
  }
  // Refused items change nothing unless a growing filter doubled for them, and items already
  // there (NX) nothing at all: a command that changed nothing more than making the filter (its
  // CF.RESERVE is replicated) is not replicated. A replica answers the same -1 to the same items.
  const bool changed = inserted || v->get().num_buckets() != buckets;
  if (changed) api::replicate_verbatim(ctx);
  if (created || changed) notify(ctx, "cf.insert", argv[1]);
  return api::ok;
}

int insert(api::context* ctx, api::string** argv, int argc) {
  return insert_command(ctx, argv, argc, false);
}
int insertnx(api::context* ctx, api::string** argv, int argc) {
  return insert_command(ctx, argv, argc, true);
}

/// The filter of a key for a read; nullptr when missing (`missing` set) or after an error reply.
cf_value* filter_for_read(api::context* ctx, key_handle& key, bool& missing) {
  const auto s = key.lookup();
  missing = s == key_handle::state::missing;
  if (s == key_handle::state::filter) return key.value();
  if (!missing) reply_not_filter(ctx, s);
  return nullptr;
}

int exists(api::context* ctx, api::string** argv, int argc) {
  if (argc != 3) return api::wrong_arity(ctx);
  key_handle key(ctx, argv[1], api::mode_read);
  bool missing = false;
  cf_value* v = filter_for_read(ctx, key, missing);
  if (v == nullptr) return missing ? api::reply_with_long_long(ctx, 0) : api::ok;
  return api::reply_with_long_long(ctx, v->get().contains(arg(argv[2])) ? 1 : 0);
}

int mexists(api::context* ctx, api::string** argv, int argc) {
  if (argc < 3) return api::wrong_arity(ctx);
  key_handle key(ctx, argv[1], api::mode_read);
  bool missing = false;
  cf_value* v = filter_for_read(ctx, key, missing);
  if (v == nullptr && !missing) return api::ok;
  const std::size_t n = static_cast<std::size_t>(argc - 2);
  std::unique_ptr<bool[]> found(new bool[n]());
  if (v != nullptr) {
    std::vector<std::uint64_t> hashes(n);
    for (std::size_t i = 0; i < n; ++i)
      hashes[i] = v->get().hash_of(arg(argv[i + 2]));
    v->get().contains_many_hashes(hashes, std::span<bool>(found.get(), n));
  }
  api::reply_with_array(ctx, static_cast<long>(n));
  for (std::size_t i = 0; i < n; ++i)
    api::reply_with_long_long(ctx, found[i] ? 1 : 0);
  return api::ok;
}

int del(api::context* ctx, api::string** argv, int argc) {
  if (argc != 3) return api::wrong_arity(ctx);
  key_handle key(ctx, argv[1], api::mode_read | api::mode_write);
  bool missing = false;
  cf_value* v = filter_for_read(ctx, key, missing);
  if (v == nullptr) return missing ? api::reply_with_error(ctx, err_not_found) : api::ok;
  if (!v->get().erase(arg(argv[2]))) return api::reply_with_long_long(ctx, 0);
  // Past max_deleted the dump's header would not load (a RDB file the server cannot restart
  // from): the count stays there.
  if (v->meta().deleted < max_deleted) ++v->meta().deleted;
  api::replicate_verbatim(ctx);
  notify(ctx, "cf.del", argv[1]);
  return api::reply_with_long_long(ctx, 1);
}

int count(api::context* ctx, api::string** argv, int argc) {
  if (argc != 3) return api::wrong_arity(ctx);
  key_handle key(ctx, argv[1], api::mode_read);
  bool missing = false;
  cf_value* v = filter_for_read(ctx, key, missing);
  if (v == nullptr) return missing ? api::reply_with_long_long(ctx, 0) : api::ok;
  return api::reply_with_long_long(ctx, static_cast<long long>(v->get().count(arg(argv[2]))));
}

void reply_field(api::context* ctx, const char* name, std::uint64_t value) {
  api::reply_with_simple_string(ctx, name);
  api::reply_with_long_long(ctx, static_cast<long long>(value));
}

int info(api::context* ctx, api::string** argv, int argc) {
  if (argc != 2) return api::wrong_arity(ctx);
  key_handle key(ctx, argv[1], api::mode_read);
  bool missing = false;
  cf_value* v = filter_for_read(ctx, key, missing);
  if (v == nullptr) return missing ? api::reply_with_error(ctx, err_not_found) : api::ok;
  const filter& f = v->get();
  api::reply_with_map(ctx, 8);  // RESP3 map; a flat array of 16 under RESP2
  reply_field(ctx, "Size", f.size_in_bytes());
  reply_field(ctx, "Number of buckets", f.num_buckets());
  reply_field(ctx, "Number of filters", 1);
  reply_field(ctx, "Number of items inserted", f.size());
  reply_field(ctx, "Number of items deleted", v->meta().deleted);
  reply_field(ctx, "Bucket size", f.slots_per_bucket());
  reply_field(ctx, "Expansion rate", v->meta().expansion);
  reply_field(ctx, "Max iterations", v->meta().max_iterations);
  return api::ok;
}

}  // namespace

bool register_command(api::context* ctx, const command_spec& c) {
  if (api::create_command(ctx, c.name, c.fn, c.flags, 1, 1, 1) != api::ok) return false;
  api::command* command = api::get_command(ctx, c.name);
  if (command == nullptr) return false;
  static constexpr api::command_info_version version{api::command_info_version_1,
                                                     sizeof(api::command_history_entry),
                                                     sizeof(api::command_key_spec), 0};
  // The key, argument 1 alone; then the zeroed spec that ends the array. Redis copies both.
  std::array<api::command_key_spec, 2> specs{};
  specs[0].flags = c.key_flags;
  specs[0].begin_search_type = api::begin_search_index;
  specs[0].bs.index.pos = 1;
  specs[0].find_keys_type = api::find_keys_range;
  specs[0].fk.range = {0, 1, 0};
  api::command_info info;
  info.version = &version;
  info.summary = c.summary;
  info.arity = c.arity;
  info.key_specs = specs.data();
  return api::set_command_info(command, &info) == api::ok;
}

bool register_commands(api::context* ctx) {
  // Key-spec flags as Redis's own commands of the same kind declare them (SADD, SREM, SISMEMBER):
  // ACL read selectors admit the readers (access), write selectors the writers (insert, delete).
  constexpr std::uint64_t reads = api::key_ro | api::key_access;
  constexpr std::uint64_t inserts = api::key_rw | api::key_insert;
  const command_spec commands[] = {
      {"CF.RESERVE", guarded<reserve_command>, "write deny-oom", -3, inserts,
       "Creates an empty cuckoo filter"},
      {"CF.ADD", guarded<add>, "write deny-oom", 3, inserts,
       "Adds an item, creating the filter if it does not exist"},
      {"CF.ADDNX", guarded<addnx>, "write deny-oom", 3, inserts,
       "Adds an item unless the filter may already hold it"},
      {"CF.INSERT", guarded<insert>, "write deny-oom", -4, inserts,
       "Adds items, creating the filter with the given capacity unless NOCREATE"},
      {"CF.INSERTNX", guarded<insertnx>, "write deny-oom", -4, inserts,
       "Adds each item unless the filter may already hold it"},
      {"CF.EXISTS", guarded<exists>, "readonly fast", 3, reads,
       "Tells whether the filter may hold an item"},
      {"CF.MEXISTS", guarded<mexists>, "readonly fast", -3, reads,
       "Tells, for each item, whether the filter may hold it"},
      {"CF.DEL", guarded<del>, "write fast", 3, api::key_rw | api::key_delete,
       "Deletes one copy of an item that was added"},
      {"CF.COUNT", guarded<count>, "readonly fast", 3, reads,
       "Counts the copies of an item's fingerprint in its two buckets"},
      {"CF.INFO", guarded<info>, "readonly fast", 2, api::key_ro,
       "Reports the filter's size and parameters"},
  };
  for (const command_spec& c : commands) {
    if (!register_command(ctx, c)) return false;
  }
  return dump_commands_register(ctx) == api::ok;
}

}  // namespace ccf_redis
