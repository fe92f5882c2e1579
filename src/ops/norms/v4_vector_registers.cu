// Rung `vector_registers`: the row read once, with 16-byte vector loads, and held in registers for both sums and
// the output, for LayerNorm and RMSNorm. A row group sized to the width holds it: a warp for up
// to 256 features (8 a lane) or 1024 (32 a lane), four warps to a CTA; a block of 128, 256 or 512
// threads for up to 2048, 4096 or 8192 (16 a thread); of 512 or 1024 threads for up to 16384 or
// 32768 (32 a thread). Rows whose starts are not 16-byte aligned (features not a multiple of 16
// bytes, or an offset pointer) take element loads, at most 16 a thread: a warp up to 512, a
// 1024-thread block up to 16384. Launch bounds ask for 1536 threads an SM at 16 values a thread
// (40 registers), 1024 at 32 (64 registers). Fixes, relative to block_per_row: x crosses from
// memory to the SM once (the sums run over registers: rung `block_per_row` reads a row three times, which only
// L1/L2 keep from costing three times the traffic), a warp instruction moves 512 bytes instead of
// 64-128, all of a thread's loads are in flight before the first add, and the group fits the width
// (no idle warps on narrow rows, no 8192-element walks on wide ones). The two LayerNorm sums still
// run one after the other (mean first, then squared deviations from it, see norms.cuh): two group
// sums per row, each two barriers for block groups. Costs: one kernel per width class, vector
// width and dtype; a row wider than 32768 features (16384 with element loads) does not fit (rung `cluster`
// splits it over a cluster); at 32 values a thread, a 1024-thread block holds an SM alone, and a
// CTA loads, sums and stores one row with nothing of its own to overlap (only the other CTAs on
// the SM fill the gaps). With a residual (add_layer_norm, add_rms_norm) the group reads x and the
// residual once each and writes their sum beside y: the add a pre-norm block runs before its norm,
// without the sum's second read.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

// kResidual: the add_ form (a separate kernel, so the plain norm keeps its registers). Its thread
// holds the residual's vectors beside the row's values: it asks for half the CTAs an SM, twice the
// registers (at half the threads, each has twice the loads in flight: as many bytes an SM).
template <int kGroup, int kItems, int kVec, bool kResidual>
inline constexpr int kForwardCtasPerSm = kResidual ? (kMinCtasPerSm<kGroup, kItems, kVec> + 1) / 2
                                                   : kMinCtasPerSm<kGroup, kItems, kVec>;

template <typename T, int kGroup, int kItems, int kVec, bool kResidual>
__global__ void __launch_bounds__(kCtaThreads<kGroup>, kForwardCtasPerSm<kGroup, kItems, kVec, kResidual>)
    norm_vector_registers_kernel(NormForwardArgs<T> a) {
  constexpr int kGroups = kCtaThreads<kGroup> / kGroup;
  __shared__ float scratch[kGroup / kWarpSize + 1];
  const int group = static_cast<int>(threadIdx.x) / kGroup;
  const int thread = static_cast<int>(threadIdx.x) % kGroup;
  const int vectors = static_cast<int>(a.features / kVec);
  const auto reduce = [](float v) { return group_sum<kGroup>(v, scratch); };
  const float inverse_count = 1.0f / static_cast<float>(a.features);
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kGroups + group; row < a.rows;
       row += static_cast<std::int64_t>(gridDim.x) * kGroups) {
    const T* x = a.x + row * a.features;
    RowSlice<kItems, kVec, kGroup> slice(thread, vectors);
    slice.load(x);
    float pivot = 0.0f;
    if constexpr (kResidual) {
      const T* residual = a.residual + row * a.features;
      if (a.norm == Norm::layer) pivot = to_float(from_float<T>(to_float(x[0]) + to_float(residual[0])));
      slice.add_residual(residual, a.residual_out + row * a.features);
    } else if (a.norm == Norm::layer) {
      pivot = to_float(x[0]);
    }
    const RowStatistics statistics = row_statistics(a.norm, slice, pivot, inverse_count, a.eps, reduce);
    // Saved first, so pivot and mean_d hold no registers through the output loop.
    if (thread == 0) {
      if (a.norm == Norm::layer && a.mean != nullptr) a.mean[row] = pivot + statistics.mean_d;
      if (a.rstd != nullptr) a.rstd[row] = statistics.rstd;
    }
    write_normalized(a.norm, slice, statistics, a.gamma, a.beta, a.y + row * a.features);
  }
}

template <typename T, int kGroup, int kItems, int kVec>
void launch(const NormForwardArgs<T>& a, cudaStream_t stream) {
  static_assert(kGroup * kItems <= kBlockRowMax, "the widest class is kBlockRowMax");
  constexpr int kGroups = kCtaThreads<kGroup> / kGroup;
  const std::int64_t blocks = std::min<std::int64_t>(ceil_div<std::int64_t>(a.rows, kGroups), 1 << 30);
  if constexpr (kGroup == 1024) {
    // A 1024-thread CTA has 64 registers a thread, which the row's values fill: the residual's
    // would spill. The add goes first, as a pass of its own, and the plain kernel reads the sum.
    if (a.residual != nullptr) {
      add_elements(a.x, a.residual, a.residual_out, a.rows * a.features, stream);
      NormForwardArgs<T> sum = a;
      sum.x = a.residual_out;
      sum.residual = nullptr;
      sum.residual_out = nullptr;
      return launch<T, kGroup, kItems, kVec>(sum, stream);
    }
    norm_vector_registers_kernel<T, kGroup, kItems, kVec, false>
        <<<static_cast<int>(blocks), kCtaThreads<kGroup>, 0, stream>>>(a);
  } else {
    auto* kernel = a.residual != nullptr ? norm_vector_registers_kernel<T, kGroup, kItems, kVec, true>
                                         : norm_vector_registers_kernel<T, kGroup, kItems, kVec, false>;
    kernel<<<static_cast<int>(blocks), kCtaThreads<kGroup>, 0, stream>>>(a);
  }
  CUDALAB_CHECK_LAUNCH();
}

// The smallest group whose registers hold the row. Element loads (kVec 1) stop at 16 values a
// thread: at 32, their per-element bounds checks do not fit in 64 registers.
template <typename T, int kVec>
void launch_for_width(const NormForwardArgs<T>& a, cudaStream_t stream) {
  const std::int64_t f = a.features;
  if (f <= 256) return launch<T, 32, 8, kVec>(a, stream);
  if constexpr (kVec == 1) {
    if (f <= 512) return launch<T, 32, 16, kVec>(a, stream);
  } else {
    if (f <= 1024) return launch<T, 32, 32, kVec>(a, stream);
  }
  if (f <= 2048) return launch<T, 128, 16, kVec>(a, stream);
  if (f <= 4096) return launch<T, 256, 16, kVec>(a, stream);
  if (f <= 8192) return launch<T, 512, 16, kVec>(a, stream);
  if constexpr (kVec == 1) {
    return launch<T, 1024, 16, kVec>(a, stream);
  } else {
    if (f <= 16384) return launch<T, 512, 32, kVec>(a, stream);
    return launch<T, 1024, 32, kVec>(a, stream);
  }
}

}  // namespace

template <typename T>
void vector_registers(const NormForwardArgs<T>& a, cudaStream_t stream) {
  const bool aligned = a.features % kVector16<T> == 0 && is_aligned16(a.x) && is_aligned16(a.y) &&
                       is_aligned16(a.gamma) && (a.norm == Norm::rms || is_aligned16(a.beta)) &&
                       (a.residual == nullptr || (is_aligned16(a.residual) && is_aligned16(a.residual_out)));
  const std::string why = forward_shape_limits(a.rows, a.features) + vector_registers_limits(a.features, aligned);
  CUDALAB_REQUIRE(why.empty(), "vector_registers: " + why);
  if (a.rows == 0) return;
  if (aligned) {
    launch_for_width<T, kVector16<T>>(a, stream);
  } else {
    launch_for_width<T, 1>(a, stream);
  }
}

CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, vector_registers, NormForwardArgs)

}  // namespace cudalab::norms_variants
