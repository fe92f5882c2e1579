// The names the normalization ops own: their registry names, parameter and variant ids.
// register.cpp registers them, so a rename changes every use.
#pragma once

namespace cudalab::harness::norms_ids {

inline constexpr char kLayerNorm[] = "layer_norm";
inline constexpr char kLayerNormBackward[] = "layer_norm_backward";
inline constexpr char kRmsNorm[] = "rms_norm";
inline constexpr char kRmsNormBackward[] = "rms_norm_backward";
inline constexpr char kAddLayerNorm[] = "add_layer_norm";
inline constexpr char kAddLayerNormBackward[] = "add_layer_norm_backward";
inline constexpr char kAddRmsNorm[] = "add_rms_norm";
inline constexpr char kAddRmsNormBackward[] = "add_rms_norm_backward";
inline constexpr char kEps[] = "eps";

// Forward rungs.
inline constexpr char kTutorialUnzeroed[] = "tutorial_unzeroed";
inline constexpr char kTutorialFixed[] = "tutorial_fixed";
inline constexpr char kWarpPerRow[] = "warp_per_row";
inline constexpr char kBlockPerRow[] = "block_per_row";
inline constexpr char kVectorRegisters[] = "vector_registers";
inline constexpr char kCluster[] = "cluster";
inline constexpr char kCubUnfused[] = "cub_unfused";
// The add_ forms' unfused forward (its fused one is kVectorRegisters).
inline constexpr char kAddUnfused[] = "unfused";
// Backward rungs.
inline constexpr char kUnfused[] = "unfused";
inline constexpr char kFused[] = "fused";
inline constexpr char kFusedRows[] = "fused_rows";
inline constexpr char kStaged[] = "staged";

}  // namespace cudalab::harness::norms_ids
