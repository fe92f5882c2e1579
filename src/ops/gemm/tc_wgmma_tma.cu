// Tensor-core rung `wgmma_tma` (Hopper, sm_90a): one warpgroup per 128 x 128 block tile multiplies with
// wgmma straight from shared memory, fed by TMA. Per 64-wide k-tile, thread 0 issues one TMA load
// of A's 128 x 64 tile and one (b_transposed) or two (B as k x n, 64-column boxes) of B's, all
// 128-byte swizzled, into a 3-slot ring; each slot's mbarrier completes when its bytes have landed.
// The warpgroup waits on the barrier, issues 2 x 4 wgmma.m64n128k16 (two 64-row halves of the tile,
// four k-steps of 16) as one group, and keeps that group in flight while it waits for the previous
// one; then a block barrier lets thread 0 refill the previous k-tile's slot.
// Fixes, relative to rung `mma_pipelined`: no thread moves operand data (TMA copies whole tiles, zero-filling
// what lies outside the matrices, so any m, n, k needs no predicated copies) and no fragment is
// loaded into registers (wgmma reads both operands from shared memory through descriptors), so the
// 128 threads spend their issue slots on nothing but waiting and issuing 8 wgmmas per k-tile.
// Costs: one __syncthreads per k-tile; only the 3 slots of the ring hide the load latency (two
// blocks per SM share the tensor cores to cover the rest); the epilogue stores straight from the
// accumulators' registers, 16 bytes per row per warp instruction.
// Written out by hand (its ring's barriers, slot arithmetic and phases) as the ladder's "before":
// the rungs after it run on the pipeline object of core/hopper/pipeline.cuh.
// Its measured speed, beside cuBLAS's: docs/gemm-tensor-cores.md.
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/hopper.cuh"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {

constexpr int kWgmmaTmaBlockM = 128, kWgmmaTmaBlockN = 128;

#if CUDALAB_SM90A
namespace {

using namespace hopper;

constexpr int kBlockM = kWgmmaTmaBlockM, kBlockN = kWgmmaTmaBlockN;
constexpr int kStages = 3;  // 3 x 32 KiB: two blocks fit in an SM's 228 KiB
constexpr int kThreads = 128;
constexpr int kATileBytes = kBlockM * kBlockK * 2;                // 16 KiB
constexpr int kStageBytes = kATileBytes + kBlockN * kBlockK * 2;  // + 16 KiB of B
constexpr int kSharedBytes =
    kStages * kStageBytes + kStages * 8 + static_cast<int>(kAtomBytes);  // ring, barriers, alignment

template <typename T, bool kBMnMajor>
__global__ void __launch_bounds__(kThreads, 2)
    wgmma_tma_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                     const WgmmaParams<T> p) {
#if CUDALAB_SM90A_DEVICE
  extern __shared__ std::uint8_t dynamic_shared[];
  const std::uint32_t stages = aligned_shared_base(dynamic_shared);
  const std::uint32_t full = stages + kStages * kStageBytes;  // one barrier per slot: its bytes have landed
  const int m0 = static_cast<int>(blockIdx.y) * kBlockM, n0 = static_cast<int>(blockIdx.x) * kBlockN;
  const int z = static_cast<int>(blockIdx.z);
  init_ring_barriers(full, 0, kStages, 0);
  __syncthreads();

  // k-tile kt into slot kt % kStages (thread 0 only).
  const auto load = [&](int kt) {
    const std::uint32_t stage = stages + (kt % kStages) * kStageBytes, barrier = full + 8 * (kt % kStages);
    mbarrier_arrive_expect_tx(barrier, kStageBytes);
    tma_load(stage, &a_map, barrier, kt * kBlockK, m0, z * p.batch_step_a);
    load_operand<kBlockN, kBMnMajor>(stage + kATileBytes, &b_map, barrier, kt * kBlockK, n0, z * p.batch_step_b);
  };
  if (threadIdx.x == 0)
    for (int kt = 0; kt < kStages && kt < p.k_tiles; ++kt) load(kt);

  float acc[2][kBlockN / 2] = {};  // rows 0-63 and 64-127 of the tile
  fence_accumulators(acc[0]);      // zeros in place before the first wgmma (see consumer_k_loop)
  fence_accumulators(acc[1]);
  for (int kt = 0; kt < p.k_tiles; ++kt) {
    const int slot = kt % kStages;
    mbarrier_wait(full + 8 * slot, (kt / kStages) % 2);
    const std::uint32_t a_tile = stages + slot * kStageBytes, b_tile = a_tile + kATileBytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
      const std::uint64_t b = operand_descriptor<kBMnMajor>(b_tile, kk);
#pragma unroll
      for (int half = 0; half < 2; ++half)
        wgmma_m64k16<T, false, kBMnMajor>(acc[half], k_major_descriptor(a_tile + half * 64 * kRowBytes, kk), b);
    }
    wgmma_commit();
    wgmma_wait<1>();  // k-tile kt - 1's products are done in every warp once all pass the barrier
    __syncthreads();
    if (threadIdx.x == 0 && kt >= 1 && kt - 1 + kStages < p.k_tiles) load(kt - 1 + kStages);
  }
  wgmma_wait<0>();
  fence_accumulators(acc[0]);
  fence_accumulators(acc[1]);

  const OutputMatrix<T> out = at_offset(p.out, z * p.stride_c);
  store_accumulators_direct(out, acc[0], m0, n0);
  store_accumulators_direct(out, acc[1], m0 + 64, n0);
#else
  __trap();  // a device pass without sm_90a code: the build must target sm_90a (CUDA_ARCHITECTURES 90a)
#endif
}

}  // namespace
#endif  // CUDALAB_SM90A

std::string wgmma_tma_limits(const GemmShape& shape, int compute_capability) {
  const std::string why = hopper::wgmma_limits(shape, compute_capability);
  return why.empty() ? tensor_core_common_limits(shape, compute_capability, kWgmmaTmaBlockM, kWgmmaTmaBlockN) : why;
}

template <typename T>
void wgmma_tma(const GemmArgs<T>& args, cudaStream_t stream) {
  require_limits("wgmma_tma", wgmma_tma_limits(shape_of(args), current_gpu().compute_capability));
#if CUDALAB_SM90A
  hopper::launch_tile_per_cta<kBlockM, kBlockN, kThreads, kSharedBytes>(args, "wgmma_tma", wgmma_tma_kernel<T, false>,
                                                                        wgmma_tma_kernel<T, true>, stream);
#else
  (void)stream;
#endif
}

template void wgmma_tma<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wgmma_tma<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
