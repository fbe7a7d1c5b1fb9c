# Model checking with Spin of the lock-free filter's lookup protocol (models/lockfree_filter.pml)
# the growing filter's read epochs (models/read_epochs.pml) and the store's group commit
# (models/group_sync.pml).
# Included by tests/CMakeLists.txt. The test is always registered: when spin or a C compiler is
# missing it fails with a message saying so, instead of passing silently (CI installs spin).
find_program(CCF_SPIN_EXECUTABLE spin)
find_program(CCF_MODEL_C_COMPILER NAMES cc gcc clang)
find_program(CCF_BASH_EXECUTABLE bash REQUIRED)

set(ccf_model_script ${PROJECT_SOURCE_DIR}/scripts/check_models.sh)
if(CCF_SPIN_EXECUTABLE AND CCF_MODEL_C_COMPILER)
  add_test(NAME model_check COMMAND ${CCF_BASH_EXECUTABLE} ${ccf_model_script})
  set_tests_properties(model_check PROPERTIES
    ENVIRONMENT "SPIN=${CCF_SPIN_EXECUTABLE};CC=${CCF_MODEL_C_COMPILER}")
else()
  if(NOT CCF_SPIN_EXECUTABLE)
    message(WARNING "ccf: spin not installed: the model_check test will fail")
    set(ccf_model_reason "spin not installed")
  else()
    message(WARNING "ccf: no C compiler for Spin's verifier: the model_check test will fail")
    set(ccf_model_reason "no C compiler (cc) for Spin's verifier")
  endif()
  add_test(NAME model_check
    COMMAND ${CCF_BASH_EXECUTABLE} -c "echo 'model_check: ${ccf_model_reason}' >&2; exit 1")
endif()
set_tests_properties(model_check PROPERTIES LABELS model TIMEOUT 600)
