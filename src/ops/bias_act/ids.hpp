// The names the bias+activation ops own: their registry names, the `activation` parameter and the
// variant ids. register.cpp registers them and claims.cpp reads records through them, so a rename
// changes every use.
#pragma once

namespace cudalab::harness::bias_act_ids {

inline constexpr char kOp[] = "bias_act";
inline constexpr char kBackwardOp[] = "bias_act_backward";
// 0: ReLU, 1: GELU (tanh approximation), 2: GELU (exact, erf): cudalab::Activation's values.
inline constexpr char kActivation[] = "activation";

// Both ops' baseline: the bias add (forward) or the column sum (backward) as a separate pass.
inline constexpr char kUnfused[] = "unfused";

// Forward.
inline constexpr char kTutorial[] = "tutorial";
inline constexpr char kVectorized[] = "vectorized";
inline constexpr char kTiled[] = "tiled";

// Backward.
inline constexpr char kNaive[] = "naive";
inline constexpr char kFused[] = "fused";

}  // namespace cudalab::harness::bias_act_ids
