// The names the attention op owns: its registry name, parameter names and variant ids. register.cu
// registers them and claims.cpp reads records through them, so a rename changes every use.
#pragma once

namespace cudalab::harness::attention_ids {

inline constexpr char kForward[] = "attention";

// Scalar parameters: causal (0 or 1) and kv_heads (0: as many as heads; else a divisor of heads,
// grouped-query attention).
inline constexpr char kCausal[] = "causal";
inline constexpr char kKvHeads[] = "kv_heads";

// Forward rungs, in ladder order.
inline constexpr char kNaive[] = "naive";
inline constexpr char kTutorial[] = "tutorial";
inline constexpr char kTutorialFixed[] = "tutorial_fixed";
inline constexpr char kTiled[] = "tiled";
inline constexpr char kMma[] = "mma";
inline constexpr char kMmaPipelined[] = "mma_pipelined";

// The vendor-library baseline: unfused attention through cuBLAS.
inline constexpr char kCublas[] = "cublas";

}  // namespace cudalab::harness::attention_ids
