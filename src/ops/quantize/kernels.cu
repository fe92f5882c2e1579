// The FP8 quantization ladder: per-tensor e4m3 with the scale from the tensor's own amax.
// two_pass reads x twice (its amax, then its quantization): 2 reads and 1 write of an element,
// against the 1 and 1 of the work model, so it can reach about 60% of the copy rate in bf16 and
// 55% in fp32, wherever x does not stay in L2 between the passes. resident reads it once: a
// cooperative grid of one block per SM keeps its slices in shared memory across a grid-wide
// barrier, for tensors up to the SMs' shared memory (about 15M bf16 elements on 132 SMs).
// one_pass_scaled (delayed scaling: the scale given) converts and takes the amax in the same read.
#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/launch_attributes.hpp"
#include "core/row_reduce.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "cudalab/quantize.hpp"
#include "ops/quantize/scales.cuh"
#include "ops/quantize/variants.hpp"

namespace cudalab::quantize_variants {
namespace {

namespace cg = cooperative_groups;

constexpr int kBlock = 256;
constexpr int kResidentBlock = 1024;
using Byte = __nv_fp8_storage_t;

// The 16-byte vectors of x in a chunk: 2 in bf16 and fp16, 4 in fp32.
template <typename T>
constexpr int kVectors = kChunk* static_cast<int>(sizeof(T)) / 16;

template <typename T>
__device__ __forceinline__ void widen(const Vector16<T> (&in)[kVectors<T>], float (&v)[kChunk]) {
#pragma unroll
  for (int i = 0; i < kVectors<T>; ++i)
#pragma unroll
    for (int j = 0; j < Vector16<T>::kCount; ++j) v[i * Vector16<T>::kCount + j] = to_float(in[i][j]);
}

template <typename T>
__device__ __forceinline__ void load_chunk(const T* x, Vector16<T> (&in)[kVectors<T>]) {
#pragma unroll
  for (int i = 0; i < kVectors<T>; ++i) in[i] = load_vector16(x + i * Vector16<T>::kCount);
}

__device__ __forceinline__ float max_magnitude(const float (&v)[kChunk], float m) {
#pragma unroll
  for (int i = 0; i < kChunk; ++i) m = fmaxf(m, counted_magnitude(v[i]));
  return m;
}

// q's 16 bytes of the chunk v: pairs through the packed conversion (satfinite, nearest even).
__device__ __forceinline__ void store_chunk(Byte* q, const float (&v)[kChunk], float multiplier) {
  Vector16<__nv_fp8x2_storage_t> out;
#pragma unroll
  for (int p = 0; p < kChunk / 2; ++p)
    out[p] = __nv_cvt_float2_to_fp8x2(make_float2(__fmul_rn(v[2 * p], multiplier), __fmul_rn(v[2 * p + 1], multiplier)),
                                      __NV_SATFINITE, __NV_E4M3);
  store_vector16(reinterpret_cast<__nv_fp8x2_storage_t*>(q), out);
}

// The block's largest magnitude into *amax: atomicMax on the bits orders non-negative floats as
// their values (+inf included). Every thread must call it.
__device__ __forceinline__ void publish_max(float m, float* amax) {
  __shared__ float scratch[kWarpSize];
  m = block_reduce<BlockResult::first_warp, 0>(m, MaxOf{}, 0.0f, scratch);
  if (threadIdx.x == 0 && m > 0.0f) atomicMax(reinterpret_cast<unsigned int*>(amax), __float_as_uint(m));
}

// The first n / kChunk chunks when `vectors` (x and q 16-byte aligned), the rest element by element.
template <typename T>
__global__ void __launch_bounds__(kBlock) amax_kernel(const T* x, std::int64_t n, bool vectors, float* amax) {
  const std::int64_t chunks = vectors ? n / kChunk : 0;
  float m = 0.0f;
  for (std::int64_t c = global_thread_index(); c < chunks; c += global_thread_count()) {
    Vector16<T> in[kVectors<T>];
    float v[kChunk];
    load_chunk(x + c * kChunk, in);
    widen(in, v);
    m = max_magnitude(v, m);
  }
  for (std::int64_t i = chunks * kChunk + global_thread_index(); i < n; i += global_thread_count())
    m = fmaxf(m, counted_magnitude(to_float(x[i])));
  publish_max(m, amax);
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    quantize_kernel(const T* x, Byte* q, std::int64_t n, bool vectors, const float* amax, float* scale) {
  const float a = *amax;
  const float multiplier = quantize_multiplier(a);
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale = dequantize_scale(a);
  const std::int64_t chunks = vectors ? n / kChunk : 0;
  for (std::int64_t c = global_thread_index(); c < chunks; c += global_thread_count()) {
    Vector16<T> in[kVectors<T>];
    float v[kChunk];
    load_chunk(x + c * kChunk, in);
    widen(in, v);
    store_chunk(q + c * kChunk, v, multiplier);
  }
  for (std::int64_t i = chunks * kChunk + global_thread_index(); i < n; i += global_thread_count())
    q[i] = quantize_one(to_float(x[i]), multiplier);
}

// Block b holds x[b * per_block, ...) (per_block a multiple of kChunk) in shared memory from its
// max to its conversion; *amax was zeroed before the launch. Vector i of chunk c sits at
// vectors[i * chunks + c], so a warp's 16-byte accesses are 512 contiguous bytes (no bank
// conflicts); the tail past the last chunk follows the vectors.
template <typename T>
__global__ void __launch_bounds__(kResidentBlock)
    resident_kernel(const T* x, Byte* q, std::int64_t n, std::int64_t per_block, float* amax, float* scale) {
  extern __shared__ uint4 shared_words[];
  auto* vectors = reinterpret_cast<Vector16<T>*>(shared_words);
  const std::int64_t begin = blockIdx.x * per_block;
  const std::int64_t count = std::max<std::int64_t>(0, std::min(per_block, n - begin));
  const std::int64_t chunks = count / kChunk;
  T* tail = reinterpret_cast<T*>(vectors + kVectors<T> * chunks);
  float m = 0.0f;
  for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
    Vector16<T> in[kVectors<T>];
    float v[kChunk];
    load_chunk(x + begin + c * kChunk, in);
#pragma unroll
    for (int i = 0; i < kVectors<T>; ++i) vectors[i * chunks + c] = in[i];
    widen(in, v);
    m = max_magnitude(v, m);
  }
  for (std::int64_t i = chunks * kChunk + threadIdx.x; i < count; i += blockDim.x) {
    const T value = x[begin + i];
    tail[i - chunks * kChunk] = value;
    m = fmaxf(m, counted_magnitude(to_float(value)));
  }
  publish_max(m, amax);
  cg::this_grid().sync();  // every block's atomicMax has landed
  const float a = __ldcg(amax);
  const float multiplier = quantize_multiplier(a);
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale = dequantize_scale(a);
  for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
    Vector16<T> in[kVectors<T>];
    float v[kChunk];
#pragma unroll
    for (int i = 0; i < kVectors<T>; ++i) in[i] = vectors[i * chunks + c];
    widen(in, v);
    store_chunk(q + begin + c * kChunk, v, multiplier);
  }
  for (std::int64_t i = chunks * kChunk + threadIdx.x; i < count; i += blockDim.x)
    q[begin + i] = quantize_one(to_float(tail[i - chunks * kChunk]), multiplier);
}

// Delayed scaling: the chunks converted with the given scale's multiplier while their max is taken.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    scaled_kernel(const T* x, const float* scale, Byte* q, std::int64_t n, bool vectors, float* amax) {
  const float multiplier = scaled_multiplier(*scale);
  const std::int64_t chunks = vectors ? n / kChunk : 0;
  float m = 0.0f;
  for (std::int64_t c = global_thread_index(); c < chunks; c += global_thread_count()) {
    Vector16<T> in[kVectors<T>];
    float v[kChunk];
    load_chunk(x + c * kChunk, in);
    widen(in, v);
    m = max_magnitude(v, m);
    store_chunk(q + c * kChunk, v, multiplier);
  }
  for (std::int64_t i = chunks * kChunk + global_thread_index(); i < n; i += global_thread_count()) {
    const float value = to_float(x[i]);
    m = fmaxf(m, counted_magnitude(value));
    q[i] = quantize_one(value, multiplier);
  }
  publish_max(m, amax);
}

bool vectors_fit(const void* x, const void* q) { return is_aligned16(x) && is_aligned16(q); }

}  // namespace

template <typename T>
void two_pass(const QuantizeArgs<T>& args, cudaStream_t stream) {
  auto* q = reinterpret_cast<Byte*>(args.q);
  const bool vectors = vectors_fit(args.x, args.q);
  const std::int64_t items = vectors ? args.n / kChunk + args.n % kChunk : args.n;
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(args.amax, 0, sizeof(float), stream));
  if (args.n > 0) {
    amax_kernel<T>
        <<<resident_grid_size(amax_kernel<T>, kBlock, items), kBlock, 0, stream>>>(args.x, args.n, vectors, args.amax);
    CUDALAB_CUDA_CHECK(cudaGetLastError());
  }
  const int grid = args.n > 0 ? resident_grid_size(quantize_kernel<T>, kBlock, items) : 1;
  quantize_kernel<T><<<grid, kBlock, 0, stream>>>(args.x, q, args.n, vectors, args.amax, args.scale);
  CUDALAB_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void one_pass_scaled(const ScaledQuantizeArgs<T>& args, cudaStream_t stream) {
  auto* q = reinterpret_cast<Byte*>(args.q);
  const bool vectors = vectors_fit(args.x, args.q);
  const std::int64_t items = vectors ? args.n / kChunk + args.n % kChunk : args.n;
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(args.amax, 0, sizeof(float), stream));
  if (args.n == 0) return;
  scaled_kernel<T><<<resident_grid_size(scaled_kernel<T>, kBlock, items), kBlock, 0, stream>>>(
      args.x, args.scale, q, args.n, vectors, args.amax);
  CUDALAB_CUDA_CHECK(cudaGetLastError());
}

std::int64_t resident_capacity_here(std::size_t element_size) {
  return resident_capacity(current_gpu().sm_count, shared_memory_optin(), element_size);
}

template <typename T>
void resident(const QuantizeArgs<T>& args, cudaStream_t stream) {
  CUDALAB_REQUIRE(vectors_fit(args.x, args.q), "quantize_fp8 (resident): x and q must be 16-byte aligned");
  const int sm_count = current_gpu().sm_count;
  const std::int64_t capacity = resident_capacity_here(sizeof(T));
  CUDALAB_REQUIRE(args.n <= capacity, "quantize_fp8 (resident): n = " + std::to_string(args.n) +
                                          " is more than the SMs' shared memory holds (" + std::to_string(capacity) +
                                          " elements)");
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(args.amax, 0, sizeof(float), stream));
  // The fewest chunks a block that spreads n over every SM: each block's slice in shared memory.
  const std::int64_t chunks = (args.n + kChunk - 1) / kChunk;
  const std::int64_t per_block = std::max<std::int64_t>(1, (chunks + sm_count - 1) / sm_count) * kChunk;
  const int grid = static_cast<int>(std::max<std::int64_t>(1, (args.n + per_block - 1) / per_block));
  const std::size_t shared = static_cast<std::size_t>(per_block) * sizeof(T);
  const void* kernel = reinterpret_cast<const void*>(resident_kernel<T>);
  set_dynamic_shared_memory(kernel, shared);
  const T* x = args.x;
  auto* q = reinterpret_cast<Byte*>(args.q);
  std::int64_t n = args.n;
  float* amax = args.amax;
  float* scale = args.scale;
  std::int64_t slice = per_block;
  void* params[] = {&x, &q, &n, &slice, &amax, &scale};
  CUDALAB_CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3(grid), dim3(kResidentBlock), params, shared, stream));
}

#define CUDALAB_QUANTIZE_LAUNCHERS(T, a, b)            \
  CUDALAB_LAUNCHER_INSTANCE(T, two_pass, QuantizeArgs) \
  CUDALAB_LAUNCHER_INSTANCE(T, resident, QuantizeArgs) \
  CUDALAB_LAUNCHER_INSTANCE(T, one_pass_scaled, ScaledQuantizeArgs)
CUDALAB_QUANTIZE_ELEMENTS(CUDALAB_QUANTIZE_LAUNCHERS, , )

}  // namespace cudalab::quantize_variants
