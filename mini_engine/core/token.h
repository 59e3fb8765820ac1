#pragma once
// Token ids and the small error types shared by every part of the engine.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace speclab {

// A token id: an index into the model's vocabulary, 0 <= id < vocab_size.
using Token = std::int32_t;

// Thrown by a starter file's unfinished functions. The message names the lab, the function and
// the book section that explains it, so a failing test tells the student where to read.
class TodoError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Throws TodoError("TODO(<lab>): implement <what> -- see <where>").
[[noreturn]] void todo(std::string_view lab, std::string_view what, std::string_view where);

// Thrown when appending tokens would overflow a target's maximum context length.
class ContextOverflow : public std::length_error {
 public:
  using std::length_error::length_error;
};

}  // namespace speclab
