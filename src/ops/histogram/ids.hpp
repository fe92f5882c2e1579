// The names the histogram op owns: its registry name, parameter and variant ids. register.cu
// registers them, so a rename changes every use.
#pragma once

namespace cudalab::harness::histogram_ids {

inline constexpr char kOp[] = "histogram";
inline constexpr char kBins[] = "bins";
inline constexpr char kGlobalAtomics[] = "global_atomics";
inline constexpr char kSharedPrivatized[] = "shared_privatized";
inline constexpr char kSubHistograms[] = "sub_histograms";
inline constexpr char kWarpAggregated[] = "warp_aggregated";
inline constexpr char kVectorized[] = "vectorized";
inline constexpr char kLaneColumns[] = "lane_columns";
inline constexpr char kCub[] = "cub";

}  // namespace cudalab::harness::histogram_ids
