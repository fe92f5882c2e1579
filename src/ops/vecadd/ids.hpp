// The names the vector-add op owns: its registry name and variant ids. register.cpp registers
// them and claims.cpp reads records through them, so a rename changes both.
#pragma once

namespace cudalab::harness::vecadd_ids {

inline constexpr char kOp[] = "vecadd";
inline constexpr char kOnePerThread[] = "one_per_thread";
inline constexpr char kGridStride[] = "grid_stride";
inline constexpr char kSharedStaging[] = "shared_staging";
inline constexpr char kVectorized[] = "vectorized";
inline constexpr char kVectorizedUnroll4[] = "vectorized_unroll4";
inline constexpr char kThrust[] = "thrust";
inline constexpr char kHostPattern[] = "vecadd_host_pattern";

}  // namespace cudalab::harness::vecadd_ids
