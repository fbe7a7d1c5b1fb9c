// ccf — concurrent cuckoo filters.
// redis/module_api.hpp: the part of the Redis modules API that the ccf module uses, declared from
// the Redis modules API reference (https://redis.io/docs/reference/modules/modules-api-ref/) and
// the native types guide (https://redis.io/docs/reference/modules/modules-native-types/).
//
// Redis passes RedisModule_OnLoad a context whose first member is a pointer to the API lookup
// function (`int GetApi(const char* name, void* out)`); every other function is fetched by its
// documented name ("RedisModule_OpenKey", ...) through it. Nothing here needs Redis's headers: the
// handles are opaque pointers, and only the functions, constants and the type-methods struct
// below are part of the documented ABI the module relies on.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ccf_redis::api {

// Opaque handles (the reference's RedisModuleCtx, RedisModuleString, ...).
struct context;
struct string;
struct key;
struct io;
struct module_type;
struct digest;
struct defrag_context;
struct command;
struct server_info;

// Status codes (reference, "Commands API": functions return REDISMODULE_OK or REDISMODULE_ERR).
inline constexpr int ok = 0;
inline constexpr int err = 1;
// The API version passed to SetModuleAttribs (reference, "RedisModule_Init": REDISMODULE_APIVER_1).
inline constexpr int apiver_1 = 1;
// Key open modes (reference, "RedisModule_OpenKey": REDISMODULE_READ, REDISMODULE_WRITE).
inline constexpr int mode_read = 1 << 0;
inline constexpr int mode_write = 1 << 1;
// Key types (reference, "RedisModule_KeyType": REDISMODULE_KEYTYPE_EMPTY ... _MODULE).
inline constexpr int keytype_empty = 0;
inline constexpr int keytype_module = 6;
// Module options (reference, "RedisModule_SetModuleOptions": REDISMODULE_OPTIONS_HANDLE_IO_ERRORS,
// which makes RDB load functions report errors through RedisModule_IsIOError instead of aborting).
inline constexpr int options_handle_io_errors = 1 << 0;
// The type-methods struct version whose fields run up to `defrag` (native types guide and
// reference, "RedisModule_CreateDataType": REDISMODULE_TYPE_METHOD_VERSION; version 3 adds
// free_effort, unlink, copy and defrag to version 2's aux_load/aux_save/aux_save_triggers).
inline constexpr std::uint64_t type_method_version = 3;
// The error text of commands run against a key of another type (reference,
// REDISMODULE_ERRORMSG_WRONGTYPE).
inline constexpr const char* wrongtype_message =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

// Context flags (reference, "RedisModule_GetContextFlags": REDISMODULE_CTX_FLAGS_REPLICATED, the
// command came from the master; REDISMODULE_CTX_FLAGS_LOADING, the server is loading an AOF or
// RDB).
inline constexpr int ctx_flags_replicated = 1 << 12;
// REDISMODULE_CTX_FLAGS_MAXMEMORY: maxmemory is set.
inline constexpr int ctx_flags_maxmemory = 1 << 8;
inline constexpr int ctx_flags_loading = 1 << 13;
// Keyspace notification classes (reference, "RedisModule_NotifyKeyspaceEvent" and
// "RedisModule_SubscribeToKeyspaceEvents": REDISMODULE_NOTIFY_GENERIC, 'g' in
// notify-keyspace-events, and REDISMODULE_NOTIFY_MODULE, 'd', events of module types).
inline constexpr int notify_generic = 1 << 2;
inline constexpr int notify_module = 1 << 13;

using command_fn = int (*)(context*, string**, int);

// Command metadata (reference, "RedisModule_SetCommandInfo", Redis 7): the structs field by
// field in the documented order; the version struct tells Redis the size of each array element.
inline constexpr int command_info_version_1 = 1;
// Key-spec flags (REDISMODULE_CMD_KEY_RO, _RW, _OW, _ACCESS, _UPDATE, _INSERT, _DELETE).
inline constexpr std::uint64_t key_ro = 1 << 0;
inline constexpr std::uint64_t key_rw = 1 << 1;
inline constexpr std::uint64_t key_ow = 1 << 2;
inline constexpr std::uint64_t key_access = 1 << 4;
inline constexpr std::uint64_t key_update = 1 << 5;
inline constexpr std::uint64_t key_insert = 1 << 6;
inline constexpr std::uint64_t key_delete = 1 << 7;
// Where the key search begins (REDISMODULE_KSPEC_BS_INDEX) and how keys follow it
// (REDISMODULE_KSPEC_FK_RANGE); 0 (BS_INVALID) ends an array of key specs.
inline constexpr int begin_search_index = 2;
inline constexpr int find_keys_range = 2;

struct command_info_version {
  int version = command_info_version_1;
  std::size_t sizeof_historyentry = 0;
  std::size_t sizeof_keyspec = 0;
  std::size_t sizeof_arg = 0;
};
struct command_history_entry {
  const char* since = nullptr;
  const char* changes = nullptr;
};
struct command_key_spec {
  const char* notes = nullptr;
  std::uint64_t flags = 0;
  int begin_search_type = 0;
  union {
    struct {
      int pos;
    } index;
    struct {
      const char* keyword;
      int startfrom;
    } keyword;
  } bs{};
  int find_keys_type = 0;
  union {
    struct {
      int lastkey;
      int keystep;
      int limit;
    } range;
    struct {
      int keynumidx;
      int firstkey;
      int keystep;
    } keynum;
  } fk{};
};
struct command_info {
  const command_info_version* version = nullptr;
  const char* summary = nullptr;
  const char* complexity = nullptr;
  const char* since = nullptr;
  command_history_entry* history = nullptr;
  const char* tips = nullptr;
  int arity = 0;
  command_key_spec* key_specs = nullptr;
  void* args = nullptr;  // RedisModuleCommandArg*, not used by ccf
};

// Type methods (native types guide, "Register a new data type", and reference,
// "RedisModule_CreateDataType"), field by field in the documented order.
using rdb_load_fn = void* (*)(io* rdb, int encver);
using rdb_save_fn = void (*)(io* rdb, void* value);
using aof_rewrite_fn = void (*)(io* aof, string* key, void* value);
using mem_usage_fn = std::size_t (*)(const void* value);
using digest_fn = void (*)(digest* md, void* value);
using free_fn = void (*)(void* value);
using aux_load_fn = int (*)(io* rdb, int encver, int when);
using aux_save_fn = void (*)(io* rdb, int when);
using free_effort_fn = std::size_t (*)(string* key, const void* value);
using unlink_fn = void (*)(string* key, const void* value);
using copy_fn = void* (*)(string* from_key, string* to_key, const void* value);
using defrag_fn = int (*)(defrag_context* ctx, string* key, void** value);

struct type_methods {
  std::uint64_t version = type_method_version;
  rdb_load_fn rdb_load = nullptr;
  rdb_save_fn rdb_save = nullptr;
  aof_rewrite_fn aof_rewrite = nullptr;
  mem_usage_fn mem_usage = nullptr;
  digest_fn digest = nullptr;
  free_fn free = nullptr;
  aux_load_fn aux_load = nullptr;
  aux_save_fn aux_save = nullptr;
  int aux_save_triggers = 0;
  free_effort_fn free_effort = nullptr;
  unlink_fn unlink = nullptr;
  copy_fn copy = nullptr;
  defrag_fn defrag = nullptr;
};

// The functions, as fetched by name ("RedisModule_" + the reference's name) in fetch_all().
// Module setup.
inline int (*get_api)(const char* name, void* out) = nullptr;
inline void (*set_module_attribs)(context*, const char* name, int ver, int apiver) = nullptr;
inline int (*is_module_name_busy)(const char* name) = nullptr;
inline int (*create_command)(context*, const char* name, command_fn, const char* flags,
                             int first_key, int last_key, int key_step) = nullptr;
inline module_type* (*create_data_type)(context*, const char* name, int encver,
                                        type_methods*) = nullptr;
inline void (*set_module_options)(context*, int options) = nullptr;
inline void (*log_message)(context*, const char* level, const char* fmt, ...) = nullptr;
// Command metadata.
inline command* (*get_command)(context*, const char* name) = nullptr;
inline int (*set_command_info)(command*, const command_info*) = nullptr;
// Memory.
inline void* (*alloc)(std::size_t bytes) = nullptr;
inline void (*dealloc)(void* ptr) = nullptr;
// Keys.
inline key* (*open_key)(context*, string* name, int mode) = nullptr;
inline void (*close_key)(key*) = nullptr;
inline int (*key_type)(key*) = nullptr;
inline int (*delete_key)(key*) = nullptr;
inline module_type* (*module_type_get_type)(key*) = nullptr;
inline void* (*module_type_get_value)(key*) = nullptr;
inline int (*module_type_set_value)(key*, module_type*, void* value) = nullptr;
// Strings.
inline const char* (*string_ptr_len)(const string*, std::size_t* len) = nullptr;
inline int (*string_to_long_long)(const string*, long long* out) = nullptr;
inline int (*string_to_double)(const string*, double* out) = nullptr;
// Replies.
inline int (*wrong_arity)(context*) = nullptr;
inline int (*reply_with_error)(context*, const char* err) = nullptr;
inline int (*reply_with_simple_string)(context*, const char* msg) = nullptr;
inline int (*reply_with_long_long)(context*, long long value) = nullptr;
inline int (*reply_with_array)(context*, long len) = nullptr;
inline int (*reply_with_map)(context*, long len) = nullptr;
inline int (*reply_with_string_buffer)(context*, const char* buf, std::size_t len) = nullptr;
inline int (*reply_with_null)(context*) = nullptr;
// Replication.
inline int (*replicate_verbatim)(context*) = nullptr;
/// Replicates `command` with arguments described by `fmt` ("s": an api::string*, "c": a C string,
/// "l": a long long). Redis wraps the commands one command replicates in MULTI / EXEC when they
/// are more than one (unless already in a transaction or script), in the order replicated.
inline int (*replicate)(context*, const char* command, const char* fmt, ...) = nullptr;
// Keyspace notifications.
inline int (*notify_keyspace_event)(context*, int type, const char* event, string* key) = nullptr;
// Context and server state.
inline int (*get_context_flags)(context*) = nullptr;
inline server_info* (*get_server_info)(context*, const char* section) = nullptr;
inline void (*free_server_info)(context*, server_info*) = nullptr;
/// A field of INFO as an unsigned integer; *out_err is set to err when it is missing.
inline unsigned long long (*server_info_get_field_unsigned)(server_info*, const char* field,
                                                            int* out_err) = nullptr;
/// A field of INFO as a C string, valid until the server_info is freed; nullptr when missing.
inline const char* (*server_info_get_field_c)(server_info*, const char* field) = nullptr;
// RDB, AOF, DEBUG DIGEST.
inline void (*save_unsigned)(io*, std::uint64_t value) = nullptr;
inline std::uint64_t (*load_unsigned)(io*) = nullptr;
inline void (*save_string_buffer)(io*, const char* buf, std::size_t len) = nullptr;
inline char* (*load_string_buffer)(io*, std::size_t* len) = nullptr;
inline int (*is_io_error)(io*) = nullptr;
inline void (*emit_aof)(io*, const char* command, const char* fmt, ...) = nullptr;
inline void (*digest_add_string_buffer)(digest*, const char* buf, std::size_t len) = nullptr;
inline void (*digest_end_sequence)(digest*) = nullptr;

/// Takes GetApi from the context and fetches every function above (the equivalent of the
/// reference's RedisModule_Init, less SetModuleAttribs). Returns false when one is missing.
bool fetch_all(context* ctx);

}  // namespace ccf_redis::api
