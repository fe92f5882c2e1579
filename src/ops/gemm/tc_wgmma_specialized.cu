// Tensor-core rung `wgmma_specialized` (Hopper, sm_90a): warp specialization. A block of three warpgroups owns a
// 128 x 256 tile of C. Warpgroup 0 is the producer: it gives most of its registers back
// (setmaxnreg.dec to 40) and one of its threads only issues TMA loads into a 4-slot ring (48 KiB
// per k-tile: A 128 x 64, B 256 x 64). Warpgroups 1 and 2 are consumers (setmaxnreg.inc to 232):
// each multiplies its 64 rows of the tile with 4 wgmma.m64n256k16 per k-tile, keeps one group in
// flight, and when the previous group has completed arrives on that slot's empty barrier. Each
// slot has a full barrier (the producer's expected bytes have landed) and an empty barrier (both
// consumers are done with it): no block-wide barrier in the k-loop.
// Fixes, relative to rung `wgmma_tma`: the loads no longer wait for the slowest warp at a __syncthreads; the
// producer refills a slot the moment both consumers release it, up to 4 k-tiles ahead; the wider
// 128 x 256 tile reads 48 KiB per 4.2 MFLOP (rung `wgmma_tma`: 32 KiB per 2.1 MFLOP), and m64n256k16 is
// the largest wgmma, so the tensor cores see fewer, longer instructions. The register budget
// moves to where the accumulators are: 256 x 232 + 128 x 40 is exactly the 384 x 168 registers the
// block is launched with (__launch_bounds__(384, 1)).
// Costs: one block per SM (192 KiB of ring); the epilogue still stores from registers while the
// tensor cores idle, and each block fills its ring from cold.
// Its measured speed, beside cuBLAS's: docs/gemm-tensor-cores.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/hopper.cuh"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/schedules.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {

constexpr int kWgmmaSpecializedBlockM = 128, kWgmmaSpecializedBlockN = 256;

#if CUDALAB_SM90A
namespace {

using namespace hopper;

constexpr int kBlockM = kWgmmaSpecializedBlockM, kBlockN = kWgmmaSpecializedBlockN;
constexpr int kStages = 4;
constexpr int kConsumers = 2;  // warpgroups 1 and 2, 64 rows each
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kATileBytes = kBlockM * kBlockK * 2;                // 16 KiB
constexpr int kStageBytes = kATileBytes + kBlockN * kBlockK * 2;  // + 32 KiB of B

struct SharedStorage {
  alignas(1024) std::uint8_t ring[kStages][kStageBytes];
  PipelineBarriers<kStages> barriers;  // empty: both consumers are done with the slot
};
constexpr int kSharedBytes = shared_storage_bytes<SharedStorage>();
using Pipeline = TmaPipeline<kStages, kStageBytes>;

template <typename T, bool kBMnMajor>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_specialized_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                             const WgmmaParams<T> p) {
#if CUDALAB_SM90A_DEVICE
  extern __shared__ std::uint8_t dynamic_shared[];
  const std::uint32_t shared = aligned_shared_base(dynamic_shared);
  const Pipeline pipeline(shared + offsetof(SharedStorage, ring), shared + offsetof(SharedStorage, barriers));
  const TileSchedule schedule{{}, p.k_tiles};
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  pipeline.init(kConsumers);
  __syncthreads();

  if (warpgroup == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      RingPosition<kStages> ring;
      schedule.for_each(0, [&](const GemmWork& work) {
        const int m0 = work.at.m * kBlockM, n0 = work.at.n * kBlockN, z = work.at.batch;
        produce(pipeline, ring, work.k_tiles, [&](std::uint32_t stage, std::uint32_t barrier, int kt) {
          tma_load(stage, &a_map, barrier, kt * kBlockK, m0, z * p.batch_step_a);
          load_operand<kBlockN, kBMnMajor>(stage + kATileBytes, &b_map, barrier, kt * kBlockK, n0, z * p.batch_step_b);
        });
      });
    }
  } else {
    setmaxnreg_inc<232>();
    const int consumer = warpgroup - 1;
    const bool leader = threadIdx.x % 128 == 0;
    const auto release = [&](int stage) {
      if (leader) pipeline.consumer_release(stage);
    };
    RingPosition<kStages> ring;
    schedule.for_each(0, [&](const GemmWork& work) {
      float acc[kBlockN / 2] = {};
      consumer_k_loop<T, false, kBMnMajor, kATileBytes>(acc, work.k_tiles, pipeline, ring, consumer * 64 * kRowBytes,
                                                        release);
      const OutputMatrix<T> out = at_offset(p.out, work.at.batch * p.stride_c);
      store_accumulators_direct(out, acc, work.at.m * kBlockM + 64 * consumer, work.at.n * kBlockN);
    });
  }
#else
  __trap();  // a device pass without sm_90a code: the build must target sm_90a (CUDA_ARCHITECTURES 90a)
#endif
}

}  // namespace
#endif  // CUDALAB_SM90A

std::string wgmma_specialized_limits(const GemmShape& shape, int compute_capability) {
  const std::string why = hopper::wgmma_limits(shape, compute_capability);
  return why.empty()
             ? tensor_core_common_limits(shape, compute_capability, kWgmmaSpecializedBlockM, kWgmmaSpecializedBlockN)
             : why;
}

template <typename T>
void wgmma_specialized(const GemmArgs<T>& args, cudaStream_t stream) {
  require_limits("wgmma_specialized", wgmma_specialized_limits(shape_of(args), current_gpu().compute_capability));
#if CUDALAB_SM90A
  hopper::launch_tile_per_cta<kBlockM, kBlockN, kThreads, kSharedBytes>(
      args, "wgmma_specialized", wgmma_specialized_kernel<T, false>, wgmma_specialized_kernel<T, true>, stream);
#else
  (void)stream;
#endif
}

template void wgmma_specialized<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wgmma_specialized<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
