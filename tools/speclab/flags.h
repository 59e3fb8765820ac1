#pragma once
// Flag checks shared by the speclab CLI and the bench tools: CLI11 validators whose messages say
// what a flag means, --seed over the whole uint64 range, and comma-separated list flags that
// refuse empty items. Depends on CLI11 only.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace speclab::cli {

// A CLI11 check for an integer flag in [lo, hi] whose message says what the flag means:
// "--k: must be between 1 and 64 (drafts per round), got 0". The number is read in decimal, with
// an optional sign; one written with leading zeros is refused with the way to write it
// ("--k: got '010': write 10, without leading zeros ..."), as CLI11 would read it as octal 8.
CLI::Validator int_in(long long lo, long long hi, const std::string& what);
// The same for a real number in [lo, hi] (NaN is refused).
CLI::Validator real_in(double lo, double hi, const std::string& what);

// Adds --seed to `cmd` (every subcommand's --seed is made here), with `help`. It takes a decimal
// whole number in [0, 2^64-1], with an optional '+' and no leading zeros (as int_in), and refuses
// anything else, naming the range: CLI11's own conversion would wrap -1 to 2^64-1 and clamp 2^64
// to 2^64-1 without a word.
CLI::Option* add_seed_flag(CLI::App& cmd, std::uint64_t& seed, const std::string& help);

// Adds a list flag to `cmd`: `--k 5,6,8` (or `--k 5 --k 6,8`) replaces `values` with the items in
// order; `values` must outlive the parse, and keeps its contents when the flag is absent. Each
// item must pass `item` (an int_in check names the flag as for one value). An empty item, as in
// '5,,6', '5,' or ',', is refused by name: CLI11's own splitting (->delimiter) drops empty items
// without a word. --help shows `values`' contents as the default when it has any.
CLI::Option* add_list_flag(CLI::App& cmd, const std::string& name, std::vector<int>& values,
                           const std::string& help, const CLI::Validator& item);
CLI::Option* add_list_flag(CLI::App& cmd, const std::string& name, std::vector<std::string>& values,
                           const std::string& help);

}  // namespace speclab::cli
