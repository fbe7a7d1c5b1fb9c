// ccf — concurrent cuckoo filters.
// rtm.hpp: run-time detection of Intel RTM (restricted transactional memory) and thin wrappers
// around its four instructions.
//
// Design
// ------
// RTM adds XBEGIN / XEND / XABORT / XTEST. Executing any of them on a CPU without RTM raises #UD,
// and many CPUs that do advertise RTM have it switched off by microcode (every transaction aborts)
// or by the kernel (the CPUID bit is cleared). ccf therefore never assumes RTM at compile time:
//
//   * The wrappers rtm_begin / rtm_end / rtm_abort_locked / rtm_in_transaction are compiled per
//     function with CCF_TARGET_RTM (target("rtm")), so no -mrtm flag is needed anywhere. On targets
//     without the intrinsics (CCF_HAS_RTM_INTRINSICS == 0) they are stubs that report "aborted".
//   * rtm_supported() decides once per process, caching the answer in a function-local static:
//       1. CCF_NO_RTM set to anything but "" or "0" in the environment -> false;
//       2. built with ThreadSanitizer -> false (its shadow-memory writes inside a transaction would
//          be rolled back with the transaction and the race detector's view would be corrupted);
//       3. CPUID leaf 7 subleaf 0 must report RTM (EBX bit 11) and must not report
//          RTM_ALWAYS_ABORT (EDX bit 11);
//       4. a probe: up to rtm_probe_attempts empty transactions, at least one has to commit.
//   * Invariant relied on by every caller: no RTM instruction is executed unless rtm_supported()
//     has returned true. The probe in step 4 runs only after step 3 has seen the CPUID bit.
//
// Abort status words use the same bit layout as <immintrin.h> (_XBEGIN_STARTED, _XABORT_*); ccf
// keeps its own constants so the stubs compile on every platform.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "ccf/config.hpp"

#if CCF_HAS_RTM_INTRINSICS
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace ccf::detail {

/// rtm_begin() returns this when the transaction has started (any other value is an abort status).
inline constexpr unsigned rtm_started = ~0u;
/// Abort status bits (same layout as the hardware's EAX after an abort).
inline constexpr unsigned rtm_abort_explicit = 1u << 0;  ///< XABORT was executed
inline constexpr unsigned rtm_abort_retry = 1u << 1;     ///< hardware hints a retry may succeed
inline constexpr unsigned rtm_abort_conflict = 1u
                                               << 2;  ///< another core touched our read/write set
inline constexpr unsigned rtm_abort_capacity = 1u << 3;  ///< read/write set overflowed
inline constexpr unsigned rtm_abort_debug = 1u << 4;     ///< debug breakpoint
inline constexpr unsigned rtm_abort_nested = 1u << 5;    ///< abort happened in a nested transaction
/// The XABORT code ccf uses when a speculative section finds the elided lock held.
inline constexpr unsigned rtm_locked_code = 0xffu;
/// How many empty transactions rtm_probe() tries before it declares RTM unusable.
inline constexpr int rtm_probe_attempts = 16;

#if CCF_HAS_RTM_INTRINSICS
static_assert(rtm_started == _XBEGIN_STARTED);
static_assert(rtm_abort_explicit == _XABORT_EXPLICIT && rtm_abort_retry == _XABORT_RETRY &&
              rtm_abort_conflict == _XABORT_CONFLICT && rtm_abort_capacity == _XABORT_CAPACITY &&
              rtm_abort_debug == _XABORT_DEBUG && rtm_abort_nested == _XABORT_NESTED);
#endif

/// The 8-bit code passed to XABORT, valid when (status & rtm_abort_explicit) != 0.
constexpr unsigned rtm_abort_code(unsigned status) noexcept {
  return (status >> 24) & 0xffu;
}

/// Whether an abort status says "aborted by rtm_abort_locked()".
constexpr bool rtm_aborted_because_locked(unsigned status) noexcept {
  return status != rtm_started && (status & rtm_abort_explicit) != 0 &&
         rtm_abort_code(status) == rtm_locked_code;
}

#if CCF_HAS_RTM_INTRINSICS

/// XBEGIN. Returns rtm_started inside the new transaction; after an abort, execution resumes here
/// a second time and the abort status is returned instead.
CCF_TARGET_RTM inline unsigned rtm_begin() noexcept {
  return _xbegin();
}

/// XEND: commits the outermost transaction (or leaves one nesting level).
CCF_TARGET_RTM inline void rtm_end() noexcept {
  _xend();
}

/// XABORT with rtm_locked_code: the elided lock was found held.
CCF_TARGET_RTM inline void rtm_abort_locked() noexcept {
  _xabort(rtm_locked_code);
}

/// XTEST: whether the calling thread is executing transactionally.
CCF_TARGET_RTM inline bool rtm_in_transaction() noexcept {
  return _xtest() != 0;
}

#else

inline unsigned rtm_begin() noexcept {
  return 0;
}
inline void rtm_end() noexcept {}
inline void rtm_abort_locked() noexcept {}
inline bool rtm_in_transaction() noexcept {
  return false;
}

#endif

/// Whether CPUID advertises usable RTM: leaf 7 subleaf 0, EBX bit 11 (RTM) set and EDX bit 11
/// (RTM_ALWAYS_ABORT) clear. Executes no RTM instruction.
inline bool rtm_cpuid_flag() noexcept {
#if CCF_HAS_RTM_INTRINSICS
  unsigned eax = 0;
  unsigned ebx = 0;
  unsigned ecx = 0;
  unsigned edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool rtm = (ebx & (1u << 11)) != 0;
  const bool always_abort = (edx & (1u << 11)) != 0;
  return rtm && !always_abort;
#else
  return false;
#endif
}

/// Whether the environment variable CCF_NO_RTM disables lock elision (set, and neither empty
/// nor "0").
inline bool rtm_disabled_by_environment() noexcept {
  const char* value = std::getenv("CCF_NO_RTM");
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

/// The uncached decision behind rtm_supported(): environment, sanitizer, CPUID, then a probe of
/// up to rtm_probe_attempts empty transactions of which one must commit.
inline bool rtm_probe() noexcept {
  if (rtm_disabled_by_environment()) return false;
  if (CCF_TSAN) return false;
  if (!rtm_cpuid_flag()) return false;
  for (int attempt = 0; attempt < rtm_probe_attempts; ++attempt) {
    if (rtm_begin() == rtm_started) {
      rtm_end();
      return true;
    }
  }
  return false;
}

/// Whether RTM lock elision may be used in this process. Decided on the first call and cached;
/// thread-safe. No RTM instruction may run unless this returned true.
inline bool rtm_supported() noexcept {
  static const bool supported = rtm_probe();
  return supported;
}

}  // namespace ccf::detail
