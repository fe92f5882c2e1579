// The names the scan op owns: its registry name, its parameter and its variant ids. register.cpp
// registers them and claims.cpp reads records through them, so a rename changes both.
#pragma once

namespace cudalab::harness::scan_ids {

inline constexpr char kOp[] = "scan";
// 0: inclusive (out[i] sums in[0..i]); 1: exclusive (in[0..i-1]).
inline constexpr char kExclusive[] = "exclusive";

inline constexpr char kHillisSteele[] = "hillis_steele";
inline constexpr char kBlelloch[] = "blelloch";
inline constexpr char kBlellochPadded[] = "blelloch_padded";
inline constexpr char kScanThenPropagateHillisSteele[] = "scan_then_propagate_hillis_steele";
inline constexpr char kScanThenPropagate[] = "scan_then_propagate";
inline constexpr char kReduceThenScan[] = "reduce_then_scan";
inline constexpr char kDecoupledLookback[] = "decoupled_lookback";
inline constexpr char kCub[] = "cub";

}  // namespace cudalab::harness::scan_ids
