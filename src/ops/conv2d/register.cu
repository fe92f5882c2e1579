// Registry entries for conv2d: the workload (a pitched random image, a random filter, a poisoned
// output, the CPU reference), the ladder, the cuDNN baseline, the experiment listing cuDNN's
// algorithms, and the claims its numbers answer (C13, and C14's texture, constant and tiling
// parts).
#include <memory>

#include "core/format.hpp"
#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/conv2d/cudnn_baseline.hpp"
#include "ops/conv2d/reference.hpp"
#include "ops/conv2d/variants.hpp"

namespace cudalab::harness {
namespace {

using conv2d_variants::Conv2dArgs;

// Rows padded to 128 bytes: every row starts 16-byte aligned (the float4 paths run at every
// width) and the pitch meets any GPU's texture pitch alignment.
constexpr std::int64_t kPitchFloats = 32;

std::int64_t padded_pitch(std::int64_t width) { return ceil_div(width, kPitchFloats) * kPitchFloats; }

std::int64_t height_of(const Problem& p) { return p.shape.at(0); }
std::int64_t width_of(const Problem& p) { return p.shape.at(1); }
int filter_width_of(const Problem& p) { return static_cast<int>(p.shape.at(2)); }

class Conv2dWorkload final : public Workload {
 public:
  Conv2dWorkload(std::int64_t height, std::int64_t width, int filter_width)
      : pitch_(padded_pitch(width)),
        input_(pitch_ * height),
        output_(pitch_ * height),
        filter_(static_cast<std::int64_t>(filter_width) * filter_width),
        host_input_(new float[height * width]),
        host_output_(new float[height * width]),
        host_filter_(new float[filter_width * filter_width]) {
    args_.input = input_.data();
    args_.input_pitch = pitch_;
    args_.filter = filter_.data();
    args_.filter_width = filter_width;
    args_.output = output_.data();
    args_.output_pitch = pitch_;
    args_.height = height;
    args_.width = width;
    if (conv2d_variants::texture_unsupported(args_).empty()) texture_ = conv2d_variants::make_input_texture(args_);
  }

  ~Conv2dWorkload() override {
    if (texture_ != 0) cudaDestroyTextureObject(texture_);
  }

  void generate(std::uint64_t seed, Distribution distribution, cudaStream_t stream) override {
    // The row padding gets random values too: a kernel that reads past the width is caught.
    fill_random(input_.data(), input_.size(), seed, distribution, stream);
    // Weights stay in [-1, 1) whatever the image's distribution, as a trained filter's would.
    fill_random(filter_.data(), filter_.size(), mix64(seed), Distribution::uniform, stream);
    const std::size_t row_bytes = sizeof(float) * args_.width;
    CUDALAB_CUDA_CHECK(cudaMemcpy2DAsync(host_input_.get(), row_bytes, input_.data(), sizeof(float) * pitch_, row_bytes,
                                         args_.height, cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(
        cudaMemcpyAsync(host_filter_.get(), filter_.data(), filter_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  void poison(cudaStream_t stream) override { harness::poison(output_.data(), output_.bytes(), stream); }

  Comparison check(cudaStream_t stream) override {
    const std::size_t row_bytes = sizeof(float) * args_.width;
    CUDALAB_CUDA_CHECK(cudaMemcpy2DAsync(host_output_.get(), row_bytes, output_.data(), sizeof(float) * pitch_,
                                         row_bytes, args_.height, cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    return check_conv2d(host_input_.get(), args_.height, args_.width, host_filter_.get(), args_.filter_width,
                        host_output_.get());
  }

  const Conv2dArgs& args() const { return args_; }
  cudaTextureObject_t texture() const { return texture_; }
  // Built at the first call, which is the runner's untimed check launch: cudnnFind's trial runs
  // and the workspace allocation stay out of the timed launches.
  const conv2d_variants::CudnnConvolution& cudnn() {
    if (!cudnn_)
      cudnn_ = std::make_unique<conv2d_variants::CudnnConvolution>(args_.height, args_.width, pitch_, pitch_,
                                                                   args_.filter_width);
    return *cudnn_;
  }

 private:
  std::int64_t pitch_;
  DeviceBuffer<float> input_, output_, filter_;
  // Left uninitialised: each is overwritten by a copy before it is read.
  std::unique_ptr<float[]> host_input_, host_output_, host_filter_;
  Conv2dArgs args_;
  cudaTextureObject_t texture_ = 0;
  std::unique_ptr<conv2d_variants::CudnnConvolution> cudnn_;
};

std::string filter_width_unsupported(const Problem& p) {
  const int r = filter_width_of(p);
  if (r < 1 || r > conv2d_variants::kMaxFilterWidth || r % 2 == 0)
    return "the filter width R must be odd, 1 to " + std::to_string(conv2d_variants::kMaxFilterWidth) + ", got " +
           std::to_string(r);
  return "";
}

Variant variant(std::string id, std::string technique, Role role, std::function<void(Workload&, cudaStream_t)> launch,
                std::function<std::string(const Problem&)> unsupported = nullptr) {
  Variant v;
  v.id = std::move(id);
  v.technique = std::move(technique);
  v.role = role;
  v.launch = std::move(launch);
  v.unsupported = [unsupported](const DeviceInfo&, const Problem& p) {
    std::string why = filter_width_unsupported(p);
    if (why.empty() && unsupported) why = unsupported(p);
    return why;
  };
  return v;
}

using Launcher = void (*)(const Conv2dArgs&, cudaStream_t);

// `prepare`, when given, fills the variant's __constant__ filter: untimed, before every launch.
Variant ladder(std::string id, std::string technique, Launcher launcher, Launcher prepare = nullptr) {
  Variant v = variant(std::move(id), std::move(technique), Role::ladder,
                      [launcher](Workload& w, cudaStream_t s) { launcher(static_cast<Conv2dWorkload&>(w).args(), s); });
  if (prepare != nullptr)
    v.prepare = [prepare](Workload& w, cudaStream_t s) { prepare(static_cast<Conv2dWorkload&>(w).args(), s); };
  return v;
}

Variant texture_variant() {
  Variant v = variant(
      "texture", "one output per thread, tex2D on a texture object with border addressing, filter in constant",
      Role::ladder,
      [](Workload& w, cudaStream_t s) {
        const auto& c = static_cast<Conv2dWorkload&>(w);
        conv2d_variants::texture(c.texture(), c.args(), s);
      },
      [](const Problem& p) {
        Conv2dArgs args;
        args.height = height_of(p);
        args.width = width_of(p);
        args.input_pitch = padded_pitch(args.width);
        return conv2d_variants::texture_unsupported(args);
      });
  v.prepare = [](Workload& w, cudaStream_t s) {
    conv2d_variants::texture_prepare(static_cast<Conv2dWorkload&>(w).args(), s);
  };
  return v;
}

Variant cudnn_variant() {
  return variant(
      "cudnn", "cudnnConvolutionForward, fastest FMA-math algorithm by cudnnFind, the library baseline", Role::baseline,
      [](Workload& w, cudaStream_t s) {
        auto& c = static_cast<Conv2dWorkload&>(w);
        c.cudnn().forward(c.args(), s);
      },
      [](const Problem&) { return conv2d_variants::cudnn_unavailable_reason(); });
}

// ---- claims --------------------------------------------------------------------------------

double median_of(const nlohmann::json* record) { return record ? median_ms(*record) : 0.0; }

std::string ms_text(const char* name, const nlohmann::json* record) {
  return std::string(name) + " " + format_significant(median_of(record), 4) + " ms";
}

// C13: seed 000's table for a 3x3 filter on a 1000x1000 image: global memory 100 ms, shared
// memory 20 ms, constant memory 5 ms (20x over global).
nlohmann::json claim_c13(const nlohmann::json& results) {
  const std::int64_t n = Problem::shaped({1000, 1000, 3}).n;
  const auto* global = timed_record(results, "conv2d_f32", "global_filter", n);
  const auto* shared = timed_record(results, "conv2d_f32", "shared_tile", n);
  const auto* constant = timed_record(results, "conv2d_f32", "constant_filter", n);
  if (global == nullptr || shared == nullptr || constant == nullptr) return nullptr;
  const double ratio = median_of(global) / median_of(constant);
  std::string outcome = speedup_verdict(ratio, 20.0);
  if (median_of(shared) < median_of(constant))
    outcome += "; and the order differs: the shared-memory tile is faster than the constant filter";
  return verdict("C13",
                 "Constant memory for a 3x3 filter: global 100 ms, shared 20 ms, constant 5 ms (20x) on 1000x1000",
                 "seed 000", "global_filter / constant_filter = 20x; shared_tile in between (5x over global)",
                 ms_text("global_filter", global) + ", " + ms_text("shared_tile", shared) + ", " +
                     ms_text("constant_filter", constant) + " at 1000x1000x3; global/shared " +
                     format_fixed(median_of(global) / median_of(shared), 2) + "x",
                 ratio, outcome);
}

// C14, the parts a convolution measures: texture 2-5x on 2-D access (texture against the same
// kernel reading global memory), constant memory 2-4x (constant_filter over global_filter),
// tiling 5-20x (shared_tile over constant_filter). Coalescing (2-32x) is measured by the memory
// experiments (docs/memory.md) and not judged here.
nlohmann::json claim_c14(const nlohmann::json& results) {
  const std::int64_t n = Problem::shaped({4096, 4096, 3}).n;
  const auto* global = timed_record(results, "conv2d_f32", "global_filter", n);
  const auto* constant = timed_record(results, "conv2d_f32", "constant_filter", n);
  const auto* shared = timed_record(results, "conv2d_f32", "shared_tile", n);
  const auto* texture = timed_record(results, "conv2d_f32", "texture", n);
  if (global == nullptr || constant == nullptr || shared == nullptr || texture == nullptr) return nullptr;
  const double texture_ratio = median_of(constant) / median_of(texture);
  const double constant_ratio = median_of(global) / median_of(constant);
  const double tiling_ratio = median_of(constant) / median_of(shared);
  const std::string parts[3] = {speedup_verdict(texture_ratio, 2.0), speedup_verdict(constant_ratio, 2.0),
                                speedup_verdict(tiling_ratio, 5.0)};
  int held = 0, failed = 0;
  for (const std::string& part : parts) {
    held += part == "holds";
    failed += part == "does not hold";
  }
  std::string outcome = held == 3 ? "holds" : failed == 3 ? "does not hold" : "holds partly";
  outcome += " (texture: " + parts[0] + "; constant: " + parts[1] + "; tiling: " + parts[2] +
             "; coalescing is judged on the memory page)";
  return verdict("C14",
                 "Texture cache 2-5x on 2-D access; constant memory 2-4x; tiling 5-20x (coalescing: memory page)",
                 "seed 000", "texture >= 2x, constant >= 2x, tiling >= 5x",
                 "at 4096x4096x3: texture " + format_fixed(texture_ratio, 2) + "x over constant_filter, constant " +
                     format_fixed(constant_ratio, 2) + "x over global_filter, tiling (shared_tile) " +
                     format_fixed(tiling_ratio, 2) + "x over constant_filter",
                 texture_ratio, outcome);
}

// ---- experiment: what cudnnFind tries --------------------------------------------------------

nlohmann::json run_cudnn_algorithms(const ExperimentContext& context) {
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json notes = {
      "Find's own timing of one warm launch per algorithm (no L2 flush, no repeats): a ranking, not a benchmark",
      "N = C = K = 1, fp32, FMA math only (no TF32), zero padding R/2, cross-correlation; failed algorithms omitted",
      "the conv2d_f32 cudnn row uses the first (fastest) algorithm of its own shape"};
  const std::string missing = conv2d_variants::cudnn_unavailable_reason();
  if (!missing.empty()) notes.push_back("no rows: " + missing);
  for (int r = 1; missing.empty() && r <= conv2d_variants::kMaxFilterWidth; r += 2) {
    if (context.progress) context.progress("conv2d_cudnn_algorithms 4096x4096x" + std::to_string(r));
    const conv2d_variants::CudnnConvolution convolution(4096, 4096, 4096, 4096, r);
    int rank = 0;
    for (const auto& c : convolution.candidates())
      rows.push_back({r, ++rank, c.algorithm, c.milliseconds, static_cast<double>(c.workspace_bytes) / (1 << 20)});
  }
  return {{"name", "conv2d_cudnn_algorithms"},
          {"op", "conv2d_f32"},
          {"summary", "cuDNN's forward algorithms for a 4096x4096 single-channel image, as cudnnFind ranks them"},
          {"columns", {"filter_width", "rank", "algorithm", "find_ms", "workspace_mib"}},
          {"rows", rows},
          {"notes", notes}};
}

}  // namespace

void register_conv2d(Registry& registry) {
  namespace v = conv2d_variants;
  Op op;
  op.name = "conv2d_f32";
  op.summary = "2-D convolution (cross-correlation), one fp32 channel, R x R filter, zero padding, same size";
  op.shape_names = {"H", "W", "R"};
  op.bench_problems = {Problem::shaped({1000, 1000, 3}), Problem::shaped({4096, 4096, 3}),
                       Problem::shaped({4096, 4096, 5}), Problem::shaped({4096, 4096, 7})};
  // A single pixel (every tap but the centre in the padding), widths and heights that are no
  // multiple of a warp, a tile or 4 (the float4 paths' scalar edges), and the largest bench size.
  op.test_problems = {Problem::shaped({1, 1, 3}), Problem::shaped({31, 33, 3}), Problem::shaped({1000, 1003, 5}),
                      Problem::shaped({4096, 4096, 3}), Problem::shaped({4097, 4095, 7})};
  op.work = [](const Problem& p) {
    const double pixels = static_cast<double>(height_of(p)) * static_cast<double>(width_of(p));
    const double taps = static_cast<double>(filter_width_of(p)) * filter_width_of(p);
    Work w;
    w.bytes_read = 4.0 * (pixels + taps);
    w.bytes_written = 4.0 * pixels;
    w.flops = 2.0 * taps * pixels;
    return w;
  };
  // Input and output (pitched), the filter, and room for cuDNN's workspace and Find's buffers.
  op.device_bytes = [](const Problem& p) {
    const auto image = static_cast<std::size_t>(padded_pitch(width_of(p)) * height_of(p)) * sizeof(float);
    return 6 * image + (std::size_t{64} << 20);
  };
  op.host_bytes = [](const Problem& p) {
    return static_cast<std::size_t>(height_of(p) * width_of(p)) * 2 * sizeof(float);
  };
  op.make_workload = [](const Problem& p) {
    return std::make_unique<Conv2dWorkload>(height_of(p), width_of(p), filter_width_of(p));
  };
  op.variants = {
      ladder("global_filter", "one output per thread, input and filter read from global memory per tap",
             v::global_filter),
      ladder("constant_filter", "one output per thread, filter in __constant__ memory", v::constant_filter,
             v::constant_filter_prepare),
      ladder("shared_tile", "seed 000: 16x16 tile plus halo staged in shared memory, filter in constant",
             v::shared_tile, v::shared_tile_prepare),
      texture_variant(),
      ladder("register_tiled", "128x32 tile, float4 loads; 4x4 outputs per thread in registers, filter in registers",
             v::register_tiled),
      ladder("register_tiled_tall", "as register_tiled with a 128x64 tile: 4x8 outputs per thread, less halo",
             v::register_tiled_tall),
      cudnn_variant(),
  };
  registry.add(std::move(op));
  registry.add(Experiment{"conv2d_cudnn_algorithms", "conv2d_f32",
                          "cuDNN's forward algorithms for a 4096x4096 single-channel image, as cudnnFind ranks them",
                          run_cudnn_algorithms,
                          nlohmann::json::array({{{"title", "cudnnFind: time per algorithm, 4096x4096 image"},
                                                  {"x", "filter_width"},
                                                  {"y", "find_ms"},
                                                  {"series", "algorithm"},
                                                  {"x_log", false},
                                                  {"y_log", true},
                                                  {"y_label", "ms per launch (Find's timing)"}}})});
  registry.add(ClaimCheck{"C13", "conv2d_f32", claim_c13});
  registry.add(ClaimCheck{"C14", "conv2d_f32", claim_c14});
}

}  // namespace cudalab::harness
