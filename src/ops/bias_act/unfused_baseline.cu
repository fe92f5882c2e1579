// Baseline for claim C32: bias add and activation as two separate kernels, the way two PyTorch ops
// (x + bias, then relu or gelu) run: the first writes x + bias, rounded to T, to a tensor in global
// memory (the workspace here), the second reads it back and writes y. Both passes are rung `vectorized`'s
// flat 16-byte-vector kernel (flat.cuh), so the comparison with the fused rungs measures the fusion
// alone: 4 tensor transfers instead of 2, and the extra rounding of x + bias to T (the check's
// bound allows it: reference.hpp).
#include "core/workspace.hpp"
#include "cudalab/activations.hpp"
#include "ops/bias_act/flat.cuh"
#include "ops/bias_act/variants.hpp"

namespace cudalab::bias_act_variants {

std::size_t unfused_workspace_bytes(std::int64_t rows, std::int64_t features, std::size_t element_size) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(features) * element_size;
}

template <typename T>
void unfused(const BiasActArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  T* sum = static_cast<T*>(
      workspace_of(args, unfused_workspace_bytes(args.rows, args.features, sizeof(T)), "bias_act unfused"));
  launch_flat<T, Identity>(args.x, args.bias, sum, args.rows, args.features, stream);
  with_activation<T>(args.activation, [&](auto activation) {
    launch_flat<T, decltype(activation)>(sum, nullptr, args.y, args.rows, args.features, stream);
  });
}

CUDALAB_BIAS_ACT_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, unfused, BiasActArgs)

}  // namespace cudalab::bias_act_variants
