// The names the reduction ops own: their registry names and variant ids. register.cpp registers
// them and claims.cpp reads records through them, so a rename changes both.
#pragma once

namespace cudalab::harness::reduce_ids {

inline constexpr char kOp[] = "reduce_sum";               // f32 or i32 in, the same dtype out
inline constexpr char kDoubleOp[] = "reduce_sum_double";  // f32 in, summed and returned in f64

inline constexpr char kGlobalModulo[] = "global_modulo";
inline constexpr char kGlobalMask[] = "global_mask";
inline constexpr char kNoFilterRacy[] = "no_filter_racy";
inline constexpr char kRacyDeviceDebug[] = "racy_device_debug";  // the experiment: the racy loop built with -G
inline constexpr char kInterleavedDivergent[] = "interleaved_divergent";
inline constexpr char kInterleavedStrided[] = "interleaved_strided";
inline constexpr char kSequential[] = "sequential";
inline constexpr char kFirstAddOnLoad[] = "first_add_on_load";
inline constexpr char kUnrolledLastWarp[] = "unrolled_last_warp";
inline constexpr char kCompleteUnroll[] = "complete_unroll";
inline constexpr char kMultiplePerThread[] = "multiple_per_thread";
inline constexpr char kShuffleAtomic[] = "shuffle_atomic";
inline constexpr char kSinglePass[] = "single_pass";
inline constexpr char kTileAtomic[] = "tile_atomic";
inline constexpr char kTileDeterministic[] = "tile_deterministic";
inline constexpr char kCub[] = "cub";

}  // namespace cudalab::harness::reduce_ids
