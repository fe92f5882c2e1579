// The names the stream compaction op owns: its registry name, its parameter and its variant ids,
// used by register.cpp (and by any claim that reads its records), so a rename changes them all.
#pragma once

namespace cudalab::harness::select_ids {

inline constexpr char kOp[] = "select_if";
// The share of the uniform inputs kept, in percent (0, 50 or 100 in the bench); the predicate's
// threshold follows from it.
inline constexpr char kSelectedPercent[] = "selected_percent";

inline constexpr char kThreePass[] = "three_pass";
inline constexpr char kDecoupledLookback[] = "decoupled_lookback";
inline constexpr char kDecoupledLookbackStaged[] = "decoupled_lookback_staged";
inline constexpr char kCub[] = "cub";

}  // namespace cudalab::harness::select_ids
