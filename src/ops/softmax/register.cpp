// The softmax ops over the last dimension of a row-major [rows, features] array: `softmax`
// (x -> y = exp(x - max) / sum) and `softmax_backward` (y, dy -> dx = y * (dy - sum_j y_j dy_j)),
// in f32, bf16 and f16 with fp32 arithmetic inside. Their tensors, inputs, checks and work models,
// the two ladders and cuDNN's softmax beside each. The backward's y is a real softmax output: its fill turns random
// logits into their softmax on the device (inputs.hpp), so the check tests the formula on inputs the forward can
// produce.
#include <cstdint>
#include <string>
#include <vector>

#include "cudalab/softmax.hpp"
#include "harness/registry.hpp"
#include "ops/softmax/cudnn_baseline.hpp"
#include "ops/softmax/ids.hpp"
#include "ops/softmax/inputs.hpp"
#include "ops/softmax/reference.hpp"
#include "ops/softmax/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = softmax_ids;
namespace v = softmax_variants;

constexpr char kX[] = "x";
constexpr char kY[] = "y";
constexpr char kDy[] = "dy";
constexpr char kDx[] = "dx";

std::int64_t rows_of(const Problem& p) { return p.dim("rows"); }
std::int64_t features_of(const Problem& p) { return p.dim("features"); }
std::int64_t elements(const Problem& p) { return rows_of(p) * features_of(p); }

struct ForwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.x = tensors.data<T>(kX);
    args.y = tensors.data<T>(kY);
    args.rows = rows_of(problem);
    args.features = features_of(problem);
    args.workspace = tensors.workspace();
    args.workspace_bytes = tensors.workspace_bytes();
    return args;
  }
};

struct BackwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.y = tensors.data<T>(kY);
    args.dy = tensors.data<T>(kDy);
    args.dx = tensors.data<T>(kDx);
    args.rows = rows_of(problem);
    args.features = features_of(problem);
    return args;
  }
};

using Elements = SoftmaxElements;

template <typename Binding, template <typename> class ArgsOf, typename Launch>
Variant variant(const char* id, const char* technique, Launch launch) {
  return make_variant<Binding, ArgsOf>(id, technique, Role::ladder, Elements{}, launch);
}

// cuDNN's softmax, run where cuDNN loads and its int descriptors hold the shape.
template <typename Binding, template <typename> class ArgsOf, typename Launch>
Variant cudnn_variant(const char* technique, Launch launch) {
  Variant v = make_variant<Binding, ArgsOf>(ids::kCudnn, technique, Role::baseline, Elements{}, launch);
  v.can_implement = [](const DeviceInfo&, const Problem& p) {
    const std::string missing = v::cudnn_unavailable_reason();
    return missing.empty() ? v::cudnn_shape_unsupported(rows_of(p), features_of(p)) : missing;
  };
  return v;
}

// Every width tested: 1, around a warp and a 16-byte vector (3, 31, 33, 127, 128), 1000,
// around 1024 and 4096, 8192, past the register-resident rungs' 32768 (32776: a multiple of 8, so
// the cluster rung takes it in every dtype, with its last CTA part full), 65536, 262144, and a
// prime past 32768 (100003: no 16-byte rows, no register-resident rung). Rows 1, 2, 3, 7, 64, 300,
// and one large problem with more rows than fit on the GPU at once (16384 x 1024 = 2^24); the rest
// stay at or below 2^22 elements.
const std::vector<std::vector<std::int64_t>> kTestSizes = {
    {1, 1},    {2, 3},      {7, 31},    {300, 33},  {7, 127},    {300, 128},  {300, 1000}, {2, 1023},    {300, 4096},
    {7, 4097}, {300, 8192}, {2, 32768}, {3, 32776}, {64, 65536}, {7, 262144}, {2, 100003}, {16384, 1024}};

Op shaped_op(const char* name, const char* summary) {
  Op op;
  op.name = name;
  op.summary = summary;
  op.dim_names = {"rows", "features"};
  op.dtypes = dtypes_of(Elements{});
  op.bench_problems = row_op_bench_problems(op);
  op.test_problems = cross(op, kTestSizes, op.dtypes);
  return op;
}

void register_forward(Registry& registry) {
  Op op = shaped_op(ids::kForward, "y = softmax(x) over the last dimension, max subtracted, fp32 inside");
  op.tensors = {
      {kX,
       TensorRole::input,
       {},
       elements,
       [](void* device, std::int64_t, std::uint64_t seed, Distribution distribution, const Problem& p,
          cudaStream_t stream) {
         fill_softmax_logits(p.dtype, device, rows_of(p), features_of(p), seed, distribution, stream);
       }},
      {kY, TensorRole::output, {}, elements},
  };
  // Read x, write y; per element a max, a subtraction, a scaling, an exp, an add and a product.
  op.work = [](const Problem& p) {
    const double n = static_cast<double>(elements(p));
    const double bytes = n * static_cast<double>(size_of(p.dtype));
    return Work{bytes, bytes, 6 * n};
  };
  op.check = [](const CheckContext& c) {
    return check_softmax(c.problem.dtype, c.tensors[kX].host(), c.tensors[kY].host(), rows_of(c.problem),
                         features_of(c.problem));
  };
  Variant three_pass = variant<ForwardBinding, v::SoftmaxArgs>(
      ids::kThreePass, "three kernels (row max, row sum of exp, normalize), a 256-thread block per row, x read 3 times",
      CUDALAB_LAUNCHER(v::three_pass));
  three_pass.workspace_bytes = [](const Problem& p) { return v::three_pass_workspace_bytes(rows_of(p)); };
  Variant vectorized = variant<ForwardBinding, v::SoftmaxArgs>(
      ids::kVectorized, "row in registers, 16-byte loads, x read once; lane group, warp or block per row by width",
      CUDALAB_LAUNCHER(v::vectorized));
  vectorized.can_implement = [](const DeviceInfo&, const Problem& p) { return v::vectorized_limits(features_of(p)); };
  Variant cluster = variant<ForwardBinding, v::SoftmaxArgs>(
      ids::kCluster, "row split over a 2-8 CTA cluster, (max, sum) through distributed shared memory, x read once",
      CUDALAB_LAUNCHER(v::cluster));
  cluster.can_implement = [](const DeviceInfo& device, const Problem& p) {
    return v::cluster_limits(features_of(p), size_of(p.dtype), device.compute_capability());
  };
  op.variants = {
      three_pass,
      variant<ForwardBinding, v::SoftmaxArgs>(ids::kWarpPerRow,
                                              "one fused kernel, a warp per row, shuffle reductions, 3 scalar passes",
                                              CUDALAB_LAUNCHER(v::warp_per_row)),
      variant<ForwardBinding, v::SoftmaxArgs>(
          ids::kBlockPerRow, "one fused kernel, a 256-thread block per row, block reductions, 3 scalar passes",
          CUDALAB_LAUNCHER(v::block_per_row)),
      vectorized,
      variant<ForwardBinding, v::SoftmaxArgs>(
          ids::kOnline, "online softmax: running max and rescaled sum in one pass, then y; x read twice",
          CUDALAB_LAUNCHER(v::online)),
      cluster,
      cudnn_variant<ForwardBinding, v::SoftmaxArgs>(
          "cudnnSoftmaxForward (ACCURATE: max subtracted; one instance per row), the library baseline",
          CUDALAB_LAUNCHER(v::cudnn_softmax)),
  };
  registry.add(std::move(op));
}

void register_backward(Registry& registry) {
  Op op = shaped_op(ids::kBackward, "dx = y * (dy - sum_j y_j dy_j) over the last dimension, fp32 inside");
  op.tensors = {
      {kY,
       TensorRole::input,
       {},
       elements,
       [](void* device, std::int64_t, std::uint64_t seed, Distribution distribution, const Problem& p,
          cudaStream_t stream) {
         fill_softmax_outputs(p.dtype, device, rows_of(p), features_of(p), seed, distribution, stream);
       }},
      {kDy, TensorRole::input, {}, elements},
      {kDx, TensorRole::output, {}, elements},
  };
  // Read y and dy, write dx; per element a multiply-add for the dot, a subtraction and a product.
  op.work = [](const Problem& p) {
    const double n = static_cast<double>(elements(p));
    const double bytes = n * static_cast<double>(size_of(p.dtype));
    return Work{2 * bytes, bytes, 4 * n};
  };
  op.check = [](const CheckContext& c) {
    return check_softmax_backward(c.problem.dtype, c.tensors[kY].host(), c.tensors[kDy].host(), c.tensors[kDx].host(),
                                  rows_of(c.problem), features_of(c.problem));
  };
  Variant fused = variant<BackwardBinding, v::SoftmaxBackwardArgs>(
      ids::kFused, "y and dy in registers, 16-byte loads, read once; lane group, warp or block per row by width",
      CUDALAB_LAUNCHER(v::backward_fused));
  fused.can_implement = [](const DeviceInfo&, const Problem& p) { return v::fused_backward_limits(features_of(p)); };
  op.variants = {
      variant<BackwardBinding, v::SoftmaxBackwardArgs>(
          ids::kTwoPass, "a 256-thread block per row: a scalar pass for the dot product, another for dx",
          CUDALAB_LAUNCHER(v::backward_two_pass)),
      fused,
      cudnn_variant<BackwardBinding, v::SoftmaxBackwardArgs>(
          "cudnnSoftmaxBackward (ACCURATE; one instance per row), the library baseline",
          CUDALAB_LAUNCHER(v::cudnn_softmax_backward)),
  };
  registry.add(std::move(op));
}

}  // namespace

void register_softmax(Registry& registry) {
  register_forward(registry);
  register_backward(registry);
}

}  // namespace cudalab::harness
