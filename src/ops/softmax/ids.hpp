// The names the softmax ops own: their registry names and variant ids. register.cpp registers them,
// so a rename changes every use.
#pragma once

namespace cudalab::harness::softmax_ids {

inline constexpr char kForward[] = "softmax";
inline constexpr char kBackward[] = "softmax_backward";

// Forward rungs.
inline constexpr char kThreePass[] = "three_pass";
inline constexpr char kWarpPerRow[] = "warp_per_row";
inline constexpr char kBlockPerRow[] = "block_per_row";
inline constexpr char kVectorized[] = "vectorized";
inline constexpr char kOnline[] = "online";
inline constexpr char kCluster[] = "cluster";

// The cuDNN baseline of both ops.
inline constexpr char kCudnn[] = "cudnn";

// Backward rungs.
inline constexpr char kTwoPass[] = "two_pass";
inline constexpr char kFused[] = "fused";

}  // namespace cudalab::harness::softmax_ids
