// ccf — concurrent cuckoo filters.
// hash.hpp: the seeded, version-stable key hash every ccf filter uses.
//
// ccf::hash<Key> maps a key and a 64-bit seed to a 64-bit value:
//   - unsigned and signed integers up to 64 bits: the integer (zero-extended to 64 bits, signed
//     values taken as their two's-complement bits) goes through ccf::mix64(x ^ seed), a
//     bijective 64-bit finalizer. Wider integers (__int128) have no ccf::hash: cutting them to
//     64 bits would make keys that differ only in their high bits one item;
//   - std::string, std::string_view, const char*: XXH3_64bits_withSeed(bytes, seed) from xxHash.
// Both are fixed functions of (key, seed): the same key and seed give the same hash on every
// platform and in every release of ccf. A filter built with seed s hashes its keys as
// Hash{}(key, key_seed(s)), key_seed(s) = mix64(s), computed once per filter: nearby seeds give
// unrelated functions and no lookup pays for mixing the seed. A filter's seed is part of its
// identity: two filters can only be compared or merged when they were built with the same seed.
//
// A user type gets ccf support by specialising ccf::hash<T> with
//   std::uint64_t operator()(const T&, std::uint64_t seed) const noexcept;
//
// xxHash is used as a header-only library: this header defines XXH_INLINE_ALL before including
// <xxhash.h>, so no build flag and no library to link are needed (xxHash supports being included
// that way after an ordinary include of its header elsewhere in the same program).
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

namespace ccf {

/// A bijective 64-bit mixer with full avalanche (three xor-shifts, two odd multiplies: the
/// well-known splitmix64 finalizer).
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// The default seed of every ccf filter.
inline constexpr std::uint64_t default_seed = 0x9e3779b97f4a7c15ULL;

/// The seed a filter built with `seed` passes to its hash function.
constexpr std::uint64_t key_seed(std::uint64_t seed) noexcept {
  return mix64(seed);
}

template <class Key, class Enable = void>
struct hash;  // not defined: specialise for your key type

template <class Key>
struct hash<Key, std::enable_if_t<std::is_integral_v<Key> && !std::is_same_v<Key, bool> &&
                                  sizeof(Key) <= sizeof(std::uint64_t)>> {
  constexpr std::uint64_t operator()(Key key, std::uint64_t seed) const noexcept {
    using unsigned_key = std::make_unsigned_t<Key>;
    const auto bits = static_cast<std::uint64_t>(static_cast<unsigned_key>(key));
    return mix64(bits ^ seed);
  }
};

template <>
struct hash<std::string_view> {
  /// It hashes a std::string, a std::string_view and a C string alike, so a filter of one of
  /// them takes the others without making a key of its type (as a transparent hash lets
  /// std::unordered_set find a string_view in a set of strings).
  using is_transparent = void;
  std::uint64_t operator()(std::string_view key, std::uint64_t seed) const noexcept {
    return XXH3_64bits_withSeed(key.data(), key.size(), seed);
  }
};

template <>
struct hash<std::string> : hash<std::string_view> {};

template <>
struct hash<const char*> {
  std::uint64_t operator()(const char* key, std::uint64_t seed) const noexcept {
    return hash<std::string_view>{}(std::string_view(key), seed);
  }
};

/// Whether a filter of Key can hash its keys with Hash: Hash{}(key, seed) gives 64 bits. A filter
/// of a key type ccf::hash has no specialisation for (a struct, double, bool) fails this
/// static_assert where it is declared, naming the fix.
template <class Hash, class Key>
concept key_hasher = requires(const Key& key, std::uint64_t seed) {
  { Hash{}(key, seed) } -> std::convertible_to<std::uint64_t>;
};

/// True, for a filter's static_assert; where Hash cannot hash Key, a compile error saying so
/// where the filter is declared (the filters' one message).
template <class Hash, class Key>
consteval bool require_key_hasher() {
  static_assert(key_hasher<Hash, Key>,
                "ccf: no hash for this key type: specialise ccf::hash<Key> (include/ccf/hash.hpp: "
                "operator()(const Key&, std::uint64_t seed) returning 64 bits), or give the "
                "filter such a Hash");
  return true;
}

/// A hash that hashes other types as it hashes the key equal to them (is_transparent).
template <class Hash>
concept transparent_hash = requires {
  typename Hash::is_transparent;
};

/// A key of type K that a filter of Key takes as it is, not converted to a Key: Hash is
/// transparent (ccf::hash<std::string> and ccf::hash<std::string_view>: a string_view, a string
/// or a C string, with the hash of the Key equal to it) and hashes K.
template <class K, class Hash, class Key>
concept transparent_key =
    !std::same_as<std::remove_cvref_t<K>, Key> && transparent_hash<Hash> && key_hasher<Hash, K>;

}  // namespace ccf
