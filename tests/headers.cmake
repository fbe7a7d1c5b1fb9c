# Every public header compiles and links alone with plain `c++ -std=c++20 -Iinclude`.
add_test(NAME public_headers_compile_alone
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/headers/run.sh ${CMAKE_CXX_COMPILER}
                 ${PROJECT_SOURCE_DIR} ${CCF_XXHASH_INCLUDE_DIR})
set_tests_properties(public_headers_compile_alone PROPERTIES LABELS "install" TIMEOUT 900)
