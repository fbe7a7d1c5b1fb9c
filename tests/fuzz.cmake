# Fuzzing of the key-value store's record parser and log recovery (tests/fuzz/kv_log_fuzz.cpp).
# Included by tests/CMakeLists.txt (not when CCF_TESTS_ONLY is set).
#
#   kv_log_fuzz_smoke  the fuzz target driven by tests/fuzz/standalone_main.cpp (a seed corpus built
#                      in code and 3000 deterministic mutations of it), built with the project's
#                      compiler and flags (CCF_SANITIZE included): the CTest case kv_log_fuzz_smoke,
#                      a few seconds.
#   kv_log_fuzz        with -DCCF_FUZZ=ON and a compiler that takes -fsanitize=fuzzer (clang): the
#                      libFuzzer executable (with ASan and UBSan), not run by CTest. Run it as
#                        mkdir -p corpus && ./tests/kv_log_fuzz_smoke --write-corpus corpus
#                        ./tests/kv_log_fuzz -max_total_time=60 corpus/
#                      and replay a finding with ./tests/kv_log_fuzz crash-<hash> (or with
#                      kv_log_fuzz_smoke crash-<hash>).
option(CCF_FUZZ "Build the libFuzzer executable kv_log_fuzz (needs clang)" OFF)

set(ccf_fuzz_dir ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
add_executable(kv_log_fuzz_smoke
  ${ccf_fuzz_dir}/kv_log_fuzz.cpp ${ccf_fuzz_dir}/standalone_main.cpp)
target_link_libraries(kv_log_fuzz_smoke PRIVATE ccf::ccf ccf_dev_flags)
target_include_directories(kv_log_fuzz_smoke PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME kv_log_fuzz_smoke COMMAND kv_log_fuzz_smoke)
set_tests_properties(kv_log_fuzz_smoke PROPERTIES LABELS "unit;fuzz" TIMEOUT 300)

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
  else()
    message(WARNING "ccf: CCF_FUZZ is ON but the compiler (${CMAKE_CXX_COMPILER_ID}) does not "
                    "take -fsanitize=fuzzer (configure with clang): kv_log_fuzz is not built")
  endif()
endif()
