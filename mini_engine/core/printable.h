#pragma once
// Text from outside (a file's names, what a user typed) made safe to put in a message.
#include <cstddef>
#include <string>
#include <string_view>

namespace speclab {

// `text` with each control byte but newline and tab (a NUL, an escape, DEL) written as \xNN:
// safe to print, and not cut short at a NUL by what() (a C string). Other bytes, UTF-8 included,
// are kept as they are.
std::string printable(std::string_view text);

// `text` itself when it holds at most `max_bytes` bytes; otherwise its first `max_bytes` bytes
// (fewer, so as not to cut a UTF-8 character in two) and "... (N bytes in all)". For a name from a
// file in a message: a corrupt length field can make one swallow the rest of the file, megabytes
// that would bury the message. Not printable() itself: the message's type does that.
std::string clipped(std::string_view text, std::size_t max_bytes = 64);

}  // namespace speclab
