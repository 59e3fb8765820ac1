#pragma once
// One add_<name>() per subcommand: each registers its flags and its callback on the app.
#include <CLI/CLI.hpp>

namespace speclab::cli {

// `speclab demo`: speculative vs plain decoding side by side.
void add_demo(CLI::App& app);

// `speclab trace`: one JSON line per verify round (tools/speclab/trace.cpp documents the fields).
void add_trace(CLI::App& app);

}  // namespace speclab::cli
