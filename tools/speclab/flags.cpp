#include "flags.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace speclab::cli {

namespace {

// Whether `value` is written as a decimal number: digits and, where `real`, one point and an
// exponent ("-3", "0.5", "2e-3"). std::stoll and std::stod also read leading spaces, and stod hex
// floats ("0x10" is 16), infinities and NaN.
bool decimal(const std::string& value, bool real) {
  static const std::regex whole("[+-]?[0-9]+");
  static const std::regex number("[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?");
  return std::regex_match(value, real ? number : whole);
}

// For a whole number written with leading zeros ("010", "-01", "+00"), the way to write it
// without them ("10", "-1", "0"); "" for anything else. CLI11 converts whole numbers in base 0,
// so "010" would be read as octal 8 and "08" not at all.
std::string without_leading_zeros(const std::string& value) {
  static const std::regex padded("([+-]?)0+([0-9]+)");
  std::smatch m;
  if (!std::regex_match(value, m, padded)) return {};
  std::string digits = m[2].str();
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  return (m[1] == "-" && digits != "0" ? "-" : "") + digits;
}

std::string leading_zeros_message(const std::string& value, const std::string& canonical,
                                  const std::string& what) {
  return "got '" + value + "': write " + canonical + ", without leading zeros (" + what + ")";
}

}  // namespace

CLI::Validator int_in(long long lo, long long hi, const std::string& what) {
  return CLI::Validator(
      [lo, hi, what](std::string& value) -> std::string {
        long long v = 0;
        const std::string canonical = without_leading_zeros(value);
        if (!canonical.empty()) return leading_zeros_message(value, canonical, what);
        try {
          if (!decimal(value, false)) throw std::invalid_argument(value);
          v = std::stoll(value);
        } catch (const std::invalid_argument&) {
          return "expected a whole number (" + what + "), got '" + value + "'";
        } catch (const std::out_of_range&) {
          return "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + " (" +
                 what + "), got " + value;
        }
        if (v < lo || v > hi) {
          return "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + " (" +
                 what + "), got " + value;
        }
        return {};
      },
      "[" + std::to_string(lo) + ".." + std::to_string(hi) + "]");
}

CLI::Validator real_in(double lo, double hi, const std::string& what) {
  const auto text = [](double x) {
    std::ostringstream s;
    s << x;  // 0, 100, -1, 0.5: no trailing zeros
    return s.str();
  };
  const std::string range = text(lo) + " and " + text(hi);
  return CLI::Validator(
      [lo, hi, what, range](std::string& value) -> std::string {
        if (!decimal(value, true)) return "expected a number (" + what + "), got '" + value + "'";
        errno = 0;
        const double v = std::strtod(value.c_str(), nullptr);
        if (errno == ERANGE && std::fabs(v) < 1.0) {  // 1e-400: below the smallest double
          return "got " + value + ", too close to 0 to hold as a number (" + what +
                 "): write 0 or a larger value";
        }
        if (errno == ERANGE) return "must be between " + range + " (" + what + "), got " + value;
        if (!(v >= lo && v <= hi))
          return "must be between " + range + " (" + what + "), got " + value;
        return {};
      },
      "[" + text(lo) + ".." + text(hi) + "]");
}

namespace {

// "a,,b" -> {"a", "", "b"}: every item, empty ones included.
std::vector<std::string> split_items(const std::string& raw) {
  std::vector<std::string> items;
  for (size_t start = 0;;) {
    const size_t comma = raw.find(',', start);
    items.push_back(raw.substr(start, comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

// A check on one argument of a list flag: no empty item, and every item passes `item`.
CLI::Validator list_of(const CLI::Validator& item) {
  return CLI::Validator(
      [item](std::string& raw) -> std::string {
        if (raw.empty()) return "is empty: give one value, or several separated by commas";
        for (std::string& value : split_items(raw)) {
          if (value.empty()) {
            return "an empty item in '" + raw +
                   "': separate the values by single commas, with none at either end";
          }
          std::string error = item(value);
          if (!error.empty()) return error;
        }
        return {};
      },
      item.get_description());
}

template <typename T>
T item_value(const std::string& item);
template <>
int item_value<int>(const std::string& item) {
  return std::stoi(item);
}
template <>
std::string item_value<std::string>(const std::string& item) {
  return item;
}

template <typename T>
CLI::Option* add_list(CLI::App& cmd, const std::string& name, std::vector<T>& values,
                      const std::string& help, const CLI::Validator& item,
                      const std::string& type) {
  std::ostringstream shown;
  for (size_t i = 0; i < values.size(); ++i) shown << (i ? "," : "") << values[i];
  CLI::Option* option = cmd.add_option_function<std::vector<std::string>>(
      name,
      [&values](const std::vector<std::string>& raw) {
        values.clear();
        for (const std::string& argument : raw) {
          for (const std::string& value : split_items(argument)) {
            values.push_back(item_value<T>(value));  // `item` has checked it
          }
        }
      },
      help);
  option->type_name(type)->check(list_of(item));
  if (!values.empty()) option->default_str("[" + shown.str() + "]");
  return option;
}

}  // namespace

CLI::Option* add_list_flag(CLI::App& cmd, const std::string& name, std::vector<int>& values,
                           const std::string& help, const CLI::Validator& item) {
  return add_list(cmd, name, values, help, item, "INT");
}

CLI::Option* add_list_flag(CLI::App& cmd, const std::string& name, std::vector<std::string>& values,
                           const std::string& help) {
  return add_list(cmd, name, values, help, CLI::Validator(), "TEXT");
}

CLI::Option* add_seed_flag(CLI::App& cmd, std::uint64_t& seed, const std::string& help) {
  constexpr const char* kRange = "[0, 2^64-1]";
  const std::string what = "0 to " + std::to_string(std::numeric_limits<std::uint64_t>::max());
  const CLI::Validator check(
      [what, kRange](std::string& value) -> std::string {
        const std::string canonical = without_leading_zeros(value);
        if (!canonical.empty()) return leading_zeros_message(value, canonical, what);
        const bool negative = !value.empty() && value[0] == '-';
        const bool plus = !value.empty() && value[0] == '+';
        const std::string digits = negative || plus ? value.substr(1) : value;
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
          return std::string("expected a whole number in ") + kRange + " (" + what + "), got '" +
                 value + "'";
        }
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
        if (negative || ec != std::errc() || end != digits.data() + digits.size()) {
          return std::string("must be in ") + kRange + " (" + what + "), got " + value;
        }
        return {};
      },
      "[0..2^64-1]");
  return cmd.add_option("--seed", seed, help)->check(check)->capture_default_str();
}

}  // namespace speclab::cli
