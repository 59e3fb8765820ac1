#include "workloads.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "text.h"
#include "user_files.h"

namespace speclab::cli {
namespace {

std::string where(const std::string& path, int line) {
  return path + ":" + std::to_string(line) + ": ";
}

}  // namespace

Workload load_workload(const std::string& path) {
  std::ifstream in = open_input_file(path, "workload");
  Workload w;
  w.path = path;
  w.name = std::filesystem::path(path).stem().string();
  std::set<std::string> ids;
  std::string line;
  int number = 0;
  // Capped: /dev/zero, one endless line, would be read until memory ran out.
  while (read_line_capped(in, line, where(path, number + 1) + "a line", kMaxInputBytes)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    require_utf8(line, where(path, number) + "this line");
    nlohmann::json j;
    // JSON lets a key appear twice, and the parser keeps the last value: "turns" given twice
    // would drop the first turns without a word. Each key of the line's object is noted here.
    std::set<std::string> keys;
    std::string repeated;
    const auto note_key = [&](int depth, nlohmann::json::parse_event_t event,
                              nlohmann::json& parsed) {
      if (event == nlohmann::json::parse_event_t::key && depth == 1 && repeated.empty() &&
          !keys.insert(parsed.get<std::string>()).second) {
        repeated = parsed.get<std::string>();
      }
      return true;
    };
    try {
      j = nlohmann::json::parse(line, note_key);
    } catch (const nlohmann::json::exception& e) {
      // what() opens with the library's exception id, "[json.exception.parse_error.101] ":
      // the user needs only what follows.
      std::string why = e.what();
      if (why.starts_with("[json.exception.")) why.erase(0, why.find("] ") + 2);
      throw UsageError(where(path, number) + "not valid JSON: " + why);
    }
    if (!j.is_object()) throw UsageError(where(path, number) + "each line must be a JSON object");
    if (!repeated.empty()) {
      throw UsageError(where(path, number) + "the field \"" + repeated +
                       "\" appears twice: give each field once");
    }
    Conversation c;
    if (!j.contains("id") || !j["id"].is_string() || j["id"].get<std::string>().empty()) {
      throw UsageError(where(path, number) + "\"id\" must be a non-empty string");
    }
    c.id = j["id"].get<std::string>();
    if (!ids.insert(c.id).second) {
      throw UsageError(where(path, number) + "the id '" + c.id + "' appears twice");
    }
    if (j.contains("system")) {
      if (!j["system"].is_string())
        throw UsageError(where(path, number) + "\"system\" must be a string");
      c.system = j["system"].get<std::string>();
    }
    if (!j.contains("turns") || !j["turns"].is_array() || j["turns"].empty()) {
      throw UsageError(where(path, number) + "\"turns\" must be a non-empty array of strings");
    }
    for (const auto& t : j["turns"]) {
      if (!t.is_string() ||
          t.get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos) {
        throw UsageError(where(path, number) + "every turn must be a non-empty string");
      }
      c.turns.push_back(t.get<std::string>());
    }
    if (j.contains("note") && !j["note"].is_string()) {
      throw UsageError(where(path, number) + "\"note\" must be a string");
    }
    for (const auto& [key, value] : j.items()) {
      if (key != "id" && key != "system" && key != "turns" && key != "note") {
        throw UsageError(where(path, number) + "unknown field \"" + key +
                         "\" (fields: id, system, turns, note)");
      }
    }
    w.items.push_back(std::move(c));
  }
  if (w.items.empty()) throw UsageError("workload '" + path + "' holds no conversation");
  return w;
}

std::string workloads_dir() { return std::string(SPECLAB_SOURCE_DIR) + "/data/workloads"; }

std::vector<std::string> shipped_workloads() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(workloads_dir(), ec)) {
    if (entry.path().extension() == ".jsonl") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool looks_like_workload_path(const std::string& name) {
  return name.find('/') != std::string::npos || name.ends_with(".jsonl");
}

Workload find_workload(const std::string& name) {
  if (looks_like_workload_path(name)) return load_workload(name);
  const std::string path = workloads_dir() + "/" + name + ".jsonl";
  if (std::filesystem::exists(path)) return load_workload(path);
  std::string valid;
  for (const std::string& n : shipped_workloads()) valid += (valid.empty() ? "" : ", ") + n;
  std::error_code ec;
  const auto here = std::filesystem::status(name, ec).type();
  const std::string what_here =
      here == std::filesystem::file_type::directory ? "; '" + name + "' here is a folder"
      : here == std::filesystem::file_type::not_found
          ? ""
          : "; to read the file '" + name + "' here, give it as ./" + name;
  throw UsageError("unknown workload '" + name + "'; shipped: " + valid +
                   " (or give the path of a .jsonl file)" + what_here);
}

}  // namespace speclab::cli
