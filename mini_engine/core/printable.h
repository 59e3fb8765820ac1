#pragma once
// Text from outside (a file's names, what a user typed) made safe to put in a message.
#include <string>
#include <string_view>

namespace speclab {

// `text` with each control byte but newline and tab (a NUL, an escape, DEL) written as \xNN:
// safe to print, and not cut short at a NUL by what() (a C string). Other bytes, UTF-8 included,
// are kept as they are.
std::string printable(std::string_view text);

}  // namespace speclab
