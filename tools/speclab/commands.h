#pragma once
// One add_<name>() per subcommand: each registers its flags and its callback on the app.
// The flags they share (model, drafter, decoding) are defined once, in factory.h.
#include <CLI/CLI.hpp>

namespace speclab::cli {

// `speclab demo`: speculative vs plain decoding side by side.
void add_demo(CLI::App& app);

// `speclab generate`: stream one completion with accepted drafts highlighted.
void add_generate(CLI::App& app);

// `speclab chat`: a multi-turn conversation from standard input; the drafter persists.
void add_chat(CLI::App& app);

// `speclab bench`: workloads x drafters x parameters x repeats, checked against plain decoding.
void add_bench(CLI::App& app);

// `speclab trace`: one JSON line per verify round (tools/speclab/trace_record.h documents the
// fields).
void add_trace(CLI::App& app);

}  // namespace speclab::cli
