#!/usr/bin/env bash
# Builds ccf and runs its tests: the whole suite in a Release build, then the concurrency tests
# again under ThreadSanitizer and under AddressSanitizer + UndefinedBehaviorSanitizer, each in its
# own build directory. Installs missing Debian packages first.
# Usage: scripts/run_tests.sh [--quick]     (--quick: the Release suite only)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
jobs=$(nproc)
quick=0
[ "${1:-}" = "--quick" ] && quick=1

echo "== Release build: every test =="
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DCCF_BUILD_BENCH=ON -DCCF_BUILD_TOOLS=ON \
  -DCCF_BUILD_PYTHON=ON -DCCF_BUILD_REDIS=ON -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
cmake --build build/release -j"$jobs"
# README's main command builds the `ccf` tool there.
./build/release/tools/ccf --version
(cd build/release && ctest --output-on-failure -j"$jobs" --timeout 600)

[ "$quick" = 1 ] && exit 0

# The concurrency tests, the engine's and the key-value store's, built alone in each sanitizer
# configuration, at -O1 with line tables only (-g1): enough for the sanitizers' reports, and half
# the compile time of -O2 -g under ASan + UBSan.
sanitized_tests="stress_concurrent_test;stress_lock_test;stress_kcas_test;lock_test;kcas_test"
sanitized_tests="$sanitized_tests;contract_test;lockfree_test;lockfree_filter_test;linearizability_test"
sanitized_tests="$sanitized_tests;engine_test;batch_insert_test;allocator_test"
sanitized_tests="$sanitized_tests;bulk_build_test;serialization_test;kv_store_test;kv_fault_test"
sanitized_tests="$sanitized_tests;kv_fault_fs_test;kv_concurrent_test;kv_recovery_test;kv_corruption_test"
sanitized_tests="$sanitized_tests;runtime_filter_test;kv_failure_test;clear_concurrent_test"
sanitized_tests="$sanitized_tests;file_parts_test;growing_test"
for san in thread address,undefined; do
  dir=build/san-${san//,/-}
  echo "== ${san} sanitizer build: ${sanitized_tests//;/ } =="
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCCF_SANITIZE="$san" \
    -DCCF_BUILD_BENCH=OFF -DCCF_BUILD_TOOLS=OFF -DCCF_BUILD_PYTHON=OFF -DCCF_BUILD_REDIS=OFF \
    "-DCCF_TESTS_ONLY=$sanitized_tests" >/dev/null
  cmake --build "$dir" -j"$jobs"
  (cd "$dir" && CCF_TEST_SCALE=0.2 CCF_STRESS_MS=600 \
     TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
     ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" \
     ctest --output-on-failure -j"$jobs" --timeout 900)
done
echo "ccf: all test runs passed"
