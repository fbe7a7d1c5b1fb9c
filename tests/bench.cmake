# Smoke tests of the benchmark programs (label "bench"): ccf-bench --quick drives every filter and
# baseline of this build through every operation with 1 and 2 threads on small tables and exits
# non-zero on any wrong answer (a false negative, a failed erase of a present key, a false positive
# of an exact set); the evaluation experiments and ccf_micro run once at toy size. Speed is never
# checked. Included from tests/CMakeLists.txt; the targets are defined later in bench/, which CTest
# resolves at generation time.
if(NOT CCF_BUILD_BENCH)
  return()
endif()

set(ccf_bench_smoke_args --quick)
if(CCF_SANITIZE MATCHES "thread")
  # libtbb is not built with ThreadSanitizer: its internal synchronisation is invisible to it.
  list(APPEND ccf_bench_smoke_args
       --filter cuckoo,striped,global,elided_mcs,lockfree,bloom,blocked_bloom,libcuckoo)
endif()

add_test(NAME bench_smoke COMMAND ccf-bench ${ccf_bench_smoke_args})
set_tests_properties(bench_smoke PROPERTIES LABELS bench TIMEOUT 300)

add_test(NAME bench_eval_smoke COMMAND ccf-bench --quick --experiment all)
set_tests_properties(bench_eval_smoke PROPERTIES LABELS bench TIMEOUT 300)

add_test(NAME bench_engine_targets_smoke COMMAND ccf_engine_targets --quick --threads 2)
set_tests_properties(bench_engine_targets_smoke PROPERTIES LABELS bench TIMEOUT 300)
add_test(NAME bench_growing_smoke COMMAND ccf_growing_bench --quick --threads 2)
set_tests_properties(bench_growing_smoke PROPERTIES LABELS bench TIMEOUT 300)

find_package(benchmark QUIET)
if(benchmark_FOUND)
  add_test(NAME bench_micro_smoke COMMAND ccf_micro --benchmark_min_time=0.01)
  set_tests_properties(bench_micro_smoke PROPERTIES LABELS bench TIMEOUT 300
                       ENVIRONMENT "CCF_MICRO_LOG2_BUCKETS=10"
                       FAIL_REGULAR_EXPRESSION "ERROR OCCURRED")
endif()
