// The names the attention op owns: its registry name, parameter names and variant ids. register.cpp
// registers them and claims.cpp reads records through them, so a rename changes every use.
#pragma once

namespace cudalab::harness::attention_ids {

inline constexpr char kForward[] = "attention";
inline constexpr char kBackward[] = "attention_backward";
inline constexpr char kDecode[] = "attention_decode";

// Scalar parameters: causal (0 or 1) and kv_heads (0: as many as heads; else a divisor of heads,
// grouped-query attention).
inline constexpr char kCausal[] = "causal";
inline constexpr char kKvHeads[] = "kv_heads";
// A sliding window (attention's, attention_backward's and attention_decode's): the query at
// position i sees keys i - window_left .. i + window_right (-1: that side unbounded).
inline constexpr char kWindowLeft[] = "window_left";
inline constexpr char kWindowRight[] = "window_right";
// attention_decode's: ragged (0: every sequence fills the cache; 1: lengths drawn below it).
inline constexpr char kRagged[] = "ragged";
// and page (0: dense caches; else keys a page of a paged cache, through a block table).
inline constexpr char kPage[] = "page";

// Forward rungs, in ladder order.
inline constexpr char kNaive[] = "naive";
inline constexpr char kTutorial[] = "tutorial";
inline constexpr char kTutorialFixed[] = "tutorial_fixed";
inline constexpr char kTiled[] = "tiled";
inline constexpr char kMma[] = "mma";
inline constexpr char kMmaPipelined[] = "mma_pipelined";
inline constexpr char kWgmma[] = "wgmma";
inline constexpr char kWgmmaPingPong[] = "wgmma_pingpong";
// attention_decode's rungs beside naive.
inline constexpr char kSplitMma[] = "split_mma";

// The vendor-library baseline: unfused attention through cuBLAS.
inline constexpr char kCublas[] = "cublas";

// The experiment measuring the device memory a run holds against seq (claim C33), on the op's page.
inline constexpr char kMemoryExperiment[] = "attention_memory";
// Its rows' status: the run was checked and its memory measured, or its estimate exceeds the free
// memory and it was not attempted.
inline constexpr char kMemoryVerified[] = "verified";
inline constexpr char kMemoryDoesNotFit[] = "does not fit";
// Its columns that claims.cpp reads: seq, variant, status, the measured GiB and the estimate's.
inline constexpr char kSeqColumn[] = "seq";
inline constexpr char kVariantColumn[] = "variant";
inline constexpr char kStatusColumn[] = "status";
inline constexpr char kHeldColumn[] = "device_gib";
inline constexpr char kNeededColumn[] = "needed_gib";

}  // namespace cudalab::harness::attention_ids
