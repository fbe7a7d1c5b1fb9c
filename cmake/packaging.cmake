# CPack: `cpack -G DEB` in a build directory makes one Debian package, `ccf`, holding everything
# `cmake --install` installs: the headers, the CMake package config (find_package(ccf)), the
# pkg-config file ccf.pc and, when the tools are built (CCF_BUILD_TOOLS), the `ccf` command.
# Build the tool before running cpack (cpack itself builds `all` first unless
# CMAKE_SKIP_INSTALL_ALL_DEPENDENCY is ON). Included from the top-level CMakeLists.txt.
set(CCF_PACKAGE_CONTACT "ccf <ccf@localhost>" CACHE STRING "Maintainer of the packages cpack makes")

set(CPACK_PACKAGE_NAME ccf)
set(CPACK_PACKAGE_VENDOR ccf)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${CCF_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "concurrent cuckoo filters for C++20 and the ccf tool")
set(CPACK_PACKAGE_DESCRIPTION
  "ccf is a header-only C++20 library of cuckoo filters for multicore
machines: sequential, concurrent and lock-free filters, Bloom baselines,
and a crash-safe key-value store with a cuckoo index. The package holds
the headers, a CMake package config (find_package(ccf)), a pkg-config
file (ccf.pc) and the ccf command, which builds, queries and inspects
filter files.")
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)

# The package installs under /usr, and ccf.pc (written at install time) says so: cpack installs
# with DESTDIR set and the prefix below.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX ${CPACK_PACKAGING_INSTALL_PREFIX})

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # ccf_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The headers include <xxhash.h>; the tool's shared libraries come from dpkg-shlibdeps (dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libxxhash-dev")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# `make package_source`: the source tree without build outputs.
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/out/")

include(CPack)
