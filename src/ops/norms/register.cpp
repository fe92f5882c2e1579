// The normalization ops: layer_norm, layer_norm_backward, rms_norm and rms_norm_backward over
// [rows, features] (features the last, contiguous dimension) in f32, bf16 and f16, and their
// add_ forms (a pre-norm block's residual add fused with the norm). Their tensors,
// inputs, checks against the double-precision CPU reference, work models, the ladders and the
// baselines (CUB's segmented reductions for the forward, the unfused kernels for the backward:
// no vendor library cudalab links has a LayerNorm or RMSNorm call).
//
// The backward ops take the forward's saved statistics as inputs. A fill sees its own seed and
// the problem, not x, so mean and rstd are realistic values (inputs.hpp), not x's statistics;
// the check applies the backward formula to the statistics given, which is what a backward
// kernel computes whatever they are.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "cudalab/norms.hpp"
#include "harness/registry.hpp"
#include "ops/norms/ids.hpp"
#include "ops/norms/inputs.hpp"
#include "ops/norms/reference.hpp"
#include "ops/norms/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = norms_ids;
namespace nv = norms_variants;
using nv::Norm;

constexpr char kX[] = "x";
constexpr char kGamma[] = "gamma";
constexpr char kBeta[] = "beta";
constexpr char kY[] = "y";
constexpr char kMean[] = "mean";
constexpr char kRstd[] = "rstd";
constexpr char kDy[] = "dy";
constexpr char kDx[] = "dx";
constexpr char kDgamma[] = "dgamma";
constexpr char kDbeta[] = "dbeta";
constexpr char kResidual[] = "residual";
constexpr char kH[] = "h";
constexpr char kDresidual[] = "dresidual";

std::int64_t rows_of(const Problem& p) { return p.dim("rows"); }
std::int64_t features_of(const Problem& p) { return p.dim("features"); }
bool vector_aligned(const Problem& p) { return nv::rows_vector_aligned(features_of(p), size_of(p.dtype)); }

// kAdd: the add_ form (a residual in, the sum out; the backward's x is the sum h).
template <Norm kNorm, bool kAdd = false>
struct ForwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args a;
    a.norm = kNorm;
    a.x = tensors.data<T>(kX);
    if (kAdd) {
      a.residual = tensors.data<T>(kResidual);
      a.residual_out = tensors.data<T>(kH);
    }
    a.gamma = tensors.data<T>(kGamma);
    a.y = tensors.data<T>(kY);
    a.rstd = tensors.data<float>(kRstd);
    if (kNorm == Norm::layer) {
      a.beta = tensors.data<T>(kBeta);
      a.mean = tensors.data<float>(kMean);
    }
    a.rows = rows_of(problem);
    a.features = features_of(problem);
    a.eps = static_cast<float>(problem.param(ids::kEps));
    a.workspace = tensors.workspace();
    a.workspace_bytes = tensors.workspace_bytes();
    return a;
  }
};

template <Norm kNorm, bool kAdd = false>
struct BackwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args a;
    a.norm = kNorm;
    a.x = tensors.data<T>(kAdd ? kH : kX);
    if (kAdd) a.dresidual = tensors.data<T>(kDresidual);
    a.dy = tensors.data<T>(kDy);
    a.gamma = tensors.data<T>(kGamma);
    a.rstd = tensors.data<float>(kRstd);
    a.dx = tensors.data<T>(kDx);
    a.dgamma = tensors.data<T>(kDgamma);
    if (kNorm == Norm::layer) {
      a.mean = tensors.data<float>(kMean);
      a.dbeta = tensors.data<T>(kDbeta);
    }
    a.rows = rows_of(problem);
    a.features = features_of(problem);
    a.workspace = tensors.workspace();
    a.workspace_bytes = tensors.workspace_bytes();
    return a;
  }
};

// A rung's own limits beyond the shape limits every rung has; null: none.
using Limits = std::string (*)(const DeviceInfo&, const Problem&);

std::string tutorial_limits(const DeviceInfo&, const Problem& p) {
  return nv::tutorial_limits(rows_of(p), features_of(p));
}
std::string warp_per_row_limits(const DeviceInfo&, const Problem& p) { return nv::warp_per_row_limits(features_of(p)); }
std::string vector_registers_limits(const DeviceInfo&, const Problem& p) {
  return nv::vector_registers_limits(features_of(p), vector_aligned(p));
}
std::string cluster_limits(const DeviceInfo& device, const Problem& p) {
  return nv::cluster_limits(features_of(p), vector_aligned(p), device.compute_capability());
}
std::string fused_limits(const DeviceInfo&, const Problem& p) { return nv::backward_fused_limits(features_of(p)); }
constexpr char kFusedRowsTechnique[] =
    "several rows a CTA: each thread's column sums in its own shared words across its rows, the next row loaded "
    "ahead, a row of partials a CTA";
std::string fused_rows_limits(const DeviceInfo&, const Problem& p) {
  return nv::backward_rows_limits(features_of(p), size_of(p.dtype), vector_aligned(p));
}

constexpr char kStagedTechnique[] =
    "x and dy copied with cp.async into a shared-memory ring two rows ahead; column sums in registers across a "
    "group's rows, a row of partials a CTA";
std::string staged_limits(const DeviceInfo&, const Problem& p) {
  return nv::backward_staged_limits(features_of(p), size_of(p.dtype), vector_aligned(p));
}

using Elements = NormElements;

template <Norm kNorm, bool kAdd = false, typename Launch>
Variant forward_variant(const char* id, const std::string& technique, Role role, Limits limits, Launch launch) {
  Variant v = make_variant<ForwardBinding<kNorm, kAdd>, nv::NormForwardArgs>(id, technique, role, Elements{}, launch);
  v.can_implement = [limits](const DeviceInfo& device, const Problem& p) {
    const std::string why = nv::forward_shape_limits(rows_of(p), features_of(p));
    return why.empty() && limits != nullptr ? limits(device, p) : why;
  };
  return v;
}

template <Norm kNorm>
Variant cub_variant() {
  Variant v = forward_variant<kNorm>(
      ids::kCubUnfused, "cub::DeviceSegmentedReduce per statistic, then cub::DeviceFor for y: a pass over x each",
      Role::baseline, nullptr, CUDALAB_LAUNCHER(nv::cub_unfused));
  v.workspace_bytes = [](const Problem& p) {
    std::size_t bytes = 0;
    for_each_element(Elements{}, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      if (p.dtype == dtype_of_v<T>) bytes = nv::cub_unfused_workspace_bytes<T>(kNorm, rows_of(p), features_of(p));
    });
    return bytes;
  };
  return v;
}

template <Norm kNorm, bool kAdd = false, typename Launch>
Variant backward_variant(const char* id, const char* technique, Role role, Limits limits, Launch launch) {
  Variant v = make_variant<BackwardBinding<kNorm, kAdd>, nv::NormBackwardArgs>(id, technique, role, Elements{}, launch);
  v.can_implement = [limits](const DeviceInfo& device, const Problem& p) {
    const std::string why = nv::backward_shape_limits(rows_of(p), features_of(p));
    return why.empty() && limits != nullptr ? limits(device, p) : why;
  };
  v.workspace_bytes = [](const Problem& p) { return nv::backward_workspace_bytes(kNorm, rows_of(p), features_of(p)); };
  return v;
}

// Tensor sizes and fills.
std::int64_t matrix(const Problem& p) { return rows_of(p) * features_of(p); }
std::int64_t per_feature(const Problem& p) { return features_of(p); }
std::int64_t per_row(const Problem& p) { return rows_of(p); }

void fill_x(void* device, std::int64_t count, std::uint64_t seed, Distribution d, const Problem& p, cudaStream_t s) {
  fill_norm_x(p.dtype, device, count, features_of(p), seed, d, s);
}
void fill_dy(void* device, std::int64_t count, std::uint64_t seed, Distribution d, const Problem& p, cudaStream_t s) {
  fill_norm_dy(p.dtype, device, count, seed, d, s);
}
void fill_gamma(void* device, std::int64_t count, std::uint64_t seed, Distribution, const Problem& p, cudaStream_t s) {
  fill_norm_gamma(p.dtype, device, count, seed, s);
}
void fill_beta(void* device, std::int64_t count, std::uint64_t seed, Distribution, const Problem& p, cudaStream_t s) {
  fill_norm_beta(p.dtype, device, count, seed, s);
}
void fill_mean(void* device, std::int64_t count, std::uint64_t seed, Distribution d, const Problem& p, cudaStream_t s) {
  fill_norm_mean(static_cast<float*>(device), count, seed, d, p.dtype, s);
}
template <Norm kNorm>
void fill_rstd(void* device, std::int64_t count, std::uint64_t seed, Distribution d, const Problem& p, cudaStream_t s) {
  fill_norm_rstd(static_cast<float*>(device), count, seed, d, p.dtype, kNorm, s);
}

template <Norm kNorm, bool kAdd = false>
Comparison check_forward(const CheckContext& c) {
  NormForwardHost h;
  h.norm = kNorm;
  h.dtype = c.problem.dtype;
  h.rows = rows_of(c.problem);
  h.features = features_of(c.problem);
  h.eps = c.problem.param(ids::kEps);
  h.x = c.tensors[kX].host();
  if (kAdd) {
    h.residual = c.tensors[kResidual].host();
    h.residual_out = c.tensors[kH].host();
  }
  h.gamma = c.tensors[kGamma].host();
  h.y = c.tensors[kY].host();
  h.rstd = c.tensors.host<float>(kRstd);
  if (kNorm == Norm::layer) {
    h.beta = c.tensors[kBeta].host();
    h.mean = c.tensors.host<float>(kMean);
  }
  return check_norm_forward(h);
}

template <Norm kNorm, bool kAdd = false>
Comparison check_backward(const CheckContext& c) {
  NormBackwardHost h;
  h.norm = kNorm;
  h.dtype = c.problem.dtype;
  h.rows = rows_of(c.problem);
  h.features = features_of(c.problem);
  h.x = c.tensors[kAdd ? kH : kX].host();
  if (kAdd) h.dresidual = c.tensors[kDresidual].host();
  h.dy = c.tensors[kDy].host();
  h.gamma = c.tensors[kGamma].host();
  h.rstd = c.tensors.host<float>(kRstd);
  h.dx = c.tensors[kDx].host();
  h.dgamma = c.tensors[kDgamma].host();
  if (kNorm == Norm::layer) {
    h.mean = c.tensors.host<float>(kMean);
    h.dbeta = c.tensors[kDbeta].host();
  }
  return check_norm_backward(h);
}

// The forward rungs both norms have (LayerNorm's tutorial rungs aside), and the CUB baseline. The
// three-pass rungs make two passes for RMSNorm, which has no mean.
template <Norm kNorm>
std::vector<Variant> shared_forward_variants() {
  const std::string passes = kNorm == Norm::layer ? "3" : "2";
  return {
      forward_variant<kNorm>(ids::kWarpPerRow,
                             "a warp per row, shuffle sums, element loads, " + passes + " passes over the row",
                             Role::ladder, warp_per_row_limits, CUDALAB_LAUNCHER(nv::warp_per_row)),
      forward_variant<kNorm>(ids::kBlockPerRow,
                             "a 512-thread block per row, block sums, element loads, " + passes + " passes",
                             Role::ladder, nullptr, CUDALAB_LAUNCHER(nv::block_per_row)),
      forward_variant<kNorm>(ids::kVectorRegisters,
                             "16-byte loads, the row read once into registers: a warp to 1024 features, a block to "
                             "32768",
                             Role::ladder, vector_registers_limits, CUDALAB_LAUNCHER(nv::vector_registers)),
      forward_variant<kNorm>(ids::kCluster,
                             "a cluster of up to 8 CTAs per row, sums exchanged through distributed shared memory",
                             Role::ladder, cluster_limits, CUDALAB_LAUNCHER(nv::cluster)),
      cub_variant<kNorm>(),
  };
}

// Test shapes (rows, features): no rows; one feature; a warp -1 / +1; the width classes' edges
// (128, 1000, 1023, 4096, 8192, 16384-32768: 20000) and past them (4097); 256-2048 (the fused_rows
// backward's row groups of 32-512 threads in every dtype, 3 rows and 2000-4000, several rows a
// group at two CTAs an SM); 5120 (the staged backward's row group of 10 warps; 8192 gives it 16);
// the cluster rung's shares (65536: 8 x 8192; 100000: 8 x 12500; 262144: 8 x 32768) and a row
// that is not 16-byte aligned at that width (65539, element loads); then one parameter change, and
// last the one
// large problem (2^24 elements, 2048 rows: more than the GPU holds 256-thread blocks at once,
// which the broken tutorial rung needs to fail for certain; BrokenVariants checks the last test
// problem).
const std::vector<std::vector<std::int64_t>> kTestSizes = {
    {0, 1000},   {1, 1},      {7, 3},       {300, 31},  {2, 33},      {300, 127},  {7, 128},  {3, 256},
    {4000, 512}, {300, 1000}, {4000, 1024}, {2, 1023},  {2000, 2048}, {300, 4096}, {7, 4097}, {300, 5120},
    {300, 8192}, {5, 20000},  {3, 65536},   {2, 65539}, {2, 100000},  {2, 262144}};
const std::vector<std::vector<std::int64_t>> kLargeTestSize = {{2048, 8192}};

Op norm_op(const char* name, const char* summary, std::vector<Param> params) {
  Op op;
  op.name = name;
  op.summary = summary;
  op.dim_names = {"rows", "features"};
  op.dtypes = dtypes_of(Elements{});
  op.params = std::move(params);
  op.bench_problems = row_op_bench_problems(op);
  op.test_problems = cross(op, kTestSizes, op.dtypes);
  if (!op.params.empty()) {
    // eps large enough to matter against a row's variance.
    for (const Problem& p : cross(op, {{300, 1000}}, op.dtypes, {{ids::kEps, 0.5}})) op.test_problems.push_back(p);
  }
  for (const Problem& p : cross(op, kLargeTestSize, op.dtypes)) op.test_problems.push_back(p);
  return op;
}

// The backward check's column sums: four doubles per column for each host worker.
std::size_t backward_check_host_bytes(const Problem& p) {
  return static_cast<std::size_t>(parallel_workers(std::max<std::int64_t>(matrix(p), rows_of(p)))) * 4 *
         static_cast<std::size_t>(features_of(p)) * sizeof(double);
}

// The minimum traffic: x (and dy) read once, y (or dx) written once, gamma / beta / dgamma / dbeta
// once each, the statistics once. Arithmetic, per element: LayerNorm forward ~8 (shift, sum,
// deviation, square, normalize, scale, shift), RMSNorm ~4; backward ~12 and ~9.
Work norm_work(const Problem& p, double matrices_read, double vectors_read, double matrices_written,
               double vectors_written, double stats_read, double stats_written, double flops_per_element) {
  const double element = static_cast<double>(size_of(p.dtype));
  const double m = static_cast<double>(matrix(p)), f = static_cast<double>(features_of(p));
  const double r = static_cast<double>(rows_of(p));
  return Work{element * (matrices_read * m + vectors_read * f) + 4.0 * stats_read * r,
              element * (matrices_written * m + vectors_written * f) + 4.0 * stats_written * r, flops_per_element * m};
}

void register_layer_norm(Registry& registry) {
  Op op = norm_op(ids::kLayerNorm,
                  "LayerNorm over the last dimension: y = (x - mean) * rstd * gamma + beta, rstd = 1/sqrt(var + eps) "
                  "(biased variance); saves mean and rstd (fp32)",
                  {{ids::kEps, 1e-5}});
  op.tensors = {
      {kX, TensorRole::input, {}, matrix, fill_x},
      {kGamma, TensorRole::input, {}, per_feature, fill_gamma},
      {kBeta, TensorRole::input, {}, per_feature, fill_beta},
      {kY, TensorRole::output, {}, matrix, {}},
      {kMean, TensorRole::output, DType::f32, per_row, {}},
      {kRstd, TensorRole::output, DType::f32, per_row, {}},
  };
  op.work = [](const Problem& p) { return norm_work(p, 1, 2, 1, 0, 0, 2, 8); };
  op.check = check_forward<Norm::layer>;
  constexpr Norm kLayer = Norm::layer;
  op.variants = {
      forward_variant<kLayer>(ids::kTutorialUnzeroed,
                              "tutorial 004's kernel as written: 256 threads a row, shared sums never zeroed (BROKEN)",
                              Role::broken, tutorial_limits, CUDALAB_LAUNCHER(nv::tutorial_unzeroed)),
      forward_variant<kLayer>(ids::kTutorialFixed,
                              "the tutorial's kernel, sums zeroed and shifted by x[0]: 3 reads, 256 threads a row",
                              Role::ladder, tutorial_limits, CUDALAB_LAUNCHER(nv::tutorial_fixed)),
  };
  for (Variant& v : shared_forward_variants<kLayer>()) op.variants.push_back(std::move(v));
  registry.add(std::move(op));
}

void register_rms_norm(Registry& registry) {
  Op op = norm_op(ids::kRmsNorm,
                  "RMSNorm over the last dimension: y = x * rstd * gamma, rstd = 1/sqrt(mean(x^2) + eps); saves rstd "
                  "(fp32)",
                  {{ids::kEps, 1e-6}});
  op.tensors = {
      {kX, TensorRole::input, {}, matrix, fill_x},
      {kGamma, TensorRole::input, {}, per_feature, fill_gamma},
      {kY, TensorRole::output, {}, matrix, {}},
      {kRstd, TensorRole::output, DType::f32, per_row, {}},
  };
  op.work = [](const Problem& p) { return norm_work(p, 1, 1, 1, 0, 0, 1, 4); };
  op.check = check_forward<Norm::rms>;
  constexpr Norm kRms = Norm::rms;
  op.variants = shared_forward_variants<kRms>();
  registry.add(std::move(op));
}

void register_layer_norm_backward(Registry& registry) {
  Op op = norm_op(ids::kLayerNormBackward,
                  "LayerNorm's gradients: dx, dgamma, dbeta from x, dy, gamma and the saved mean and rstd", {});
  op.tensors = {
      {kX, TensorRole::input, {}, matrix, fill_x},
      {kDy, TensorRole::input, {}, matrix, fill_dy},
      {kGamma, TensorRole::input, {}, per_feature, fill_gamma},
      {kMean, TensorRole::input, DType::f32, per_row, fill_mean},
      {kRstd, TensorRole::input, DType::f32, per_row, fill_rstd<Norm::layer>},
      {kDx, TensorRole::output, {}, matrix, {}},
      {kDgamma, TensorRole::output, {}, per_feature, {}},
      {kDbeta, TensorRole::output, {}, per_feature, {}},
  };
  op.work = [](const Problem& p) { return norm_work(p, 2, 1, 1, 2, 2, 0, 12); };
  op.check = check_backward<Norm::layer>;
  op.check_host_bytes = backward_check_host_bytes;
  constexpr Norm kLayer = Norm::layer;
  op.variants = {
      backward_variant<kLayer>(ids::kUnfused,
                               "dx by a block per row (2 passes), column partials re-reading x and dy, their sum",
                               Role::baseline, nullptr, CUDALAB_LAUNCHER(nv::backward_unfused)),
      backward_variant<kLayer>(ids::kFused,
                               "x and dy read once into registers: dx, and column sums in shared memory; then their "
                               "sum",
                               Role::ladder, fused_limits, CUDALAB_LAUNCHER(nv::backward_fused)),
      backward_variant<kLayer>(ids::kFusedRows, kFusedRowsTechnique, Role::ladder, fused_rows_limits,
                               CUDALAB_LAUNCHER(nv::backward_rows)),
      backward_variant<kLayer>(ids::kStaged, kStagedTechnique, Role::ladder, staged_limits,
                               CUDALAB_LAUNCHER(nv::backward_staged)),
  };
  registry.add(std::move(op));
}

void register_rms_norm_backward(Registry& registry) {
  Op op = norm_op(ids::kRmsNormBackward, "RMSNorm's gradients: dx, dgamma from x, dy, gamma and the saved rstd", {});
  op.tensors = {
      {kX, TensorRole::input, {}, matrix, fill_x},
      {kDy, TensorRole::input, {}, matrix, fill_dy},
      {kGamma, TensorRole::input, {}, per_feature, fill_gamma},
      {kRstd, TensorRole::input, DType::f32, per_row, fill_rstd<Norm::rms>},
      {kDx, TensorRole::output, {}, matrix, {}},
      {kDgamma, TensorRole::output, {}, per_feature, {}},
  };
  op.work = [](const Problem& p) { return norm_work(p, 2, 1, 1, 1, 1, 0, 9); };
  op.check = check_backward<Norm::rms>;
  op.check_host_bytes = backward_check_host_bytes;
  constexpr Norm kRms = Norm::rms;
  op.variants = {
      backward_variant<kRms>(ids::kUnfused,
                             "dx by a block per row (2 passes), column partials re-reading x and dy, their sum",
                             Role::baseline, nullptr, CUDALAB_LAUNCHER(nv::backward_unfused)),
      backward_variant<kRms>(ids::kFused,
                             "x and dy read once into registers: dx, and column sums in shared memory; then their sum",
                             Role::ladder, fused_limits, CUDALAB_LAUNCHER(nv::backward_fused)),
      backward_variant<kRms>(ids::kFusedRows, kFusedRowsTechnique, Role::ladder, fused_rows_limits,
                             CUDALAB_LAUNCHER(nv::backward_rows)),
      backward_variant<kRms>(ids::kStaged, kStagedTechnique, Role::ladder, staged_limits,
                             CUDALAB_LAUNCHER(nv::backward_staged)),
  };
  registry.add(std::move(op));
}

// The add_ forms: h = x + residual written beside y = norm(h); the backward adds h's gradient from
// the residual stream to dx. Their baseline runs the add as a pass of its own, as eager PyTorch
// does; the fused rung is vector_registers with the residual read beside x.
template <Norm kNorm>
void register_add_norm(Registry& registry) {
  const bool layer = kNorm == Norm::layer;
  Op op = norm_op(layer ? ids::kAddLayerNorm : ids::kAddRmsNorm,
                  layer ? "residual add + LayerNorm: h = x + residual, y = LayerNorm(h); writes h, saves mean and rstd "
                          "(fp32)"
                        : "residual add + RMSNorm: h = x + residual, y = RMSNorm(h); writes h, saves rstd (fp32)",
                  {{ids::kEps, layer ? 1e-5 : 1e-6}});
  op.tensors = {
      {kX, TensorRole::input, {}, matrix, fill_x},
      {kResidual, TensorRole::input, {}, matrix, fill_x},
      {kGamma, TensorRole::input, {}, per_feature, fill_gamma},
  };
  if (layer) op.tensors.push_back({kBeta, TensorRole::input, {}, per_feature, fill_beta});
  op.tensors.push_back({kY, TensorRole::output, {}, matrix, {}});
  op.tensors.push_back({kH, TensorRole::output, {}, matrix, {}});
  if (layer) op.tensors.push_back({kMean, TensorRole::output, DType::f32, per_row, {}});
  op.tensors.push_back({kRstd, TensorRole::output, DType::f32, per_row, {}});
  // x and the residual read, y and h written; LayerNorm ~9 operations an element, RMSNorm ~5.
  op.work = [](const Problem& p) {
    return kNorm == Norm::layer ? norm_work(p, 2, 2, 2, 0, 0, 2, 9) : norm_work(p, 2, 1, 2, 0, 0, 1, 5);
  };
  op.check = check_forward<kNorm, true>;
  op.variants = {
      forward_variant<kNorm, true>(ids::kAddUnfused,
                                   "the add as a pass of its own, then the fastest plain norm over the sum",
                                   Role::baseline, nullptr, CUDALAB_LAUNCHER(nv::add_unfused)),
      forward_variant<kNorm, true>(ids::kVectorRegisters,
                                   "x and the residual read once into registers, the sum written beside y",
                                   Role::ladder, vector_registers_limits, CUDALAB_LAUNCHER(nv::vector_registers)),
  };
  registry.add(std::move(op));
}

template <Norm kNorm>
void register_add_norm_backward(Registry& registry) {
  const bool layer = kNorm == Norm::layer;
  Op op = norm_op(layer ? ids::kAddLayerNormBackward : ids::kAddRmsNormBackward,
                  layer ? "residual add + LayerNorm's gradients: dx (x's and the residual's) = LayerNorm's at h + "
                          "dresidual, dgamma, dbeta"
                        : "residual add + RMSNorm's gradients: dx (x's and the residual's) = RMSNorm's at h + "
                          "dresidual, dgamma",
                  {});
  op.tensors = {
      {kH, TensorRole::input, {}, matrix, fill_x},
      {kDy, TensorRole::input, {}, matrix, fill_dy},
      {kDresidual, TensorRole::input, {}, matrix, fill_dy},
      {kGamma, TensorRole::input, {}, per_feature, fill_gamma},
  };
  if (layer) op.tensors.push_back({kMean, TensorRole::input, DType::f32, per_row, fill_mean});
  op.tensors.push_back({kRstd, TensorRole::input, DType::f32, per_row, fill_rstd<kNorm>});
  op.tensors.push_back({kDx, TensorRole::output, {}, matrix, {}});
  op.tensors.push_back({kDgamma, TensorRole::output, {}, per_feature, {}});
  if (layer) op.tensors.push_back({kDbeta, TensorRole::output, {}, per_feature, {}});
  op.work = [](const Problem& p) {
    return kNorm == Norm::layer ? norm_work(p, 3, 1, 1, 2, 2, 0, 13) : norm_work(p, 3, 1, 1, 1, 1, 0, 10);
  };
  op.check = check_backward<kNorm, true>;
  op.check_host_bytes = backward_check_host_bytes;
  op.variants = {
      backward_variant<kNorm, true>(ids::kUnfused,
                                    "the plain unfused backward, dresidual added in its dx kernel before the rounding",
                                    Role::baseline, nullptr, CUDALAB_LAUNCHER(nv::backward_unfused)),
      backward_variant<kNorm, true>(ids::kFused, "the fused backward, dresidual added to dx on its way out",
                                    Role::ladder, fused_limits, CUDALAB_LAUNCHER(nv::backward_fused)),
      backward_variant<kNorm, true>(
          ids::kFusedRows, "the fused_rows backward, dresidual loaded at the top of its row, before the row's sums",
          Role::ladder, fused_rows_limits, CUDALAB_LAUNCHER(nv::backward_rows)),
      backward_variant<kNorm, true>(ids::kStaged, "the staged backward, dresidual staged beside x and dy", Role::ladder,
                                    staged_limits, CUDALAB_LAUNCHER(nv::backward_staged)),
  };
  registry.add(std::move(op));
}

}  // namespace

void register_norms(Registry& registry) {
  register_layer_norm(registry);
  register_layer_norm_backward(registry);
  register_rms_norm(registry);
  register_rms_norm_backward(registry);
  register_add_norm<Norm::layer>(registry);
  register_add_norm_backward<Norm::layer>(registry);
  register_add_norm<Norm::rms>(registry);
  register_add_norm_backward<Norm::rms>(registry);
}

}  // namespace cudalab::harness
