# Writes ccf.pc at install time (run by an install(CODE) rule in the top-level CMakeLists.txt), so
# that its prefix is the one ccf is installed to: `cmake --install --prefix P` gives P, cpack gives
# the package's prefix. Inputs: CCF_PC_IN, CCF_PC_OUT, CCF_PC_INCLUDEDIR (relative to the prefix
# or absolute), PROJECT_DESCRIPTION, PROJECT_VERSION; CMAKE_INSTALL_PREFIX is the install's.
# A relative `--prefix` is relative to the directory cmake --install runs in, as the files' own
# destinations are (the install script runs there); ccf.pc names it as an absolute path, which
# works from any directory.
get_filename_component(CCF_PC_PREFIX "${CMAKE_INSTALL_PREFIX}" ABSOLUTE)
if(NOT IS_ABSOLUTE "${CCF_PC_INCLUDEDIR}")
  set(CCF_PC_INCLUDEDIR "\${prefix}/${CCF_PC_INCLUDEDIR}")
endif()
configure_file("${CCF_PC_IN}" "${CCF_PC_OUT}" @ONLY)
