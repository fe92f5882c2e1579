// Does racecheck model bar.arrive? Warpgroup 1 writes a shared buffer and arrives on FULL; warpgroup 0
// syncs on FULL, reads it, arrives on FREE; warpgroup 1 syncs on FREE before writing again (the GEMM's
// hand-over). kind 0: that protocol; kind 1: __syncthreads around both (control, clean); kind 2: FREE
// waited after the writes (a real WAR race: racecheck must report it); kind 3: the protocol on two
// mbarriers of 128 arrivals (every thread arrives); kind 4: mbarriers of 4 arrivals, a warp's lane 0
// arriving after __syncwarp.
#include <cstdio>
__device__ __forceinline__ void bar_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ unsigned smem(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mb_arrive(unsigned b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(b) : "memory");
}
__device__ __forceinline__ void mb_wait(unsigned b, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(b), "r"(parity)
                 : "memory");
  } while (!done);
}
__global__ void handoff(float* out, int rounds, int kind) {
  __shared__ float buf[128 * 8];
  __shared__ unsigned long long full, free_;
  if (threadIdx.x == 0) {
    const unsigned n = kind == 4 ? 4 : 128;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(&full)), "r"(n) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(&free_)), "r"(n) : "memory");
  }
  __syncthreads();
  const int t = threadIdx.x % 128, wg = threadIdx.x / 128;
  float acc = 0;
  for (int r = 0; r < rounds; ++r) {
    if (kind == 1) {
      __syncthreads();
      if (wg == 1)
        for (int i = 0; i < 8; ++i) buf[i * 128 + t] = r + i + t;
      __syncthreads();
      if (wg == 0)
        for (int i = 0; i < 8; ++i) acc += buf[i * 128 + t];
      continue;
    }
    if (kind >= 3) {
      const bool arrives = kind == 3 || t % 32 == 0;
      if (wg == 1) {
        if (r > 0) mb_wait(smem(&free_), (r - 1) & 1);
        for (int i = 0; i < 8; ++i) buf[i * 128 + t] = r + i + t;
        __syncwarp();
        if (arrives) mb_arrive(smem(&full));
      } else {
        mb_wait(smem(&full), r & 1);
        for (int i = 0; i < 8; ++i) acc += buf[i * 128 + t];
        __syncwarp();
        if (arrives) mb_arrive(smem(&free_));
      }
      continue;
    }
    if (wg == 1) {
      if (r > 0 && kind == 0) bar_sync(4, 256);
      for (int i = 0; i < 8; ++i) buf[i * 128 + t] = r + i + t;
      if (r > 0 && kind == 2) bar_sync(4, 256);
      bar_arrive(3, 256);
    } else {
      bar_sync(3, 256);
      for (int i = 0; i < 8; ++i) acc += buf[i * 128 + t];
      if (r + 1 < rounds) bar_arrive(4, 256);
    }
  }
  if (wg == 0) out[blockIdx.x * 128 + t] = acc;
}
int main(int argc, char** argv) {
  const int kind = argc > 1 ? atoi(argv[1]) : 0;
  float* out;
  cudaMalloc(&out, 4 * 128 * sizeof(float));
  handoff<<<4, 256>>>(out, 6, kind);
  float h[128];
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  printf("kind %d: %s, out[5] = %g\n", kind, cudaGetErrorString(cudaDeviceSynchronize()), h[5]);
  return 0;
}
