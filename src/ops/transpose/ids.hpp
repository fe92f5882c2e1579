// The names the transpose op owns: its registry name, variant ids and experiment name.
// register.cu registers them and claims.cpp reads records through them, so a rename changes both.
#pragma once

namespace cudalab::harness::transpose_ids {

inline constexpr char kOp[] = "transpose";
inline constexpr char kNaiveRowRead[] = "naive_row_read";
inline constexpr char kNaiveColumnRead[] = "naive_column_read";
inline constexpr char kTiled[] = "tiled";
inline constexpr char kPadded[] = "padded";
inline constexpr char kSwizzled[] = "swizzled";
inline constexpr char kPadded4PerThread[] = "padded_4_per_thread";
inline constexpr char kSwizzled4PerThread[] = "swizzled_4_per_thread";
inline constexpr char kSwizzled8PerThread[] = "swizzled_8_per_thread";
inline constexpr char kPadded64Tile[] = "padded_64_tile";
inline constexpr char kSwizzled64Tile[] = "swizzled_64_tile";
inline constexpr char kCublasGeam[] = "cublas_geam";
inline constexpr char kCopyCeiling[] = "transpose_copy_ceiling";

}  // namespace cudalab::harness::transpose_ids
