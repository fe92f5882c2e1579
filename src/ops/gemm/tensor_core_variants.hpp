// The tensor-core ladder for BF16 and FP16: C = alpha A B + beta C with A, B and C in the element
// type, products accumulated in FP32 and alpha, beta applied in FP32 before C is rounded back to
// the element type. Every rung takes GemmArgs<T> for T in {__half, __nv_bfloat16}: B as K x N or
// as N x K (args.b_transposed) and strided batches (args.batch > 1, grid z), and enqueues on
// `stream`; mma_small and the persistent Hopper rungs (wgmma_persistent, wgmma_small,
// wgmma_cluster) also take A stored K x M (args.a_transposed), the others refuse it. A rung that cannot take a shape
// says why through its `*_limits` function (the harness skips it with that reason; the library call picks another
// rung); its launcher throws cudalab::Error (invalid_argument) with the same reason if called anyway.
#pragma once

#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "ops/gemm/variants.hpp"

namespace cudalab::gemm_variants {

// What a rung's limits depend on: the sizes, leading dimensions, batch strides and B's layout, in
// elements. Pointer alignment is the launcher's to check (the harness's buffers are 256-byte aligned).
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  bool b_transposed = false;
  std::int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  bool a_transposed = false;
};
template <typename T>
GemmShape shape_of(const GemmArgs<T>& args) {
  return {args.m,     args.n,        args.k,        args.lda,      args.ldb,         args.ldc, args.b_transposed,
          args.batch, args.stride_a, args.stride_b, args.stride_c, args.a_transposed};
}

// WMMA 16x16x16 fragments loaded straight from global memory, one warp per 16x16 output tile.
template <typename T>
void wmma_global(const GemmArgs<T>& args, cudaStream_t stream);
std::string wmma_global_limits(const GemmShape& shape, int compute_capability);

// WMMA with A and B tiles staged through shared memory.
template <typename T>
void wmma_shared(const GemmArgs<T>& args, cudaStream_t stream);
std::string wmma_shared_limits(const GemmShape& shape, int compute_capability);

// mma.sync m16n8k16 with ldmatrix from XOR-swizzled shared memory (no bank conflicts).
template <typename T>
void mma_swizzled(const GemmArgs<T>& args, cudaStream_t stream);
std::string mma_swizzled_limits(const GemmShape& shape, int compute_capability);

// As mma_swizzled, with a multistage cp.async pipeline and register double-buffered fragments.
template <typename T>
void mma_pipelined(const GemmArgs<T>& args, cudaStream_t stream);
std::string mma_pipelined_limits(const GemmShape& shape, int compute_capability);
// Small and batched problems: 64x64 tiles of 4 warps, k in tiles of 64, 8 blocks per SM, C staged in shared memory.
template <typename T>
void mma_small(const GemmArgs<T>& args, cudaStream_t stream);
std::string mma_small_limits(const GemmShape& shape, int compute_capability);

// The library call's rung (library_choice.cpp, from measurements): decode_gemv or decode_mma for a decode step;
// the big-tile Hopper rungs (cluster from six waves of 128x256 tiles or where A's or B's rows start
// off 128-byte lines, persistent otherwise); aligned_copies where only A's or B's pitch or address
// keeps a big Hopper product off them (the misaligned operands copied to rows on 128-byte lines
// first, then the rung the copies get); mma_pipelined
// on other GPUs; mma_swizzled for big products of misaligned rows; wgmma_small below the big-tile
// line on Hopper; wgmma_mid on either side of it where its 128x128 tiles take fewer rounds of the SMs
// than the others', wgmma_streamk above it where sharing the k-steps costs less than whole tiles
// (library_choice.cpp); mma_small for the rest (batches of small matrices, short k, any alignment).
enum class LibraryRung {
  decode_gemv,
  decode_mma,
  decode_wgmma,
  wgmma_cluster,
  wgmma_persistent,
  wgmma_mid,
  wgmma_streamk,
  wgmma_pingpong,
  aligned_copies,
  mma_pipelined,
  mma_swizzled,
  wgmma_small,
  mma_small
};
// Whether A, B and C start on 16-byte boundaries.
struct OperandAlignment {
  bool a = true, b = true, c = true;
};
LibraryRung library_rung(const GemmShape& shape, OperandAlignment alignment, int compute_capability, int sm_count,
                         bool may_copy = true);
// The rung a product on `rung` takes when its epilogue reads C (reads_c) or runs a fused activation
// (fused): wgmma_pingpong for the large-tile rungs where measured faster (library_choice.cpp).
LibraryRung epilogue_rung(LibraryRung rung, const GemmShape& shape, bool reads_c, bool fused, int compute_capability);

// The shape with A's and B's pitches rounded up to 8 elements where they, or the operand's
// address, are not 16-byte aligned: what aligned_copies copies them to.
GemmShape with_aligned_pitches(const GemmShape& shape, OperandAlignment alignment);

// At most 8 rows of A against B stored N x K (a decode step through nn.Linear's weight): CUDA cores, a block per 4
// output columns, 16-byte loads along k; a read of B at the copy rate where the tile rungs have too few tiles.
template <typename T>
void decode_gemv(const GemmArgs<T>& args, cudaStream_t stream);
std::string decode_gemv_limits(const GemmShape& shape, int compute_capability);
// At most 16 rows of A against B stored N x K on tensor cores: B's rows as the mma's A operand, 16 a block, the
// fragments loaded straight from global memory; a read of B whose cost grows little with m.
template <typename T>
void decode_mma(const GemmArgs<T>& args, cudaStream_t stream);
std::string decode_mma_limits(const GemmShape& shape, int compute_capability);
// At most 64 rows of A against B stored N x K on Hopper: 64 rows of B a CTA streamed by TMA as wgmma's A operand, the
// tokens as its N, k split over a cluster whose partial sums meet in distributed shared memory.
template <typename T>
void decode_wgmma(const GemmArgs<T>& args, cudaStream_t stream);
std::string decode_wgmma_limits(const GemmShape& shape, int compute_capability);

// The Hopper rungs (sm_90a): wgmma from TMA-loaded, 128-byte-swizzled shared memory.
// One consumer warpgroup, TMA loads completed on mbarriers.
template <typename T>
void wgmma_tma(const GemmArgs<T>& args, cudaStream_t stream);
std::string wgmma_tma_limits(const GemmShape& shape, int compute_capability);
// Producer/consumer warp specialization: a TMA producer warpgroup, two consumer warpgroups, setmaxnreg.
template <typename T>
void wgmma_specialized(const GemmArgs<T>& args, cudaStream_t stream);
std::string wgmma_specialized_limits(const GemmShape& shape, int compute_capability);
// Persistent: one CTA per SM walking an L2-ordered tile schedule, epilogue through shared memory.
template <typename T>
void wgmma_persistent(const GemmArgs<T>& args, cudaStream_t stream);
std::string wgmma_persistent_limits(const GemmShape& shape, int compute_capability);

// wgmma_persistent's kernel on 64x128 tiles, its two consumer warpgroups splitting each k-tile: for shapes with few
// large tiles.
template <typename T>
void wgmma_small(const GemmArgs<T>& args, cudaStream_t stream);
// wgmma_small with k split across CTAs where its tiles leave SMs idle (a decode batch against a
// weight); the parts' fp32 sums added by a second kernel. Takes what wgmma_small takes.
// wgmma_persistent's kernel on 128x128 tiles: for shapes whose large tiles would leave a round of the
// SMs part empty.
template <typename T>
void wgmma_mid(const GemmArgs<T>& args, cudaStream_t stream);
std::string wgmma_mid_limits(const GemmShape& shape, int compute_capability);
// The persistent kernel on 64 x 256 tiles, one per consumer warpgroup, the two taking turns:
// each tile's epilogue overlaps the other warpgroup's k-loop.
template <typename T>
void wgmma_pingpong(const GemmArgs<T>& args, cudaStream_t stream);
std::string wgmma_pingpong_limits(const GemmShape& shape, int compute_capability);
template <typename T>
void wgmma_small_splitk(const GemmArgs<T>& args, cudaStream_t stream);
std::string wgmma_small_limits(const GemmShape& shape, int compute_capability);
// wgmma_persistent's large tiles with every CTA taking an equal share of all the tiles' k-steps
// (stream-K), a split tile finished in the kernel by the CTA with its last k-steps. Takes what
// wgmma_persistent takes.
template <typename T>
void wgmma_streamk(const GemmArgs<T>& args, cudaStream_t stream);
// 2-CTA thread-block clusters sharing one operand's tile by TMA multicast.
template <typename T>
void wgmma_cluster(const GemmArgs<T>& args, cudaStream_t stream);
std::string wgmma_cluster_limits(const GemmShape& shape, int compute_capability);

}  // namespace cudalab::gemm_variants
