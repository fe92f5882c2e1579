#include "ops/softmax/cudnn_baseline.hpp"
#include "cudalab/softmax.hpp"

#include <climits>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cudalab/error.hpp"
#include "harness/cudnn_library.hpp"

namespace cudalab::softmax_variants {
namespace {

// Opaque handles and int enums, with cudnn_graph.h's and cudnn_ops.h's values (cuDNN 9), so no
// cuDNN header is needed to build.
using Handle = void*;
using Descriptor = void*;
using Status = int;
constexpr Status kSuccess = 0;
constexpr int kLayoutNchw = 0;           // CUDNN_TENSOR_NCHW
constexpr int kSoftmaxAccurate = 1;      // CUDNN_SOFTMAX_ACCURATE: the max is subtracted
constexpr int kSoftmaxModeInstance = 0;  // CUDNN_SOFTMAX_MODE_INSTANCE: over C, H, W of each N

template <typename T>
constexpr int kDataType = 0;  // CUDNN_DATA_FLOAT
template <>
constexpr int kDataType<__half> = 2;  // CUDNN_DATA_HALF
template <>
constexpr int kDataType<__nv_bfloat16> = 9;  // CUDNN_DATA_BFLOAT16

struct Api {
  const char* (*error_string)(Status) = nullptr;
  Status (*create)(Handle*) = nullptr;
  Status (*set_stream)(Handle, cudaStream_t) = nullptr;
  Status (*create_tensor)(Descriptor*) = nullptr;
  Status (*set_tensor_4d)(Descriptor, int, int, int, int, int, int) = nullptr;
  Status (*forward)(Handle, int, int, const void*, Descriptor, const void*, const void*, Descriptor, void*) = nullptr;
  Status (*backward)(Handle, int, int, const void*, Descriptor, const void*, Descriptor, const void*, const void*,
                     Descriptor, void*) = nullptr;
  std::string missing;  // empty once loaded
};

Api load_api() {
  Api api;
  void* library = harness::cudnn_library(&api.missing);
  if (library == nullptr) return api;
  const bool bound = harness::bind_cudnn(library, "cudnnGetErrorString", &api.error_string) &&
                     harness::bind_cudnn(library, "cudnnCreate", &api.create) &&
                     harness::bind_cudnn(library, "cudnnSetStream", &api.set_stream) &&
                     harness::bind_cudnn(library, "cudnnCreateTensorDescriptor", &api.create_tensor) &&
                     harness::bind_cudnn(library, "cudnnSetTensor4dDescriptor", &api.set_tensor_4d) &&
                     harness::bind_cudnn(library, "cudnnSoftmaxForward", &api.forward) &&
                     harness::bind_cudnn(library, "cudnnSoftmaxBackward", &api.backward);
  if (!bound) {
    const char* why = dlerror();
    api.missing = "cuDNN found but lacks the legacy softmax API (cuDNN 9 expected): " + std::string(why ? why : "");
  }
  return api;
}

const Api& api() {
  static const Api loaded = load_api();
  return loaded;
}

void check(Status status, const char* call) {
  if (status != kSuccess)
    throw Error(ErrorKind::library, std::string("cuDNN ") + call + " failed: " + api().error_string(status), __FILE__,
                __LINE__);
}

// A handle on one device and the descriptor of one rows x features tensor of one dtype (x, y, dy
// and dx share it). Plans are never destroyed: at exit the CUDA runtime and cuDNN may be gone.
struct Plan {
  int device;
  int data_type;
  std::int64_t rows, features;
  Handle handle;
  Descriptor tensor = nullptr;
  std::mutex launch;  // the handle's stream is set before each call: one caller at a time
};

Plan& plan_for(int data_type, std::int64_t rows, std::int64_t features) {
  const Api& a = api();
  if (!a.missing.empty()) throw Error(ErrorKind::library, a.missing, __FILE__, __LINE__);
  const std::string why = cudnn_shape_unsupported(rows, features);
  if (!why.empty()) throw Error(ErrorKind::invalid_argument, why, __FILE__, __LINE__);
  static std::mutex mutex;
  static auto* plans = new std::vector<std::unique_ptr<Plan>>();
  int device = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  Handle handle = nullptr;
  for (const auto& p : *plans) {
    if (p->device != device) continue;
    if (p->data_type == data_type && p->rows == rows && p->features == features) return *p;
    handle = p->handle;
  }
  if (handle == nullptr) check(a.create(&handle), "cudnnCreate");
  auto plan = std::make_unique<Plan>();
  plan->device = device;
  plan->data_type = data_type;
  plan->rows = rows;
  plan->features = features;
  plan->handle = handle;
  check(a.create_tensor(&plan->tensor), "cudnnCreateTensorDescriptor");
  check(a.set_tensor_4d(plan->tensor, kLayoutNchw, data_type, static_cast<int>(rows), static_cast<int>(features), 1, 1),
        "cudnnSetTensor4dDescriptor");
  plans->push_back(std::move(plan));
  return *plans->back();
}

}  // namespace

std::string cudnn_unavailable_reason() { return api().missing; }

std::string cudnn_shape_unsupported(std::int64_t rows, std::int64_t features) {
  if (rows > INT_MAX || features > INT_MAX || rows * features > INT_MAX)
    return "cuDNN takes int dimensions and strides: " + std::to_string(rows) + " x " + std::to_string(features) +
           " is too large";
  return "";
}

template <typename T>
void cudnn_softmax(const SoftmaxArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  Plan& plan = plan_for(kDataType<T>, args.rows, args.features);
  const float one = 1.0f, zero = 0.0f;  // fp32 scaling factors for fp32, fp16 and bf16 tensors
  const std::lock_guard<std::mutex> lock(plan.launch);
  check(api().set_stream(plan.handle, stream), "cudnnSetStream");
  check(api().forward(plan.handle, kSoftmaxAccurate, kSoftmaxModeInstance, &one, plan.tensor, args.x, &zero,
                      plan.tensor, args.y),
        "cudnnSoftmaxForward");
}

template <typename T>
void cudnn_softmax_backward(const SoftmaxBackwardArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  Plan& plan = plan_for(kDataType<T>, args.rows, args.features);
  const float one = 1.0f, zero = 0.0f;
  const std::lock_guard<std::mutex> lock(plan.launch);
  check(api().set_stream(plan.handle, stream), "cudnnSetStream");
  check(api().backward(plan.handle, kSoftmaxAccurate, kSoftmaxModeInstance, &one, plan.tensor, args.y, plan.tensor,
                       args.dy, &zero, plan.tensor, args.dx),
        "cudnnSoftmaxBackward");
}

CUDALAB_SOFTMAX_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, cudnn_softmax, SoftmaxArgs)
CUDALAB_SOFTMAX_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, cudnn_softmax_backward, SoftmaxBackwardArgs)

}  // namespace cudalab::softmax_variants
