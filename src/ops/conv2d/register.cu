// The conv2d op: one fp32 channel, an R x R filter, zero padding, output the size of the input.
// Its tensors (a pitched image, a filter, a pitched output), CPU reference and work model, the
// ladder, the cuDNN baseline and the experiment listing cuDNN's algorithms; the claims its numbers
// answer (C13, and C14's texture, constant and tiling parts) are in claims.cpp.
#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "harness/registry.hpp"
#include "ops/conv2d/cudnn_baseline.hpp"
#include "ops/conv2d/ids.hpp"
#include "ops/conv2d/reference.hpp"
#include "ops/conv2d/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = conv2d_ids;
namespace v = conv2d_variants;

// Rows padded to 128 bytes: every row starts 16-byte aligned (the vector paths run at every
// width) and the pitch meets any GPU's texture pitch alignment.
constexpr std::int64_t kPitchElements = 32;

std::int64_t padded_pitch(std::int64_t width) { return ceil_div(width, kPitchElements) * kPitchElements; }

std::int64_t height_of(const Problem& p) { return p.dim("H"); }
std::int64_t width_of(const Problem& p) { return p.dim("W"); }
int filter_width_of(const Problem& p) { return static_cast<int>(p.dim("R")); }
std::int64_t pitch_of(const Problem& p) { return padded_pitch(width_of(p)); }

struct Conv2dBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.input = tensors.data<T>("input");
    args.input_pitch = pitch_of(problem);
    args.filter = tensors.data<T>("filter");
    args.filter_width = filter_width_of(problem);
    args.output = tensors.data<T>("output");
    args.output_pitch = pitch_of(problem);
    args.height = height_of(problem);
    args.width = width_of(problem);
    args.workspace = tensors.workspace();
    args.workspace_bytes = tensors.workspace_bytes();
    return args;
  }
};

// For the variants reading the filter from a __constant__ symbol: `Prepare` copies it there when
// the launch is bound, after the inputs are generated and before the check launch and the timed
// ones, as a program would once per filter, so a timed launch is the kernel alone. The copy is
// finished before bind returns.
template <void (*Prepare)(const v::Conv2dArgs<float>&, cudaStream_t)>
struct ConstantFilterBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    Args args = Conv2dBinding::bind<Args>(problem, tensors);
    Prepare(args, nullptr);
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    return args;
  }
};

std::string filter_width_unsupported(const Problem& p) {
  const int r = filter_width_of(p);
  if (r < 1 || r > v::kMaxFilterWidth || r % 2 == 0)
    return "the filter width R must be odd, 1 to " + std::to_string(v::kMaxFilterWidth) + ", got " + std::to_string(r);
  return "";
}

using Launcher = void (*)(const v::Conv2dArgs<float>&, cudaStream_t);

Variant with_filter_check(Variant variant) {
  variant.can_implement = [](const DeviceInfo&, const Problem& p) { return filter_width_unsupported(p); };
  return variant;
}

Variant ladder(const char* id, const char* technique, Launcher launcher) {
  return with_filter_check(make_variant<Conv2dBinding>(id, technique, Role::ladder, launcher));
}

template <Launcher Prepare>
Variant constant_filter_ladder(const char* id, const char* technique, Launcher launcher) {
  return with_filter_check(make_variant<ConstantFilterBinding<Prepare>>(id, technique, Role::ladder, launcher));
}

Variant texture_variant() {
  Variant variant = constant_filter_ladder<v::texture_prepare>(
      ids::kTexture, "one output per thread, tex2D on a texture object with border addressing, filter in constant",
      v::texture);
  variant.can_implement = [](const DeviceInfo&, const Problem& p) {
    std::string why = filter_width_unsupported(p);
    if (!why.empty()) return why;
    v::Conv2dArgs<float> args;
    args.height = height_of(p);
    args.width = width_of(p);
    args.input_pitch = pitch_of(p);
    return v::texture_unsupported(args);
  };
  return variant;
}

Variant cudnn_variant() {
  Variant variant = make_variant<Conv2dBinding>(
      ids::kCudnn, "cudnnConvolutionForward, fastest FMA-math algorithm by cudnnFind, the library baseline",
      Role::baseline, v::cudnn);
  // Skipped, with cuDNN's own reason, where it cannot be loaded.
  variant.can_implement = [](const DeviceInfo&, const Problem& p) {
    std::string why = filter_width_unsupported(p);
    if (why.empty()) why = v::cudnn_unavailable_reason();
    if (why.empty()) why = v::cudnn_shape_unsupported(height_of(p), width_of(p), pitch_of(p), pitch_of(p));
    return why;
  };
  // The workspace of the algorithm cudnnFind picks for this shape (Find runs here, untimed, once
  // per shape); none where the variant cannot run.
  variant.workspace_bytes = [](const Problem& p) -> std::size_t {
    if (!filter_width_unsupported(p).empty() || !v::cudnn_unavailable_reason().empty() ||
        !v::cudnn_shape_unsupported(height_of(p), width_of(p), pitch_of(p), pitch_of(p)).empty())
      return 0;
    return v::cudnn_workspace_bytes(height_of(p), width_of(p), pitch_of(p), pitch_of(p), filter_width_of(p));
  };
  return variant;
}

// Every output of the dense height x width part of the pitched output, each against its own
// tolerance (reference.hpp).
Comparison check_conv2d_output(const CheckContext& c) {
  const std::int64_t pitch = pitch_of(c.problem);
  return check_conv2d(c.tensors.host<float>("input"), height_of(c.problem), width_of(c.problem), pitch,
                      c.tensors.host<float>("filter"), filter_width_of(c.problem), c.tensors.host<float>("output"),
                      pitch);
}

// Weights stay in [-1, 1) whatever the image's distribution, as a trained filter's would.
void fill_filter(void* device, std::int64_t count, std::uint64_t seed, Distribution, const Problem& problem,
                 cudaStream_t stream) {
  fill_random(problem.dtype, device, count, seed, Distribution::uniform, stream);
}

// ---- experiment: what cudnnFind tries --------------------------------------------------------

nlohmann::json run_cudnn_algorithms(const ExperimentContext& context) {
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json notes = {
      "Find's own timing of one warm launch per algorithm (no L2 flush, no repeats): a ranking, not a benchmark",
      "N = C = K = 1, fp32, FMA math only (no TF32), zero padding R/2, cross-correlation; failed algorithms omitted",
      std::string("the ") + ids::kOp + " cudnn row uses the first (fastest) algorithm of its own shape"};
  const std::string missing = v::cudnn_unavailable_reason();
  if (!missing.empty()) notes.push_back("no rows: " + missing);
  for (int r = 1; missing.empty() && r <= v::kMaxFilterWidth; r += 2) {
    if (context.progress) context.progress(std::string(ids::kCudnnAlgorithms) + " 4096x4096x" + std::to_string(r));
    const v::CudnnConvolution convolution(4096, 4096, 4096, 4096, r);
    int rank = 0;
    for (const auto& c : convolution.candidates())
      rows.push_back({r, ++rank, c.algorithm, c.milliseconds, static_cast<double>(c.workspace_bytes) / (1 << 20)});
  }
  return {{"name", ids::kCudnnAlgorithms},
          {"op", ids::kOp},
          {"summary", "cuDNN's forward algorithms for a 4096x4096 single-channel image, as cudnnFind ranks them"},
          {"columns", {"filter_width", "rank", "algorithm", "find_ms", "workspace_mib"}},
          {"rows", rows},
          {"notes", notes}};
}

}  // namespace

void register_conv2d_claims(Registry& registry);

void register_conv2d(Registry& registry) {
  Op op;
  op.name = ids::kOp;
  op.summary = "2-D convolution (cross-correlation), one channel, R x R filter, zero padding, same size";
  op.dim_names = {"H", "W", "R"};
  op.dtypes = {DType::f32};
  // Input and output have rows padded to pitch_of: the input's padding is filled with random
  // values too, so a kernel that reads past the width is caught; the output's is never checked.
  auto image = [](const Problem& p) { return pitch_of(p) * height_of(p); };
  auto taps = [](const Problem& p) { return static_cast<std::int64_t>(filter_width_of(p)) * filter_width_of(p); };
  op.tensors = {{"input", TensorRole::input, {}, image},
                {"filter", TensorRole::input, {}, taps, fill_filter},
                {"output", TensorRole::output, {}, image}};
  op.bench_problems = cross(op, {{1000, 1000, 3}, {4096, 4096, 3}, {4096, 4096, 5}, {4096, 4096, 7}}, op.dtypes);
  // A single pixel (every tap but the centre in the padding), widths and heights that are no
  // multiple of a warp, a tile or 4 (the vector paths' scalar edges), and the largest bench size.
  op.test_problems = cross(op, {{1, 1, 3}, {31, 33, 3}, {1000, 1003, 5}, {4096, 4096, 3}, {4097, 4095, 7}}, op.dtypes);
  op.work = [](const Problem& p) {
    const double pixels = static_cast<double>(height_of(p)) * static_cast<double>(width_of(p));
    const double filter_taps = static_cast<double>(filter_width_of(p)) * filter_width_of(p);
    const double size = static_cast<double>(size_of(p.dtype));
    return Work{size * (pixels + filter_taps), size * pixels, 2.0 * filter_taps * pixels};
  };
  op.check = check_conv2d_output;
  op.variants = {
      ladder(ids::kGlobalFilter, "one output per thread, input and filter read from global memory per tap",
             v::global_filter),
      constant_filter_ladder<v::constant_filter_prepare>(
          ids::kConstantFilter, "one output per thread, filter in __constant__ memory", v::constant_filter),
      constant_filter_ladder<v::shared_tile_prepare>(
          ids::kSharedTile, "the tutorial's 16x16 tile plus halo staged in shared memory, filter in constant",
          v::shared_tile),
      texture_variant(),
      ladder(ids::kRegisterTiled,
             "128x32 tile, 16-byte loads; 4x4 outputs per thread in registers, filter in registers", v::register_tiled),
      ladder(ids::kRegisterTiledTall, "as register_tiled with a 128x64 tile: 4x8 outputs per thread, less halo",
             v::register_tiled_tall),
      cudnn_variant(),
  };
  registry.add(std::move(op));
  registry.add(Experiment{ids::kCudnnAlgorithms, ids::kOp,
                          "cuDNN's forward algorithms for a 4096x4096 single-channel image, as cudnnFind ranks them",
                          run_cudnn_algorithms,
                          nlohmann::json::array({{{"title", "cudnnFind: time per algorithm, 4096x4096 image"},
                                                  {"x", "filter_width"},
                                                  {"y", "find_ms"},
                                                  {"series", "algorithm"},
                                                  {"x_log", false},
                                                  {"y_log", true},
                                                  {"y_label", "ms per launch (Find's timing)"}}})});
  register_conv2d_claims(registry);
}

}  // namespace cudalab::harness
