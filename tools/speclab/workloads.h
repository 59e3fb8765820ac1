#pragma once
// Bench workloads: data/workloads/<name>.jsonl, one conversation per line (data/workloads/
// README.md documents the format):
//   {"id": "rename-01", "system": "You are ...", "turns": ["first user message", "second ..."]}
// "system" may be omitted or empty; "turns" holds one or more user messages, sent in order, each
// answered by the model before the next.
#include <string>
#include <vector>

namespace speclab::cli {

struct Conversation {
  std::string id;
  std::string system;
  std::vector<std::string> turns;  // user messages, >= 1
};

struct Workload {
  std::string name;  // the file name without .jsonl
  std::string path;
  std::vector<Conversation> items;
};

// Reads a workload file. Throws UsageError naming the file and line for unreadable files,
// malformed JSON, missing or mistyped fields, duplicate ids, invalid UTF-8, empty files, and a
// line of more than 16 MiB (kMaxInputBytes; read no further: /dev/zero ends there).
Workload load_workload(const std::string& path);

// The directory of the shipped workloads (data/workloads in the source tree).
std::string workloads_dir();

// The names of the shipped workloads, sorted.
std::vector<std::string> shipped_workloads();

// Whether find_workload takes `name` as a file path: it has a '/' or ends in .jsonl.
bool looks_like_workload_path(const std::string& name);

// A shipped workload by name ("code_edit"), or a file by path (looks_like_workload_path).
// Throws UsageError listing the shipped names when neither exists.
Workload find_workload(const std::string& name_or_path);

}  // namespace speclab::cli
