# Writes ccf.pc at install time (run by an install(CODE) rule in the top-level CMakeLists.txt), so
# that its prefix is the one ccf is installed to: `cmake --install --prefix P` gives P, cpack gives
# the package's prefix. Inputs: CCF_PC_IN, CCF_PC_OUT, CCF_PC_INCLUDEDIR (relative to the prefix
# or absolute), PROJECT_DESCRIPTION, PROJECT_VERSION; CMAKE_INSTALL_PREFIX is the install's.
set(CCF_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
if(NOT IS_ABSOLUTE "${CCF_PC_INCLUDEDIR}")
  set(CCF_PC_INCLUDEDIR "\${prefix}/${CCF_PC_INCLUDEDIR}")
endif()
configure_file("${CCF_PC_IN}" "${CCF_PC_OUT}" @ONLY)
