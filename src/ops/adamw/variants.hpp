// The AdamW ladder's argument struct and launchers (the formula: include/cudalab/adamw.hpp). The
// library entry (adamw.cpp) and the registry (register.cpp) fill the same struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "cudalab/adamw.hpp"

namespace cudalab::adamw_variants {

template <typename T>
struct AdamWArgs {
  using Element = T;
  std::vector<AdamWTensor<T>> tensors;
  AdamWHyperparameters hyper;
};

// The baseline: torch's foreach steps, a pass over memory each, tensor by tensor: the decay of p,
// the update of m, of v, then of p.
template <typename T>
void unfused(const AdamWArgs<T>& args, cudaStream_t stream);
// One fused launch per tensor, element accesses.
template <typename T>
void per_tensor(const AdamWArgs<T>& args, cudaStream_t stream);
// One launch for up to kMaxTensorsPerLaunch tensors, their pointers and sizes in the kernel's
// parameters; 16-byte accesses on the tensors that allow them.
inline constexpr int kMaxTensorsPerLaunch = 48;
template <typename T>
void multi_tensor(const AdamWArgs<T>& args, cudaStream_t stream);

// Mixed precision (16-bit parameters, fp32 master weights and moments): the multi-tensor launch
// over AdamWMasterTensor, 16-byte accesses of the 16-bit arrays (two of each fp32 one).
template <typename T>
struct AdamWMasterArgs {
  using Element = T;
  std::vector<AdamWMasterTensor<T>> tensors;
  AdamWHyperparameters hyper;
  void* workspace = nullptr;  // the baseline's: master_workspace_bytes(the largest tensor's n)
};
template <typename T>
void multi_tensor_master(const AdamWMasterArgs<T>& args, cudaStream_t stream);

// The baseline: the recipe around torch's fused fp32 step, tensor by tensor: the gradient cast to
// fp32 (a pass into the workspace), one fused fp32 step on the master, the parameter cast from it.
inline std::size_t master_workspace_bytes(std::int64_t largest) {
  return static_cast<std::size_t>(largest) * sizeof(float);
}
template <typename T>
void unfused_master(const AdamWMasterArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::adamw_variants
