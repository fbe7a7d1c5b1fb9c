// ccf — concurrent cuckoo filters.
// redis/module.cpp: the module's entry point.
//
//   redis-server --loadmodule /path/to/ccf_redis.so [CHUNK_SIZE bytes] [DEFAULT_CAPACITY n]
//                [DEFAULT_ERROR rate]
//
// CHUNK_SIZE: bytes per CF.SCANDUMP chunk and per CF.LOADCHUNK of an AOF rewrite (default 16 MiB,
// at least 120: the first chunk of a dump holds its two headers; more than 512 MiB, Redis's
// default proto-max-bulk-len, is taken as 512 MiB). DEFAULT_CAPACITY (1024) and
// DEFAULT_ERROR (0.01): the filter that CF.ADD and CF.INSERT create for a missing key, and
// CF.RESERVE's rate when it has no ERROR option; replicas and the AOF get the filter's parameters
// spelled out (commands.cpp), so theirs never apply to the master's commands.
#include <ccf/detail/growing_core.hpp>
#include <ccf/runtime_filter.hpp>
#include <ccf/version.hpp>

#include <algorithm>
#include <cmath>
#include <exception>

#include "cf_type.hpp"
#include "commands.hpp"
#include "module_api.hpp"

namespace ccf_redis {
namespace {

constexpr int module_version =
    ccf::version_major * 10000 + ccf::version_minor * 100 + ccf::version_patch;

/// Logs a warning when the filter CF.ADD and CF.INSERT create for a missing key (a growing one, at
/// EXPANSION 1) takes more than 1 GiB: every such command on a new key allocates it, so a typo
/// (2^32 for 2^12: 15 GB) takes a server's memory a key at a time.
void warn_of_large_defaults(api::context* ctx) {
  const ccf::filter_config c =
      ccf::filter_config::growing_for_rate(settings.default_capacity, settings.default_error);
  const double bytes = static_cast<double>(ccf::detail::growing_initial_buckets(c.capacity)) *
                       ccf::detail::growing_slots * c.fingerprint_bits / 8;
  if (bytes > std::ldexp(1.0, 30)) {
    api::log_message(ctx, "warning",
                     "ccf: DEFAULT_CAPACITY %zu: each filter CF.ADD or CF.INSERT creates for a "
                     "missing key takes about %.0f MiB",
                     settings.default_capacity, bytes / std::ldexp(1.0, 20));
  }
}

/// Reads the module arguments into `settings`; false (logged) on a bad one.
bool parse_arguments(api::context* ctx, api::string** argv, int argc) {
  for (int i = 0; i < argc; i += 2) {
    const std::string_view name = arg(argv[i]);
    if (i + 1 >= argc) {
      api::log_message(ctx, "warning", "ccf: module argument %.*s has no value",
                       static_cast<int>(name.size()), name.data());
      return false;
    }
    const std::optional<long long> n = to_integer(argv[i + 1]);
    double rate = 0;
    if (is_keyword(name, "CHUNK_SIZE")) {
      if (!n || *n < static_cast<long long>(min_chunk_size)) {
        api::log_message(ctx, "warning",
                         "ccf: CHUNK_SIZE must be at least %zu bytes (a dump's two headers)",
                         min_chunk_size);
        return false;
      }
      // Larger chunks would not go through CF.LOADCHUNK under the default proto-max-bulk-len;
      // a server configured with them before the bound still starts.
      if (*n > static_cast<long long>(max_chunk_size)) {
        api::log_message(ctx, "warning",
                         "ccf: CHUNK_SIZE %lld is taken as %zu bytes (Redis's default "
                         "proto-max-bulk-len, the longest chunk CF.LOADCHUNK takes)",
                         *n, max_chunk_size);
      }
      settings.chunk_size = std::min(static_cast<std::size_t>(*n), max_chunk_size);
    } else if (is_keyword(name, "DEFAULT_CAPACITY") && n && *n >= 1 && *n <= max_capacity) {
      settings.default_capacity = static_cast<std::size_t>(*n);
    } else if (is_keyword(name, "DEFAULT_ERROR") &&
               api::string_to_double(argv[i + 1], &rate) == api::ok && rate > 0 && rate < 1) {
      settings.default_error = rate;
    } else {
      api::log_message(ctx, "warning", "ccf: bad module argument %.*s",
                       static_cast<int>(name.size()), name.data());
      return false;
    }
  }
  // A DEFAULT_ERROR that no filter reaches made every CF.ADD and CF.INSERT of a new key fail.
  try {
    (void)ccf::filter_config::growing_for_rate(settings.default_capacity, settings.default_error);
    (void)ccf::filter_config::for_rate(settings.default_capacity, settings.default_error);
  } catch (const std::exception& e) {
    api::log_message(ctx, "warning", "ccf: DEFAULT_ERROR %g: %s", settings.default_error, e.what());
    return false;
  }
  warn_of_large_defaults(ctx);
  return true;
}

}  // namespace
}  // namespace ccf_redis

extern "C" __attribute__((visibility("default"))) int RedisModule_OnLoad(
    ccf_redis::api::context* ctx, ccf_redis::api::string** argv, int argc) {
  namespace api = ccf_redis::api;
  if (!api::fetch_all(ctx)) return api::err;
  if (api::is_module_name_busy != nullptr && api::is_module_name_busy("ccf")) return api::err;
  api::set_module_attribs(ctx, "ccf", ccf_redis::module_version, api::apiver_1);
  if (!ccf_redis::parse_arguments(ctx, argv, argc)) return api::err;
  api::set_module_options(ctx, api::options_handle_io_errors);
  if (!ccf_redis::register_type(ctx)) return api::err;
  if (!ccf_redis::register_commands(ctx)) return api::err;
  return api::ok;
}
