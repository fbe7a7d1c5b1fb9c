# End-to-end test of the `ccf` command-line tool.
if(TARGET ccf-cli)
  add_test(NAME cli_end_to_end COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/run.sh $<TARGET_FILE:ccf-cli>)
  set_tests_properties(cli_end_to_end PROPERTIES LABELS "cli" TIMEOUT 300)
endif()
