// ccf — concurrent cuckoo filters.
// redis/module_api.cpp: fetching the Redis modules API by name.
#include "module_api.hpp"

namespace ccf_redis::api {
namespace {

/// Fetches "RedisModule_<name>" into `fn`; false when this Redis does not have it.
template <class Fn>
bool fetch(const char* name, Fn& fn) {
  return get_api(name, static_cast<void*>(&fn)) == ok && fn != nullptr;
}

}  // namespace

bool fetch_all(context* ctx) {
  // The first member of the module context is the GetApi function (the documented ABI that the
  // reference's RedisModule_Init relies on).
  void* first = *reinterpret_cast<void**>(ctx);
  get_api = reinterpret_cast<int (*)(const char*, void*)>(first);
  if (get_api == nullptr) return false;
  // Optional: older servers lack it (RedisModule_Init skips the check then).
  fetch("RedisModule_IsModuleNameBusy", is_module_name_busy);
  return fetch("RedisModule_SetModuleAttribs", set_module_attribs) &&
         fetch("RedisModule_CreateCommand", create_command) &&
         fetch("RedisModule_CreateDataType", create_data_type) &&
         fetch("RedisModule_SetModuleOptions", set_module_options) &&
         fetch("RedisModule_Log", log_message) && fetch("RedisModule_GetCommand", get_command) &&
         fetch("RedisModule_SetCommandInfo", set_command_info) &&
         fetch("RedisModule_Alloc", alloc) && fetch("RedisModule_Free", dealloc) &&
         fetch("RedisModule_OpenKey", open_key) && fetch("RedisModule_CloseKey", close_key) &&
         fetch("RedisModule_KeyType", key_type) && fetch("RedisModule_DeleteKey", delete_key) &&
         fetch("RedisModule_ModuleTypeGetType", module_type_get_type) &&
         fetch("RedisModule_ModuleTypeGetValue", module_type_get_value) &&
         fetch("RedisModule_ModuleTypeSetValue", module_type_set_value) &&
         fetch("RedisModule_StringPtrLen", string_ptr_len) &&
         fetch("RedisModule_StringToLongLong", string_to_long_long) &&
         fetch("RedisModule_StringToDouble", string_to_double) &&
         fetch("RedisModule_WrongArity", wrong_arity) &&
         fetch("RedisModule_ReplyWithError", reply_with_error) &&
         fetch("RedisModule_ReplyWithSimpleString", reply_with_simple_string) &&
         fetch("RedisModule_ReplyWithLongLong", reply_with_long_long) &&
         fetch("RedisModule_ReplyWithArray", reply_with_array) &&
         fetch("RedisModule_ReplyWithMap", reply_with_map) &&
         fetch("RedisModule_ReplyWithStringBuffer", reply_with_string_buffer) &&
         fetch("RedisModule_ReplyWithNull", reply_with_null) &&
         fetch("RedisModule_ReplicateVerbatim", replicate_verbatim) &&
         fetch("RedisModule_Replicate", replicate) &&
         fetch("RedisModule_NotifyKeyspaceEvent", notify_keyspace_event) &&
         fetch("RedisModule_GetContextFlags", get_context_flags) &&
         fetch("RedisModule_GetServerInfo", get_server_info) &&
         fetch("RedisModule_FreeServerInfo", free_server_info) &&
         fetch("RedisModule_ServerInfoGetFieldUnsigned", server_info_get_field_unsigned) &&
         fetch("RedisModule_ServerInfoGetFieldC", server_info_get_field_c) &&
         fetch("RedisModule_SaveUnsigned", save_unsigned) &&
         fetch("RedisModule_LoadUnsigned", load_unsigned) &&
         fetch("RedisModule_SaveStringBuffer", save_string_buffer) &&
         fetch("RedisModule_LoadStringBuffer", load_string_buffer) &&
         fetch("RedisModule_IsIOError", is_io_error) && fetch("RedisModule_EmitAOF", emit_aof) &&
         fetch("RedisModule_DigestAddStringBuffer", digest_add_string_buffer) &&
         fetch("RedisModule_DigestEndSequence", digest_end_sequence);
}

}  // namespace ccf_redis::api
