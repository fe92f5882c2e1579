// C = AB and C = AA^T with K = 32 (the tile width w = 32 is also K), the tutorial's kernels
// rewritten: A is rows x 32, one 32x32 thread block per 32x32 tile of C.
//   C = A B:    simple (A and B from global), A tile in shared memory, A and B tiles in shared memory
//   C = A A^T:  simple (the A^T operand read down columns: strided), both operands staged in shared
//               memory (the transposed tile written down a column: 32-way bank conflicts), padded
// cuBLAS rows do the same products. Effective bandwidth as the tutorial counts it: the bytes of A,
// B and C each moved once, over the kernel time. Claims C11 and C12 read its table (claims.cpp).
#include <functional>
#include <string>
#include <vector>

#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/registry.hpp"
#include "harness/timer.hpp"
#include "ops/gemm/cublas_gemm.hpp"
#include "ops/gemm/ids.hpp"
#include "ops/gemm/reference.hpp"

namespace cudalab::harness {
namespace {

namespace ids = gemm_ids;

constexpr int kW = 32;                // tile width and K
constexpr std::int64_t kRows = 4096;  // A is kRows x kW; C is kRows x kRows

__global__ void ab_simple(const float* a, const float* b, float* c, std::int64_t n) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kW + threadIdx.y;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kW + threadIdx.x;
  float sum = 0.0f;
  for (int i = 0; i < kW; ++i) sum += a[row * kW + i] * b[i * n + col];
  c[row * n + col] = sum;
}

__global__ void ab_shared_a(const float* a, const float* b, float* c, std::int64_t n) {
  __shared__ float a_tile[kW][kW];
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kW + threadIdx.y;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kW + threadIdx.x;
  a_tile[threadIdx.y][threadIdx.x] = a[row * kW + threadIdx.x];
  // The warp that writes a row of the tile is the only one reading it (the tutorial relies on this);
  // since Volta the lanes of a warp must still be synchronized explicitly.
  __syncwarp();
  float sum = 0.0f;
  for (int i = 0; i < kW; ++i) sum += a_tile[threadIdx.y][i] * b[i * n + col];
  c[row * n + col] = sum;
}

__global__ void ab_shared_ab(const float* a, const float* b, float* c, std::int64_t n) {
  __shared__ float a_tile[kW][kW], b_tile[kW][kW];
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kW + threadIdx.y;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kW + threadIdx.x;
  a_tile[threadIdx.y][threadIdx.x] = a[row * kW + threadIdx.x];
  b_tile[threadIdx.y][threadIdx.x] = b[threadIdx.y * n + col];
  __syncthreads();
  float sum = 0.0f;
  for (int i = 0; i < kW; ++i) sum += a_tile[threadIdx.y][i] * b_tile[i][threadIdx.x];
  c[row * n + col] = sum;
}

__global__ void aat_simple(const float* a, float* c, std::int64_t m) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kW + threadIdx.y;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kW + threadIdx.x;
  float sum = 0.0f;
  for (int i = 0; i < kW; ++i) sum += a[row * kW + i] * a[col * kW + i];
  c[row * m + col] = sum;
}

template <int kPad>
__global__ void aat_shared(const float* a, float* c, std::int64_t m) {
  __shared__ float a_tile[kW][kW], transposed[kW][kW + kPad];
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kW + threadIdx.y;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kW + threadIdx.x;
  a_tile[threadIdx.y][threadIdx.x] = a[row * kW + threadIdx.x];
  // Coalesced read of the rows of A that form C's columns, stored transposed: lanes write down a
  // column of the tile, 32 words kW apart (one bank) unless padded.
  transposed[threadIdx.x][threadIdx.y] =
      a[(static_cast<std::int64_t>(blockIdx.x) * kW + threadIdx.y) * kW + threadIdx.x];
  __syncthreads();
  float sum = 0.0f;
  for (int i = 0; i < kW; ++i) sum += a_tile[threadIdx.y][i] * transposed[i][threadIdx.x];
  c[row * m + col] = sum;
}

struct Case {
  const char* product;  // "AB" or "AAT"
  const char* kernel;
  std::function<void(cudaStream_t)> launch;
  bool triangle_only;  // SSYRK writes one triangle
};

nlohmann::json run_staging(const ExperimentContext& context) {
  const std::int64_t m = kRows, n = kRows, k = kW;
  DeviceBuffer<float> a(m * k), b(k * n), c(m * n);
  Stream stream;
  fill_random(a.data(), a.size(), context.seed, Distribution::uniform, stream.get());
  fill_random(b.data(), b.size(), mix64(context.seed), Distribution::uniform, stream.get());
  std::vector<float> host_a(static_cast<std::size_t>(m * k)), host_b(static_cast<std::size_t>(k * n));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_a.data(), a.data(), a.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_b.data(), b.data(), b.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  // A^T as a row-major k x m matrix, for the host reference of A A^T.
  std::vector<float> host_at(static_cast<std::size_t>(k * m));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) host_at[j * m + i] = host_a[i * k + j];
  const GemmReference ab = gemm_reference(m, n, k, 1.0, host_a.data(), k, host_b.data(), n, 0.0, nullptr, 0);
  const GemmReference aat = gemm_reference(m, m, k, 1.0, host_a.data(), k, host_at.data(), m, 0.0, nullptr, 0);

  const dim3 grid(static_cast<unsigned>(n / kW), static_cast<unsigned>(m / kW)), block(kW, kW);
  const float* pa = a.data();
  const float* pb = b.data();
  float* pc = c.data();
  gemm_variants::GemmArgs<float> ab_args;
  ab_args.m = m, ab_args.n = n, ab_args.k = k, ab_args.alpha = 1.0f, ab_args.beta = 0.0f;
  ab_args.a = pa, ab_args.lda = k, ab_args.b = pb, ab_args.ldb = n, ab_args.c = pc, ab_args.ldc = n;
  const std::vector<Case> cases = {
      {ids::kProductAB, ids::kSimple, [&](cudaStream_t s) { ab_simple<<<grid, block, 0, s>>>(pa, pb, pc, n); }, false},
      {ids::kProductAB, ids::kSharedA, [&](cudaStream_t s) { ab_shared_a<<<grid, block, 0, s>>>(pa, pb, pc, n); },
       false},
      {ids::kProductAB, ids::kSharedAB, [&](cudaStream_t s) { ab_shared_ab<<<grid, block, 0, s>>>(pa, pb, pc, n); },
       false},
      {ids::kProductAB, ids::kCublasSgemm, [&](cudaStream_t s) { gemm_variants::cublas_sgemm(ab_args, s); }, false},
      {ids::kProductAAT, ids::kSimple, [&](cudaStream_t s) { aat_simple<<<grid, block, 0, s>>>(pa, pc, m); }, false},
      {ids::kProductAAT, ids::kSharedTransposed,
       [&](cudaStream_t s) { aat_shared<0><<<grid, block, 0, s>>>(pa, pc, m); }, false},
      {ids::kProductAAT, ids::kSharedPadded, [&](cudaStream_t s) { aat_shared<1><<<grid, block, 0, s>>>(pa, pc, m); },
       false},
      {ids::kProductAAT, ids::kCublasSsyrk, [&](cudaStream_t s) { gemm_variants::cublas_aat_syrk(pa, m, k, pc, s); },
       true},
      {ids::kProductAAT, ids::kCublasSgemm, [&](cudaStream_t s) { gemm_variants::cublas_aat_gemm(pa, m, k, pc, s); },
       false},
  };
  KernelTimer timer;
  TimingOptions options;
  nlohmann::json rows = nlohmann::json::array();
  for (const Case& x : cases) {
    if (context.progress) context.progress(std::string(ids::kStagingExperiment) + " " + x.product + " " + x.kernel);
    poison(pc, c.bytes(), stream.get());
    x.launch(stream.get());
    CUDALAB_CHECK_LAUNCH();
    std::vector<float> out(static_cast<std::size_t>(m * n));
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(out.data(), pc, c.bytes(), cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    if (x.triangle_only)  // SSYRK filled the upper triangle (row <= col): mirror it for the check
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < i; ++j) out[i * m + j] = out[j * m + i];
    const GemmReference& ref = std::string(x.product) == ids::kProductAB ? ab : aat;
    const Comparison check = compare_gemm(out.data(), m * n, ref.value.data(), ref.bound.data(), k);
    if (!check.passed())
      throw Error(ErrorKind::cuda,
                  std::string(ids::kStagingExperiment) + ": " + x.product + " " + x.kernel + " " + check.summary(),
                  __FILE__, __LINE__);
    const double ms = timer.time(x.launch, stream.get(), options).median;
    const double written = x.triangle_only ? 4.0 * m * (m + 1) / 2 : 4.0 * m * n;
    const double read = std::string(x.product) == ids::kProductAB ? 4.0 * (m * k + k * n) : 4.0 * m * k;
    const double flops = x.triangle_only ? double(m) * (m + 1) * k : 2.0 * m * n * k;
    rows.push_back(
        {x.product, x.kernel, m, n, k, ms * 1e3, (read + written) / (ms * 1e-3) / 1e9, flops / (ms * 1e-3) / 1e9});
  }
  return {{"name", ids::kStagingExperiment},
          {"op", ids::kOp},
          {"summary", "The tutorial's C = AB and C = AA^T kernels (A is 4096 x 32, K = tile width 32) vs cuBLAS"},
          {"columns", {"product", "kernel", "M", "N", "K", "median_us", "effective_GBps", "GFLOPs"}},
          {"rows", rows},
          {"notes",
           {"every result is checked element-wise against a host FP64 product, error bound (K+3) 2^-24 |A||B|",
            "effective_GBps: (A + B read once, C written once) / median time, as the tutorial counts it; C dominates "
            "(64 MiB of a 64.5 MiB total)",
            "cublas_ssyrk writes only one triangle of C: its bytes and flops count that half",
            "median of cold-L2 launches (flush before each sample)"}}};
}

}  // namespace

void register_gemm_staging_experiment(Registry& registry) {
  registry.add(
      Experiment{ids::kStagingExperiment, ids::kOp,
                 "The tutorial's C = AB and C = AA^T kernels (K = 32) vs cuBLAS SGEMM/SSYRK (C11, C12)", run_staging,
                 bar_plot("The tutorial's matrix kernels (K = 32)", nlohmann::json::array({"product", "kernel"}),
                          "effective_GBps", "effective GB/s, as the tutorial counts it")});
}

}  // namespace cudalab::harness
