// Flags in global memory between blocks of one grid: a flag raised after this thread's writes (a
// release fence, then a relaxed add), and a flag read that orders this thread's later accesses after
// the writes of whoever raised it. The stream-K GEMM's partial tiles and the deterministic attention
// backward's dQ order use them.
#pragma once

namespace cudalab {

__device__ __forceinline__ void raise_flag(unsigned* flag) {
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
  asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;\n" ::"l"(flag) : "memory");
}

__device__ __forceinline__ unsigned read_flag(const unsigned* flag) {
  unsigned seen;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(flag) : "memory");
  return seen;
}

}  // namespace cudalab
