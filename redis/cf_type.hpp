// ccf — concurrent cuckoo filters.
// redis/cf_type.hpp: the module data type "ccfcuckoo" (RDB, AOF rewrite, MEMORY USAGE, DEBUG
// DIGEST, COPY) and the commands.
#pragma once

#include "module_api.hpp"

namespace ccf_redis {

/// The registered type (set by register_type).
inline api::module_type* cf_type = nullptr;

/// The type's name: nine characters, as Redis requires.
inline constexpr const char* cf_type_name = "ccfcuckoo";
/// The RDB encoding version of the type.
inline constexpr int cf_encoding_version = 1;

bool register_type(api::context* ctx);
bool register_commands(api::context* ctx);

}  // namespace ccf_redis
