#include "probe/probe.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/nvml.hpp"
#include "harness/random.hpp"
#include "harness/results.hpp"
#include "harness/timer.hpp"
#include "ops/gemm/fp8.hpp"
#include "ops/transfers/experiments.hpp"
#include "probe/datasheet.hpp"

namespace cudalab::probe {
namespace {

using harness::Ceilings;
using harness::KernelTimer;
using harness::TimingOptions;

constexpr int kBlockSize = 256;

// ---- memory bandwidth ------------------------------------------------------------------------

// One float4 per thread, no loop: the most independent 16-byte requests in flight per SM.
__global__ void copy_float4_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::int64_t count) {
  const std::int64_t i = global_thread_index();
  if (i < count) out[i] = in[i];
}

// Two float4 loads per thread, summed; the store happens only if the sum hits a value random
// data never produces, so the loads cannot be optimised away and almost nothing is written.
__global__ void read_float4_kernel(const float4* __restrict__ in, std::int64_t count, float* sink) {
  const std::int64_t i = global_thread_index();
  const std::int64_t half = count / 2;
  if (i >= half) return;
  const float4 x = in[i];
  const float4 y = in[i + half];
  const float sum = (x.x + x.y) + (x.z + x.w) + (y.x + y.y) + (y.z + y.w);
  if (sum == 1234567.0f) *sink = sum;
}

// ---- FP32 FMA throughput ---------------------------------------------------------------------

constexpr int kFmaChains = 8;  // independent chains hide the 4-cycle FMA latency
constexpr int kFmaIterations = 4096;

__global__ void fma_kernel(float multiplier, float addend, float* sink) {
  float acc[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) acc[c] = threadIdx.x + c;
#pragma unroll 64
  for (int i = 0; i < kFmaIterations; ++i) {
#pragma unroll
    for (int c = 0; c < kFmaChains; ++c) acc[c] = fmaf(acc[c], multiplier, addend);
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) sum += acc[c];
  if (sum == 1234567.0f) *sink = sum;
}

// ---- helpers ---------------------------------------------------------------------------------

__global__ void empty_kernel() {}

double gbps(double bytes, double milliseconds) { return bytes / (milliseconds * 1e-3) / 1e9; }

TimingOptions probe_timing() {
  TimingOptions options;
  options.warmup_launches = 3;
  options.stopping.min_samples = 10;
  options.stopping.max_samples = 200;
  options.stopping.budget_seconds = 1.0;
  return options;
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorKind::library, std::string(what) + " failed: " + cublasGetStatusString(status), __FILE__,
                __LINE__);
}

struct CublasHandle {
  CublasHandle() { check_cublas(cublasCreate(&handle), "cublasCreate"); }
  ~CublasHandle() { cublasDestroy(handle); }
  cublasHandle_t handle = nullptr;
};

// Median host-clock seconds of `repeats` calls of fn().
template <typename Fn>
double host_seconds(int repeats, Fn fn) {
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return harness::summarize(samples).median;
}

void measure_memory(Ceilings& c, KernelTimer& timer, cudaStream_t stream) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDALAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  // Far larger than L2, small enough for any card: 1 GiB per buffer, less on small cards.
  std::size_t bytes = std::min<std::size_t>(std::size_t{1} << 30, free_bytes / 4);
  bytes -= bytes % (kBlockSize * sizeof(float4));
  const std::int64_t count = static_cast<std::int64_t>(bytes / sizeof(float4));
  DeviceBuffer<float4> source(count), destination(count);
  DeviceBuffer<float> sink(1);
  harness::fill_random(reinterpret_cast<float*>(source.data()), count * 4, 42, harness::Distribution::uniform, stream);
  const unsigned blocks = static_cast<unsigned>(ceil_div<std::int64_t>(count, kBlockSize));
  const TimingOptions options = probe_timing();

  const auto copy = timer.time(
      [&](cudaStream_t s) {
        copy_float4_kernel<<<blocks, kBlockSize, 0, s>>>(source.data(), destination.data(), count);
        CUDALAB_CHECK_LAUNCH();
      },
      stream, options);
  c.copy_kernel_gbps = gbps(2.0 * bytes, copy.median);

  const auto memcpy_time = timer.time(
      [&](cudaStream_t s) {
        CUDALAB_CUDA_CHECK(cudaMemcpyAsync(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice, s));
      },
      stream, options);
  c.memcpy_d2d_gbps = gbps(2.0 * bytes, memcpy_time.median);

  const unsigned read_blocks = static_cast<unsigned>(ceil_div<std::int64_t>(count / 2, kBlockSize));
  const auto read = timer.time(
      [&](cudaStream_t s) {
        read_float4_kernel<<<read_blocks, kBlockSize, 0, s>>>(source.data(), count, sink.data());
        CUDALAB_CHECK_LAUNCH();
      },
      stream, options);
  c.read_gbps = gbps(static_cast<double>(count / 2 * 2) * sizeof(float4), read.median);
}

void measure_fp32(Ceilings& c, KernelTimer& timer, cudaStream_t stream, const DeviceInfo& device) {
  DeviceBuffer<float> sink(1);
  int blocks_per_sm = 0;
  CUDALAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, fma_kernel, kBlockSize, 0));
  const int blocks = device.sm_count * blocks_per_sm * 4;  // several waves: tail effects stay small
  TimingOptions options = probe_timing();
  options.cold = false;  // no memory traffic to speak of
  const auto t = timer.time(
      [&](cudaStream_t s) {
        fma_kernel<<<blocks, kBlockSize, 0, s>>>(0.999f, 0.001f, sink.data());
        CUDALAB_CHECK_LAUNCH();
      },
      stream, options);
  const double flops = 2.0 * kFmaChains * kFmaIterations * static_cast<double>(blocks) * kBlockSize;
  c.fp32_tflops = flops / (t.median * 1e-3) / 1e12;
}

// cuBLAS's rate on one 8192^3 (4096^3 on small cards) product of random inputs, fp32 accumulation:
// the ceiling a tensor-core variant of that precision is held to. TF32 is an fp32 GEMM in cuBLAS's
// TF32 compute mode.
double measure_tensor_gemm(DType dtype, cublasComputeType_t compute, KernelTimer& timer, cudaStream_t stream) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDALAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  // Three 8192^2 matrices take 0.4-0.8 GiB.
  const int size = free_bytes > (std::size_t{4} << 30) ? 8192 : 4096;
  const std::int64_t elements = static_cast<std::int64_t>(size) * size;
  const std::int64_t bytes = elements * static_cast<std::int64_t>(size_of(dtype));
  DeviceBuffer<unsigned char> a(bytes), b(bytes), out(bytes);
  harness::fill_random(dtype, a.data(), elements, 7, harness::Distribution::uniform, stream);
  harness::fill_random(dtype, b.data(), elements, 8, harness::Distribution::uniform, stream);
  const cudaDataType_t type = dtype == DType::bf16 ? CUDA_R_16BF : dtype == DType::f16 ? CUDA_R_16F : CUDA_R_32F;
  CublasHandle cublas;
  check_cublas(cublasSetStream(cublas.handle, stream), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  TimingOptions options = probe_timing();
  options.stopping.max_samples = 50;
  const auto t = timer.time(
      [&](cudaStream_t) {
        check_cublas(
            cublasGemmEx(cublas.handle, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &alpha, a.data(), type, size,
                         b.data(), type, size, &beta, out.data(), type, size, compute, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx (tensor-core ceiling)");
      },
      stream, options);
  return 2.0 * static_cast<double>(size) * size * size / (t.median * 1e-3) / 1e12;
}

// cuBLASLt's FP8 rate (e4m3 in, bf16 out, fp32 accumulation, unit scales) on the same product:
// the ceiling the FP8 GEMM is held to. 0 where the GPU has no FP8 tensor cores (before 8.9).
double measure_fp8_gemm(const DeviceInfo& device, KernelTimer& timer, cudaStream_t stream) {
  if (device.compute_major * 10 + device.compute_minor < 89) return 0.0;
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDALAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const int size = free_bytes > (std::size_t{4} << 30) ? 8192 : 4096;
  const std::int64_t elements = static_cast<std::int64_t>(size) * size;
  DeviceBuffer<__nv_fp8_e4m3> a(elements), b(elements);
  DeviceBuffer<__nv_bfloat16> out(elements);
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(gemm_variants::cublaslt_fp8_workspace_bytes()));
  harness::fill_random(DType::e4m3, a.data(), elements, 7, harness::Distribution::uniform, stream);
  harness::fill_random(DType::e4m3, b.data(), elements, 8, harness::Distribution::uniform, stream);
  gemm_variants::GemmFp8Args args;
  args.m = args.n = args.k = size;
  args.a = a.data(), args.lda = size, args.b = b.data(), args.ldb = size, args.c = out.data(), args.ldc = size;
  args.workspace = workspace.data();
  // Scales of 1 in their own allocations, as the gemm_fp8 baseline passes them: cuBLASLt's
  // heuristic sees the scale pointers, so the ceiling is the configuration the baseline runs.
  DeviceBuffer<float> scale_a(1), scale_b(1);
  const float one = 1.0f;
  CUDALAB_CUDA_CHECK(cudaMemcpy(scale_a.data(), &one, sizeof(one), cudaMemcpyHostToDevice));
  CUDALAB_CUDA_CHECK(cudaMemcpy(scale_b.data(), &one, sizeof(one), cudaMemcpyHostToDevice));
  args.scale_a = scale_a.data(), args.scale_b = scale_b.data();
  TimingOptions options = probe_timing();
  options.stopping.max_samples = 50;
  const auto t = timer.time([&](cudaStream_t s) { gemm_variants::cublaslt_fp8(args, s); }, stream, options);
  return 2.0 * static_cast<double>(size) * size * size / (t.median * 1e-3) / 1e12;
}

void measure_transfers(Ceilings& c, cudaStream_t stream) {
  const std::size_t bytes = std::size_t{256} << 20;
  DeviceBuffer<char> device_buffer(static_cast<std::int64_t>(bytes));
  std::unique_ptr<char[]> pageable(new char[bytes]);
  std::memset(pageable.get(), 1, bytes);  // touch every page before timing
  PinnedBuffer<char> pinned(static_cast<std::int64_t>(bytes));
  std::memset(pinned.data(), 1, bytes);
  const int repeats = 5;
  auto copy = [&](void* to, const void* from, cudaMemcpyKind kind) {
    return host_seconds(repeats, [&] {
      CUDALAB_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, kind, stream));
      CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    });
  };
  copy(device_buffer.data(), pinned.data(), cudaMemcpyHostToDevice);  // warm-up
  c.h2d_pageable_gbps = bytes / copy(device_buffer.data(), pageable.get(), cudaMemcpyHostToDevice) / 1e9;
  c.d2h_pageable_gbps = bytes / copy(pageable.get(), device_buffer.data(), cudaMemcpyDeviceToHost) / 1e9;
  c.h2d_pinned_gbps = bytes / copy(device_buffer.data(), pinned.data(), cudaMemcpyHostToDevice) / 1e9;
  c.d2h_pinned_gbps = bytes / copy(pinned.data(), device_buffer.data(), cudaMemcpyDeviceToHost) / 1e9;
}

void measure_launch(Ceilings& c, cudaStream_t stream) {
  for (int i = 0; i < 100; ++i) empty_kernel<<<1, 32, 0, stream>>>();
  CUDALAB_CHECK_LAUNCH();
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  c.launch_latency_us = 1e6 * host_seconds(1000, [&] {
                          empty_kernel<<<1, 32, 0, stream>>>();
                          CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
                        });
  const int launches = 10000;
  c.launch_throughput_us = 1e6 / launches * host_seconds(5, [&] {
                             for (int i = 0; i < launches; ++i) empty_kernel<<<1, 32, 0, stream>>>();
                             CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
                           });
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

int measurement_count() {
  int gpus = 0;
  CUDALAB_CUDA_CHECK(cudaGetDeviceCount(&gpus));
  return gpus > 1 ? 6 : 5;
}

Ceilings measure_ceilings(const DeviceInfo& device, const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& what) {
    if (progress) progress(what);
  };
  Ceilings c;
  c.datasheet_dram_gbps = datasheet_dram_gbps(device);
  c.datasheet_fp32_tflops = datasheet_fp32_tflops(device);
  c.datasheet_bf16_tflops = datasheet_bf16_tflops(device);
  const harness::NvmlSnapshot nvml = harness::nvml_snapshot(device.pci_bus_id);
  c.datasheet_pcie_gbps = harness::pcie_bytes_per_second(nvml.pcie_max_generation, nvml.pcie_max_width) / 1e9;

  Stream stream;
  KernelTimer timer;
  say("probe: device memory bandwidth (copy kernel, cudaMemcpy, read-only)");
  measure_memory(c, timer, stream.get());
  say("probe: FP32 FMA throughput");
  measure_fp32(c, timer, stream.get(), device);
  say("probe: BF16, FP16 and TF32 tensor-core GEMMs through cuBLAS, FP8 through cuBLASLt");
  // The best of three interleaved rounds, so each precision has the same history and a ceiling
  // is the rate the card reached. It steadies BF16 (785-811 TFLOP/s over twelve processes on one
  // H100) but not TF32 (368-416): that spread is between processes, not rounds (docs/notes.md).
  for (int round = 0; round < 3; ++round) {
    c.bf16_tensor_tflops =
        std::max(c.bf16_tensor_tflops, measure_tensor_gemm(DType::bf16, CUBLAS_COMPUTE_32F, timer, stream.get()));
    c.fp16_tensor_tflops =
        std::max(c.fp16_tensor_tflops, measure_tensor_gemm(DType::f16, CUBLAS_COMPUTE_32F, timer, stream.get()));
    c.tf32_tensor_tflops = std::max(c.tf32_tensor_tflops,
                                    measure_tensor_gemm(DType::f32, CUBLAS_COMPUTE_32F_FAST_TF32, timer, stream.get()));
    c.fp8_tensor_tflops = std::max(c.fp8_tensor_tflops, measure_fp8_gemm(device, timer, stream.get()));
  }
  say("probe: host<->device transfers (pageable, pinned)");
  measure_transfers(c, stream.get());
  say("probe: kernel launch latency");
  measure_launch(c, stream.get());
  if (measurement_count() > 5) {
    say("probe: copies to the host's other GPUs (cudaMemcpyPeerAsync)");
    // The other GPUs may be busy, full or in another process's exclusive mode: their ceilings
    // are left out (zeros, no rows) rather than failing the probe of this one.
    try {
      const transfers::PeerCeilings peers = transfers::measure_peer_ceilings(device.ordinal);
      c.peer_gpus = peers.peers;
      c.peer_gbps = peers.gbps;
      c.peer_bidirectional_gbps = peers.bidirectional_gbps;
      c.peer_latency_us = peers.latency_us;
    } catch (const Error& error) {
      say(std::string("probe: copies to other GPUs not measured: ") + error.what());
      cudaGetLastError();
    }
  }
  return c;
}

std::string cache_path(const DeviceInfo& device) {
  std::filesystem::path folder;
  if (const char* dir = std::getenv("CUDALAB_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    folder = dir;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    folder = std::filesystem::path(xdg) / "cudalab";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    folder = std::filesystem::path(home) / ".cache" / "cudalab";
  } else {
    folder = std::filesystem::temp_directory_path() / "cudalab";
  }
  return (folder / ("probe-" + device.uuid + ".json")).string();
}

// The probe's method, recorded in its cache: a cache of another is not used.
constexpr int kProbeMethod = 3;

std::optional<Ceilings> load_cached(const DeviceInfo& device) {
  const std::string path = cache_path(device);
  if (!std::filesystem::exists(path)) return std::nullopt;
  try {
    const nlohmann::json document = harness::read_json_file(path);
    if (document.value("schema", "") != "cudalab-probe/1" ||
        document.value("runtime_cuda_version", 0) != device.runtime_cuda_version)
      return std::nullopt;
    // A cache of an older method (one that measured no FP8, FP8 without scale pointers, or no
    // copies to other GPUs) is measured again.
    if (document.value("method", 0) != kProbeMethod) return std::nullopt;
    return document.at("ceilings").get<Ceilings>();
  } catch (const std::exception&) {
    return std::nullopt;  // a damaged cache is measured again, not an error
  }
}

void save_cache(const DeviceInfo& device, const Ceilings& ceilings) {
  harness::write_json_file(cache_path(device), {{"schema", "cudalab-probe/1"},
                                                {"method", kProbeMethod},
                                                {"gpu_name", device.name},
                                                {"gpu_uuid", device.uuid},
                                                {"runtime_cuda_version", device.runtime_cuda_version},
                                                {"ceilings", ceilings}});
}

Ceilings ceilings_for(const DeviceInfo& device, bool refresh, const std::function<void(const std::string&)>& progress) {
  if (!refresh) {
    if (auto cached = load_cached(device)) return *cached;
  }
  Ceilings measured = measure_ceilings(device, progress);
  try {
    save_cache(device, measured);
  } catch (const Error&) {
    // An unwritable cache folder costs a re-measure next time, nothing more.
  }
  return measured;
}

}  // namespace cudalab::probe
