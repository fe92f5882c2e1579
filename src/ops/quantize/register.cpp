// The FP8 quantization op, quantize_fp8: x (f32, bf16 or f16) to e4m3 with one scale from its own
// amax (include/cudalab/quantize.hpp). Its tensors, the bit-exact check, the work model (one read
// of x, one write of q) and the ladder: two passes, then one read with the slices held in shared
// memory; beside them the same two passes composed from CUB and Thrust (the toolkit has no
// quantization call of its own).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <cuda_fp8.h>

#include "cudalab/quantize.hpp"
#include "harness/random.hpp"
#include "harness/registry.hpp"
#include "ops/quantize/variants.hpp"

namespace cudalab::harness {
namespace {

namespace v = quantize_variants;
using Elements = QuantizeElements;

// Both ops' tensors by name (quantize_fp8_scaled's scale an input, quantize_fp8's an output).
struct Binding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.x = tensors.data<T>("x");
    args.q = tensors.data<__nv_fp8_e4m3>("q");
    args.scale = tensors.data<float>("scale");
    args.amax = tensors.data<float>("amax");
    args.n = problem.dim("n");
    args.workspace = tensors.workspace();
    args.workspace_bytes = tensors.workspace_bytes();
    return args;
  }
};

// The largest finite magnitude of the problem's x, as the header defines amax.
float host_amax(const CheckContext& c) {
  const std::int64_t n = c.problem.dim("n");
  const void* x = c.tensors["x"].host();
  float amax = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    const float magnitude = std::fabs(static_cast<float>(element_to_double(c.problem.dtype, x, i)));
    if (magnitude < std::numeric_limits<float>::infinity()) amax = std::max(amax, magnitude);
  }
  return amax;
}

// q_i against the conversion of x_i * multiplier (fp32, saturating), then each (got, want) float of
// `floats` as elements n, n + 1, ...: every one must match to the bit.
Comparison compare_quantized(const CheckContext& c, float multiplier,
                             const std::vector<std::pair<float, float>>& floats) {
  const std::int64_t n = c.problem.dim("n");
  const DType dtype = c.problem.dtype;
  const void* x = c.tensors["x"].host();
  const auto* q = static_cast<const unsigned char*>(c.tensors["q"].host());
  const unsigned char poison = poison_byte(DType::e4m3);
  const auto count = n + static_cast<std::int64_t>(floats.size());
  return compare_elements(count, Tolerance::exact(), [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
    for (std::int64_t i = begin; i < end; ++i) {
      double out = 0.0, ref = 0.0;
      bool exact = false, unwritten = false;
      if (i < n) {
        const float value = static_cast<float>(element_to_double(dtype, x, i)) * multiplier;
        const unsigned char expected = __nv_cvt_float_to_fp8(value, __NV_SATFINITE, __NV_E4M3);
        exact = q[i] == expected;
        unwritten = !exact && q[i] == poison;
        out = element_to_double(DType::e4m3, q, i);
        ref = element_to_double(DType::e4m3, &expected, 0);
      } else {
        const auto [got, want] = floats[static_cast<std::size_t>(i - n)];
        exact = std::memcmp(&got, &want, sizeof(float)) == 0;
        out = got, ref = want;
      }
      if (exact) {
        const double passed = std::isnan(ref) ? 0.0 : ref;  // NaN == NaN is false; equal bits pass
        b.add(i, passed, passed, false);
      } else {
        ComparisonBuilder failure(Tolerance{-1.0, -1.0});  // the bits decided: no tolerance passes it
        failure.add(i, out, ref, unwritten);
        b.merge(failure);
      }
    }
  });
}

float host_float(const CheckContext& c, const char* name) { return *static_cast<const float*>(c.tensors[name].host()); }

// The header's definition on the host, in the same fp32 operations: amax, the two scales, and each
// q_i from x_i * (448 / amax) through the same conversion; scale and amax follow q.
Comparison check_quantize(const CheckContext& c) {
  const float amax = host_amax(c);
  const float multiplier = amax > 0.0f ? std::min(448.0f / amax, std::numeric_limits<float>::max()) : 1.0f;
  const float scale = amax > 0.0f ? amax / 448.0f : 1.0f;
  return compare_quantized(c, multiplier, {{host_float(c, "scale"), scale}, {host_float(c, "amax"), amax}});
}

// The scale a training step would bring from earlier steps: about what the inputs' amax (near 1)
// gives, times a factor in [0.5, 2) from the seed, so that some runs saturate the largest elements.
void fill_scale(void* device, std::int64_t, std::uint64_t seed, Distribution, const Problem&, cudaStream_t stream) {
  const float scale = (0.5f + 1.5f * unit_float(mix64(seed))) / 448.0f;
  // On the workload's stream (the check's copy back and the launch follow it there); a pageable
  // source is copied before the call returns.
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(device, &scale, sizeof(float), cudaMemcpyHostToDevice, stream));
}

// quantize_fp8_scaled on the host: each q_i from x_i times the given scale's multiplier; amax
// follows q.
Comparison check_quantize_scaled(const CheckContext& c) {
  const float scale = host_float(c, "scale");
  const float multiplier = scale > 0.0f && scale < std::numeric_limits<float>::infinity()
                               ? std::min(1.0f / scale, std::numeric_limits<float>::max())
                               : 1.0f;
  return compare_quantized(c, multiplier, {{host_float(c, "amax"), host_amax(c)}});
}

template <typename Launch>
Variant variant(const char* id, const char* technique, Launch launch, Role role = Role::ladder) {
  return make_variant<Binding, v::QuantizeArgs>(id, technique, role, Elements{}, launch);
}

template <typename Launch>
Variant scaled_variant(const char* id, const char* technique, Launch launch, Role role = Role::ladder) {
  return make_variant<Binding, v::ScaledQuantizeArgs>(id, technique, role, Elements{}, launch);
}

std::size_t cub_thrust_scaled_workspace(const Problem& p) {
  const std::int64_t n = p.dim("n");
  switch (p.dtype) {
    case DType::bf16: return v::cub_thrust_scaled_workspace_bytes<__nv_bfloat16>(n);
    case DType::f16: return v::cub_thrust_scaled_workspace_bytes<__half>(n);
    default: return v::cub_thrust_scaled_workspace_bytes<float>(n);
  }
}

std::size_t cub_thrust_workspace(const Problem& p) {
  const std::int64_t n = p.dim("n");
  switch (p.dtype) {
    case DType::bf16: return v::cub_thrust_workspace_bytes<__nv_bfloat16>(n);
    case DType::f16: return v::cub_thrust_workspace_bytes<__half>(n);
    default: return v::cub_thrust_workspace_bytes<float>(n);
  }
}

// quantize_fp8_scaled: delayed scaling, the scale given and the amax produced, in one read.
void register_quantize_scaled(Registry& registry) {
  Op op;
  op.name = "quantize_fp8_scaled";
  op.summary = "x to e4m3 with a scale given (delayed scaling), and x's amax for the next scale, in one read";
  op.dim_names = {"n"};
  op.dtypes = dtypes_of(Elements{});
  const auto all = [](const Problem& p) { return p.dim("n"); };
  const auto one = [](const Problem&) -> std::int64_t { return 1; };
  op.tensors = {{"x", TensorRole::input, {}, all},
                {"scale", TensorRole::input, DType::f32, one, fill_scale},
                {"q", TensorRole::output, DType::e4m3, all},
                {"amax", TensorRole::output, DType::f32, one}};
  op.work = [](const Problem& p) {
    const double n = static_cast<double>(p.dim("n"));
    return Work{n * static_cast<double>(size_of(p.dtype)) + 4, n + 4, 0};
  };
  op.check = check_quantize_scaled;
  op.bench_problems = cross(op, {{1 << 22}, {1 << 23}, {1 << 24}, {1 << 25}, {1 << 28}}, {DType::bf16, DType::f32});
  op.test_problems = cross(op, {{0}, {1}, {3}, {16}, {17}, {1000003}, {(1 << 24) + 5}}, op.dtypes);
  Variant baseline = scaled_variant(
      "cub_thrust", "cub::DeviceReduce::TransformReduce for the amax, thrust::transform for q (x read twice)",
      CUDALAB_LAUNCHER(v::cub_thrust_scaled), Role::baseline);
  baseline.workspace_bytes = cub_thrust_scaled_workspace;
  op.variants = {
      scaled_variant("one_pass",
                     "one kernel converts each chunk with the given scale while taking its max (a block max, one "
                     "atomicMax each); x read once",
                     CUDALAB_LAUNCHER(v::one_pass_scaled)),
      std::move(baseline),
  };
  registry.add(std::move(op));
}

}  // namespace

void register_quantize(Registry& registry) {
  Op op;
  op.name = "quantize_fp8";
  op.summary = "x to e4m3 with one scale from its own largest magnitude (amax / 448), the FP8 GEMM's per-tensor input";
  op.dim_names = {"n"};
  op.dtypes = dtypes_of(Elements{});
  const auto all = [](const Problem& p) { return p.dim("n"); };
  const auto one = [](const Problem&) -> std::int64_t { return 1; };
  op.tensors = {{"x", TensorRole::input, {}, all},
                {"q", TensorRole::output, DType::e4m3, all},
                {"scale", TensorRole::output, DType::f32, one},
                {"amax", TensorRole::output, DType::f32, one}};
  // The least a quantization moves: x read once, q written once, the two floats.
  op.work = [](const Problem& p) {
    const double n = static_cast<double>(p.dim("n"));
    return Work{n * static_cast<double>(size_of(p.dtype)), n + 8, 0};
  };
  op.check = check_quantize;
  // Activations and weights of Llama layers in elements: 1024 x 4096 (4M), 2048 x 4096 (8M: the
  // resident rung's size in bf16), 4096 x 4096 (16M) and 8192 x 4096 (32M), then 2^28.
  op.bench_problems = cross(op, {{1 << 22}, {1 << 23}, {1 << 24}, {1 << 25}, {1 << 28}}, {DType::bf16, DType::f32});
  // Empty, one element, a tail of 3, one chunk and one more, a prime, and 2^24 + 5: more than the
  // resident rung holds on 132 SMs in any of the dtypes, which it refuses.
  op.test_problems = cross(op, {{0}, {1}, {3}, {16}, {17}, {1000003}, {(1 << 24) + 5}}, op.dtypes);
  Variant resident = variant("resident",
                             "one read: a cooperative grid of one block per SM keeps its slice of x in shared memory "
                             "across a grid-wide barrier on the amax, then converts it",
                             CUDALAB_LAUNCHER(v::resident));
  resident.can_implement = [](const DeviceInfo& device, const Problem& p) -> std::string {
    const std::int64_t capacity =
        v::resident_capacity(device.sm_count, device.shared_memory_per_block_optin, size_of(p.dtype));
    if (p.dim("n") <= capacity) return "";
    return "the SMs' shared memory holds " + std::to_string(capacity) + " elements of " + to_string(p.dtype) +
           ", not " + std::to_string(p.dim("n"));
  };
  Variant baseline = variant("cub_thrust",
                             "cub::DeviceReduce::TransformReduce for the amax, thrust::for_each_n for the scales, "
                             "thrust::transform for q",
                             CUDALAB_LAUNCHER(v::cub_thrust), Role::baseline);
  baseline.workspace_bytes = cub_thrust_workspace;
  op.variants = {
      variant("two_pass", "an amax kernel (a block max, one atomicMax each), then a quantize kernel; x read twice",
              CUDALAB_LAUNCHER(v::two_pass)),
      std::move(resident),
      std::move(baseline),
  };
  registry.add(std::move(op));
  register_quantize_scaled(registry);
}

}  // namespace cudalab::harness
