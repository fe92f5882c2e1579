// The all-reduce ladder's pieces (experiment `all_reduce`, one process driving every GPU of the
// host): the one-shot kernel, where each GPU reads every GPU's input over peer access and writes
// the sum, and NCCL's all-reduce loaded at run time (the baseline), with the host-side arithmetic
// the experiment and its tests share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "cudalab/all_reduce.hpp"
#include "cudalab/dtype.hpp"

namespace cudalab::transfers {

using cudalab::kAllReduceMaxGpus;

// out[i] = the sum of inputs[g][i] over g < gpus (fp32 sums in the order g = 0, 1, ..., so every
// GPU computes the same bits), rounded once to `dtype` (f32 or bf16). The inputs are any GPU's
// memory this GPU can address (peer access enabled); out is this GPU's. Throws invalid_argument
// for another dtype or more than kAllReduceMaxGpus inputs.
void one_shot_sum(DType dtype, const void* const* inputs, int gpus, void* out, std::int64_t count, cudaStream_t stream);

// GPU g's part of `count` elements in the two-shot rung: [first, first + count). Parts are whole
// 16-byte vectors of `dtype` (the one-shot kernel's vector path) but the last, and together cover
// the elements once; trailing GPUs get empty parts where the elements run out.
struct AllReducePart {
  std::int64_t first = 0, count = 0;
};
AllReducePart all_reduce_part(int g, int gpus, std::int64_t count, DType dtype);

// nccl-tests' bus bandwidth of an all-reduce of `bytes` in `seconds` over `gpus`: the algorithm's
// rate (bytes / seconds) times 2 (gpus - 1) / gpus, the share of the data each link carries in a
// ring, so the figure compares with a link's rate whatever the GPU count.
double all_reduce_bus_gbps(double bytes, double seconds, int gpus);

// The bound an all-reduce's element may differ from the exact sum by: gpus + 1 roundings to
// `dtype` of the sum of the inputs' magnitudes (a ring's partial sums are rounded once per step,
// the one-shot kernel's once at the end).
double all_reduce_bound(DType dtype, int gpus, double magnitude_sum);

// NCCL's all-reduce over every GPU of this process, loaded with dlopen (libnccl.so.2 from the
// library path, or beside PyTorch's nvidia-nccl package), so cudalab runs without it.
class Nccl {
 public:
  // Loads the library and makes one communicator per GPU 0 .. gpus - 1; `reason()` says why not
  // when it cannot (no library, an init error).
  explicit Nccl(int gpus);
  ~Nccl();
  Nccl(const Nccl&) = delete;
  Nccl& operator=(const Nccl&) = delete;

  bool available() const { return reason_.empty(); }
  const std::string& reason() const { return reason_; }
  std::string version() const;
  // Enqueues the all-reduce (sum) of inputs[g] into outputs[g] on streams[g], as one group.
  void all_reduce(DType dtype, const void* const* inputs, void* const* outputs, std::int64_t count,
                  const cudaStream_t* streams) const;

 private:
  void* library_ = nullptr;
  void* comms_[kAllReduceMaxGpus] = {};
  int gpus_ = 0;
  std::string reason_;
};

}  // namespace cudalab::transfers
