#include "harness/timer.hpp"

#include <string>

#include "harness/nvtx.hpp"

#include <chrono>
#include <vector>

#include "core/launch.cuh"
#include "cudalab/device.hpp"
#include "cudalab/error.hpp"

namespace cudalab::harness {
namespace {

// Reads every float4 of the buffer. The buffer holds zeros, so the store never happens, but the
// compiler cannot know that and must keep the loads.
__global__ void flush_l2_kernel(const float4* buffer, std::int64_t count, float* sink) {
  float sum = 0.0f;
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < count; i += stride) {
    const float4 v = buffer[i];
    sum += v.x + v.y + v.z + v.w;
  }
  if (sum != 0.0f) *sink = sum;
}

}  // namespace

std::int64_t l2_flush_bytes(const DeviceInfo& device) {
  return 2 * static_cast<std::int64_t>(device.l2_cache_bytes) + (8 << 20);
}

KernelTimer::KernelTimer() {
  const std::int64_t bytes = l2_flush_bytes(device_info());
  flush_buffer_ = DeviceBuffer<float4>(bytes / static_cast<std::int64_t>(sizeof(float4)));
  flush_sink_ = DeviceBuffer<float>(1);
  CUDALAB_CUDA_CHECK(cudaMemset(flush_buffer_.data(), 0, flush_buffer_.bytes()));
}

void KernelTimer::flush_l2(cudaStream_t stream) {
  constexpr int kBlockSize = 256;
  const int blocks = resident_grid_size(flush_l2_kernel, kBlockSize, flush_buffer_.size());
  flush_l2_kernel<<<blocks, kBlockSize, 0, stream>>>(flush_buffer_.data(), flush_buffer_.size(), flush_sink_.data());
  CUDALAB_CHECK_LAUNCH();
}

Summary KernelTimer::time(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                          const TimingOptions& options, const std::function<void(cudaStream_t)>& prepare) {
  for (int i = 0; i < options.warmup_launches; ++i) {
    if (prepare) prepare(stream);
    launch(stream);
  }
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));

  Event start, stop;
  std::vector<double> samples;
  const auto began = std::chrono::steady_clock::now();
  for (;;) {
    // The flush also keeps the GPU busy while the host enqueues the events and the launch, so the
    // start event does not fire early and charge host launch overhead to the kernel.
    if (prepare) prepare(stream);
    if (options.cold) flush_l2(stream);
    {
      const NvtxRange range("sample " + std::to_string(samples.size() + 1));
      start.record(stream);
      launch(stream);
      stop.record(stream);
    }
    stop.synchronize();
    samples.push_back(stop.elapsed_ms_since(start));
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    if (should_stop(samples, elapsed, options.stopping)) break;
  }
  return summarize(std::move(samples));
}

}  // namespace cudalab::harness
