# Install ccf to a temporary prefix and build a find_package(ccf) consumer against it.
add_test(NAME install_and_find_package COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install/run.sh)
set_tests_properties(install_and_find_package PROPERTIES LABELS "install" TIMEOUT 600)
