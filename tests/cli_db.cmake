# End-to-end test of the `ccf db` subcommands (the key-value store from the command line).
if(TARGET ccf-cli)
  add_test(NAME cli_db_end_to_end
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/db_run.sh $<TARGET_FILE:ccf-cli>)
  set_tests_properties(cli_db_end_to_end PROPERTIES LABELS "cli" TIMEOUT 600)
  if(CCF_LONG_TESTS)
    set_tests_properties(cli_db_end_to_end PROPERTIES ENVIRONMENT "CCF_CLI_LONG=1")
  endif()
endif()
