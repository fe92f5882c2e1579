// The names the conv2d op owns: its registry name, variant ids and experiment name. register.cu
// registers them and claims.cpp reads records through them, so a rename changes both.
#pragma once

namespace cudalab::harness::conv2d_ids {

inline constexpr char kOp[] = "conv2d";
inline constexpr char kGlobalFilter[] = "global_filter";
inline constexpr char kConstantFilter[] = "constant_filter";
inline constexpr char kSharedTile[] = "shared_tile";
inline constexpr char kTexture[] = "texture";
inline constexpr char kRegisterTiled[] = "register_tiled";
inline constexpr char kRegisterTiledTall[] = "register_tiled_tall";
inline constexpr char kCudnn[] = "cudnn";
inline constexpr char kCudnnAlgorithms[] = "conv2d_cudnn_algorithms";

}  // namespace cudalab::harness::conv2d_ids
