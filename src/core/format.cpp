#include "core/format.hpp"

#include <cstdio>

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

}  // namespace cudalab
