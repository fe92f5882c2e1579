// The names the execution experiments own: their page and experiment names. Each experiment file
// registers its experiment and claim under these, and its claim reads the table back through
// them, so a rename changes both.
#pragma once

namespace cudalab::harness::execution_ids {

inline constexpr char kPage[] = "execution";
inline constexpr char kWarpDivergence[] = "warp_divergence";
inline constexpr char kInstructionCosts[] = "instruction_costs";
inline constexpr char kOccupancy[] = "occupancy";
inline constexpr char kSyncCosts[] = "sync_costs";

}  // namespace cudalab::harness::execution_ids
