#include "ops/conv2d/cudnn_baseline.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "cudalab/error.hpp"
#include "harness/cudnn_library.hpp"

namespace cudalab::conv2d_variants {
namespace {

// cuDNN's handles are opaque pointers and its enums ints; the values below are cudnn_graph.h's
// and cudnn_ops.h's (cuDNN 9), so no cuDNN header is needed to build.
using Handle = void*;
using Descriptor = void*;
using Status = int;
constexpr Status kSuccess = 0;
constexpr int kDataFloat = 0;         // CUDNN_DATA_FLOAT
constexpr int kLayoutNchw = 0;        // CUDNN_TENSOR_NCHW
constexpr int kCrossCorrelation = 1;  // CUDNN_CROSS_CORRELATION
constexpr int kFmaMath = 3;           // CUDNN_FMA_MATH: no tensor-core (TF32) kernels
constexpr int kAlgorithmCount = 8;    // CUDNN_CONVOLUTION_FWD_ALGO_COUNT
const char* const kAlgorithmNames[kAlgorithmCount] = {
    "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};

// cudnnConvolutionFwdAlgoPerf_t, field for field.
struct AlgorithmPerf {
  int algorithm;
  Status status;
  float time;
  std::size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct Api {
  void* library = nullptr;
  const char* (*get_error_string)(Status) = nullptr;
  Status (*create)(Handle*) = nullptr;
  Status (*destroy)(Handle) = nullptr;
  Status (*set_stream)(Handle, cudaStream_t) = nullptr;
  Status (*create_tensor)(Descriptor*) = nullptr;
  Status (*set_tensor_4d_ex)(Descriptor, int, int, int, int, int, int, int, int, int) = nullptr;
  Status (*destroy_tensor)(Descriptor) = nullptr;
  Status (*create_filter)(Descriptor*) = nullptr;
  Status (*set_filter_4d)(Descriptor, int, int, int, int, int, int) = nullptr;
  Status (*destroy_filter)(Descriptor) = nullptr;
  Status (*create_convolution)(Descriptor*) = nullptr;
  Status (*set_convolution_2d)(Descriptor, int, int, int, int, int, int, int, int) = nullptr;
  Status (*set_math_type)(Descriptor, int) = nullptr;
  Status (*destroy_convolution)(Descriptor) = nullptr;
  Status (*find_forward)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, int*, AlgorithmPerf*) = nullptr;
  Status (*workspace_size)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, std::size_t*) = nullptr;
  Status (*forward)(Handle, const void*, Descriptor, const void*, Descriptor, const void*, Descriptor, int, void*,
                    std::size_t, const void*, Descriptor, void*) = nullptr;
  std::string missing;  // empty once loaded
};

Api load_api() {
  Api api;
  api.library = harness::cudnn_library(&api.missing);
  if (api.library == nullptr) return api;
  void* l = api.library;
  const bool bound = harness::bind_cudnn(l, "cudnnGetErrorString", &api.get_error_string) &&
                     harness::bind_cudnn(l, "cudnnCreate", &api.create) &&
                     harness::bind_cudnn(l, "cudnnDestroy", &api.destroy) &&
                     harness::bind_cudnn(l, "cudnnSetStream", &api.set_stream) &&
                     harness::bind_cudnn(l, "cudnnCreateTensorDescriptor", &api.create_tensor) &&
                     harness::bind_cudnn(l, "cudnnSetTensor4dDescriptorEx", &api.set_tensor_4d_ex) &&
                     harness::bind_cudnn(l, "cudnnDestroyTensorDescriptor", &api.destroy_tensor) &&
                     harness::bind_cudnn(l, "cudnnCreateFilterDescriptor", &api.create_filter) &&
                     harness::bind_cudnn(l, "cudnnSetFilter4dDescriptor", &api.set_filter_4d) &&
                     harness::bind_cudnn(l, "cudnnDestroyFilterDescriptor", &api.destroy_filter) &&
                     harness::bind_cudnn(l, "cudnnCreateConvolutionDescriptor", &api.create_convolution) &&
                     harness::bind_cudnn(l, "cudnnSetConvolution2dDescriptor", &api.set_convolution_2d) &&
                     harness::bind_cudnn(l, "cudnnSetConvolutionMathType", &api.set_math_type) &&
                     harness::bind_cudnn(l, "cudnnDestroyConvolutionDescriptor", &api.destroy_convolution) &&
                     harness::bind_cudnn(l, "cudnnFindConvolutionForwardAlgorithm", &api.find_forward) &&
                     harness::bind_cudnn(l, "cudnnGetConvolutionForwardWorkspaceSize", &api.workspace_size) &&
                     harness::bind_cudnn(l, "cudnnConvolutionForward", &api.forward);
  if (!bound) {
    const char* why = dlerror();
    api.missing = "cuDNN found but lacks the legacy convolution API (cuDNN 9 expected): " + std::string(why ? why : "");
  }
  return api;
}

const Api& api() {
  static const Api loaded = load_api();
  return loaded;
}

void check(Status status, const char* call) {
  if (status != kSuccess)
    throw Error(ErrorKind::library, std::string("cuDNN ") + call + " failed: " + api().get_error_string(status),
                __FILE__, __LINE__);
}

int as_int(std::int64_t value, const char* what) {
  if (value > INT_MAX)
    throw Error(ErrorKind::invalid_argument, std::string("cuDNN takes int dimensions: ") + what + " too large",
                __FILE__, __LINE__);
  return static_cast<int>(value);
}

}  // namespace

std::string cudnn_unavailable_reason() { return api().missing; }

std::string cudnn_shape_unsupported(std::int64_t height, std::int64_t width, std::int64_t input_pitch,
                                    std::int64_t output_pitch) {
  const std::int64_t pitch = std::max(input_pitch, output_pitch);
  if (height > INT_MAX || width > INT_MAX || pitch > INT_MAX || height * pitch > INT_MAX)
    return "cuDNN takes int dimensions and strides: " + std::to_string(height) + " rows of pitch " +
           std::to_string(pitch) + " are too many";
  return "";
}

struct CudnnConvolution::State {
  Handle handle = nullptr;
  Descriptor input = nullptr, output = nullptr, filter = nullptr, convolution = nullptr;
  int algorithm = 0;
  std::size_t workspace_bytes = 0;
  std::vector<CudnnAlgorithmTiming> candidates;
  // The handle's stream is set before each launch: one caller at a time.
  std::mutex launch;

  ~State() {
    const Api& a = api();
    if (convolution) a.destroy_convolution(convolution);
    if (filter) a.destroy_filter(filter);
    if (output) a.destroy_tensor(output);
    if (input) a.destroy_tensor(input);
    if (handle) a.destroy(handle);
  }
};

CudnnConvolution::CudnnConvolution(std::int64_t height, std::int64_t width, std::int64_t input_pitch,
                                   std::int64_t output_pitch, int filter_width)
    : state_(std::make_unique<State>()) {
  const Api& a = api();
  if (!a.missing.empty()) throw Error(ErrorKind::library, a.missing, __FILE__, __LINE__);
  State& s = *state_;
  const int h = as_int(height, "height"), w = as_int(width, "width");
  const int in_pitch = as_int(input_pitch, "pitch"), out_pitch = as_int(output_pitch, "pitch");
  as_int(height * std::max(input_pitch, output_pitch), "image");
  check(a.create(&s.handle), "cudnnCreate");
  check(a.create_tensor(&s.input), "cudnnCreateTensorDescriptor");
  check(a.set_tensor_4d_ex(s.input, kDataFloat, 1, 1, h, w, h * in_pitch, h * in_pitch, in_pitch, 1),
        "cudnnSetTensor4dDescriptorEx");
  check(a.create_tensor(&s.output), "cudnnCreateTensorDescriptor");
  check(a.set_tensor_4d_ex(s.output, kDataFloat, 1, 1, h, w, h * out_pitch, h * out_pitch, out_pitch, 1),
        "cudnnSetTensor4dDescriptorEx");
  check(a.create_filter(&s.filter), "cudnnCreateFilterDescriptor");
  check(a.set_filter_4d(s.filter, kDataFloat, kLayoutNchw, 1, 1, filter_width, filter_width),
        "cudnnSetFilter4dDescriptor");
  check(a.create_convolution(&s.convolution), "cudnnCreateConvolutionDescriptor");
  const int half = filter_width / 2;
  check(a.set_convolution_2d(s.convolution, half, half, 1, 1, 1, 1, kCrossCorrelation, kDataFloat),
        "cudnnSetConvolution2dDescriptor");
  check(a.set_math_type(s.convolution, kFmaMath), "cudnnSetConvolutionMathType");

  AlgorithmPerf results[kAlgorithmCount] = {};
  int returned = 0;
  check(a.find_forward(s.handle, s.input, s.filter, s.convolution, s.output, kAlgorithmCount, &returned, results),
        "cudnnFindConvolutionForwardAlgorithm");
  for (int i = 0; i < returned; ++i) {
    const AlgorithmPerf& r = results[i];
    if (r.status != kSuccess || r.algorithm < 0 || r.algorithm >= kAlgorithmCount) continue;
    if (s.candidates.empty()) {
      s.algorithm = r.algorithm;
      check(a.set_math_type(s.convolution, r.math_type), "cudnnSetConvolutionMathType");
    }
    s.candidates.push_back({kAlgorithmNames[r.algorithm], r.time, r.memory});
  }
  if (s.candidates.empty())
    throw Error(ErrorKind::library, "cuDNN: no forward algorithm succeeded for this convolution", __FILE__, __LINE__);
  check(a.workspace_size(s.handle, s.input, s.filter, s.convolution, s.output, s.algorithm, &s.workspace_bytes),
        "cudnnGetConvolutionForwardWorkspaceSize");
}

CudnnConvolution::~CudnnConvolution() = default;

std::size_t CudnnConvolution::workspace_bytes() const { return state_->workspace_bytes; }

void CudnnConvolution::forward(const Conv2dArgs<float>& args, cudaStream_t stream) const {
  const Api& a = api();
  State& s = *state_;
  CUDALAB_REQUIRE(args.workspace_bytes >= s.workspace_bytes && (args.workspace != nullptr || s.workspace_bytes == 0),
                  "cudnn conv2d: the workspace holds " + std::to_string(args.workspace_bytes) +
                      " bytes, the call needs " + std::to_string(s.workspace_bytes) + " (see cudnn_workspace_bytes)");
  const float one = 1.0f, zero = 0.0f;
  const std::lock_guard<std::mutex> lock(s.launch);
  check(a.set_stream(s.handle, stream), "cudnnSetStream");
  check(a.forward(s.handle, &one, s.input, args.input, s.filter, args.filter, s.convolution, s.algorithm,
                  args.workspace, s.workspace_bytes, &zero, s.output, args.output),
        "cudnnConvolutionForward");
}

const std::vector<CudnnAlgorithmTiming>& CudnnConvolution::candidates() const { return state_->candidates; }

namespace {

struct PlanKey {
  int device;
  std::int64_t height, width, input_pitch, output_pitch;
  int filter_width;
  bool operator==(const PlanKey& o) const {
    return device == o.device && height == o.height && width == o.width && input_pitch == o.input_pitch &&
           output_pitch == o.output_pitch && filter_width == o.filter_width;
  }
};

// The plan for one image shape on the current device, built (cudnnFind) at the first request and
// kept for the life of the process: never destroyed, since at exit the CUDA runtime and cuDNN may
// already be gone. One plan per shape a run meets, a handle and descriptors each.
const CudnnConvolution& plan_for(std::int64_t height, std::int64_t width, std::int64_t input_pitch,
                                 std::int64_t output_pitch, int filter_width) {
  static std::mutex mutex;
  static auto* plans = new std::vector<std::pair<PlanKey, std::unique_ptr<CudnnConvolution>>>();
  int device = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  const PlanKey key{device, height, width, input_pitch, output_pitch, filter_width};
  const std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [k, plan] : *plans)
    if (k == key) return *plan;
  plans->emplace_back(key, std::make_unique<CudnnConvolution>(height, width, input_pitch, output_pitch, filter_width));
  return *plans->back().second;
}

}  // namespace

std::size_t cudnn_workspace_bytes(std::int64_t height, std::int64_t width, std::int64_t input_pitch,
                                  std::int64_t output_pitch, int filter_width) {
  if (!cudnn_unavailable_reason().empty()) return 0;
  return plan_for(height, width, input_pitch, output_pitch, filter_width).workspace_bytes();
}

void cudnn(const Conv2dArgs<float>& args, cudaStream_t stream) {
  plan_for(args.height, args.width, args.input_pitch, args.output_pitch, args.filter_width).forward(args, stream);
}

}  // namespace cudalab::conv2d_variants
