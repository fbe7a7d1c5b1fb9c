// ccf — concurrent cuckoo filters.
// detail/parallel.hpp: work run on several threads, the calling one included, which goes on when
// a thread cannot be started or a body fails.
//
// run_shares runs independent shares (a growing filter's doubling and bulk insert): the shares no
// thread could be started for run on the calling thread. run_parallel runs bodies that meet at a
// team_barrier (the bulk build's phases): none starts unless all threads did, and a body that
// throws makes every body stop after the same phase, the exception rethrown.
#pragma once

#include <atomic>
#include <barrier>
#include <cstddef>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

namespace ccf::detail {

/// Runs share(t) for every t in [0, shares): shares 1 and up on threads of their own, share 0,
/// and the shares no thread could be started for (no thread, or no memory for one), on this one.
/// A share must not throw.
template <class Share>
void run_shares(std::size_t shares, Share&& share) {
  std::vector<std::jthread> pool;
  std::size_t t = 1;
  try {
    pool.reserve(shares);
    for (; t < shares; ++t)
      pool.emplace_back([&share, t] { share(t); });
  } catch (...) {  // fewer threads: this one runs the rest
  }
  for (; t < shares; ++t)
    share(t);
  share(0);
}

/// The barrier between the phases of run_parallel's bodies, which a failing body leaves: a body
/// that throws arrives once more without waiting (the phase it was in completes), and every body
/// leaves at its wait() for the end of that phase, which throws `abandoned`. Whether to leave is
/// decided in the phase's completion step, so all bodies leave after the same phase (a body that
/// read the flag itself after a phase could see a failure of the next one and leave while the
/// others waited for it there).
template <class Completion>
class team_barrier {
 public:
  struct abandoned {};
  team_barrier(std::ptrdiff_t threads, Completion completion)
      : barrier_(threads, step{this, std::move(completion)}) {}
  team_barrier(const team_barrier&) = delete;
  team_barrier& operator=(const team_barrier&) = delete;

  void wait() {
    barrier_.arrive_and_wait();
    // Written by the completion step of the phase just ended, which happens before this read;
    // the next write is in the next phase's, after this body has arrived for it.
    if (quit_) throw abandoned{};
  }
  /// Once, by a body that failed, in place of its remaining waits.
  void leave() noexcept {
    failed_.store(true, std::memory_order_relaxed);  // the arrival orders it before the step
    (void)barrier_.arrive();
  }

 private:
  struct step {
    team_barrier* team;
    Completion completion;
    void operator()() noexcept {
      team->quit_ = team->failed_.load(std::memory_order_relaxed);
      completion();
    }
  };
  std::atomic<bool> failed_{false};
  bool quit_ = false;
  std::barrier<step> barrier_;
};

/// Runs body(t) for t in [0, threads) on `threads` threads (this one included); the bodies meet
/// at `sync` (a team_barrier of `threads`). Returns `threads`. No body starts before every
/// thread is there: when one cannot be started (no thread, or no memory for one), the others
/// return without running theirs and the number that could be had (this one included, so at
/// least 1) is returned instead; nothing ran, and the caller may try again with that many (a
/// body waiting at a barrier for a thread that never came hung the caller). When a body throws,
/// it leaves `sync`, the others leave at their next wait, and the first exception is rethrown
/// once every thread has returned (a body that threw left the others waiting at a barrier for
/// good, or ended the process from a helper thread).
template <class Barrier, class Body>
std::size_t run_parallel(std::size_t threads, Barrier& sync, Body&& body) {
  std::exception_ptr failure;
  std::atomic_flag failed;
  auto run = [&](std::size_t t) noexcept {
    try {
      body(t);
    } catch (const typename Barrier::abandoned&) {
    } catch (...) {
      if (!failed.test_and_set()) failure = std::current_exception();
      sync.leave();
    }
  };
  enum : int { starting, go, called_off };
  std::atomic<int> state{starting};
  auto started = [&state] {
    state.wait(starting, std::memory_order_acquire);
    return state.load(std::memory_order_acquire) == go;
  };
  {
    std::vector<std::jthread> pool;
    try {
      pool.reserve(threads);
      for (std::size_t t = 1; t < threads; ++t)
        pool.emplace_back([&run, &started, t] {
          if (started()) run(t);
        });
    } catch (...) {
      state.store(called_off, std::memory_order_release);
      state.notify_all();
      return pool.size() + 1;  // the threads started are joined on the way out
    }
    state.store(go, std::memory_order_release);
    state.notify_all();
    run(0);
  }  // joined: `failure` is final
  if (failure) std::rethrow_exception(failure);
  return threads;
}

}  // namespace ccf::detail
