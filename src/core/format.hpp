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

// A memory size as typed: a whole number of bytes ("21474836480") or a number with a binary unit
// K, M, G or T, alone or as KiB, MiB, GiB, TiB ("20GiB", "1.5G", "512M"). Throws
// cudalab::Error{invalid_argument} with a sentence saying what was wrong, naming `what`.
std::uint64_t parse_bytes(const std::string& text, const std::string& what);

}  // namespace cudalab
