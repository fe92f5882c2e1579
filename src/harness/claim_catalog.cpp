#include "harness/claim_catalog.hpp"

namespace cudalab::harness {

// The tutorials' claims as the project's claims table states them (docs/claims.md is generated
// from this list and the results): id, the claim, the tutorials it comes from (the files under
// seeds/ beside the project, numbered 000-004), and the ladder or experiment that measures it.
const std::vector<ClaimText>& claim_catalog() {
  static const std::vector<ClaimText> catalog = {
      {"C01",
       "Copying inputs to the GPU and results back inside a 1000-iteration loop (1024 floats) leaves the GPU idle most "
       "of the time; hoisting the copies and the sync out of the loop makes the run many times faster",
       "003", "vecadd host-pattern experiment"},
      {"C02", "Staging vector-add operands through shared memory lowers the kernel's time", "003",
       "vecadd ladder (shared variant vs plain)"},
      {"C03", "Vector add is memory bound: arithmetic intensity 1/12 FLOP/byte, so at most ~0.1% of FP32 peak", "000",
       "vecadd: % of FP32 peak and % of bandwidth"},
      {"C04", "Pinned host memory transfers at ~2x pageable (12 vs 6 GB/s); another page says 4x (12 vs 3 GB/s)", "000",
       "transfer experiment"},
      {"C05", "Coalescing: stride-2 gives ~50% of sequential bandwidth, stride-4 ~24%, stride-32 ~3%, random ~3%",
       "000, 001", "coalescing sweep"},
      {"C06", "A misaligned (offset) copy reaches about 4/5 of the aligned copy's throughput", "001",
       "coalescing offset sweep"},
      {"C07", "AoS to SoA: 6 transactions per field become 1; linked list 60x slower than array for 1M elements", "000",
       "AoS/SoA experiment"},
      {"C08",
       "Shared-memory bank conflicts: 2-way = 2x slower, 4-way = 4x, 32-way = 32x (RTX 3090 table: 2,100 vs 67,200 "
       "cycles)",
       "000", "bank-conflict microbenchmark"},
      {"C09",
       "A stride of 16 words gives a 2-way bank conflict (note: on 32 four-byte banks, stride 16 lands on 2 banks, "
       "i.e. 16-way)",
       "000", "bank-conflict microbenchmark"},
      {"C10",
       "Transpose: padding the shared tile [32][33] makes it 6.2x faster than the unpadded tiled version (45 to 280 "
       "GB/s)",
       "000", "transpose ladder"},
      {"C11", "C = A·Aᵀ: coalescing through shared memory 3.6 to 27.5 GB/s; removing bank conflicts 39.2 GB/s", "001",
       "gemm AAᵀ ladder"},
      {"C12", "C = A·B with shared-memory tiles: 6.6 to 7.8 to 14.9 GB/s effective (K20X)", "001", "gemm ladder"},
      {"C13", "Constant memory for a 3x3 filter: global 100 ms, shared 20 ms, constant 5 ms (20x) on a 1000x1000 image",
       "000", "conv2d ladder"},
      {"C14", "Texture cache gives 2-5x on 2-D access; constant 2-4x; tiling 5-20x; coalescing 2-32x", "000",
       "memory experiments summary"},
      {"C15", "Memory latencies: register ~1 cycle, shared 1-30, L1 30-40, L2 ~200, global 200-800 cycles", "000, 004",
       "latency (pointer-chase) probe"},
      {"C16",
       "Reduction: removing the `tid % (2*stride)` filter cuts time 283 to 176 us (40%), because `%` costs ~290 cycles "
       "vs 2-9 for add",
       "002", "reduce ladder (global in-place variants)"},
      {"C17", "The filter-free in-place reduction is a race: wrong without `-G`, right by luck with `-G`", "002",
       "reduce ladder + race check"},
      {"C18", "Reduction 7-step ladder (1024 elements): 8.0, 4.0, 2.0, 1.5, 1.0, 0.5, 0.3 ms", "000", "reduce ladder"},
      {"C19", "Reduction: shared memory 100 GB/s, warp shuffle 800 GB/s, CUB 850 GB/s", "000", "reduce ladder"},
      {"C20", "Divergence-free reduction 3.2x faster than naive; shuffle 4.5x", "000", "reduce ladder"},
      {"C21", "Hillis-Steele is fine for small inputs, Blelloch (work-efficient) wins for large ones", "000",
       "scan ladder"},
      {"C22", "Warp divergence: 2 paths = 2x slower, 4 paths = 4x, 32 paths = 32x", "000", "divergence experiment"},
      {"C23",
       "Occupancy: <<<10,64>>> 100 ms vs <<<80,256>>> 35 ms; 64 registers/thread halves occupancy; above ~50% "
       "occupancy more does not pay",
       "000, 001", "occupancy sweep"},
      {"C24",
       "Costs: __syncthreads ~10 cycles, atomicAdd 20-600 cycles, cudaDeviceSynchronize 1-10 us, fence 200-400 cycles",
       "000", "sync/atomics microbenchmarks"},
      {"C25", "Integer division and modulo are expensive; replace by shifts and masks for powers of two", "001, 002",
       "instruction-cost microbenchmark"},
      {"C26",
       "Matmul 1024 (RTX 3090): naive 48 GFLOPS, tiled-16 373, tiled+opt 555, cuBLAS 620; tiled reaches ~90% of cuBLAS",
       "000", "sgemm ladder"},
      {"C27", "Tile size: 16x16 optimal, 32x32 good, 8x8 too small (too little reuse)", "000", "sgemm tile-size sweep"},
      {"C28", "Double buffering / software prefetch hides latency: 20-30% faster", "000", "sgemm ladder"},
      {"C29",
       "Multi-stream pipelining: 24 to 10 ms (2.4x), \"3-4x\"; depth-first issue order 1.5x better than breadth-first; "
       "2-8 streams optimal",
       "000, 001", "streams experiment"},
      {"C30",
       "A100 table: vector add 1M 0.1 ms 80 GB/s; SGEMM 1024 naive 8 ms 2.6 TFLOPS, tiled 2 ms 10.4 TFLOPS, cuBLAS 0.3 "
       "ms 72 TFLOPS; HGEMM 4096 1.5 ms 183 TFLOPS (several of these contradict their own time and size)",
       "004", "vecadd, sgemm, tensor-core gemm ladders"},
      {"C31",
       "Unified memory: basic is slower, prefetch (cudaMemPrefetchAsync) and advice bring it near explicit copies",
       "000, 004", "transfer experiment"},
      {"C32", "Fused bias+GELU / bias+ReLU kernels are faster than separate PyTorch ops", "004",
       "fused-ops benchmarks"},
      {"C33", "Flash attention cuts attention memory from O(N^2) to O(N)", "004", "attention benchmark (memory)"},
      {"C34", "Tensor cores give 8x+ the throughput of CUDA cores (A100, FP16)", "004", "tensor-core gemm vs sgemm"},
      // C35-C37 are the project's own readings of the tutorials (the list they extend ends at C34):
      // tutorial 004's Hopper section, and 001's paragraph on unified virtual addressing.
      {"C35", "4th-gen Tensor Cores: FP8 support, up to 6x A100 performance (H100)", "004", "FP8 gemm vs BF16 gemm"},
      {"C36", "NVLink 4.0: 900 GB/s bidirectional bandwidth (H100)", "004", "peer_transfers experiment"},
      {"C37",
       "Unified virtual addressing is what makes peer-to-peer transfers between GPUs possible, bypassing host memory",
       "001", "peer_transfers experiment"},
  };
  return catalog;
}

const ClaimText* find_claim_text(const std::string& id) {
  for (const ClaimText& c : claim_catalog())
    if (id == c.id) return &c;
  return nullptr;
}

}  // namespace cudalab::harness
