// Human-readable sizes for messages and tables (binary units for memory, as GPUs report it).
#pragma once

#include <cstdint>
#include <string>

namespace cudalab {

std::string format_bytes(double bytes);                    // "1.50 GiB", "512 B"
std::string format_fixed(double value, int digits);        // printf("%.*f")
std::string format_scientific(double value, int digits);   // printf("%.*e")
std::string format_general(double value);                  // printf("%.9g"): round-trips an fp32 value
std::string format_significant(double value, int digits);  // printf("%.*g")

}  // namespace cudalab
