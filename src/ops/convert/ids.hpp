// The names the convert op owns: its registry name, parameter and variant ids. register.cpp
// registers them, so a rename changes every use.
#pragma once

namespace cudalab::harness::convert_ids {

inline constexpr char kOp[] = "convert";
inline constexpr char kDirection[] = "direction";  // 0: fp32 -> the dtype, 1: the dtype -> fp32
inline constexpr char kOnePerThread[] = "one_per_thread";
inline constexpr char kVectorized[] = "vectorized";
inline constexpr char kThrust[] = "thrust";

}  // namespace cudalab::harness::convert_ids
