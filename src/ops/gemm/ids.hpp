// The names the matrix-multiply op owns: its registry name, variant ids, and the experiment's name
// and row labels. register.cpp and the experiment register them and claims.cpp reads records and
// rows through them, so a rename changes all three.
#pragma once

namespace cudalab::harness::gemm_ids {

inline constexpr char kOp[] = "gemm";
// The same product over a strided batch of matrices (dims batch, M, N, K).
inline constexpr char kBatchedOp[] = "gemm_batched";
// FP8 (e4m3) A and B into bf16 C (dims M, N, K), its rung and cuBLASLt's.
inline constexpr char kFp8Op[] = "gemm_fp8";
inline constexpr char kWgmmaFp8[] = "wgmma_fp8";
inline constexpr char kCublasLtFp8[] = "cublaslt_fp8";

// The ladder.
inline constexpr char kNaive[] = "naive";
inline constexpr char kCoalesced[] = "coalesced";
inline constexpr char kShared8[] = "shared_8";
inline constexpr char kShared16[] = "shared_16";
inline constexpr char kShared32[] = "shared_32";
inline constexpr char kShared32Padded[] = "shared_32_padded";
inline constexpr char kShared64[] = "shared_64";
inline constexpr char kBlocktile1d[] = "blocktile_1d";
inline constexpr char kBlocktile2d[] = "blocktile_2d";
inline constexpr char kVectorized[] = "vectorized";
inline constexpr char kDoubleBuffered[] = "double_buffered";
inline constexpr char kWarpTiledSingleBuffer[] = "warp_tiled_single_buffer";
inline constexpr char kWarpTiled[] = "warp_tiled";
// Every other built pipeline configuration is a variant "config_<configuration name>".
inline constexpr char kConfigPrefix[] = "config_";
inline constexpr char kTuned[] = "tuned";

// The tensor-core ladder (bf16, f16).
inline constexpr char kWmmaGlobal[] = "wmma_global";
inline constexpr char kWmmaShared[] = "wmma_shared";
inline constexpr char kMmaSwizzled[] = "mma_swizzled";
inline constexpr char kMmaPipelined[] = "mma_pipelined";
inline constexpr char kMmaSmall[] = "mma_small";
inline constexpr char kDecodeGemv[] = "decode_gemv";
inline constexpr char kDecodeMma[] = "decode_mma";
inline constexpr char kDecodeWgmma[] = "decode_wgmma";
inline constexpr char kWgmmaTma[] = "wgmma_tma";
inline constexpr char kWgmmaSpecialized[] = "wgmma_specialized";
inline constexpr char kWgmmaPersistent[] = "wgmma_persistent";
inline constexpr char kWgmmaSmall[] = "wgmma_small";
inline constexpr char kWgmmaSmallSplitK[] = "wgmma_small_splitk";
inline constexpr char kWgmmaStreamK[] = "wgmma_streamk";
inline constexpr char kWgmmaMid[] = "wgmma_mid";
inline constexpr char kWgmmaPingPong[] = "wgmma_pingpong";
inline constexpr char kWgmmaCluster[] = "wgmma_cluster";

// The cuBLAS baselines.
inline constexpr char kCublas[] = "cublas";
inline constexpr char kCublasTf32[] = "cublas_tf32";
inline constexpr char kCublasGemmEx[] = "cublas_gemmex";

// The K = 32 products experiment (C = AB and C = AA^T through shared memory) and its rows.
inline constexpr char kStagingExperiment[] = "gemm_seed001";
inline constexpr char kProductAB[] = "AB";
inline constexpr char kProductAAT[] = "AAT";
inline constexpr char kSimple[] = "simple";
inline constexpr char kSharedA[] = "shared_a";
inline constexpr char kSharedAB[] = "shared_ab";
inline constexpr char kSharedTransposed[] = "shared_transposed";
inline constexpr char kSharedPadded[] = "shared_padded";
inline constexpr char kCublasSgemm[] = "cublas_sgemm";
inline constexpr char kCublasSsyrk[] = "cublas_ssyrk";

}  // namespace cudalab::harness::gemm_ids
