// The matrix-multiply ops: C = alpha op(A) op(B) + beta C, row-major, in FP32 (the CUDA-core ladder,
// cuBLAS in FP32 and TF32) and in BF16/FP16 (the tensor-core ladder, cublasGemmEx), with A as M x K
// or, with transpose_a = 1, K x M, and B as K x N or, with transpose_b = 1, N x K (the layouts of a
// Linear layer's three products: NT forward, NN and TN backward); gemm_batched runs the same product
// over a strided batch. Their
// tensors (A, B, and C, whose generated values are the C0 that beta reads), the check against an
// FP64 reference with an error bound that grows with K, the work model and the variants. The
// K = 32 staging experiment is in shared_memory_staging.cu, the claims in claims.cpp.
#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "cudalab/device.hpp"
#include "cudalab/error.hpp"
#include "cudalab/gemm.hpp"
#include "cudalab/memory.hpp"
#include "harness/registry.hpp"
#include "ops/gemm/cublas_gemm.hpp"
#include "ops/gemm/fp8.hpp"
#include "ops/gemm/ids.hpp"
#include "ops/gemm/reference.hpp"
#include "ops/gemm/tensor_core_variants.hpp"
#include "ops/gemm/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = gemm_ids;
namespace v = gemm_variants;
using bf16 = __nv_bfloat16;

// Up to this many multiply-adds the host computes the reference; above, cuBLAS DGEMM does (the
// GPU test GemmReference.DeviceMatchesHost checks the two agree).
constexpr std::int64_t kHostReferenceLimit = std::int64_t{1} << 26;
constexpr double kTf32Unit = 1.0 / 1024.0;  // 10 explicit mantissa bits, truncation or rounding

struct Dims {
  std::int64_t batch, m, n, k;
};
Dims dims_of(const Problem& p) { return {p.has_dim("batch") ? p.dim("batch") : 1, p.dim("M"), p.dim("N"), p.dim("K")}; }
bool a_transposed(const Problem& p) { return p.param("transpose_a") != 0; }
bool b_transposed(const Problem& p) { return p.param("transpose_b") != 0; }
bool host_reference(const Problem& p) { return p.elements() <= kHostReferenceLimit; }

// The epilogue's scalars as the kernels see them (fp32): the reference uses the same values.
float alpha_of(const Problem& p) { return static_cast<float>(p.param("alpha")); }
float beta_of(const Problem& p) { return static_cast<float>(p.param("beta")); }

// Dense row-major operands, matrices of a batch back to back: each leading dimension is its row's
// length, each batch stride its matrix's size.
v::GemmShape shape_of(const Problem& p) {
  const Dims d = dims_of(p);
  v::GemmShape s;
  s.m = d.m, s.n = d.n, s.k = d.k;
  s.a_transposed = a_transposed(p);
  s.b_transposed = b_transposed(p);
  s.lda = s.a_transposed ? d.m : d.k, s.ldb = s.b_transposed ? d.k : d.n, s.ldc = d.n;
  s.batch = d.batch, s.stride_a = d.m * d.k, s.stride_b = d.k * d.n, s.stride_c = d.m * d.n;
  return s;
}

struct GemmBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    const v::GemmShape s = shape_of(problem);
    Args args;
    args.m = s.m, args.n = s.n, args.k = s.k;
    args.alpha = alpha_of(problem), args.beta = beta_of(problem);
    args.a = tensors.data<T>("a"), args.lda = s.lda;
    args.b = tensors.data<T>("b"), args.ldb = s.ldb;
    args.c = tensors.data<T>("c"), args.ldc = s.ldc;
    args.a_transposed = s.a_transposed;
    args.b_transposed = s.b_transposed;
    args.batch = s.batch, args.stride_a = s.stride_a, args.stride_b = s.stride_b, args.stride_c = s.stride_c;
    return args;
  }
};

template <typename... Args>
Variant variant(const std::string& id, const std::string& technique, Role role,
                void (*... launchers)(const Args&, cudaStream_t)) {
  return make_variant<GemmBinding>(id, technique, role, launchers...);
}

// 1e30-sized inputs overflow fp32 products in any GEMM (and fp16 itself); that distribution draws
// normal values.
void fill_operand(void* device, std::int64_t count, std::uint64_t seed, Distribution distribution,
                  const Problem& problem, cudaStream_t stream) {
  if (distribution == Distribution::large_magnitude) distribution = Distribution::normal;
  fill_random(problem.dtype, device, count, seed, distribution, stream);
}

// A host array of f32, f16 or bf16 values as floats (which hold the 16-bit types exactly): the
// array itself for f32, a widened copy otherwise.
class HostFloats {
 public:
  HostFloats(DType dtype, const void* data, std::int64_t count) {
    if (dtype == DType::f32) {
      data_ = static_cast<const float*>(data);
      return;
    }
    copy_.resize(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i)
      copy_[static_cast<std::size_t>(i)] = static_cast<float>(element_to_double(dtype, data, i));
    data_ = copy_.data();
  }
  const float* data() const { return data_; }

 private:
  std::vector<float> copy_;
  const float* data_ = nullptr;
};

// What the variant's engine may do to each result (reference.hpp): TF32 rounds the inputs; tensor
// cores may truncate the FP32 accumulator; BF16/FP16 outputs round once more.
GemmTolerance tolerance_of(ComputeUnit unit, DType dtype) {
  GemmTolerance t;
  if (unit == ComputeUnit::tf32_tensor_cores) t.input_unit = kTf32Unit;
  if (dtype == DType::f16 || dtype == DType::bf16) {
    t.accumulate_unit = 1.0 / 8388608.0;  // 2^-23
    t.output_unit = traits(dtype).unit_roundoff;
    t.output_absolute = dtype == DType::f16 ? 1.0 / 33554432.0 : 0.0;  // fp16 subnormals are 2^-24 apart
  }
  return t;
}

// Element-wise against alpha op(A) op(B) + beta C0 in double, per matrix of the batch, within the
// engine's tolerance of |alpha| |op(A)||op(B)| + |beta| |C0| (reference.hpp).
Comparison check_gemm(const CheckContext& ctx) {
  const Dims d = dims_of(ctx.problem);
  const v::GemmShape s = shape_of(ctx.problem);
  const float alpha = alpha_of(ctx.problem), beta = beta_of(ctx.problem);
  const DType dtype = ctx.problem.dtype;
  const Tensor& a = ctx.tensors["a"];
  const Tensor& b = ctx.tensors["b"];
  const Tensor& c = ctx.tensors["c"];
  const std::int64_t size_a = d.m * d.k, size_b = d.k * d.n, size_c = d.m * d.n;
  if (!host_reference(ctx.problem)) {
    // A and B on the device are as generated (no variant writes them); the device C holds the
    // variant's result, so C0 goes up from its host copy.
    DeviceBuffer<unsigned char> c0(static_cast<std::int64_t>(c.bytes()));
    DeviceBuffer<double> reference(c.count()), magnitude(c.count()), scratch(size_a + size_b);
    if (c0.bytes() > 0)
      CUDALAB_CUDA_CHECK(cudaMemcpyAsync(c0.data(), c.initial_host(), c0.bytes(), cudaMemcpyHostToDevice, ctx.stream));
    const std::size_t element = size_of(dtype);
    for (std::int64_t z = 0; z < d.batch; ++z) {
      const auto at = [&](const void* base, std::int64_t offset) {
        return static_cast<const unsigned char*>(base) + static_cast<std::size_t>(offset) * element;
      };
      v::dgemm_reference(dtype, d.m, d.n, d.k, alpha, at(a.device(), z * size_a), at(b.device(), z * size_b),
                         s.a_transposed, s.b_transposed, beta, at(c0.data(), z * size_c), reference.data() + z * size_c,
                         magnitude.data() + z * size_c, scratch.data(), ctx.stream);
    }
    return compare_gemm_on_device(dtype, c.device(), c.count(), reference.data(), magnitude.data(), d.k,
                                  tolerance_of(ctx.unit, dtype), ctx.stream);
  }
  const HostFloats ha(dtype, a.host(), a.count()), hb(dtype, b.host(), b.count());
  const HostFloats hc0(dtype, c.initial_host(), c.count());
  std::vector<double> value, bound;
  value.reserve(static_cast<std::size_t>(c.count()));
  bound.reserve(static_cast<std::size_t>(c.count()));
  for (std::int64_t z = 0; z < d.batch; ++z) {
    const GemmReference r = gemm_reference(d.m, d.n, d.k, alpha, ha.data() + z * size_a, s.lda, hb.data() + z * size_b,
                                           s.ldb, beta, hc0.data() + z * size_c, d.n, s.b_transposed, s.a_transposed);
    value.insert(value.end(), r.value.begin(), r.value.end());
    bound.insert(bound.end(), r.bound.begin(), r.bound.end());
  }
  const HostFloats out(dtype, c.host(), c.count());
  return compare_gemm(out.data(), c.count(), value.data(), bound.data(), d.k, tolerance_of(ctx.unit, dtype));
}

// Above 4096^3 the one-thread-per-output kernels take over a second per launch.
std::string too_slow_above_4096(const DeviceInfo&, const Problem& p) {
  return p.elements() > (std::int64_t{1} << 36)
             ? "one thread per output reads A and B from global memory: over 1 s per launch above 4096^3"
             : "";
}

// The FP32 CUDA-core kernels take A as M x K and B as K x N.
std::string fp32_ladder_limits(const DeviceInfo&, const Problem& p) {
  if (a_transposed(p) || b_transposed(p))
    return "the FP32 CUDA-core ladder takes A as M x K and B as K x N only (transpose_a = transpose_b = 0)";
  return "";
}

// An FP32 CUDA-core rung below the pipelined family.
Variant fp32_rung(const std::string& id, const std::string& technique,
                  void (*launch)(const v::GemmArgs<float>&, cudaStream_t)) {
  Variant x = variant(id, technique, Role::ladder, launch);
  x.can_implement = fp32_ladder_limits;
  return x;
}

// The configurations the named pipelined steps run, by value: the kernels' list may grow or be
// reordered without moving a step to another configuration.
const v::PipelineConfig kVectorizedConfig{128, 128, 8, 2, 2, 1, false};
const v::PipelineConfig kDoubleBufferedConfig{128, 128, 8, 2, 2, 2, false};
const v::PipelineConfig kWarpTiledSingleBufferConfig{128, 128, 8, 2, 2, 1, true};
const v::PipelineConfig kWarpTiledConfig{128, 128, 8, 2, 2, 2, true};

// pipelined_launcher throws for a configuration the library does not build. Split-K exists for
// outputs with fewer tiles than SMs; on larger ones its scratch (split_k * M * N floats) only costs.
Variant pipelined(const std::string& id, const std::string& technique, const v::PipelineConfig& config) {
  Variant x = variant(id, technique + " (" + config.name() + ")", Role::ladder, v::pipelined_launcher(config));
  x.can_implement = [config](const DeviceInfo& device, const Problem& p) -> std::string {
    const std::string why = fp32_ladder_limits(device, p);
    if (!why.empty() || config.split_k == 1) return why;
    const Dims d = dims_of(p);
    const std::int64_t tiles = d.batch * ((d.m + config.bm - 1) / config.bm) * ((d.n + config.bn - 1) / config.bn);
    if (tiles >= device.sm_count)
      return "split-K is for outputs of fewer tiles than SMs; this one has " + std::to_string(tiles) + " tiles on " +
             std::to_string(device.sm_count) + " SMs";
    return "";
  };
  return x;
}

using Limits = std::string (*)(const v::GemmShape&, int);

// A rung of the tensor-core ladder: bf16 and f16 launchers, held to the tensor-core ceiling, and
// its own limits on the shape and GPU.
Variant tensor_core_rung(const std::string& id, const std::string& technique,
                         void (*launch_bf16)(const v::GemmArgs<bf16>&, cudaStream_t),
                         void (*launch_f16)(const v::GemmArgs<__half>&, cudaStream_t), Limits limits) {
  Variant x = variant(id, technique, Role::ladder, launch_bf16, launch_f16);
  x.engine = Engine::tensor_cores;
  x.can_implement = [limits](const DeviceInfo& device, const Problem& p) {
    return limits(shape_of(p), device.compute_major * 10 + device.compute_minor);
  };
  return x;
}

// The tuned rows are the library calls themselves: they pick the kernel for this GPU and shape.
void library_gemm(const v::GemmArgs<float>& p, cudaStream_t stream) {
  if (p.batch == 1) {
    cudalab::gemm(p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc, stream);
  } else {
    cudalab::gemm_batched(p.batch, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.stride_a, p.b, p.ldb, p.stride_b, p.beta, p.c,
                          p.ldc, p.stride_c, stream);
  }
}
template <typename T>
void library_gemm_half(const v::GemmArgs<T>& p, cudaStream_t stream) {
  const Transpose transpose_b = p.b_transposed ? Transpose::yes : Transpose::no;
  const Transpose transpose_a = p.a_transposed ? Transpose::yes : Transpose::no;
  if (p.batch == 1) {
    cudalab::gemm(p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc, stream, transpose_b, transpose_a);
  } else {
    cudalab::gemm_batched(p.batch, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.stride_a, p.b, p.ldb, p.stride_b, p.beta, p.c,
                          p.ldc, p.stride_c, stream, transpose_b, transpose_a);
  }
}

std::vector<Variant> tensor_core_ladder() {
  return {
      tensor_core_rung(ids::kWmmaGlobal, "WMMA 16x16x16 fragments loaded straight from global memory",
                       v::wmma_global<bf16>, v::wmma_global<__half>, v::wmma_global_limits),
      tensor_core_rung(ids::kWmmaShared, "WMMA with A and B tiles staged through shared memory", v::wmma_shared<bf16>,
                       v::wmma_shared<__half>, v::wmma_shared_limits),
      tensor_core_rung(ids::kMmaSwizzled, "mma.sync m16n8k16, ldmatrix from XOR-swizzled shared memory",
                       v::mma_swizzled<bf16>, v::mma_swizzled<__half>, v::mma_swizzled_limits),
      tensor_core_rung(ids::kMmaPipelined, "as mma_swizzled, multistage cp.async pipeline, double-buffered fragments",
                       v::mma_pipelined<bf16>, v::mma_pipelined<__half>, v::mma_pipelined_limits),
      tensor_core_rung(ids::kMmaSmall, "64x64x64 tiles of 4 warps for batches of small matrices: many CTAs per SM",
                       v::mma_small<bf16>, v::mma_small<__half>, v::mma_small_limits),
      tensor_core_rung(ids::kDecodeGemv, "m <= 8 rows against B stored n x k: CUDA cores, 16-byte loads along k",
                       v::decode_gemv<bf16>, v::decode_gemv<__half>, v::decode_gemv_limits),
      tensor_core_rung(ids::kDecodeMma, "m <= 16 rows against B stored n x k: mma.sync, fragments straight from global",
                       v::decode_mma<bf16>, v::decode_mma<__half>, v::decode_mma_limits),
      tensor_core_rung(ids::kDecodeWgmma,
                       "m <= 64 rows against B stored n x k on Hopper: TMA-fed wgmma, B's rows as its A, k split "
                       "over a cluster",
                       v::decode_wgmma<bf16>, v::decode_wgmma<__half>, v::decode_wgmma_limits),
      tensor_core_rung(ids::kWgmmaTma, "Hopper wgmma from TMA-loaded 128B-swizzled tiles, one consumer warpgroup",
                       v::wgmma_tma<bf16>, v::wgmma_tma<__half>, v::wgmma_tma_limits),
      tensor_core_rung(ids::kWgmmaSpecialized, "TMA producer warpgroup, two consumer warpgroups, setmaxnreg",
                       v::wgmma_specialized<bf16>, v::wgmma_specialized<__half>, v::wgmma_specialized_limits),
      tensor_core_rung(ids::kWgmmaPersistent, "persistent CTAs over an L2-ordered tile schedule",
                       v::wgmma_persistent<bf16>, v::wgmma_persistent<__half>, v::wgmma_persistent_limits),
      tensor_core_rung(ids::kWgmmaSmall,
                       "the persistent kernel on 64x128 tiles, two consumer warpgroups splitting each k-tile",
                       v::wgmma_small<bf16>, v::wgmma_small<__half>, v::wgmma_small_limits),
      tensor_core_rung(
          ids::kWgmmaMid,
          "the persistent kernel on 128x128 tiles, for shapes whose large tiles leave a round of the SMs part empty",
          v::wgmma_mid<bf16>, v::wgmma_mid<__half>, v::wgmma_mid_limits),
      tensor_core_rung(ids::kWgmmaPingPong,
                       "the persistent kernel on 64x256 tiles, one per consumer warpgroup: each epilogue beside the "
                       "other's k-loop",
                       v::wgmma_pingpong<bf16>, v::wgmma_pingpong<__half>, v::wgmma_pingpong_limits),
      tensor_core_rung(ids::kWgmmaSmallSplitK,
                       "wgmma_small with k split across CTAs where its tiles leave SMs idle, the parts added after",
                       v::wgmma_small_splitk<bf16>, v::wgmma_small_splitk<__half>, v::wgmma_small_limits),
      tensor_core_rung(ids::kWgmmaStreamK,
                       "the persistent kernel's k-steps shared evenly by the SMs (stream-K), split tiles finished "
                       "in the kernel",
                       v::wgmma_streamk<bf16>, v::wgmma_streamk<__half>, v::wgmma_persistent_limits),
      tensor_core_rung(ids::kWgmmaCluster, "2-CTA clusters, the shared operand multicast by TMA",
                       v::wgmma_cluster<bf16>, v::wgmma_cluster<__half>, v::wgmma_cluster_limits),
  };
}

// The library call in every dtype: CUDA cores for f32, tensor cores for bf16 and f16.
Variant tuned() {
  Variant x = variant(ids::kTuned, "cudalab::gemm: the kernel it picks for this GPU, dtype and shape", Role::ladder,
                      library_gemm, library_gemm_half<bf16>, library_gemm_half<__half>);
  x.engine = Engine::by_dtype;
  x.can_implement = [](const DeviceInfo& device, const Problem& p) {
    return p.dtype == DType::f32 ? fp32_ladder_limits(device, p) : "";
  };
  return x;
}

Variant cublas_sgemm() {
  return variant(ids::kCublas, "cublasSgemm, default math mode: FP32 FMA (the baseline)", Role::baseline,
                 v::cublas_sgemm);
}

Variant cublas_gemm_ex() {
  Variant x = variant(ids::kCublasGemmEx, "cublasGemmEx, FP32 compute on tensor cores (the baseline)", Role::baseline,
                      v::cublas_gemm_ex<bf16>, v::cublas_gemm_ex<__half>);
  x.engine = Engine::tensor_cores;
  return x;
}

// The tensors, work model and check both ops share; `elements` of each matrix times the batch.
void describe_gemm(Op& op) {
  // Non-trivial on purpose: both the alpha scaling and the beta read of C are exercised.
  op.params = {{"alpha", 1.5}, {"beta", -0.5}, {"transpose_a", 0}, {"transpose_b", 0}};
  const auto batch = [](const Problem& p) { return dims_of(p).batch; };
  op.tensors = {
      {"a", TensorRole::input, {}, [=](const Problem& p) { return batch(p) * p.dim("M") * p.dim("K"); }, fill_operand},
      {"b", TensorRole::input, {}, [=](const Problem& p) { return batch(p) * p.dim("K") * p.dim("N"); }, fill_operand},
      // beta reads C: its generated values are C0, restored before every launch.
      {"c",
       TensorRole::input_output,
       {},
       [=](const Problem& p) { return batch(p) * p.dim("M") * p.dim("N"); },
       fill_operand},
  };
  op.work = [](const Problem& p) {
    const Dims d = dims_of(p);
    const double z = static_cast<double>(d.batch), m = static_cast<double>(d.m), n = static_cast<double>(d.n),
                 k = static_cast<double>(d.k);
    const double size = static_cast<double>(size_of(p.dtype));
    const double c_read = p.param("beta") != 0 ? m * n : 0.0;  // beta == 0 never reads C
    return Work{z * size * (m * k + k * n + c_read), z * size * m * n, z * 2.0 * m * n * k};
  };
  op.check = check_gemm;
  op.check_device_bytes = [](const Problem& p) -> std::size_t {
    if (host_reference(p)) return 0;
    const Dims d = dims_of(p);
    // One matrix's A and B widened to double, the reference and its magnitude bound for the whole
    // batch, and C0 uploaded.
    return static_cast<std::size_t>(d.m * d.k + d.k * d.n + 2 * d.batch * d.m * d.n) * sizeof(double) +
           static_cast<std::size_t>(d.batch * d.m * d.n) * size_of(p.dtype);
  };
  op.check_host_bytes = [](const Problem& p) -> std::size_t {
    const Dims d = dims_of(p);
    // The reference and its bound in double, whichever side computes them, and the operands and
    // the result widened to float.
    return static_cast<std::size_t>(d.batch * d.m * d.n) * 2 * sizeof(double) +
           static_cast<std::size_t>(d.batch * (d.m * d.k + d.k * d.n + 2 * d.m * d.n)) * sizeof(float);
  };
}

// The layouts beyond NN (A M x K, B K x N) as parameters: NT (B stored N x K), TN (A stored K x M)
// and TT.
const std::vector<Param> kNt = {{"transpose_b", 1}};
const std::vector<Param> kTn = {{"transpose_a", 1}};
const std::vector<Param> kTt = {{"transpose_a", 1}, {"transpose_b", 1}};

// `problems` without the repeats of an earlier one's key, in order.
std::vector<Problem> distinct(const std::vector<Problem>& problems) {
  std::vector<Problem> kept;
  for (const Problem& p : problems)
    if (std::none_of(kept.begin(), kept.end(), [&](const Problem& q) { return q.key() == p.key(); })) kept.push_back(p);
  return kept;
}

// `shapes` in `dtypes` in all four layouts.
std::vector<Problem> every_layout(const Op& op, const std::vector<std::vector<std::int64_t>>& shapes,
                                  const std::vector<DType>& dtypes) {
  return cross(op, shapes, dtypes) + cross(op, shapes, dtypes, kNt) + cross(op, shapes, dtypes, kTn) +
         cross(op, shapes, dtypes, kTt);
}

// A Linear layer's three products in bf16 at `tokens` rows: forward y = x W^T (NT, M x N x K =
// tokens x out x in), input gradient dx = dy W (NN, tokens x in x out) and weight gradient
// dW = dy^T x (TN, out x in x tokens).
std::vector<Problem> linear_layer(const Op& op, std::int64_t tokens, std::int64_t in, std::int64_t out) {
  return cross(op, {{tokens, out, in}}, {DType::bf16}, kNt) + cross(op, {{tokens, in, out}}, {DType::bf16}) +
         cross(op, {{out, in, tokens}}, {DType::bf16}, kTn);
}

// The shapes models run, in bf16 (fp16 runs the same kernels): the three products of Llama-7B-like
// layers at 4096 tokens (attention projections 4096 -> 4096, MLP 4096 -> 11008 -> 4096, LM head
// 4096 -> 32000), of Llama-3-8B/70B-like MLPs at 8192 (4096 -> 14336, 8192 -> 28672) and of the
// 128256-word LM head at 4096 (its 525M outputs are what the check's time grows with); decode
// batches (m = 1 to 128 rows against 4096 x 4096 and 8192 x 8192 weights, the forward's NT
// layout); and sizes that are multiples of nothing, in every layout.
std::vector<Problem> model_sweep(const Op& op) {
  std::vector<Problem> sweep = linear_layer(op, 4096, 4096, 4096) + linear_layer(op, 4096, 4096, 11008) +
                               linear_layer(op, 4096, 11008, 4096) + linear_layer(op, 4096, 4096, 32000) +
                               linear_layer(op, 8192, 4096, 14336) + linear_layer(op, 8192, 8192, 28672) +
                               linear_layer(op, 4096, 4096, 128256);
  for (const std::int64_t width : {4096, 8192})
    for (const std::int64_t rows : {1, 2, 4, 8, 16, 32, 64, 128})
      sweep = sweep + cross(op, {{rows, width, width}}, {DType::bf16}, kNt);
  return sweep + every_layout(op, {{4095, 4097, 4093}, {3000, 5000, 7000}}, {DType::bf16});
}

// The strided-batched op: the variants that take a batch (the tensor-core ladder, the library
// call, cuBLAS's strided-batched calls), at the small shapes batching exists for.
void register_gemm_batched(Registry& registry) {
  Op op;
  op.name = ids::kBatchedOp;
  op.summary =
      "C_z = alpha A_z op(B_z) + beta C_z for z < batch, dense strided matrices: many small GEMMs in one launch";
  op.dim_names = {"batch", "M", "N", "K"};
  op.dtypes = {DType::bf16, DType::f16, DType::f32};
  describe_gemm(op);
  const std::vector<DType> half = {DType::bf16, DType::f16};
  const std::vector<std::vector<std::int64_t>> bench = {
      {16, 128, 128, 128}, {1024, 64, 64, 64}, {1024, 128, 128, 128}, {512, 256, 256, 64}};
  op.bench_problems = cross(op, bench, op.dtypes) + cross(op, bench, half, kNt);
  const std::vector<std::vector<std::int64_t>> tests = {
      {1, 17, 33, 65},    {3, 127, 129, 131}, {4, 72, 136, 200}, {16, 64, 64, 64}, {5, 256, 256, 64},
      {1024, 64, 64, 64}, {6, 2, 264, 136},   {4, 64, 128, 1024}};  // the last: 4 k-parts a tile on wgmma_small_splitk
  op.test_problems = cross(op, tests, {DType::f32}) + every_layout(op, tests, half);
  op.variants = tensor_core_ladder();
  op.variants.push_back(tuned());
  op.variants.push_back(cublas_sgemm());
  op.variants.push_back(cublas_gemm_ex());
  registry.add(std::move(op));
}

// ---- The FP8 GEMM: C (bf16) = alpha * scale_a * scale_b * A B^T, e4m3 A (M x K) and B (N x K)

// Each scale is a tensor of one float, its own allocation: cuBLASLt refuses a scale pointer that is
// not 16-byte aligned ("not supported"), so the two are never packed in one array. Values: a power of
// two times a number from the seed (0.5-0.94 and 0.125-0.5), so the check sees the product scaled as
// a dequantization would scale it.
void fill_scale(void* device, float value, cudaStream_t stream) {
  // Pageable source: the copy has taken the value before it returns.
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(device, &value, sizeof(float), cudaMemcpyHostToDevice, stream));
}
void fill_scale_a(void* device, std::int64_t, std::uint64_t seed, Distribution, const Problem&, cudaStream_t stream) {
  fill_scale(device, 0.5f + static_cast<float>(seed % 8) / 16.0f, stream);
}
void fill_scale_b(void* device, std::int64_t, std::uint64_t seed, Distribution, const Problem&, cudaStream_t stream) {
  fill_scale(device, 1.0f / static_cast<float>(2 << (seed % 3)), stream);
}

struct Fp8Binding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    Args args;
    args.m = problem.dim("M"), args.n = problem.dim("N"), args.k = problem.dim("K");
    args.alpha = alpha_of(problem);
    args.a = tensors.data<__nv_fp8_e4m3>("a"), args.lda = args.k;
    args.b = tensors.data<__nv_fp8_e4m3>("b"), args.ldb = args.k;
    args.c = tensors.data<bf16>("c"), args.ldc = args.n;
    args.scale_a = tensors.data<float>("scale_a");
    args.scale_b = tensors.data<float>("scale_b");
    args.workspace = tensors.workspace();
    return args;
  }
};

// Against alpha * scale_a * scale_b * A B^T in double (the e4m3 values are exact in double). The
// tolerance models the tensor cores' FP8 sums: each product exact, each of a window of 128 sums
// (one k-tile, the promotion interval) rounded to about 14 significant bits, a unit of 2^-13; the
// fp32 sums of the windows and the bf16 rounding of the result after that.
Comparison check_fp8(const CheckContext& ctx) {
  const std::int64_t m = ctx.problem.dim("M"), n = ctx.problem.dim("N"), k = ctx.problem.dim("K");
  const Tensor& a = ctx.tensors["a"];
  const Tensor& b = ctx.tensors["b"];
  const Tensor& c = ctx.tensors["c"];
  const float scale_a = *static_cast<const float*>(ctx.tensors["scale_a"].host());
  const float scale_b = *static_cast<const float*>(ctx.tensors["scale_b"].host());
  const float alpha = alpha_of(ctx.problem) * (scale_a * scale_b);
  GemmTolerance tolerance;
  tolerance.accumulate_unit = 1.0 / 8192.0;
  tolerance.output_unit = traits(DType::bf16).unit_roundoff;
  const std::int64_t sums = std::min<std::int64_t>(k, 128);  // a k-tile's sums round in the tensor cores
  if (ctx.problem.elements() > kHostReferenceLimit) {
    DeviceBuffer<double> reference(c.count()), magnitude(c.count()), scratch(m * k + k * n);
    v::dgemm_reference(DType::e4m3, m, n, k, alpha, a.device(), b.device(), false, true, 0.0f, nullptr,
                       reference.data(), magnitude.data(), scratch.data(), ctx.stream);
    return compare_gemm_on_device(DType::bf16, c.device(), c.count(), reference.data(), magnitude.data(), sums,
                                  tolerance, ctx.stream);
  }
  const HostFloats ha(DType::e4m3, a.host(), a.count()), hb(DType::e4m3, b.host(), b.count());
  const GemmReference r = gemm_reference(m, n, k, alpha, ha.data(), k, hb.data(), k, 0.0, nullptr, n, true);
  const HostFloats out(DType::bf16, c.host(), c.count());
  return compare_gemm(out.data(), c.count(), r.value.data(), r.bound.data(), sums, tolerance);
}

template <typename Limits>
Variant fp8_variant(const std::string& id, const std::string& technique, Role role,
                    void (*launch)(const v::GemmFp8Args&, cudaStream_t), Limits limits) {
  Variant x = make_variant<Fp8Binding>(id, technique, role, launch);
  x.engine = Engine::fp8_tensor_cores;
  x.can_implement = [limits](const DeviceInfo& device, const Problem& p) {
    const v::GemmFp8Shape shape{p.dim("M"), p.dim("N"), p.dim("K"), p.dim("K"), p.dim("K"), p.dim("N")};
    return limits(shape, device.compute_major * 10 + device.compute_minor);
  };
  return x;
}

void register_gemm_fp8(Registry& registry) {
  Op op;
  op.name = ids::kFp8Op;
  op.summary =
      "C (bf16) = alpha scale_a scale_b A B^T with e4m3 A (M x K) and B (N x K), row-major: FP8 on Hopper "
      "tensor cores against cuBLASLt";
  op.dim_names = {"M", "N", "K"};
  op.dtypes = {DType::bf16};  // C's; A and B are e4m3
  op.params = {{"alpha", 1.5}};
  const auto elements = [](const char* rows, const char* cols) {
    return [=](const Problem& p) { return p.dim(rows) * p.dim(cols); };
  };
  const auto one = [](const Problem&) -> std::int64_t { return 1; };
  // A and B take the harness's e4m3 fill (its large magnitudes, 16-448, give products fp32 holds).
  op.tensors = {{"a", TensorRole::input, DType::e4m3, elements("M", "K")},
                {"b", TensorRole::input, DType::e4m3, elements("N", "K")},
                {"scale_a", TensorRole::input, DType::f32, one, fill_scale_a},
                {"scale_b", TensorRole::input, DType::f32, one, fill_scale_b},
                {"c", TensorRole::output, {}, elements("M", "N")}};
  op.work = [](const Problem& p) {
    const double m = static_cast<double>(p.dim("M")), n = static_cast<double>(p.dim("N")),
                 k = static_cast<double>(p.dim("K"));
    return Work{(m + n) * k + 8, 2 * m * n, 2 * m * n * k};
  };
  op.check = check_fp8;
  // The product, the LLM layers' forward products (tokens x out x in, the weight stored out x in)
  // and decode rows; the tests: one element, sizes of no tile multiple, C rows TMA cannot store
  // (N = 4100: the direct stores), k = 0, a k that is no multiple of 16 (both variants refuse it),
  // and the device reference's sizes.
  op.bench_problems = cross(op,
                            {{8192, 8192, 8192},
                             {4096, 4096, 4096},
                             {4096, 11008, 4096},
                             {4096, 4096, 11008},
                             {8192, 14336, 4096},
                             {8192, 4096, 14336},
                             {8192, 28672, 8192},
                             {16, 8192, 8192},
                             {128, 8192, 8192}},
                            op.dtypes);
  op.test_problems = cross(op,
                           {{1, 16, 16},
                            {127, 129, 144},
                            {200, 264, 1024},
                            {3, 4100, 256},
                            {64, 72, 0},
                            {16, 16, 40},
                            {1000, 1000, 1008},
                            {4096, 4096, 4096},
                            {8192, 64, 8192}},
                           op.dtypes);
  op.check_device_bytes = [](const Problem& p) -> std::size_t {
    if (p.elements() <= kHostReferenceLimit) return 0;
    const std::int64_t m = p.dim("M"), n = p.dim("N"), k = p.dim("K");
    return static_cast<std::size_t>(m * k + k * n + 2 * m * n) * sizeof(double);
  };
  op.check_host_bytes = [](const Problem& p) -> std::size_t {
    const std::int64_t m = p.dim("M"), n = p.dim("N"), k = p.dim("K");
    return static_cast<std::size_t>(m * n) * 2 * sizeof(double) +
           static_cast<std::size_t>(m * k + k * n + m * n) * sizeof(float);
  };
  Variant lt = fp8_variant(ids::kCublasLtFp8,
                           "cublasLtMatmul, e4m3 A and B, per-tensor scales, bf16 C, fp32 accumulation (no fast mode)",
                           Role::baseline, v::cublaslt_fp8, v::cublaslt_fp8_limits);
  lt.workspace_bytes = [](const Problem&) { return v::cublaslt_fp8_workspace_bytes(); };
  op.variants = {
      fp8_variant(ids::kWgmmaFp8,
                  "the persistent skeleton on 128 x 128 tiles, wgmma m64n128k32 e4m3, each k-tile's sums promoted "
                  "to fp32 registers",
                  Role::ladder, v::wgmma_fp8, v::wgmma_fp8_limits),
      std::move(lt),
  };
  registry.add(std::move(op));
}

}  // namespace

void register_gemm_staging_experiment(Registry& registry);
void register_gemm_claims(Registry& registry);

void register_gemm(Registry& registry) {
  Op op;
  op.name = ids::kOp;
  op.summary =
      "C = alpha A op(B) + beta C, row-major: the FP32 ladder on CUDA cores and the BF16/FP16 ladder on tensor cores, "
      "against cuBLAS";
  op.dim_names = {"M", "N", "K"};
  op.dtypes = {DType::f32, DType::bf16, DType::f16};
  describe_gemm(op);
  const std::vector<DType> half = {DType::bf16, DType::f16};
  // The sweeps: FP32 at small, skinny and square shapes; BF16/FP16 from 1024^3 to 8192^3,
  // a short and a long k, an LLM MLP shape (4096x14336x4096) and rows of no 16-byte multiple; then
  // the shapes of real models (model_sweep), each problem once.
  op.bench_problems = distinct(cross(op,
                                     {{1000, 1000, 1000},
                                      {1024, 1024, 1024},
                                      {2048, 2048, 2048},
                                      {4096, 4096, 4096},
                                      {8192, 8192, 8192},
                                      {8192, 64, 8192},
                                      {64, 8192, 8192}},
                                     {DType::f32}) +
                               cross(op,
                                     {{1024, 1024, 1024},
                                      {2048, 2048, 2048},
                                      {4096, 4096, 4096},
                                      {8192, 8192, 8192},
                                      {8192, 8192, 1024},
                                      {1024, 8192, 8192},
                                      {4096, 14336, 4096},
                                      {4095, 4097, 4093}},
                                     half) +
                               cross(op, {{4096, 4096, 4096}, {8192, 8192, 8192}}, half, kNt) + model_sweep(op));
  // The last five: decode rows. 5 and 3 on decode_gemv's 8-row kernel and decode_mma's one token group, 13 on its
  // two; 5, 13, 29 and 61 on decode_wgmma's 8, 16, 32 and 64 tokens.
  const std::vector<std::vector<std::int64_t>> half_tests = {
      {1, 1, 1},          {17, 33, 65},  {127, 129, 131},    {256, 256, 8},   {129, 136, 40},  {129, 131, 64},
      {200, 264, 136},    {64, 64, 24},  {1000, 1000, 1000}, {1, 8192, 8192}, {8192, 1, 8192}, {4095, 4097, 4093},
      {4096, 4096, 4096}, {5, 1001, 72}, {3, 67, 1032},      {13, 520, 264},  {29, 200, 1032}, {61, 1000, 520}};
  op.test_problems =
      cross(op, {{1, 1, 1}, {17, 33, 65}, {127, 129, 131}, {1000, 1000, 1000}, {4096, 4096, 4096}, {8192, 64, 8192}},
            {DType::f32}) +
      every_layout(op, half_tests, half);

  Variant naive = variant(ids::kNaive, "one thread per output, threadIdx.x along rows: A read with stride lda",
                          Role::ladder, v::naive);
  naive.can_implement = [](const DeviceInfo& device, const Problem& p) {
    const std::string why = fp32_ladder_limits(device, p);
    return why.empty() ? too_slow_above_4096(device, p) : why;
  };
  Variant coalesced = variant(ids::kCoalesced, "one thread per output, threadIdx.x along columns: B and C contiguous",
                              Role::ladder, v::coalesced);
  coalesced.can_implement = naive.can_implement;
  Variant cublas_tf32 = variant(ids::kCublasTf32,
                                "DIFFERENT PRECISION: cublasGemmEx with TF32 tensor cores (inputs rounded to 10 bits), "
                                "checked with a TF32 tolerance",
                                Role::baseline, v::cublas_sgemm_tf32);
  cublas_tf32.engine = Engine::tensor_cores;

  op.variants = {
      naive,
      coalesced,
      fp32_rung(ids::kShared8, "8x8 shared-memory tiles of A and B (tile-size sweep)", v::shared_tile<8, false>),
      fp32_rung(ids::kShared16, "16x16 shared-memory tiles (the tutorial's tiled kernel)", v::shared_tile<16, false>),
      fp32_rung(ids::kShared32, "32x32 shared-memory tiles (the tutorial's sharedABMultiply, any K)",
                v::shared_tile<32, false>),
      fp32_rung(ids::kShared32Padded, "32x32 tiles with one padding column (the tutorial's bank-conflict fix)",
                v::shared_tile<32, true>),
      fp32_rung(ids::kShared64, "64x64 tiles, 4 rows per thread (tile-size sweep)", v::shared_tile<64, false>),
      fp32_rung(ids::kBlocktile1d, "64x64 block tile, BK 8, 8 outputs per thread down a column", v::blocktile_1d),
      fp32_rung(ids::kBlocktile2d, "128x128 block tile, BK 8, an 8x8 block of outputs per thread", v::blocktile_2d),
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
  for (Variant& rung : tensor_core_ladder()) op.variants.push_back(std::move(rung));
  op.variants.push_back(tuned());
  op.variants.push_back(cublas_sgemm());
  op.variants.push_back(std::move(cublas_tf32));
  op.variants.push_back(cublas_gemm_ex());
  registry.add(std::move(op));
  register_gemm_batched(registry);
  register_gemm_fp8(registry);
  register_gemm_staging_experiment(registry);
  register_gemm_claims(registry);
}

}  // namespace cudalab::harness
