# Fuzzing (docs/fuzzing.md). Included by tests/CMakeLists.txt (not when CCF_TESTS_ONLY is set).
#
# Targets: kv_log_fuzz (the key-value store's record parser and log recovery), filter_load_fuzz
# (the filter file loader: read_filter_info, runtime_filter::load, the typed and growing filters'
# loading constructors), runtime_ops_fuzz (runtime_filter over operation sequences against an
# exact multiset) and key_reader_fuzz (the ccf tool's key reader, tools/key_reader.hpp).
#
#   kv_log_fuzz_smoke  kv_log_fuzz driven by tests/fuzz/standalone_main.cpp (a seed corpus built
#                      in code and 3000 deterministic mutations of it), built with the project's
#                      compiler and flags (CCF_SANITIZE included): the CTest case kv_log_fuzz_smoke,
#                      a few seconds.
#   <target>_replay    each of the other targets driven by tests/fuzz/replay_main.cpp, with the
#                      project's compiler and flags: the CTest case <target>_replay runs its
#                      self-test, every file of tests/fuzz/corpus/<target>/, the seeds it builds in
#                      code and a few thousand deterministic mutations of them (labels unit;fuzz,
#                      seconds in Release). Replay a finding with ./tests/<target>_replay FILE;
#                      regenerate a corpus with ./tests/<target>_replay --write-corpus DIR.
#   <target>           with -DCCF_FUZZ=ON and a compiler that takes -fsanitize=fuzzer (clang): the
#                      libFuzzer executables (with ASan and UBSan), not run by CTest.
#                      tests/fuzz/run_fuzzers.sh builds them with clang and runs each for a while
#                      on a copy of its corpus:
#                        tests/fuzz/run_fuzzers.sh [SECONDS_PER_TARGET] [TARGET...]
#                      or by hand, e.g.
#                        mkdir -p c && cp tests/fuzz/corpus/filter_load_fuzz/* c/
#                        ./build/fuzz/tests/filter_load_fuzz -max_total_time=60 c/
#                        mkdir -p corpus && ./tests/kv_log_fuzz_smoke --write-corpus corpus
#                        ./tests/kv_log_fuzz -max_total_time=60 corpus/
#                      and replay a finding with ./tests/<target> crash-<hash> (or with the
#                      replay or smoke executable).
option(CCF_FUZZ "Build the libFuzzer executables of tests/fuzz (needs clang)" OFF)

set(ccf_fuzz_dir ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
add_executable(kv_log_fuzz_smoke
  ${ccf_fuzz_dir}/kv_log_fuzz.cpp ${ccf_fuzz_dir}/standalone_main.cpp)
target_link_libraries(kv_log_fuzz_smoke PRIVATE ccf::ccf ccf_dev_flags)
target_include_directories(kv_log_fuzz_smoke PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME kv_log_fuzz_smoke COMMAND kv_log_fuzz_smoke)
set_tests_properties(kv_log_fuzz_smoke PROPERTIES LABELS "unit;fuzz" TIMEOUT 300)

# The targets that tests/fuzz/replay_main.cpp drives, and the include directories each needs.
set(ccf_fuzz_targets filter_load_fuzz runtime_ops_fuzz key_reader_fuzz)
set(ccf_fuzz_includes_key_reader_fuzz ${PROJECT_SOURCE_DIR}/tools)
# Mutations per CTest case: each case stays within seconds in Release and within a few minutes
# under the sanitizers on two cores.
set(ccf_fuzz_mutations_filter_load_fuzz 3000)
set(ccf_fuzz_mutations_runtime_ops_fuzz 3000)
set(ccf_fuzz_mutations_key_reader_fuzz 5000)
foreach(t IN LISTS ccf_fuzz_targets)
  add_executable(${t}_replay ${ccf_fuzz_dir}/${t}.cpp ${ccf_fuzz_dir}/replay_main.cpp)
  target_link_libraries(${t}_replay PRIVATE ccf::ccf ccf_dev_flags)
  target_include_directories(${t}_replay PRIVATE ${ccf_fuzz_dir} ${ccf_fuzz_includes_${t}})
  ccf_link_runtime_models(${t}_replay ${ccf_fuzz_dir}/${t}.cpp)
  add_test(NAME ${t}_replay
           COMMAND ${t}_replay --replay ${ccf_fuzz_dir}/corpus/${t}
                   --mutations ${ccf_fuzz_mutations_${t}})
  set_tests_properties(${t}_replay PROPERTIES LABELS "unit;fuzz" TIMEOUT 300)
endforeach()

if(CCF_FUZZ)
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS -fsanitize=fuzzer)
  check_cxx_source_compiles(
    "#include <cstddef>
     #include <cstdint>
     extern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }"
    CCF_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  if(CCF_HAVE_LIBFUZZER)
    add_executable(kv_log_fuzz ${ccf_fuzz_dir}/kv_log_fuzz.cpp)
    target_link_libraries(kv_log_fuzz PRIVATE ccf::ccf)
    target_include_directories(kv_log_fuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    target_compile_options(kv_log_fuzz PRIVATE -g -fno-omit-frame-pointer
                           -fsanitize=fuzzer,address,undefined)
    target_link_options(kv_log_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
    foreach(t IN LISTS ccf_fuzz_targets)
      add_executable(${t} ${ccf_fuzz_dir}/${t}.cpp)
      target_link_libraries(${t} PRIVATE ccf::ccf)
      target_include_directories(${t} PRIVATE ${ccf_fuzz_dir} ${ccf_fuzz_includes_${t}})
      target_compile_options(${t} PRIVATE -g -fno-omit-frame-pointer
                             -fsanitize=fuzzer,address,undefined)
      target_link_options(${t} PRIVATE -fsanitize=fuzzer,address,undefined)
    endforeach()
  else()
    message(WARNING "ccf: CCF_FUZZ is ON but the compiler (${CMAKE_CXX_COMPILER_ID}) does not "
                    "take -fsanitize=fuzzer (configure with clang): the libFuzzer executables are "
                    "not built")
  endif()
endif()
