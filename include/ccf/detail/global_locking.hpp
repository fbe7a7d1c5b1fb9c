// ccf — concurrent cuckoo filters.
// detail/global_locking.hpp: one std::mutex around every operation — the baseline every
// concurrent benchmark is compared with. Lookups lock too. Only the path search of an insert runs
// outside the lock (it reads words atomically and only proposes; each hop re-checks under it).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

namespace ccf::detail {

class global_locking {
 public:
  static constexpr bool concurrent = true;
  static constexpr const char* name = "global";

  explicit global_locking(std::size_t /*num_buckets*/ = 0, std::size_t /*group*/ = 1)
      : mutex_(std::make_unique<std::mutex>()) {}

  std::size_t heap_bytes() const noexcept { return sizeof(std::mutex); }

  [[nodiscard]] std::unique_lock<std::mutex> lock_two(std::size_t, std::size_t) {
    return std::unique_lock<std::mutex>(*mutex_);
  }
  [[nodiscard]] std::unique_lock<std::mutex> lock_all() {
    return std::unique_lock<std::mutex>(*mutex_);
  }
  template <class F>
  auto read(std::size_t, std::size_t, F&& f) {
    std::lock_guard<std::mutex> lock(*mutex_);
    return f();
  }

 private:
  std::unique_ptr<std::mutex> mutex_;  // a pointer keeps filters movable
};

}  // namespace ccf::detail
