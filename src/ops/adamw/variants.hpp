// The AdamW ladder's argument struct and launchers (the formula: include/cudalab/adamw.hpp). The
// library entry (adamw.cpp) and the registry (register.cpp) fill the same struct.
#pragma once

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

}  // namespace cudalab::adamw_variants
