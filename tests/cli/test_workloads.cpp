// The bench workloads: the file format's checks, and the shipped files themselves.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "text.h"
#include "workloads.h"

using namespace speclab::cli;

namespace {
std::string write_temp(const std::string& name, const std::string& content) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("speclab_cli_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << content;
  return path.string();
}
}  // namespace

TEST_SUITE("cli / workloads") {
  TEST_CASE("a well-formed file loads with ids systems and turns") {
    const std::string path =
        write_temp("ok.jsonl",
                   "{\"id\": \"a\", \"system\": \"S\", \"turns\": [\"q1\", \"q2\"]}\n\n"
                   "{\"id\": \"b\", \"turns\": [\"only\"], \"note\": \"ignored\"}\n");
    const Workload w = load_workload(path);
    REQUIRE(w.items.size() == 2);
    CHECK(w.items[0].id == "a");
    CHECK(w.items[0].system == "S");
    CHECK(w.items[0].turns == std::vector<std::string>{"q1", "q2"});
    CHECK(w.items[1].system.empty());
    std::filesystem::remove(path);
  }

  TEST_CASE("malformed lines are reported with file and line") {
    const std::map<std::string, std::string> bad = {
        {"{\"id\": \"a\", \"turns\": [\"q\"]}\n{not json\n", ":2: not valid JSON"},
        {"{\"turns\": [\"q\"]}\n", ":1: \"id\" must be a non-empty string"},
        {"{\"id\": \"a\", \"turns\": []}\n", "\"turns\" must be a non-empty array"},
        {"{\"id\": \"a\", \"turns\": [\"  \"]}\n", "every turn must be a non-empty string"},
        {"{\"id\": \"a\", \"turns\": [\"q\"]}\n{\"id\": \"a\", \"turns\": [\"q\"]}\n",
         "the id 'a' appears twice"},
        {"{\"id\": \"a\", \"turn\": [\"q\"]}\n", "\"turns\" must be"},
        {"{\"id\": \"a\", \"turns\": [\"q\"], \"sytem\": \"x\"}\n", "unknown field \"sytem\""},
        {"{\"id\": \"a\", \"turns\": [\"\xff\"]}\n", "not valid UTF-8"},
        {"\n\n", "holds no conversation"},
    };
    for (const auto& [content, message] : bad) {
      CAPTURE(content);
      const std::string path = write_temp("bad.jsonl", content);
      CHECK_THROWS_WITH_AS(load_workload(path), doctest::Contains(message.c_str()), UsageError);
      std::filesystem::remove(path);
    }
    {  // the library's exception id is not for the user
      const std::string path = write_temp("bad.jsonl", "not json\n");
      CHECK_THROWS_WITH_AS(load_workload(path),
                           (path + ":1: not valid JSON: parse error at line 1, column 2: syntax "
                                   "error while parsing value - invalid literal; last read: 'no'")
                               .c_str(),
                           UsageError);
      std::filesystem::remove(path);
    }
    CHECK_THROWS_WITH_AS(load_workload("/nonexistent/x.jsonl"),
                         doctest::Contains("'/nonexistent/x.jsonl': no such file"), UsageError);
    const std::string folder = std::filesystem::temp_directory_path().string();
    CHECK_THROWS_WITH_AS(load_workload(folder), doctest::Contains("is a directory"), UsageError);
  }

  TEST_CASE("the shipped workloads cover the six tasks with at least 8 conversations each") {
    const std::vector<std::string> names = shipped_workloads();
    CHECK(names == std::vector<std::string>{"code_edit", "extraction", "open_chat", "rag",
                                            "rewrite", "two_turn"});
    for (const std::string& name : names) {
      CAPTURE(name);
      const Workload w = find_workload(name);
      CHECK(w.items.size() >= 8);
      for (const Conversation& c : w.items) {
        CHECK(c.turns.size() == (name == "two_turn" ? 2u : 1u));
      }
    }
  }

  TEST_CASE("an unknown workload name lists the shipped ones") {
    CHECK_THROWS_WITH_AS(find_workload("nope"), doctest::Contains("shipped: code_edit"),
                         UsageError);
  }
}
