// The matrix-multiply op: C = alpha A B + beta C, row-major. Its tensors (A, B, and C, whose
// generated values are the C0 that beta reads), the check against an FP64 reference with an
// error bound that grows with K, the work model, the ladder, and cuBLAS in FP32 and in TF32. The
// K = 32 staging experiment is in shared_memory_staging.cu, the claims in claims.cpp.
#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "cudalab/device.hpp"
#include "cudalab/error.hpp"
#include "cudalab/gemm.hpp"
#include "cudalab/memory.hpp"
#include "harness/registry.hpp"
#include "ops/gemm/cublas_gemm.hpp"
#include "ops/gemm/ids.hpp"
#include "ops/gemm/reference.hpp"
#include "ops/gemm/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = gemm_ids;
namespace v = gemm_variants;

// Up to this many multiply-adds the host computes the reference; above, cuBLAS DGEMM does (the
// GPU test GemmReference.DeviceMatchesHost checks the two agree).
constexpr std::int64_t kHostReferenceLimit = std::int64_t{1} << 26;
constexpr double kTf32Unit = 1.0 / 1024.0;  // 10 explicit mantissa bits, truncation or rounding

struct Dims {
  std::int64_t m, n, k;
};
Dims dims_of(const Problem& p) { return {p.dim("M"), p.dim("N"), p.dim("K")}; }
bool host_reference(const Problem& p) { return p.elements() <= kHostReferenceLimit; }

// The epilogue's scalars as the kernels see them (fp32): the reference uses the same values.
float alpha_of(const Problem& p) { return static_cast<float>(p.param("alpha")); }
float beta_of(const Problem& p) { return static_cast<float>(p.param("beta")); }

// Dense row-major operands: each leading dimension is its row's length.
struct GemmBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    const Dims d = dims_of(problem);
    Args args;
    args.m = d.m;
    args.n = d.n;
    args.k = d.k;
    args.alpha = alpha_of(problem);
    args.a = tensors.data<T>("a");
    args.lda = d.k;
    args.b = tensors.data<T>("b");
    args.ldb = d.n;
    args.beta = beta_of(problem);
    args.c = tensors.data<T>("c");
    args.ldc = d.n;
    return args;
  }
};

template <typename... Args>
Variant variant(const std::string& id, const std::string& technique, Role role,
                void (*... launchers)(const Args&, cudaStream_t)) {
  return make_variant<GemmBinding>(id, technique, role, launchers...);
}

// 1e30-sized inputs overflow fp32 products in any GEMM; that distribution draws normal values.
void fill_operand(void* device, std::int64_t count, std::uint64_t seed, Distribution distribution,
                  const Problem& problem, cudaStream_t stream) {
  if (distribution == Distribution::large_magnitude) distribution = Distribution::normal;
  fill_random(problem.dtype, device, count, seed, distribution, stream);
}

template <typename T>
std::vector<T> to_host(const DeviceBuffer<T>& buffer, cudaStream_t stream) {
  std::vector<T> host(static_cast<std::size_t>(buffer.size()));
  if (buffer.size() > 0)
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost, stream));
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// Element-wise against alpha A B + beta C0 in double, within (K + 3) fp32 roundings of
// |alpha| |A||B| + |beta| |C0| (reference.hpp), plus the inputs' own rounding for TF32.
Comparison check_gemm(const CheckContext& ctx) {
  const Dims d = dims_of(ctx.problem);
  const float alpha = alpha_of(ctx.problem), beta = beta_of(ctx.problem);
  const Tensor& a = ctx.tensors["a"];
  const Tensor& b = ctx.tensors["b"];
  const Tensor& c = ctx.tensors["c"];
  std::vector<double> value, bound;
  if (host_reference(ctx.problem)) {
    GemmReference r = gemm_reference(d.m, d.n, d.k, alpha, a.host_as<float>(), d.k, b.host_as<float>(), d.n, beta,
                                     c.initial_host_as<float>(), d.n);
    value = std::move(r.value);
    bound = std::move(r.bound);
  } else {
    // A and B on the device are as generated (no variant writes them); the device C holds the
    // variant's result, so C0 goes up from its host copy.
    DeviceBuffer<float> c0(d.m * d.n);
    DeviceBuffer<double> reference(d.m * d.n), magnitude(d.m * d.n), scratch(d.m * d.k + d.k * d.n);
    if (c0.bytes() > 0)
      CUDALAB_CUDA_CHECK(
          cudaMemcpyAsync(c0.data(), c.initial_host_as<float>(), c0.bytes(), cudaMemcpyHostToDevice, ctx.stream));
    v::dgemm_reference(d.m, d.n, d.k, alpha, a.device_as<float>(), b.device_as<float>(), beta, c0.data(),
                       reference.data(), magnitude.data(), scratch.data(), ctx.stream);
    value = to_host(reference, ctx.stream);
    bound = to_host(magnitude, ctx.stream);
  }
  const double input_unit = ctx.unit == ComputeUnit::tf32_tensor_cores ? kTf32Unit : 0.0;
  return compare_gemm(c.host_as<float>(), d.m * d.n, value.data(), bound.data(), d.k, input_unit);
}

// Above 4096^3 the one-thread-per-output kernels take over a second per launch.
std::string too_slow_above_4096(const DeviceInfo&, const Problem& p) {
  return p.elements() > (std::int64_t{1} << 36)
             ? "one thread per output reads A and B from global memory: over 1 s per launch above 4096^3"
             : "";
}

// The configurations the named pipelined steps run, by value: the kernels' list may grow or be
// reordered without moving a step to another configuration.
const v::PipelineConfig kVectorizedConfig{128, 128, 8, 2, 2, 1, false};
const v::PipelineConfig kDoubleBufferedConfig{128, 128, 8, 2, 2, 2, false};
const v::PipelineConfig kWarpTiledSingleBufferConfig{128, 128, 8, 2, 2, 1, true};
const v::PipelineConfig kWarpTiledConfig{128, 128, 8, 2, 2, 2, true};

// pipelined_launcher throws for a configuration the library does not build.
Variant pipelined(const std::string& id, const std::string& technique, const v::PipelineConfig& config) {
  return variant(id, technique + " (" + config.name() + ")", Role::ladder, v::pipelined_launcher(config));
}

// The tuned row is the library call itself: it picks the configuration for this GPU and shape.
void library_gemm(const v::GemmArgs<float>& p, cudaStream_t stream) {
  cudalab::gemm(p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc, stream);
}

}  // namespace

void register_gemm_staging_experiment(Registry& registry);
void register_gemm_claims(Registry& registry);

void register_gemm(Registry& registry) {
  Op op;
  op.name = ids::kOp;
  op.summary = "C = alpha A B + beta C, row-major: the ladder on CUDA cores, cuBLAS in FP32 and in TF32";
  op.dim_names = {"M", "N", "K"};
  op.dtypes = {DType::f32};
  // Non-trivial on purpose: both the alpha scaling and the beta read of C are exercised.
  op.params = {{"alpha", 1.5}, {"beta", -0.5}};
  op.tensors = {
      {"a", TensorRole::input, {}, [](const Problem& p) { return p.dim("M") * p.dim("K"); }, fill_operand},
      {"b", TensorRole::input, {}, [](const Problem& p) { return p.dim("K") * p.dim("N"); }, fill_operand},
      // beta reads C: its generated values are C0, restored before every launch.
      {"c", TensorRole::input_output, {}, [](const Problem& p) { return p.dim("M") * p.dim("N"); }, fill_operand},
  };
  op.bench_problems =
      cross(op, {{1024, 1024, 1024}, {4096, 4096, 4096}, {8192, 8192, 8192}, {8192, 64, 8192}}, op.dtypes);
  op.test_problems =
      cross(op, {{1, 1, 1}, {17, 33, 65}, {127, 129, 131}, {1000, 1000, 1000}, {4096, 4096, 4096}, {8192, 64, 8192}},
            op.dtypes);
  op.work = [](const Problem& p) {
    const Dims d = dims_of(p);
    const double m = static_cast<double>(d.m), n = static_cast<double>(d.n), k = static_cast<double>(d.k);
    const double size = static_cast<double>(size_of(p.dtype));
    const double c_read = p.param("beta") != 0 ? m * n : 0.0;  // beta == 0 never reads C
    return Work{size * (m * k + k * n + c_read), size * m * n, 2.0 * m * n * k};
  };
  op.check = check_gemm;
  op.check_device_bytes = [](const Problem& p) -> std::size_t {
    if (host_reference(p)) return 0;
    const Dims d = dims_of(p);
    // A and B widened to double, the reference and its magnitude bound, and C0 uploaded.
    return static_cast<std::size_t>(d.m * d.k + d.k * d.n + 2 * d.m * d.n) * sizeof(double) +
           static_cast<std::size_t>(d.m * d.n) * sizeof(float);
  };
  op.check_host_bytes = [](const Problem& p) -> std::size_t {
    const Dims d = dims_of(p);
    // The reference and its bound in double, whichever side computes them.
    return static_cast<std::size_t>(d.m * d.n) * 2 * sizeof(double);
  };

  Variant naive = variant(ids::kNaive, "one thread per output, threadIdx.x along rows: A read with stride lda",
                          Role::ladder, v::naive);
  naive.can_implement = too_slow_above_4096;
  Variant coalesced = variant(ids::kCoalesced, "one thread per output, threadIdx.x along columns: B and C contiguous",
                              Role::ladder, v::coalesced);
  coalesced.can_implement = too_slow_above_4096;
  Variant cublas_tf32 = variant(ids::kCublasTf32,
                                "DIFFERENT PRECISION: cublasGemmEx with TF32 tensor cores (inputs rounded to 10 bits), "
                                "checked with a TF32 tolerance",
                                Role::baseline, v::cublas_sgemm_tf32);
  cublas_tf32.engine = Engine::tensor_cores;

  op.variants = {
      naive,
      coalesced,
      variant(ids::kShared8, "8x8 shared-memory tiles of A and B (tile-size sweep)", Role::ladder,
              v::shared_tile<8, false>),
      variant(ids::kShared16, "16x16 shared-memory tiles (the tutorial's tiled kernel)", Role::ladder,
              v::shared_tile<16, false>),
      variant(ids::kShared32, "32x32 shared-memory tiles (the tutorial's sharedABMultiply, any K)", Role::ladder,
              v::shared_tile<32, false>),
      variant(ids::kShared32Padded, "32x32 tiles with one padding column (the tutorial's bank-conflict fix)",
              Role::ladder, v::shared_tile<32, true>),
      variant(ids::kShared64, "64x64 tiles, 4 rows per thread (tile-size sweep)", Role::ladder,
              v::shared_tile<64, false>),
      variant(ids::kBlocktile1d, "64x64 block tile, BK 8, 8 outputs per thread down a column", Role::ladder,
              v::blocktile_1d),
      variant(ids::kBlocktile2d, "128x128 block tile, BK 8, an 8x8 block of outputs per thread", Role::ladder,
              v::blocktile_2d),
      pipelined(ids::kVectorized, "float4 loads, A tile transposed in shared memory, single buffer", kVectorizedConfig),
      pipelined(ids::kDoubleBuffered, "as vectorized, two cp.async stages", kDoubleBufferedConfig),
      pipelined(ids::kWarpTiledSingleBuffer, "warp tiling, single buffer", kWarpTiledSingleBufferConfig),
      pipelined(ids::kWarpTiled, "warp tiling: a warp's lanes share a 32x64 patch, two cp.async stages",
                kWarpTiledConfig),
  };
  // Every other configuration the library builds, for the tuning table.
  const v::PipelineConfig named[] = {kVectorizedConfig, kDoubleBufferedConfig, kWarpTiledSingleBufferConfig,
                                     kWarpTiledConfig};
  for (const v::PipelineConfig& config : v::pipeline_configs()) {
    const bool is_named = std::any_of(std::begin(named), std::end(named),
                                      [&](const v::PipelineConfig& x) { return x.name() == config.name(); });
    if (!is_named)
      op.variants.push_back(pipelined(ids::kConfigPrefix + config.name(),
                                      config.warp_tiled ? "warp-tiled configuration" : "thread-tiled configuration",
                                      config));
  }
  op.variants.push_back(variant(ids::kTuned, "cudalab::gemm: the configuration it picks for this GPU and shape",
                                Role::ladder, library_gemm));
  op.variants.push_back(variant(ids::kCublas, "cublasSgemm, default math mode: FP32 FMA (the baseline)", Role::baseline,
                                v::cublas_sgemm));
  op.variants.push_back(std::move(cublas_tf32));
  registry.add(std::move(op));
  register_gemm_staging_experiment(registry);
  register_gemm_claims(registry);
}

}  // namespace cudalab::harness
