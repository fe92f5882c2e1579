// The all-reduce ladder's one-shot kernel and the host arithmetic beside it (all_reduce.hpp).
#include "ops/transfers/all_reduce.hpp"

#include <algorithm>
#include <string>

#include <cuda_bf16.h>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/warp.cuh"
#include "cudalab/error.hpp"

namespace cudalab::transfers {
namespace {

template <typename T>
struct PeerInputs {
  const T* in[kAllReduceMaxGpus];
};

constexpr int kBlock = 256;

// Each thread sums V elements of every input (16-byte loads where V > 1: all of a thread's GPUs'
// loads in flight before the first add) over a grid-stride loop of V-element groups.
template <typename T, int V>
__global__ void __launch_bounds__(kBlock)
    one_shot_sum_kernel(PeerInputs<T> inputs, int gpus, T* __restrict__ out, std::int64_t groups) {
  for (std::int64_t q = static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x; q < groups;
       q += static_cast<std::int64_t>(gridDim.x) * kBlock) {
    float sum[V] = {};
#pragma unroll
    for (int g = 0; g < kAllReduceMaxGpus; ++g) {
      if (g >= gpus) break;
      float x[V];
      load_floats<V>(inputs.in[g] + q * V, x);
#pragma unroll
      for (int e = 0; e < V; ++e) sum[e] += x[e];
    }
    store_floats<V>(out + q * V, sum);
  }
}

template <typename T>
void launch(const void* const* inputs, int gpus, void* out, std::int64_t count, cudaStream_t stream) {
  PeerInputs<T> peers{};
  bool aligned = is_aligned16(out);
  for (int g = 0; g < gpus; ++g) {
    peers.in[g] = static_cast<const T*>(inputs[g]);
    aligned = aligned && is_aligned16(inputs[g]);
  }
  constexpr int kVector = kVector16<T>;
  auto* typed_out = static_cast<T*>(out);
  std::int64_t done = 0;
  if (aligned && count >= kVector) {
    const std::int64_t groups = count / kVector;
    one_shot_sum_kernel<T, kVector>
        <<<resident_grid_size(one_shot_sum_kernel<T, kVector>, kBlock, groups), kBlock, 0, stream>>>(peers, gpus,
                                                                                                     typed_out, groups);
    CUDALAB_CHECK_LAUNCH();
    done = groups * kVector;
  }
  if (done < count) {  // the elements past the last whole vector, or every element of unaligned arrays
    for (int g = 0; g < gpus; ++g) peers.in[g] += done;
    const std::int64_t rest = count - done;
    one_shot_sum_kernel<T, 1><<<resident_grid_size(one_shot_sum_kernel<T, 1>, kBlock, rest), kBlock, 0, stream>>>(
        peers, gpus, typed_out + done, rest);
    CUDALAB_CHECK_LAUNCH();
  }
}

__device__ __forceinline__ unsigned long long global_nanoseconds() {
  unsigned long long now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

constexpr int kIpcBlock = 512;
// Vectors a thread has in flight from each GPU (NVLink's latency needs several MiB in flight).
constexpr int kIpcUnroll = 4;

// Every GPU's half-buffer of this call and signal array, this process's mappings, in GPU order.
struct IpcPeers {
  const void* half[kAllReduceMaxGpus];
  unsigned* signals[kAllReduceMaxGpus];
};

// Block b of every GPU tells every GPU's block b that it has reached `value` (word b *
// kAllReduceMaxGpus + rank of their signal arrays) and waits until every GPU's block b has told it
// the same. The block's memory operations before the call are visible to every GPU's block b after.
__device__ __forceinline__ void blocks_barrier(const IpcPeers& peers, int rank, int gpus, unsigned value,
                                               unsigned long long timeout_ns) {
  __syncthreads();  // the block's writes, then one thread per GPU signals it and waits for it
  if (threadIdx.x < gpus) {
    const unsigned slot = blockIdx.x * kAllReduceMaxGpus;
    __threadfence_system();
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(peers.signals[threadIdx.x] + slot + rank), "r"(value)
                 : "memory");
    const unsigned* arrived = peers.signals[rank] + slot + threadIdx.x;
    const unsigned long long start = global_nanoseconds();
    for (unsigned seen = 0;;) {
      asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(seen) : "l"(arrived) : "memory");
      if (seen >= value) break;
      if (global_nanoseconds() - start > timeout_ns) __trap();
    }
  }
  __syncthreads();
}

// x's vector q (kXVectors: x is 16-byte aligned; the half-buffers always are).
template <bool kXVectors, typename T>
__device__ __forceinline__ void store_x(T* x, std::int64_t q, const Vector16<T>& v) {
  constexpr int V = kVector16<T>;
  if constexpr (kXVectors) {
    store_vector16(x + q * V, v);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) x[q * V + e] = v[e];
  }
}

// The vectors q0 + u * stride (u < kIpcUnroll) of a half-buffer, zeros past `vectors`, read from L2
// only: the launch is the first to read these bytes since their GPU wrote them.
template <typename T>
__device__ __forceinline__ void load_strided(const T* from, std::int64_t q0, std::int64_t stride, std::int64_t vectors,
                                             uint4 (&raw)[kIpcUnroll]) {
#pragma unroll
  for (int u = 0; u < kIpcUnroll; ++u) {
    const std::int64_t q = q0 + u * stride;
    raw[u] = q < vectors ? __ldcg(reinterpret_cast<const uint4*>(from + q * kVector16<T>)) : uint4{};
  }
}

// all_reduce_ipc's one launch. Block b of every GPU owns the same elements (the same grid over the
// same count): the vectors q = b * 512 + thread + j * stride of its grid-stride loop, and block 0 also
// the elements past the last whole vector. It copies them from x into this GPU's half-buffer, and
// after a barrier between the GPUs' blocks:
// - one-shot: writes into x the fp32 sum in GPU order of every GPU's half-buffer;
// - kTwoShot: sums only the vectors of its warps w with w % gpus == rank, rounds each sum to T once
//   and writes it into x and over this GPU's own copy in its half-buffer; after a second barrier,
//   its other warps copy their vectors' sums from the GPUs that made them. Each GPU reads
//   2 (gpus - 1) / gpus of the array from its peers instead of gpus - 1 arrays (the 16 warps split
//   evenly on 2, 4 and 8 GPUs; 6/5/5 on three), for one more barrier; the bits are the one-shot's.
// The elements past the last vector are summed from every buffer by block 0 of every GPU either way.
// Barrier values: 2 epoch after the copies, 2 epoch + 1 after the two-shot's sums, so they grow
// from call to call whichever form each call takes.
template <typename T, bool kXVectors, bool kTwoShot>
__global__ void __launch_bounds__(kIpcBlock)
    ipc_all_reduce_kernel(const __grid_constant__ IpcPeers peers, int rank, int gpus, unsigned epoch, T* x,
                          std::int64_t count, unsigned long long timeout_ns) {
  constexpr int V = kVector16<T>;
  const std::int64_t vectors = count / V;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kIpcBlock;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kIpcBlock + threadIdx.x;
  T* mine = static_cast<T*>(const_cast<void*>(peers.half[rank]));
  for (std::int64_t q0 = first; q0 < vectors; q0 += stride * kIpcUnroll) {
    Vector16<T> v[kIpcUnroll];
#pragma unroll
    for (int u = 0; u < kIpcUnroll; ++u) {
      const std::int64_t q = q0 + u * stride;
      if (q >= vectors) break;
      if constexpr (kXVectors) {
        v[u] = load_vector16(x + q * V);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) v[u][e] = x[q * V + e];
      }
    }
#pragma unroll
    for (int u = 0; u < kIpcUnroll; ++u) {
      const std::int64_t q = q0 + u * stride;
      if (q >= vectors) break;
      store_vector16(mine + q * V, v[u]);
    }
  }
  if (blockIdx.x == 0)
    for (std::int64_t i = vectors * V + threadIdx.x; i < count; i += kIpcBlock) mine[i] = x[i];
  blocks_barrier(peers, rank, gpus, 2 * epoch, timeout_ns);
  // Two-shot: warp w's vectors (every stride of its 32 threads) belong to GPU w % gpus, so each GPU
  // sums a gpus-th of every block's vectors, coalesced, at any size.
  const int owner = kTwoShot ? static_cast<int>(threadIdx.x / kWarpSize) % gpus : rank;
  if (owner == rank)
    for (std::int64_t q0 = first; q0 < vectors; q0 += stride * kIpcUnroll) {
      float sum[kIpcUnroll][V] = {};
#pragma unroll
      for (int g = 0; g < kAllReduceMaxGpus; ++g) {
        if (g >= gpus) break;
        const T* from = static_cast<const T*>(peers.half[g]);
        uint4 raw[kIpcUnroll];
        load_strided(from, q0, stride, vectors, raw);
#pragma unroll
        for (int u = 0; u < kIpcUnroll; ++u) {
          const auto& v = *reinterpret_cast<const Vector16<T>*>(&raw[u]);
#pragma unroll
          for (int e = 0; e < V; ++e) sum[u][e] += to_float(v[e]);
        }
      }
#pragma unroll
      for (int u = 0; u < kIpcUnroll; ++u) {
        const std::int64_t q = q0 + u * stride;
        if (q >= vectors) break;
        Vector16<T> rounded;
#pragma unroll
        for (int e = 0; e < V; ++e) rounded[e] = from_float<T>(sum[u][e]);
        store_x<kXVectors>(x, q, rounded);
        if constexpr (kTwoShot) store_vector16(mine + q * V, rounded);
      }
    }
  if (blockIdx.x == 0)
    for (std::int64_t i = vectors * V + threadIdx.x; i < count; i += kIpcBlock) {
      float sum = 0.0f;
      for (int g = 0; g < gpus; ++g) sum += to_float(__ldcg(static_cast<const T*>(peers.half[g]) + i));
      x[i] = from_float<T>(sum);
    }
  if constexpr (kTwoShot) {
    blocks_barrier(peers, rank, gpus, 2 * epoch + 1, timeout_ns);
    if (owner != rank) {
      const T* from = static_cast<const T*>(peers.half[owner]);
      for (std::int64_t q0 = first; q0 < vectors; q0 += stride * kIpcUnroll) {
        uint4 raw[kIpcUnroll];
        load_strided(from, q0, stride, vectors, raw);
#pragma unroll
        for (int u = 0; u < kIpcUnroll; ++u) {
          const std::int64_t q = q0 + u * stride;
          if (q >= vectors) break;
          store_x<kXVectors>(x, q, *reinterpret_cast<const Vector16<T>*>(&raw[u]));
        }
      }
    }
  }
}

}  // namespace

void one_shot_sum(DType dtype, const void* const* inputs, int gpus, void* out, std::int64_t count,
                  cudaStream_t stream) {
  CUDALAB_REQUIRE(gpus >= 1 && gpus <= kAllReduceMaxGpus, "one_shot_sum: 1 to 8 GPUs");
  CUDALAB_REQUIRE(count >= 0, "one_shot_sum: a negative count");
  if (count == 0) return;
  switch (dtype) {
    case DType::f32: return launch<float>(inputs, gpus, out, count, stream);
    case DType::bf16: return launch<__nv_bfloat16>(inputs, gpus, out, count, stream);
    default: CUDALAB_REQUIRE(false, std::string("one_shot_sum: f32 or bf16, not ") + to_string(dtype));
  }
}

AllReducePart all_reduce_part(int g, int gpus, std::int64_t count, DType dtype) {
  const auto vector = static_cast<std::int64_t>(16 / size_of(dtype));
  const std::int64_t each = ((count + gpus - 1) / gpus + vector - 1) / vector * vector;
  const std::int64_t first = std::min(count, g * each);
  return {first, std::min(count, first + each) - first};
}

double all_reduce_bus_gbps(double bytes, double seconds, int gpus) {
  if (seconds <= 0 || gpus < 1) return 0.0;
  return bytes / seconds / 1e9 * 2.0 * (gpus - 1) / gpus;
}

double all_reduce_bound(DType dtype, int gpus, double magnitude_sum) {
  return (gpus + 1) * traits(dtype).unit_roundoff * magnitude_sum;
}

}  // namespace cudalab::transfers

namespace cudalab {

void* open_peer_buffer(const cudaIpcMemHandle_t& handle, int device) {
  int previous = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&previous));
  CUDALAB_CUDA_CHECK(cudaSetDevice(device));
  void* mapped = nullptr;
  const cudaError_t status = cudaIpcOpenMemHandle(&mapped, handle, cudaIpcMemLazyEnablePeerAccess);
  cudaSetDevice(previous);
  CUDALAB_CUDA_CHECK(status);
  return mapped;
}

template <typename T, typename>
void all_reduce_ipc(T* x, std::int64_t count, void* const* buffers, std::size_t buffer_bytes, unsigned* const* signals,
                    int rank, int gpus, unsigned epoch, cudaStream_t stream, double timeout_seconds) {
  CUDALAB_REQUIRE(count >= 0, "all_reduce_ipc: count must be >= 0, got " + std::to_string(count));
  CUDALAB_REQUIRE(gpus >= 1 && gpus <= kAllReduceMaxGpus && rank >= 0 && rank < gpus,
                  "all_reduce_ipc: rank " + std::to_string(rank) + " of " + std::to_string(gpus) + " GPUs (1 to 8)");
  CUDALAB_REQUIRE(epoch > 0 && epoch < 0x80000000u,
                  "all_reduce_ipc: epochs run from 1 to 2^31 - 1 (the signal arrays start at 0; a barrier's value "
                  "is 2 epoch or 2 epoch + 1)");
  CUDALAB_REQUIRE(timeout_seconds > 0 && timeout_seconds <= 1e9,
                  "all_reduce_ipc: timeout_seconds must be in (0, 1e9], got " + std::to_string(timeout_seconds));
  CUDALAB_REQUIRE(buffer_bytes % 32 == 0,
                  "all_reduce_ipc: buffer_bytes must be a multiple of 32, got " + std::to_string(buffer_bytes));
  CUDALAB_REQUIRE(static_cast<std::size_t>(count) <= all_reduce_ipc_capacity<T>(buffer_bytes),
                  "all_reduce_ipc: " + std::to_string(count) + " elements do not fit half of a buffer of " +
                      std::to_string(buffer_bytes) + " bytes");
  if (count == 0) return;
  CUDALAB_REQUIRE(x != nullptr && buffers != nullptr && signals != nullptr,
                  "all_reduce_ipc: x, buffers and signals must not be null");
  CUDALAB_REQUIRE(reinterpret_cast<std::uintptr_t>(x) % sizeof(T) == 0,
                  "all_reduce_ipc: x must be aligned to its element");
  transfers::IpcPeers peers{};
  const std::size_t half = (epoch % 2) * (buffer_bytes / 2);
  for (int g = 0; g < gpus; ++g) {
    CUDALAB_REQUIRE(buffers[g] != nullptr && signals[g] != nullptr && is_aligned16(buffers[g]) &&
                        reinterpret_cast<std::uintptr_t>(signals[g]) % sizeof(unsigned) == 0,
                    "all_reduce_ipc: GPU " + std::to_string(g) +
                        "'s buffer or signal array is null or misaligned (buffers 16-byte aligned)");
    peers.half[g] = static_cast<const char*>(buffers[g]) + half;
    peers.signals[g] = signals[g];
  }
  constexpr int kVector = kVector16<T>;
  const std::int64_t vectors = count / kVector;
  const int blocks = static_cast<int>(
      std::clamp<std::int64_t>((vectors + transfers::kIpcBlock - 1) / transfers::kIpcBlock, 1, kAllReduceMaxBlocks));
  const auto timeout_ns = static_cast<unsigned long long>(timeout_seconds * 1e9);
  const bool two_shot = all_reduce_ipc_two_shot(gpus, static_cast<std::size_t>(count) * sizeof(T));
  auto* kernel = is_aligned16(x) ? (two_shot ? transfers::ipc_all_reduce_kernel<T, true, true>
                                             : transfers::ipc_all_reduce_kernel<T, true, false>)
                                 : (two_shot ? transfers::ipc_all_reduce_kernel<T, false, true>
                                             : transfers::ipc_all_reduce_kernel<T, false, false>);
  kernel<<<blocks, transfers::kIpcBlock, 0, stream>>>(peers, rank, gpus, epoch, x, count, timeout_ns);
  CUDALAB_CHECK_LAUNCH();
}

#define CUDALAB_ALL_REDUCE_ENTRY(T, a, b)                                                                         \
  template void all_reduce_ipc(T*, std::int64_t, void* const*, std::size_t, unsigned* const*, int, int, unsigned, \
                               cudaStream_t, double);
CUDALAB_ALL_REDUCE_ELEMENTS(CUDALAB_ALL_REDUCE_ENTRY, , )

}  // namespace cudalab
