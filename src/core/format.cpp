#include "core/format.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cudalab/error.hpp"

namespace cudalab {

std::string format_fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string format_scientific(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*e", digits, value);
  return text;
}

std::string format_significant(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*g", digits, value);
  return text;
}

std::string format_general(double value) { return format_significant(value, 9); }

std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 6) {
    bytes /= 1024.0;
    ++unit;
  }
  return unit == 0 ? format_fixed(bytes, 0) + " B" : format_fixed(bytes, 2) + " " + units[unit];
}

std::uint64_t parse_bytes(const std::string& text, const std::string& what) {
  const auto refuse = [&](const std::string& why) {
    throw Error(ErrorKind::invalid_argument,
                what + "='" + text + "' " + why + " (a number of bytes, or with K, M, G or T: \"20GiB\", \"512M\")",
                __FILE__, __LINE__);
  };
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number) || number < 0) refuse("is not a size");
  std::string unit(end);
  if (unit.size() == 3 && unit.substr(1) == "iB") unit.resize(1);
  double scale = 1;
  if (unit == "K") {
    scale = 1024.0;
  } else if (unit == "M") {
    scale = 1024.0 * 1024;
  } else if (unit == "G") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "T") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else if (!unit.empty() && unit != "B") {
    refuse("has an unknown unit '" + std::string(end) + "'");
  }
  const double bytes = std::floor(number * scale);
  if (bytes < 1 || bytes > 1e18) refuse("is out of range");
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace cudalab
