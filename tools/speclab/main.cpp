// speclab: the command-line front end. Subcommands live in their own files.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"speclab: n-gram speculative decoding, from the SpecLab course"};
  app.require_subcommand(1);
  speclab::cli::add_demo(app);
  speclab::cli::add_trace(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "speclab: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
