// ccf — concurrent cuckoo filters.
// redis/commands.hpp: what the CF.* commands share (arguments, keys, error texts).
#pragma once

#include <cstddef>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "cf_type.hpp"
#include "cf_value.hpp"
#include "module_api.hpp"

namespace ccf_redis {

// Error replies (RedisBloom's texts where RedisBloom has one).
inline constexpr const char* err_not_found = "ERR not found";
inline constexpr const char* err_exists = "ERR item exists";
inline constexpr const char* err_full = "ERR Filter is full";
inline constexpr const char* err_capacity = "ERR Bad capacity";
inline constexpr const char* err_syntax = "ERR syntax error";
inline constexpr const char* err_pending =
    "ERR the filter is being restored by CF.LOADCHUNK and is not complete";
/// The largest capacity CF.RESERVE / CF.INSERT accept (2^32 items).
inline constexpr long long max_capacity = 1LL << 32;

inline std::string_view arg(api::string* s) {
  std::size_t n = 0;
  const char* p = api::string_ptr_len(s, &n);
  return {p, n};
}

/// Case-insensitive comparison with an upper-case keyword.
inline bool is_keyword(std::string_view s, std::string_view keyword) {
  if (s.size() != keyword.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (c != keyword[i]) return false;
  }
  return true;
}

inline std::optional<long long> to_integer(api::string* s) {
  long long v = 0;
  if (api::string_to_long_long(s, &v) != api::ok) return std::nullopt;
  return v;
}

/// A key opened for one command, closed when it goes out of scope.
class key_handle {
 public:
  enum class state { missing, wrong_type, pending, filter };

  key_handle(api::context* ctx, api::string* name, int mode)
      : key_(api::open_key(ctx, name, mode)) {}
  ~key_handle() {
    if (key_ != nullptr) api::close_key(key_);
  }
  key_handle(const key_handle&) = delete;
  key_handle& operator=(const key_handle&) = delete;

  state lookup() const {
    if (key_ == nullptr || api::key_type(key_) == api::keytype_empty) return state::missing;
    if (api::key_type(key_) != api::keytype_module || api::module_type_get_type(key_) != cf_type)
      return state::wrong_type;
    return value()->pending() ? state::pending : state::filter;
  }
  cf_value* value() const { return static_cast<cf_value*>(api::module_type_get_value(key_)); }
  /// Stores `v` as the key's value (the old one is freed); frees `v` on failure.
  bool set(cf_value* v) {
    if (api::module_type_set_value(key_, cf_type, v) == api::ok) return true;
    cf_value::destroy(v);
    return false;
  }
  void remove() { api::delete_key(key_); }

 private:
  api::key* key_;
};

/// The error reply for a key that holds no complete filter (`s` is wrong_type or pending).
inline int reply_not_filter(api::context* ctx, key_handle::state s) {
  return api::reply_with_error(
      ctx, s == key_handle::state::wrong_type ? api::wrongtype_message : err_pending);
}

/// One CF.* command, its key the first argument: its function, Redis command flags, arity (as
/// Redis counts it: the name included, negative for "at least"), what it does to its key (the
/// key-spec flags api::key_*) and a one-line summary.
struct command_spec {
  const char* name;
  api::command_fn fn;
  const char* flags;
  int arity;
  std::uint64_t key_flags;
  const char* summary;
};

/// Registers a command and declares its metadata: the key spec that ACL read / write key
/// selectors (%R~, %W~) and COMMAND INFO / COMMAND GETKEYS use, the arity and the summary.
bool register_command(api::context* ctx, const command_spec& c);

/// Sends keyspace notification `event` (a module-type event, class 'd' in notify-keyspace-events)
/// for the key a command changed.
inline void notify(api::context* ctx, const char* event, api::string* key) {
  api::notify_keyspace_event(ctx, api::notify_module, event, key);
}

/// An error whose text is the whole reply, its code included ("OOM ...").
class reply_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Runs a command, turning any exception (a bad argument ccf refuses, memory) into an error reply.
template <int (*Command)(api::context*, api::string**, int)>
int guarded(api::context* ctx, api::string** argv, int argc) {
  try {
    return Command(ctx, argv, argc);
  } catch (const reply_error& e) {
    return api::reply_with_error(ctx, e.what());
  } catch (const std::exception& e) {
    return api::reply_with_error(ctx, (std::string("ERR ") + e.what()).c_str());
  }
}

}  // namespace ccf_redis
