// The RoPE rungs and baseline (variants.hpp). A work item is a run of kPairs pairs of one head's row:
// the thread reads both members of each pair (half split: a run from each half; interleaved: one run
// of adjacent pairs), its angles' cos and sin (tiny tables, L1 and L2 hits after the first heads),
// rotates in fp32 and writes both back, so y may be x.
//   scalar:     one pair per item, element accesses.
//   vectorized: 16 bytes of x per member run (8 pairs of a 16-bit type per item in half split, 4
//               interleaved), where the rows, strides and pointers are 16-byte multiples. Fixes:
//               an eighth of the memory instructions.
//   positions:  a group of threads per token position, one vectorized run of every head of it per
//               thread: the run's angles are read once per position, not once per head, and four
//               heads' loads are in flight before the first is rotated. Meant to remove the tables'
//               traffic (ncu showed vectorized's warps waiting on the angles' loads from L2 beside
//               x's). Measured on an H100, it does not pay in 16-bit types: 86.8% of the bound
//               against vectorized's 87.6% at 8 x 4096 x 32 x 128 bf16, 1-5% slower at 8 kv heads
//               and interleaved, and 1.3-4.9x slower at 64-4096 positions, where a thread group per
//               position leaves too few threads to hide the loads. In f32 it is 1% slower to 12%
//               faster at 2048-32768 positions. The angles were not what held vectorized back in
//               bf16; the library keeps vectorized.
// The baseline writes Hugging Face's rotate_half(x) to a workspace, then reads x and it again: three
// passes over the tensor instead of two.
#include <cstdint>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/rope/variants.hpp"

namespace cudalab::rope_variants {
namespace {

constexpr int kThreads = 256;

// A head row's first element and its token's position.
struct HeadRow {
  std::int64_t offset, position;
};
__device__ __forceinline__ HeadRow head_row(std::int64_t row, const RopeShape& s, std::int64_t position_offset) {
  const std::int64_t head = row % s.heads, rest = row / s.heads;
  const std::int64_t token = rest % s.seq, batch = rest / s.seq;
  return {batch * s.batch_stride + token * s.seq_stride + head * s.heads_stride, position_offset + token};
}

// kCount consecutive elements: one 16-byte access when kCount fills one, else element by element.
template <int kCount, typename T>
__device__ __forceinline__ void load_run(const T* p, float* out) {
  if constexpr (kCount == kVector16<T>) {
    load_floats<kCount>(p, out);
  } else {
#pragma unroll
    for (int k = 0; k < kCount; ++k) load_floats<1>(p + k, out + k);
  }
}
template <int kCount, typename T>
__device__ __forceinline__ void store_run(T* p, const float* in) {
  if constexpr (kCount == kVector16<T>) {
    store_floats<kCount>(p, in);
  } else {
#pragma unroll
    for (int k = 0; k < kCount; ++k) store_floats<1>(p + k, in + k);
  }
}

template <typename T, int kPairs, bool kInterleaved>
__global__ void __launch_bounds__(kThreads) rope_kernel(const RopeArgs<T> p) {
  const std::int64_t half = p.shape.head_dim / 2, runs = half / kPairs;
  const std::int64_t items = p.shape.batch * p.shape.seq * p.shape.heads * runs;
  for (std::int64_t item = global_thread_index(); item < items; item += global_thread_count()) {
    const HeadRow at = head_row(item / runs, p.shape, p.position_offset);
    const std::int64_t first = item % runs * kPairs;  // the run's first pair
    const float* cos_row = p.tables.cos + at.position * p.tables.table_stride + first;
    const float* sin_row = p.tables.sin + at.position * p.tables.table_stride + first;
    float a[kPairs], b[kPairs];
    if constexpr (kInterleaved) {
      float v[2 * kPairs];
      load_run<2 * kPairs>(p.x + at.offset + 2 * first, v);
#pragma unroll
      for (int k = 0; k < kPairs; ++k) a[k] = v[2 * k], b[k] = v[2 * k + 1];
    } else {
      load_run<kPairs>(p.x + at.offset + first, a);
      load_run<kPairs>(p.x + at.offset + half + first, b);
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const float c = __ldg(cos_row + k), s = p.sign * __ldg(sin_row + k);
      const float ya = a[k] * c - b[k] * s, yb = b[k] * c + a[k] * s;
      a[k] = ya, b[k] = yb;
    }
    if constexpr (kInterleaved) {
      float v[2 * kPairs];
#pragma unroll
      for (int k = 0; k < kPairs; ++k) v[2 * k] = a[k], v[2 * k + 1] = b[k];
      store_run<2 * kPairs>(p.y + at.offset + 2 * first, v);
    } else {
      store_run<kPairs>(p.y + at.offset + first, a);
      store_run<kPairs>(p.y + at.offset + half + first, b);
    }
  }
}

template <typename T, int kPairs, bool kInterleaved>
void launch(const RopeArgs<T>& args, cudaStream_t stream) {
  const std::int64_t items = args.shape.batch * args.shape.seq * args.shape.heads * (args.shape.head_dim / 2 / kPairs);
  auto* kernel = rope_kernel<T, kPairs, kInterleaved>;
  kernel<<<resident_grid_size(kernel, kThreads, items), kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

// kGroup threads a position (the head's runs), each rotating its run in every head, kHeads heads'
// loads issued before the first head's rotation.
template <typename T, int kPairs, bool kInterleaved, int kGroup>
__global__ void __launch_bounds__(kThreads) rope_positions_kernel(const RopeArgs<T> p) {
  constexpr int kGroups = kThreads / kGroup, kHeads = 4;
  constexpr int kRun = kInterleaved ? 2 * kPairs : kPairs;  // elements a load reads
  const int group = static_cast<int>(threadIdx.x) / kGroup, lane = static_cast<int>(threadIdx.x) % kGroup;
  const std::int64_t half = p.shape.head_dim / 2, first = static_cast<std::int64_t>(lane) * kPairs;
  if (first >= half) return;  // a spare thread of the group
  const std::int64_t positions = p.shape.batch * p.shape.seq;
  // The second member run of each pair: half a row on (half split), or none (interleaved).
  const std::int64_t second = kInterleaved ? 0 : half;
  const std::int64_t at_first = kInterleaved ? 2 * first : first;
  for (std::int64_t pos = static_cast<std::int64_t>(blockIdx.x) * kGroups + group; pos < positions;
       pos += static_cast<std::int64_t>(gridDim.x) * kGroups) {
    const std::int64_t token = pos % p.shape.seq, batch = pos / p.shape.seq;
    const std::int64_t row = (p.position_offset + token) * p.tables.table_stride + first;
    float c[kPairs], sn[kPairs];
#pragma unroll
    for (int k = 0; k < kPairs; ++k)
      c[k] = __ldg(p.tables.cos + row + k), sn[k] = p.sign * __ldg(p.tables.sin + row + k);
    const std::int64_t base = batch * p.shape.batch_stride + token * p.shape.seq_stride + at_first;
    for (std::int64_t h0 = 0; h0 < p.shape.heads; h0 += kHeads) {
      float a[kHeads][kRun], b[kHeads][kRun];
#pragma unroll
      for (int j = 0; j < kHeads; ++j) {
        if (h0 + j >= p.shape.heads) break;
        const T* x = p.x + base + (h0 + j) * p.shape.heads_stride;
        load_run<kRun>(x, a[j]);
        if constexpr (!kInterleaved) load_run<kRun>(x + second, b[j]);
      }
#pragma unroll
      for (int j = 0; j < kHeads; ++j) {
        if (h0 + j >= p.shape.heads) break;
        T* y = p.y + base + (h0 + j) * p.shape.heads_stride;
        if constexpr (kInterleaved) {
#pragma unroll
          for (int k = 0; k < kPairs; ++k) {
            const float xa = a[j][2 * k], xb = a[j][2 * k + 1];
            a[j][2 * k] = xa * c[k] - xb * sn[k];
            a[j][2 * k + 1] = xb * c[k] + xa * sn[k];
          }
          store_run<kRun>(y, a[j]);
        } else {
#pragma unroll
          for (int k = 0; k < kPairs; ++k) {
            const float xa = a[j][k], xb = b[j][k];
            a[j][k] = xa * c[k] - xb * sn[k];
            b[j][k] = xb * c[k] + xa * sn[k];
          }
          store_run<kRun>(y, a[j]);
          store_run<kRun>(y + second, b[j]);
        }
      }
    }
  }
}

template <typename T>
__host__ __device__ std::int64_t rows_of(const RopeArgs<T>& args) {
  return args.shape.batch * args.shape.seq * args.shape.heads;
}

// Rotate_half(x) (interleaved: each pair's partner, the first negated) into the dense workspace.
template <typename T>
__global__ void __launch_bounds__(kThreads) rotate_kernel(const RopeArgs<T> p) {
  const std::int64_t d = p.shape.head_dim, half = d / 2, n = rows_of(p) * d;
  T* rotated = static_cast<T*>(p.workspace);
  for (std::int64_t i = global_thread_index(); i < n; i += global_thread_count()) {
    const std::int64_t row = i / d, j = i % d;
    const T* x = p.x + head_row(row, p.shape, 0).offset;
    float r;
    if (p.interleaved) {
      r = j % 2 == 0 ? -to_float(x[j + 1]) : to_float(x[j - 1]);
    } else {
      r = j < half ? -to_float(x[j + half]) : to_float(x[j - half]);
    }
    rotated[i] = from_float<T>(r);
  }
}

// y = x cos + rotated sin, element by element, the angles repeated over both members of a pair.
template <typename T>
__global__ void __launch_bounds__(kThreads) combine_kernel(const RopeArgs<T> p) {
  const std::int64_t d = p.shape.head_dim, half = d / 2, n = rows_of(p) * d;
  const T* rotated = static_cast<const T*>(p.workspace);
  for (std::int64_t i = global_thread_index(); i < n; i += global_thread_count()) {
    const std::int64_t row = i / d, j = i % d;
    const HeadRow at = head_row(row, p.shape, p.position_offset);
    const std::int64_t pair = p.interleaved ? j / 2 : j % half;
    const float c = p.tables.cos[at.position * p.tables.table_stride + pair];
    const float s = p.sign * p.tables.sin[at.position * p.tables.table_stride + pair];
    p.y[at.offset + j] = from_float<T>(to_float(p.x[at.offset + j]) * c + to_float(rotated[i]) * s);
  }
}

// 16-byte member runs: aligned pointers and strides, and whole runs in each half (or row).
template <typename T>
bool vectors_fit(const RopeArgs<T>& args) {
  constexpr int kVec = kVector16<T>;
  const RopeShape& s = args.shape;
  const std::int64_t run_span = args.interleaved ? s.head_dim : s.head_dim / 2;
  return is_aligned16(args.x) && is_aligned16(args.y) && run_span % kVec == 0 && s.batch_stride % kVec == 0 &&
         s.seq_stride % kVec == 0 && s.heads_stride % kVec == 0;
}

}  // namespace

std::size_t workspace_bytes(const RopeShape& shape, std::size_t element_size) {
  return static_cast<std::size_t>(shape.batch * shape.seq * shape.heads * shape.head_dim) * element_size;
}

template <typename T>
void scalar(const RopeArgs<T>& args, cudaStream_t stream) {
  if (rows_of(args) == 0 || args.shape.head_dim == 0) return;
  if (args.interleaved) {
    launch<T, 1, true>(args, stream);
  } else {
    launch<T, 1, false>(args, stream);
  }
}

template <typename T>
void vectorized(const RopeArgs<T>& args, cudaStream_t stream) {
  if (rows_of(args) == 0 || args.shape.head_dim == 0) return;
  constexpr int kVec = kVector16<T>;
  if (!vectors_fit(args)) return scalar(args, stream);
  if (args.interleaved) {
    launch<T, kVec / 2, true>(args, stream);
  } else {
    launch<T, kVec, false>(args, stream);
  }
}

// The group size: one thread per run of a head, rounded up to a power of two (the spare threads of
// a group idle).
template <typename T, int kPairs, bool kInterleaved, int kGroup = 1>
void launch_positions(const RopeArgs<T>& args, cudaStream_t stream) {
  const std::int64_t runs = args.shape.head_dim / 2 / kPairs;
  if constexpr (kGroup < kThreads) {
    if (runs > kGroup) return launch_positions<T, kPairs, kInterleaved, 2 * kGroup>(args, stream);
  }
  auto* kernel = rope_positions_kernel<T, kPairs, kInterleaved, kGroup>;
  const std::int64_t positions = args.shape.batch * args.shape.seq;
  kernel<<<resident_grid_size(kernel, kThreads, positions * kGroup), kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

template <typename T>
void positions(const RopeArgs<T>& args, cudaStream_t stream) {
  if (rows_of(args) == 0 || args.shape.head_dim == 0) return;
  constexpr int kVec = kVector16<T>;
  if (!vectors_fit(args) || args.shape.head_dim / 2 / (args.interleaved ? kVec / 2 : kVec) > kThreads)
    return vectorized(args, stream);
  if (args.interleaved) {
    launch_positions<T, kVec / 2, true>(args, stream);
  } else {
    launch_positions<T, kVec, false>(args, stream);
  }
}

template <typename T>
void unfused(const RopeArgs<T>& args, cudaStream_t stream) {
  const std::int64_t n = rows_of(args) * args.shape.head_dim;
  if (n == 0) return;
  CUDALAB_REQUIRE(args.workspace != nullptr, "rope unfused: needs its workspace");
  rotate_kernel<T><<<resident_grid_size(rotate_kernel<T>, kThreads, n), kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
  combine_kernel<T><<<resident_grid_size(combine_kernel<T>, kThreads, n), kThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_ROPE_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, scalar, RopeArgs)
CUDALAB_ROPE_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, vectorized, RopeArgs)
CUDALAB_ROPE_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, positions, RopeArgs)
CUDALAB_ROPE_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, unfused, RopeArgs)

}  // namespace cudalab::rope_variants
