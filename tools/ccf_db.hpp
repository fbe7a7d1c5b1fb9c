// The `ccf db` subcommands (tools/ccf_db.cpp).
#pragma once

#include <cstddef>
#include <string>

#include "cli_support.hpp"

namespace CLI {
class App;
}

namespace ccf_tool {

struct db_args {
  std::string dir, key, value, value_file, file, name;
  std::size_t chunk_size = 4096;
  bool recover = false;
  bool unlisted = false;  // db rm --unlisted
};

/// Adds `db` and its subcommands to the tool; returns the `db` command.
CLI::App* add_db_commands(CLI::App& app, db_args& args);
/// Runs the parsed `db` subcommand; returns the exit status.
int run_db_command(CLI::App& db, const db_args& args);

}  // namespace ccf_tool
