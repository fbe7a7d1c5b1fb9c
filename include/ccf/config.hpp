// ccf — concurrent cuckoo filters.
// config.hpp: the only place where ccf defines macros. Everything else uses these.
#pragma once

// One clear line for a build in an older mode (g++ 12 defaults to gnu++17), before the pages of
// errors that `requires` and concepts give there.
#if __cplusplus < 202002L && !defined(_MSVC_LANG)
#error "ccf needs C++20: compile with -std=c++20 (CMake: ccf::ccf requires cxx_std_20)"
#endif

#include <cstddef>

#if defined(__GNUC__) || defined(__clang__)
#define CCF_FORCEINLINE inline __attribute__((always_inline))
#define CCF_NOINLINE __attribute__((noinline))
#define CCF_LIKELY(x) __builtin_expect(!!(x), 1)
#define CCF_UNLIKELY(x) __builtin_expect(!!(x), 0)
// Prefetch for reading (rw = 0) or writing (rw = 1), high temporal locality: into L1 (x86:
// prefetcht0; prefetchw for writing where the target has PRFCHW, e.g. -march=native).
// CCF_PREFETCH_L2 stops one level out (x86: prefetcht1), for reading: x86 has no prefetch for
// writing into L2 (GCC turns any prefetch for writing into prefetchw where it can), so lines
// that will be written are prefetched this way too (detail/bucket_table.hpp says when).
#define CCF_PREFETCH(addr) __builtin_prefetch((addr), 0, 3)
#define CCF_PREFETCH_WRITE(addr) __builtin_prefetch((addr), 1, 3)
#define CCF_PREFETCH_L2(addr) __builtin_prefetch((addr), 0, 2)
// Unrolls the loop that follows completely (a loop over a bucket's slots). GCC unrolls such loops
// at -O3 but not at -O2; with this, both get the path search's straight-line code.
#define CCF_PRAGMA(x) _Pragma(#x)
#define CCF_UNROLL_SLOTS CCF_PRAGMA(GCC unroll 8)
#else
#define CCF_FORCEINLINE inline
#define CCF_NOINLINE
#define CCF_LIKELY(x) (x)
#define CCF_UNLIKELY(x) (x)
#define CCF_PREFETCH(addr) ((void)(addr))
#define CCF_PREFETCH_WRITE(addr) ((void)(addr))
#define CCF_PREFETCH_L2(addr) ((void)(addr))
#define CCF_UNROLL_SLOTS
#endif

#if defined(__x86_64__) || defined(_M_X64)
#define CCF_X86_64 1
#else
#define CCF_X86_64 0
#endif

#if CCF_X86_64 && (defined(__GNUC__) || defined(__clang__))
// RTM intrinsics are compiled per function with target("rtm"); whether they run is decided at
// run time (CPUID + a probe transaction), so the library never requires -mrtm.
#define CCF_HAS_RTM_INTRINSICS 1
#define CCF_TARGET_RTM __attribute__((target("rtm")))
#else
#define CCF_HAS_RTM_INTRINSICS 0
#define CCF_TARGET_RTM
#endif

#if defined(__SSE2__)
#define CCF_HAS_SSE2 1
#else
#define CCF_HAS_SSE2 0
#endif

#if defined(__AVX2__)
#define CCF_HAS_AVX2 1
#else
#define CCF_HAS_AVX2 0
#endif

// Spin-wait hint.
#if CCF_X86_64 && (defined(__GNUC__) || defined(__clang__))
#define CCF_CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CCF_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define CCF_CPU_RELAX() ((void)0)
#endif

// ThreadSanitizer detection (seqlock readers annotate nothing: all shared words are atomics).
#if defined(__SANITIZE_THREAD__)
#define CCF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CCF_TSAN 1
#endif
#endif
#ifndef CCF_TSAN
#define CCF_TSAN 0
#endif

// CCF_RUNTIME_FILTER_PREBUILT: 1 where the program links ccf's library ccf_runtime_models, which
// compiles ccf::runtime_filter's filter types once (default allocator; src/).
// Its sources then declare those instantiations extern instead of compiling every filter type
// again. ccf's CMake target ccf_runtime_models sets it for what links it; installed ccf is
// header-only and leaves it 0.
#ifndef CCF_RUNTIME_FILTER_PREBUILT
#define CCF_RUNTIME_FILTER_PREBUILT 0
#endif

namespace ccf {
/// Size of a cache line on the machines ccf targets (x86-64, aarch64).
inline constexpr std::size_t cache_line_size = 64;
}  // namespace ccf
