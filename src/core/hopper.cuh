// The Hopper (sm_90a) building blocks that the wgmma/TMA kernels share (the GEMM's rungs wgmma_tma to wgmma_cluster in
// ops/gemm/hopper.cuh, the attention rungs in ops/attention/wgmma_kernel.cuh): tensor maps encoded
// on the host, mbarriers and rings of them, named barriers, cluster helpers, register reallocation,
// TMA loads (plain and multicast), stores and L2 prefetches, wgmma descriptors and instructions.
//
// The code exists only where the build defines CUDALAB_SM90A=1 (CMake compiles the files that use it
// for sm_90a alone); elsewhere their limits say they were not built. Kernel bodies compile in the
// sm_90a device pass only (CUDALAB_SM90A_DEVICE).
//
// Shared-memory tiles. TMA writes every tile as 128-byte rows with 128-byte swizzle: 16-byte chunk
// j of row r lands at chunk j ^ (r % 8), so any 8 consecutive rows (1024 bytes, one swizzle atom)
// hold a given logical chunk in 8 different bank groups. Tiles start on 1024-byte boundaries, as
// wgmma's descriptors with base offset 0 assume. A box is 64 16-bit elements (one 128-byte row)
// wide and up to 256 rows tall.
// wgmma descriptors (PTX ISA "Matrix Descriptor Format" and "Canonical Layouts", CUTLASS
// make_gmma_desc), in elements with T = 8 (16 bytes):
//   K-major, 128B swizzle: ((8,m),(T,2k)):((8T,SBO),(1,T)). SBO = 1024 bytes from one 8-row group to
//     the next; LBO is unused (a k16 slice never leaves its 128-byte row) and set to 1. The k-step
//     kk (16 elements) starts 32 * kk bytes into the tile; the hardware applies the swizzle to the
//     absolute address, which is why tiles must be 1024-byte aligned.
//   MN-major, 128B swizzle: ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)). LBO = bytes from one 64-column
//     box to the next (its rows * 128); SBO = 1024 bytes from k rows 0-7 to k rows 8-15. The k-step
//     kk starts 16 * kk rows = 2048 * kk bytes into each box; wgmma's imm-trans-b = 1.
// Accumulators of m64nNk16 with f32 D (PTX ISA figure "WGMMA .m64nNk16 register fragment layout
// for accumulator matrix D"; CUTLASS's CLayout_64xN): thread t of the warpgroup, warp w = t / 32,
// lane l holds d[4i + 0], d[4i + 1] at row 16w + l/4, columns 8i + 2(l%4) and + 1, and d[4i + 2],
// d[4i + 3] at row 16w + l/4 + 8, the same columns, for i in [0, N/8). A 64 x 16 A operand in
// registers (the RS form) has the same layout: a[0] at row l/4, columns 2(l%4)..+1, a[1] at row + 8,
// a[2] and a[3] at columns + 8.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda.h>  // CUtensorMap and its enums only; the encoder comes through the runtime (no -lcuda)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "core/launch_attributes.hpp"
#include "core/mma_sync.cuh"
#include "cudalab/error.hpp"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CUDALAB_SM90A_DEVICE 1
#else
#define CUDALAB_SM90A_DEVICE 0
#endif

namespace cudalab::hopper {

inline constexpr const char* kNotBuilt = "built without sm_90a code (CMAKE_CUDA_ARCHITECTURES lacks 90)";

// ---------------------------------------------------------------------------------------------
// wgmma shared-memory descriptors (see the header comment; host and device so they can be checked).

constexpr int kBlockK = 64;  // a box's width and the GEMM's k-tile: 64 16-bit elements, one 128-byte swizzled row
constexpr std::uint32_t kRowBytes = 128;             // one row of every tile
constexpr std::uint32_t kAtomBytes = 8 * kRowBytes;  // one swizzle atom: 8 rows

__host__ __device__ constexpr std::uint64_t descriptor(std::uint32_t address, std::uint32_t leading_bytes,
                                                       std::uint32_t stride_bytes) {
  constexpr std::uint64_t kSwizzle128 = std::uint64_t{1} << 62;  // bits 62-63; base offset (bits 49-51) stays 0
  const auto encode = [](std::uint32_t bytes) { return std::uint64_t{(bytes & 0x3FFFF) >> 4}; };  // 14 bits
  return kSwizzle128 | encode(stride_bytes) << 32 | encode(leading_bytes) << 16 | encode(address);
}

// k-step kk (16 of the tile's 64 k) of a K-major tile at shared address `tile`: any number of rows.
__host__ __device__ constexpr std::uint64_t k_major_descriptor(std::uint32_t tile, int kk) {
  return descriptor(tile + 32 * kk, 16, kAtomBytes);
}

static_assert(k_major_descriptor(0x400, 1) == 0x4000004000010042ull,
              "K-major descriptor encoding: 128B swizzle, SBO 1024, LBO 16");

#if CUDALAB_SM90A

// ---------------------------------------------------------------------------------------------
// Host side: tensor maps and launch parameters.

using TensorMapEncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                          const cuuint64_t*, const cuuint32_t*, const cuuint32_t*,
                                          CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                          CUtensorMapFloatOOBfill);

// A driver function found through the runtime, so the library needs no -lcuda.
template <typename Function>
Function driver_function(const char* name) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  CUDALAB_CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &entry, 12000, cudaEnableDefault, &found));
#else
  CUDALAB_CUDA_CHECK(cudaGetDriverEntryPoint(name, &entry, cudaEnableDefault, &found));
#endif
  if (found != cudaDriverEntryPointSuccess || entry == nullptr)
    throw Error(ErrorKind::unsupported_device, std::string("the CUDA driver does not provide ") + name, __FILE__,
                __LINE__);
  return reinterpret_cast<Function>(entry);
}

// The driver's cuTensorMapEncodeTiled (TMA), found once. It fails with CUDA_ERROR_INVALID_CONTEXT
// on a thread with no current context, and the runtime makes one current only at a thread's first
// call that needs it: an autograd worker thread whose first CUDA work is a cudalab product has none
// yet. So the device's primary context is made current first where none is (a context the caller
// made current is left as it is).
inline TensorMapEncodeTiled tensor_map_encoder() {
  static const TensorMapEncodeTiled encoder = driver_function<TensorMapEncodeTiled>("cuTensorMapEncodeTiled");
  static const auto current_context = driver_function<CUresult (*)(CUcontext*)>("cuCtxGetCurrent");
  CUcontext context = nullptr;
  if (current_context(&context) != CUDA_SUCCESS || context == nullptr) {
    int device = 0;
    CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
    CUDALAB_CUDA_CHECK(cudaSetDevice(device));  // makes the primary context current (CUDA 12 and later)
  }
  return encoder;
}

template <typename T>
constexpr CUtensorMapDataType tensor_map_type() {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half> || std::is_same_v<T, float> ||
                    std::is_same_v<T, __nv_fp8_e4m3>,
                "bf16, f16, f32 or e4m3 elements");
  if constexpr (std::is_same_v<T, float>) return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  if constexpr (std::is_same_v<T, __nv_fp8_e4m3>) return CU_TENSOR_MAP_DATA_TYPE_UINT8;  // bytes: TMA only moves them
  return std::is_same_v<T, __nv_bfloat16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
}

// One operand as TMA sees it: `batch` row-major matrices of rows x cols elements, rows `ld` apart,
// matrix z at base + z * batch_stride, moved in boxes of box_rows x 128 bytes of columns (64 16-bit
// elements or 32 floats: one 128-byte swizzled row each). Dimensions run {column, row, matrix}; elements outside them
// read as zero and are never written. A batch that shares one matrix (batch_stride 0) gets a matrix dimension of 1,
// which the kernels address at z = 0 (batch_step 0).
template <typename T>
CUtensorMap make_tensor_map(const T* base, std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t batch,
                            std::int64_t batch_stride, int box_rows) {
  const bool batched = batch > 1 && batch_stride != 0;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(batched ? batch : 1)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld) * sizeof(T),
                                 static_cast<cuuint64_t>(batched ? batch_stride : ld * rows) * sizeof(T)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(kRowBytes / sizeof(T)), static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  CUtensorMap map;
  const CUresult status =
      tensor_map_encoder()(&map, tensor_map_type<T>(), 3, const_cast<T*>(base), dims, strides, box, element_strides,
                           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (status != CUDA_SUCCESS)
    throw Error(ErrorKind::invalid_argument,
                "cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(status)) + ") for " +
                    std::to_string(batch) + " matrices of " + std::to_string(rows) + " x " + std::to_string(cols) +
                    ", ld " + std::to_string(ld) + ", batch stride " + std::to_string(batch_stride),
                __FILE__, __LINE__);
  return map;
}

// A four-dimensional operand, {column, row, dim2, dim3} of sizes `dims` with strides (in elements)
// `strides` for row, dim2 and dim3 (columns contiguous), moved in boxes of box_rows x 128 bytes of
// columns, 128-byte swizzled as make_tensor_map's. Attention reads [batch, heads, seq, head_dim]
// arrays of any row, head and batch strides (multiples of 16 bytes) through it.
template <typename T>
CUtensorMap make_tensor_map_4d(const T* base, const std::int64_t (&dims)[4], const std::int64_t (&strides)[3],
                               int box_rows) {
  const cuuint64_t sizes[4] = {static_cast<cuuint64_t>(dims[0]), static_cast<cuuint64_t>(dims[1]),
                               static_cast<cuuint64_t>(dims[2]), static_cast<cuuint64_t>(dims[3])};
  const cuuint64_t byte_strides[3] = {static_cast<cuuint64_t>(strides[0]) * sizeof(T),
                                      static_cast<cuuint64_t>(strides[1]) * sizeof(T),
                                      static_cast<cuuint64_t>(strides[2]) * sizeof(T)};
  const cuuint32_t box[4] = {static_cast<cuuint32_t>(kRowBytes / sizeof(T)), static_cast<cuuint32_t>(box_rows), 1, 1};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  CUtensorMap map;
  const CUresult status =
      tensor_map_encoder()(&map, tensor_map_type<T>(), 4, const_cast<T*>(base), sizes, byte_strides, box,
                           element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (status != CUDA_SUCCESS)
    throw Error(ErrorKind::invalid_argument,
                "cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(status)) + ") for " +
                    std::to_string(dims[3]) + " x " + std::to_string(dims[2]) + " x " + std::to_string(dims[1]) +
                    " x " + std::to_string(dims[0]) + ", strides " + std::to_string(strides[2]) + ", " +
                    std::to_string(strides[1]) + ", " + std::to_string(strides[0]),
                __FILE__, __LINE__);
  return map;
}

// The attributes every rung's kernel needs before its launch: its dynamic shared memory, with the
// SM's carveout at maximum shared memory so the blocks the rung counts on fit side by side.
template <typename Kernel>
void set_shared_memory(Kernel kernel, int bytes) {
  set_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), static_cast<std::size_t>(bytes), true);
}

// ---------------------------------------------------------------------------------------------
// Device side: synchronization. Barriers and tiles are named by their 32-bit shared addresses.

// The first 1024-byte boundary at or after the dynamic shared memory (the kernels ask for 1 KiB
// more than they use): swizzle atoms and wgmma descriptors need it.
__device__ __forceinline__ std::uint32_t aligned_shared_base(const void* dynamic_shared) {
  return (shared_address(dynamic_shared) + kAtomBytes - 1) & ~(kAtomBytes - 1);
}

__device__ __forceinline__ void mbarrier_init(std::uint32_t barrier, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(arrivals) : "memory");
}

// Makes initialized barriers visible to the async proxy (TMA) and to the other CTAs of the cluster;
// a block (or cluster) barrier must follow before anyone uses them.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Thread 0 sets up a ring of `stages` slots: a full barrier per slot (one arrival: the producer's
// expect_tx, completed by TMA bytes) and, when `empty_arrivals` > 0, an empty barrier per slot
// (that many consumer arrivals); barriers are 8 bytes apart. The caller syncs the block after.
__device__ __forceinline__ void init_ring_barriers(std::uint32_t full, std::uint32_t empty, int stages,
                                                   std::uint32_t empty_arrivals) {
  if (threadIdx.x != 0) return;
  for (int s = 0; s < stages; ++s) {
    mbarrier_init(full + 8 * s, 1);
    if (empty_arrivals > 0) mbarrier_init(empty + 8 * s, empty_arrivals);
  }
  fence_barrier_init();
}

// Arrives once and adds `bytes` to the transaction count the current phase waits for.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint32_t barrier, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(barrier), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(std::uint32_t barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(barrier) : "memory");
}

// Arrives on the barrier at the same offset in CTA `cta` of the cluster (this one included), with
// the default release at CTA scope, as CUTLASS's ClusterBarrier::arrive does: what it orders (a
// consumer's wgmma reads, complete at wgmma.wait_group, before the peer's TMA overwrites the slot)
// needs no fence. An explicit .release.cluster compiles to MEMBAR.ALL.GPU before every arrival,
// which stalled each consumer warpgroup once per k-tile (wgmma_cluster ran ~30% behind wgmma_persistent).
__device__ __forceinline__ void mbarrier_arrive_cluster(std::uint32_t barrier, std::uint32_t cta) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(barrier),
      "r"(cta)
      : "memory");
}

// Waits until the phase of parity `parity` has completed. A fresh barrier is in phase 0, and the
// phase before it (parity 1) counts as completed, so a producer's first wait on an empty slot
// (parity 1) passes at once.
__device__ __forceinline__ void mbarrier_wait(std::uint32_t barrier, std::uint32_t parity) {
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred complete;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n"
        "}\n"
        : "=r"(done)
        : "r"(barrier), "r"(parity)
        : "memory");
  } while (done == 0);
}

// A slot of a ring of kStages buffers and the parity of the current pass over the ring: consumers
// wait for `phase` on the slot's full barrier, the producer for `phase ^ 1` on its empty barrier.
template <int kStages>
struct RingPosition {
  int stage = 0;
  std::uint32_t phase = 0;
  // The position of the ring's `index`-th use (index >= 0), for a loop that counts its uses rather
  // than carrying a position from one to the next.
  __device__ __forceinline__ static RingPosition at(int index) {
    const auto uses = static_cast<std::uint32_t>(index);
    return {static_cast<int>(uses % kStages), (uses / kStages) & 1};
  }
  __device__ __forceinline__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// bar.sync on barrier `id` (1..15; 0 is __syncthreads) among `threads` threads.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// bar.arrive on barrier `id`: counts this thread toward `threads` without waiting.
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ std::uint32_t cluster_cta_rank() {
  std::uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

// Every thread of every CTA of the cluster (threads that exited do not count).
__device__ __forceinline__ void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release;\n"
      "barrier.cluster.wait.acquire;\n" ::
          : "memory");
}

// Hands registers back to (dec) or takes them from (inc) the SM's pool for this warpgroup; every
// thread of the warpgroup executes it.
template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

// ---------------------------------------------------------------------------------------------
// Device side: TMA.

__device__ __forceinline__ std::uint64_t map_address(const CUtensorMap* map) {
  return reinterpret_cast<std::uint64_t>(map);
}

// Fetches the tensor map itself ahead of its first TMA, which otherwise waits for it.
__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map_address(map)) : "memory");
}

// The box at (c0, c1, c2) = (column, row, matrix) into shared `destination`; its bytes (the whole
// box, zeros included) count against the transaction count of `barrier`.
__device__ __forceinline__ void tma_load(std::uint32_t destination, const CUtensorMap* map, std::uint32_t barrier,
                                         int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(destination),
      "l"(map_address(map)), "r"(c0), "r"(c1), "r"(c2), "r"(barrier)
      : "memory");
}

// As tma_load, for a four-dimensional map (make_tensor_map_4d) at (c0, c1, c2, c3).
__device__ __forceinline__ void tma_load(std::uint32_t destination, const CUtensorMap* map, std::uint32_t barrier,
                                         int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
      "%5}], [%6];\n" ::"r"(destination),
      "l"(map_address(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(barrier)
      : "memory");
}

// As tma_load, written at the same shared offset of every CTA of the cluster in `cta_mask`, each
// completing on its own barrier at `barrier`'s offset.
__device__ __forceinline__ void tma_load_multicast(std::uint32_t destination, const CUtensorMap* map,
                                                   std::uint32_t barrier, int c0, int c1, int c2,
                                                   std::uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%2, %3, %4}], [%5], %6;\n" ::"r"(destination),
      "l"(map_address(map)), "r"(c0), "r"(c1), "r"(c2), "r"(barrier), "h"(cta_mask)
      : "memory");
}

// The box at shared `source` to (c0, c1, c2); the parts outside the tensor are not written.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, std::uint32_t source, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(map_address(map)),
      "r"(source), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// As tma_store, for a four-dimensional map (make_tensor_map_4d) at (c0, c1, c2, c3).
__device__ __forceinline__ void tma_store(const CUtensorMap* map, std::uint32_t source, int c0, int c1, int c2,
                                          int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
                   map_address(map)),
               "r"(source), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

// The shared address of the 4-byte pair `quad` (columns 2 quad, + 1) of 16-byte chunk `chunk` of
// row `row` in a 128-byte swizzled box at `box` (as TMA lays out CU_TENSOR_MAP_SWIZZLE_128B): a
// warp writing one chunk of its 8 rows (row % 8 = lane / 4) hits 8 different bank groups.
__device__ __forceinline__ std::uint32_t swizzled_pair_address(std::uint32_t box, int row, int chunk, int quad) {
  return box + row * kRowBytes + ((chunk ^ (row % 8)) << 4) + 4 * quad;
}

__device__ __forceinline__ void store_shared(std::uint32_t address, std::uint32_t value) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(address), "r"(value));
}

// Adds the box at shared `source` to the tensor at (c0, c1, c2), element by element in L2 (f32 add);
// the parts outside the tensor are not touched.
__device__ __forceinline__ void tma_reduce_add(const CUtensorMap* map, std::uint32_t source, int c0, int c1, int c2) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
          map_address(map)),
      "r"(source), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// Asks L2 to fetch the box at (c0, c1, c2) for a later read; nothing waits for it.
__device__ __forceinline__ void tma_prefetch_l2(const CUtensorMap* map, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];\n" ::"l"(map_address(map)), "r"(c0),
               "r"(c1), "r"(c2)
               : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// Waits until at most kPending of this thread's bulk groups still read shared memory.
template <int kPending>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// Orders this thread's shared-memory writes before later async-proxy (TMA) reads of them.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Four 8 x 8 16-bit matrices from the warp's registers into shared memory: r[j] holds matrix j in
// the mma fragment layout (row lane / 4, columns 2 (lane % 4) and + 1), and lane l names the
// address of row l % 8 of matrix l / 8 (16 bytes).
__device__ __forceinline__ void stmatrix_x4(std::uint32_t address, const std::uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}

// Four 8 x 8 16-bit matrices from the warp's registers into shared memory, transposed: r[j] holds
// matrix j in the mma fragment layout (row lane / 4, columns 2 (lane % 4) and + 1), and lane l
// names the address of stored row l % 8 of matrix l / 8, which is the fragment's column l % 8.
__device__ __forceinline__ void stmatrix_x4_trans(std::uint32_t address, const std::uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}

// A warp's 16 rows of 16-bit pairs in the mma fragment layout (pairs[r][i]: row first_row + lane /
// 4 + 8 r, columns 8 i + 2 (lane % 4) and + 1) into 128-byte swizzled boxes of 64 columns (as TMA
// lays them out; box b at `boxes` + b box_bytes, rows kRowBytes apart) by stmatrix, four 8 x 8
// matrices an instruction where 4-byte stores took one pair: matrix j is n8 tile i + j / 2 of rows
// 8 (j % 2) .., and lane l names row l % 8 of matrix l / 8.
template <int kTiles>
__device__ __forceinline__ void stmatrix_swizzled_rows(const std::uint32_t (&pairs)[2][kTiles], std::uint32_t boxes,
                                                       std::uint32_t box_bytes, int first_row, int lane) {
  static_assert(kTiles % 2 == 0, "n8 tiles in pairs");
  const int matrix = lane / 8, row = first_row + 8 * (matrix % 2) + lane % 8;
#pragma unroll
  for (int i = 0; i < kTiles; i += 2) {
    const int tile = i + matrix / 2;
    const std::uint32_t fragments[4] = {pairs[0][i], pairs[1][i], pairs[0][i + 1], pairs[1][i + 1]};
    stmatrix_x4(boxes + (tile / 8) * box_bytes + row * kRowBytes + (((tile % 8) ^ (row % 8)) << 4), fragments);
  }
}

// ---------------------------------------------------------------------------------------------
// Device side: wgmma.

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

// Waits until at most kPending of this warpgroup's committed wgmma groups are in flight.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Tells the compiler the accumulators may have changed here, so that no read of them moves above a
// wgmma_wait and no write below a wgmma (their values live in the tensor core meanwhile).
template <int kRegisters>
__device__ __forceinline__ void fence_accumulators(float (&d)[kRegisters]) {
#pragma unroll
  for (int i = 0; i < kRegisters; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The same for 32-bit registers a wgmma reads (A fragments in registers): their values are
// computed above this point, not sunk below a later wgmma_fence.
template <int kRegisters>
__device__ __forceinline__ void fence_registers(std::uint32_t (&r)[kRegisters]) {
#pragma unroll
  for (int i = 0; i < kRegisters; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

#define CUDALAB_WGMMA_REGS_0_31                                            \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define CUDALAB_WGMMA_REGS_0_39 CUDALAB_WGMMA_REGS_0_31 ", %32, %33, %34, %35, %36, %37, %38, %39"
#define CUDALAB_WGMMA_REGS_0_63                                                      \
  CUDALAB_WGMMA_REGS_0_31                                                            \
  ", "                                                                               \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define CUDALAB_WGMMA_REGS_64_127                                                                \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "             \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "             \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define CUDALAB_WGMMA_ACC8(i)                                                                                 \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define CUDALAB_WGMMA_ACC32(i) \
  CUDALAB_WGMMA_ACC8(i), CUDALAB_WGMMA_ACC8(i + 8), CUDALAB_WGMMA_ACC8(i + 16), CUDALAB_WGMMA_ACC8(i + 24)
#define CUDALAB_WGMMA_ACC40(i) CUDALAB_WGMMA_ACC32(i), CUDALAB_WGMMA_ACC8(i + 32)
#define CUDALAB_WGMMA_ACC64(i)                                                                              \
  CUDALAB_WGMMA_ACC8(i), CUDALAB_WGMMA_ACC8(i + 8), CUDALAB_WGMMA_ACC8(i + 16), CUDALAB_WGMMA_ACC8(i + 24), \
      CUDALAB_WGMMA_ACC8(i + 32), CUDALAB_WGMMA_ACC8(i + 40), CUDALAB_WGMMA_ACC8(i + 48), CUDALAB_WGMMA_ACC8(i + 56)
// d (f32) += A (64 x 16) * B (16 x N): scale-d 1 (accumulate), A and B not negated, each operand
// transposed (MN-major) when kAMnMajor / kBMnMajor, else K-major.
#define CUDALAB_WGMMA_M64N128(TYPE)                                                                      \
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " {" CUDALAB_WGMMA_REGS_0_63 \
               "}, %64, %65, 1, 1, 1, %66, %67;\n"                                                       \
               : CUDALAB_WGMMA_ACC64(0)                                                                  \
               : "l"(a), "l"(b), "n"(static_cast<int>(kAMnMajor)), "n"(static_cast<int>(kBMnMajor)))
#define CUDALAB_WGMMA_M64N256(TYPE)                                                                      \
  asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " {" CUDALAB_WGMMA_REGS_0_63 \
               ", " CUDALAB_WGMMA_REGS_64_127 "}, %128, %129, 1, 1, 1, %130, %131;\n"                    \
               : CUDALAB_WGMMA_ACC64(0), CUDALAB_WGMMA_ACC64(64)                                         \
               : "l"(a), "l"(b), "n"(static_cast<int>(kAMnMajor)), "n"(static_cast<int>(kBMnMajor)))

// One m64nNk16 product, N = 2 * kRegisters (128 or 256), accumulated into d.
template <typename T, bool kAMnMajor, bool kBMnMajor, int kRegisters>
__device__ __forceinline__ void wgmma_m64k16(float (&d)[kRegisters], std::uint64_t a, std::uint64_t b) {
  static_assert(kRegisters == 64 || kRegisters == 128, "m64n128k16 or m64n256k16");
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  static_assert(kBf16 || std::is_same_v<T, __half>, "bf16 or f16 inputs");
  if constexpr (kRegisters == 64) {
    if constexpr (kBf16) {
      CUDALAB_WGMMA_M64N128("bf16");
    } else {
      CUDALAB_WGMMA_M64N128("f16");
    }
  } else {
    if constexpr (kBf16) {
      CUDALAB_WGMMA_M64N256("bf16");
    } else {
      CUDALAB_WGMMA_M64N256("f16");
    }
  }
}

// d (f32) = A B (kAccumulate false: d's old values ignored) or d += A B for e4m3 A (64 x 32) and
// B (32 x 128, stored n x k), both K-major in shared memory (fp8 has no transposed form). One
// k-step is 32 bytes of each row, as a 16-bit k-step is: the same descriptors serve both.
template <bool kAccumulate>
__device__ __forceinline__ void wgmma_e4m3_m64n128k32(float (&d)[64], std::uint64_t a, std::uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {" CUDALAB_WGMMA_REGS_0_63
               "}, %64, %65, %66, 1, 1;\n"
               : CUDALAB_WGMMA_ACC64(0)
               : "l"(a), "l"(b), "n"(static_cast<int>(kAccumulate)));
}

// d (f32) = A B or d += A B (kAccumulate) for a 64 x 16 K-major A and a 16 x 64 B, both from shared
// memory, B K-major (stored n x k) or MN-major (kBMnMajor: stored k x n): the attention backward's
// S^T = K Q^T and dQ = dS K.
#define CUDALAB_WGMMA_SS_M64N64(TYPE)                                                                   \
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " {" CUDALAB_WGMMA_REGS_0_31 \
               "}, %32, %33, %34, 1, 1, 0, %35;\n"                                                      \
               : CUDALAB_WGMMA_ACC32(0)                                                                 \
               : "l"(a), "l"(b), "n"(static_cast<int>(kAccumulate)), "n"(static_cast<int>(kBMnMajor)))
template <typename T, bool kAccumulate, bool kBMnMajor>
__device__ __forceinline__ void wgmma_ss_m64n64k16(float (&d)[32], std::uint64_t a, std::uint64_t b) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    CUDALAB_WGMMA_SS_M64N64("bf16");
  } else {
    CUDALAB_WGMMA_SS_M64N64("f16");
  }
}

// d (f32, N = 2 * kRegisters: 64, 80 or 128) = A B (kAccumulate false: d's old values ignored, no
// zeroing needed) or d += A B, for a 64 x 16 K-major A and a 16 x N B stored n x k (K-major), both
// from shared memory: attention's S = Q K^T (80 keys at head_dim 256) and the backward's S^T and dP^T.
#define CUDALAB_WGMMA_SS_KMAJOR(N, TYPE, REGS, A, B, C, ACC)                                                         \
  asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" REGS "}, %" #A ", %" #B ", %" #C \
               ", 1, 1, 0, 0;\n"                                                                                     \
               : ACC(0)                                                                                              \
               : "l"(a), "l"(b), "n"(static_cast<int>(kAccumulate)))
template <typename T, bool kAccumulate, int kRegisters>
__device__ __forceinline__ void wgmma_ss_m64k16(float (&d)[kRegisters], std::uint64_t a, std::uint64_t b) {
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  static_assert(kBf16 || std::is_same_v<T, __half>, "bf16 or f16 inputs");
  if constexpr (kRegisters == 32) {
    wgmma_ss_m64n64k16<T, kAccumulate, false>(d, a, b);
  } else if constexpr (kRegisters == 40) {
    if constexpr (kBf16) {
      CUDALAB_WGMMA_SS_KMAJOR(80, "bf16", CUDALAB_WGMMA_REGS_0_39, 40, 41, 42, CUDALAB_WGMMA_ACC40);
    } else {
      CUDALAB_WGMMA_SS_KMAJOR(80, "f16", CUDALAB_WGMMA_REGS_0_39, 40, 41, 42, CUDALAB_WGMMA_ACC40);
    }
  } else {
    static_assert(kRegisters == 64, "m64n64k16, m64n80k16 or m64n128k16");
    if constexpr (kBf16) {
      CUDALAB_WGMMA_SS_KMAJOR(128, "bf16", CUDALAB_WGMMA_REGS_0_63, 64, 65, 66, CUDALAB_WGMMA_ACC64);
    } else {
      CUDALAB_WGMMA_SS_KMAJOR(128, "f16", CUDALAB_WGMMA_REGS_0_63, 64, 65, 66, CUDALAB_WGMMA_ACC64);
    }
  }
}

// d (f32, N = 2 * kRegisters: 8, 16, 32 or 64) += A B for a 64 x 16 K-major A and a 16 x N B stored
// n x k (K-major), both from shared memory: a decode step's weight rows (A) against its few tokens.
#define CUDALAB_WGMMA_REGS_0_3 "%0, %1, %2, %3"
#define CUDALAB_WGMMA_REGS_0_7 CUDALAB_WGMMA_REGS_0_3 ", %4, %5, %6, %7"
#define CUDALAB_WGMMA_REGS_0_15 CUDALAB_WGMMA_REGS_0_7 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define CUDALAB_WGMMA_ACC4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define CUDALAB_WGMMA_ACC16(i) CUDALAB_WGMMA_ACC8(i), CUDALAB_WGMMA_ACC8(i + 8)
#define CUDALAB_WGMMA_SS_NARROW(N, TYPE, REGS, A, B, ACC)                                                   \
  asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" REGS "}, %" #A ", %" #B \
               ", 1, 1, 1, 0, 0;\n"                                                                         \
               : ACC(0)                                                                                     \
               : "l"(a), "l"(b))
template <typename T, int kRegisters>
__device__ __forceinline__ void wgmma_ss_narrow_m64k16(float (&d)[kRegisters], std::uint64_t a, std::uint64_t b) {
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  static_assert(kBf16 || std::is_same_v<T, __half>, "bf16 or f16 inputs");
  if constexpr (kRegisters == 4) {
    if constexpr (kBf16) {
      CUDALAB_WGMMA_SS_NARROW(8, "bf16", CUDALAB_WGMMA_REGS_0_3, 4, 5, CUDALAB_WGMMA_ACC4);
    } else {
      CUDALAB_WGMMA_SS_NARROW(8, "f16", CUDALAB_WGMMA_REGS_0_3, 4, 5, CUDALAB_WGMMA_ACC4);
    }
  } else if constexpr (kRegisters == 8) {
    if constexpr (kBf16) {
      CUDALAB_WGMMA_SS_NARROW(16, "bf16", CUDALAB_WGMMA_REGS_0_7, 8, 9, CUDALAB_WGMMA_ACC8);
    } else {
      CUDALAB_WGMMA_SS_NARROW(16, "f16", CUDALAB_WGMMA_REGS_0_7, 8, 9, CUDALAB_WGMMA_ACC8);
    }
  } else if constexpr (kRegisters == 16) {
    if constexpr (kBf16) {
      CUDALAB_WGMMA_SS_NARROW(32, "bf16", CUDALAB_WGMMA_REGS_0_15, 16, 17, CUDALAB_WGMMA_ACC16);
    } else {
      CUDALAB_WGMMA_SS_NARROW(32, "f16", CUDALAB_WGMMA_REGS_0_15, 16, 17, CUDALAB_WGMMA_ACC16);
    }
  } else {
    static_assert(kRegisters == 32, "m64n8k16, m64n16k16, m64n32k16 or m64n64k16");
    if constexpr (kBf16) {
      CUDALAB_WGMMA_SS_NARROW(64, "bf16", CUDALAB_WGMMA_REGS_0_31, 32, 33, CUDALAB_WGMMA_ACC32);
    } else {
      CUDALAB_WGMMA_SS_NARROW(64, "f16", CUDALAB_WGMMA_REGS_0_31, 32, 33, CUDALAB_WGMMA_ACC32);
    }
  }
}

// d (f32, N = 2 * kRegisters: 64, 128 or 256) += A B with A's 64 x 16 in registers, four 32-bit pairs a
// thread in the accumulator's layout (a[0]: row l/4, columns 2(l%4)..+1; a[1]: row + 8; a[2], a[3]:
// columns + 8), and B 16 x N from shared memory, MN-major (imm-trans-b 1): O += P V.
#define CUDALAB_WGMMA_RS_M64N64(TYPE)                                                                   \
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " {" CUDALAB_WGMMA_REGS_0_31 \
               "}, {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"                                            \
               : CUDALAB_WGMMA_ACC32(0)                                                                 \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b))
#define CUDALAB_WGMMA_RS_M64N128(TYPE)                                                                   \
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " {" CUDALAB_WGMMA_REGS_0_63 \
               "}, {%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"                                             \
               : CUDALAB_WGMMA_ACC64(0)                                                                  \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b))
#define CUDALAB_WGMMA_RS_M64N256(TYPE)                                                                   \
  asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " {" CUDALAB_WGMMA_REGS_0_63 \
               ", " CUDALAB_WGMMA_REGS_64_127 "}, {%128, %129, %130, %131}, %132, 1, 1, 1, 1;\n"         \
               : CUDALAB_WGMMA_ACC64(0), CUDALAB_WGMMA_ACC64(64)                                         \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b))
template <typename T, int kRegisters>
__device__ __forceinline__ void wgmma_rs_m64k16(float (&d)[kRegisters], const std::uint32_t (&a)[4], std::uint64_t b) {
  static_assert(kRegisters == 32 || kRegisters == 64 || kRegisters == 128, "m64n64k16, m64n128k16 or m64n256k16");
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  if constexpr (kRegisters == 32) {
    if constexpr (kBf16) {
      CUDALAB_WGMMA_RS_M64N64("bf16");
    } else {
      CUDALAB_WGMMA_RS_M64N64("f16");
    }
  } else if constexpr (kRegisters == 64) {
    if constexpr (kBf16) {
      CUDALAB_WGMMA_RS_M64N128("bf16");
    } else {
      CUDALAB_WGMMA_RS_M64N128("f16");
    }
  } else {
    if constexpr (kBf16) {
      CUDALAB_WGMMA_RS_M64N256("bf16");
    } else {
      CUDALAB_WGMMA_RS_M64N256("f16");
    }
  }
}

#undef CUDALAB_WGMMA_SS_NARROW
#undef CUDALAB_WGMMA_ACC16
#undef CUDALAB_WGMMA_ACC4
#undef CUDALAB_WGMMA_REGS_0_15
#undef CUDALAB_WGMMA_REGS_0_7
#undef CUDALAB_WGMMA_REGS_0_3
#undef CUDALAB_WGMMA_RS_M64N256
#undef CUDALAB_WGMMA_RS_M64N128
#undef CUDALAB_WGMMA_RS_M64N64
#undef CUDALAB_WGMMA_SS_M64N64
#undef CUDALAB_WGMMA_SS_KMAJOR
#undef CUDALAB_WGMMA_M64N256
#undef CUDALAB_WGMMA_M64N128
#undef CUDALAB_WGMMA_ACC64
#undef CUDALAB_WGMMA_ACC40
#undef CUDALAB_WGMMA_ACC32
#undef CUDALAB_WGMMA_ACC8
#undef CUDALAB_WGMMA_REGS_64_127
#undef CUDALAB_WGMMA_REGS_0_63
#undef CUDALAB_WGMMA_REGS_0_39
#undef CUDALAB_WGMMA_REGS_0_31

#endif  // CUDALAB_SM90A

}  // namespace cudalab::hopper
