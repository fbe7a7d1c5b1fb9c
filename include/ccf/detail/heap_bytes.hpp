// ccf — concurrent cuckoo filters.
// detail/heap_bytes.hpp: the heap a part of a filter holds besides its table — lock words,
// counter shards, epochs — for memory_in_bytes(). A part that allocates says how much with a
// heap_bytes() member; a part without one (a lock policy of a user's, a plain counter) is taken
// to hold nothing on the heap.
#pragma once

#include <concepts>
#include <cstddef>

namespace ccf::detail {

template <class Part>
constexpr std::size_t heap_bytes_of(const Part& part) noexcept {
  if constexpr (requires {
                  { part.heap_bytes() } -> std::convertible_to<std::size_t>;
                }) {
    return part.heap_bytes();
  } else {
    return 0;
  }
}

}  // namespace ccf::detail
