# Packaging tests (label "install"), driven by scripts in tests/install/:
#  - install_and_find_package: `cmake --install` to a temporary prefix, then a find_package(ccf)
#    consumer and a pkg-config consumer built and run against it (run.sh);
#  - deb_package: `cpack -G DEB`, the package's control fields and contents checked, then installed
#    (dpkg -i as root, purged after; unpacked into a temporary root otherwise) and used: the ccf
#    tool and both consumers (deb.sh).
# As root, deb_package installs ccf into /usr for a while: the lock keeps the two apart.
add_test(NAME install_and_find_package COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install/run.sh)
set_tests_properties(install_and_find_package PROPERTIES LABELS "install" TIMEOUT 600
  RESOURCE_LOCK ccf_system_install)
add_test(NAME deb_package COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install/deb.sh)
set_tests_properties(deb_package PROPERTIES LABELS "install" TIMEOUT 900
  RESOURCE_LOCK ccf_system_install)
