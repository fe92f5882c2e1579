// The all-reduce of one process per GPU (cudalab.distributed): x summed in place over the GPUs whose
// staging buffers and signal arrays were shared through CUDA IPC (cudalab::all_reduce_ipc), and the
// sharing itself: a buffer from cudaMalloc with its IPC handle, and another rank's buffer opened for
// this rank's GPU. Python shares the buffers and keeps them alive; the epochs, the pieces of large
// tensors and the order between streams are kept here, in a state per AllReduce.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <ATen/ops/from_blob.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/all_reduce.hpp"

namespace cudalab::torch_ops {
namespace {

// One AllReduce's state: every GPU's staging buffer and signal array as this process maps them,
// this GPU's rank, the epochs and the last call's stream. It lives here, under a handle, so that a
// call crosses from Python with a tensor and an integer instead of lists of tensors (whose
// conversion cost more than the kernel below 1 MiB). Python keeps the tensors alive.
struct IpcAllReduce {
  std::mutex mutex;  // held through a call: one call at a time per state, whichever thread makes it
  at::Device device{at::kCUDA, 0};
  std::vector<void*> buffers;
  std::vector<unsigned*> signals;
  std::size_t buffer_bytes = 0;
  int rank = 0;
  double timeout_seconds = 600.0;
  unsigned epoch = 0;  // the last call's
  c10::optional<c10::cuda::CUDAStream> last;
  cudaEvent_t switched = nullptr;  // made when a call first comes on another stream than the last
};

std::mutex& states_mutex() {
  static std::mutex mutex;
  return mutex;
}
// shared_ptr: a call keeps its state alive while another thread destroys the handle.
std::unordered_map<std::int64_t, std::shared_ptr<IpcAllReduce>>& states() {
  static std::unordered_map<std::int64_t, std::shared_ptr<IpcAllReduce>> all;
  return all;
}

// The state of `buffers` (uint8, every GPU's staging buffer, all of one size, a multiple of 32
// bytes) and `signals` (int32, every GPU's kAllReduceSignalWords words), both in rank order, this
// GPU's at `rank` and the others' opened by _ipc_open, so all of them on this GPU; a handle for
// _all_reduce_ipc_ and _ipc_all_reduce_destroy. A call waits `timeout_seconds` for the other GPUs
// (all_reduce_ipc).
std::int64_t ipc_all_reduce_create(const std::vector<at::Tensor>& buffers, const std::vector<at::Tensor>& signals,
                                   std::int64_t rank, double timeout_seconds) {
  constexpr const char* op = "_ipc_all_reduce_create";
  const auto gpus = static_cast<std::int64_t>(buffers.size());
  TORCH_CHECK_VALUE(gpus >= 1 && gpus <= kAllReduceMaxGpus && static_cast<std::int64_t>(signals.size()) == gpus,
                    "cudalab.", op, ": one buffer and one signal array per GPU, 1 to 8 GPUs; got ", buffers.size(),
                    " and ", signals.size());
  TORCH_CHECK_VALUE(rank >= 0 && rank < gpus, "cudalab.", op, ": rank ", rank, " of ", gpus, " GPUs");
  TORCH_CHECK_VALUE(timeout_seconds > 0 && timeout_seconds <= 1e9, "cudalab.", op,
                    ": timeout_seconds must be in (0, 1e9], got ", timeout_seconds);
  auto state = std::make_shared<IpcAllReduce>();
  state->timeout_seconds = timeout_seconds;
  state->device = buffers[0].device();
  state->buffer_bytes = buffers[0].nbytes();
  state->rank = static_cast<int>(rank);
  TORCH_CHECK_VALUE(state->device.is_cuda() && state->buffer_bytes >= 32 && state->buffer_bytes % 32 == 0, "cudalab.",
                    op, ": the buffers must be CUDA tensors of a multiple of 32 bytes");
  for (std::int64_t g = 0; g < gpus; ++g) {
    const at::Tensor& b = buffers[static_cast<std::size_t>(g)];
    const at::Tensor& s = signals[static_cast<std::size_t>(g)];
    TORCH_CHECK_VALUE(b.device() == state->device && b.scalar_type() == at::kByte && b.is_contiguous() &&
                          b.nbytes() == state->buffer_bytes,
                      "cudalab.", op, ": buffer ", g, " must be a contiguous uint8 tensor on ", state->device, " of ",
                      state->buffer_bytes, " bytes, as buffer 0");
    TORCH_CHECK_VALUE(s.device() == state->device && s.scalar_type() == at::kInt && s.is_contiguous() &&
                          s.numel() >= kAllReduceSignalWords,
                      "cudalab.", op, ": signals ", g, " must be a contiguous int32 tensor of ", kAllReduceSignalWords,
                      " words on ", state->device);
    state->buffers.push_back(b.data_ptr());
    state->signals.push_back(reinterpret_cast<unsigned*>(s.data_ptr()));
  }
  static std::int64_t next = 0;
  const std::lock_guard<std::mutex> lock(states_mutex());
  states().emplace(++next, std::move(state));
  return next;
}

void ipc_all_reduce_destroy(std::int64_t handle) {
  std::shared_ptr<IpcAllReduce> state;
  {
    const std::lock_guard<std::mutex> lock(states_mutex());
    const auto found = states().find(handle);
    if (found == states().end()) return;
    state = std::move(found->second);
    states().erase(found);
  }
  const std::lock_guard<std::mutex> lock(state->mutex);  // after any call in flight on another thread
  if (state->switched != nullptr) cudaEventDestroy(state->switched);
  state->switched = nullptr;
}

// x (f32 or bf16, contiguous, on the state's GPU) summed in place over the GPUs of `handle`'s
// state, on the current stream, in pieces of half a buffer (calls alternate halves); each piece
// takes the next epoch.
void all_reduce_ipc_(at::Tensor x, std::int64_t handle) {
  constexpr const char* op = "_all_reduce_ipc_";
  std::shared_ptr<IpcAllReduce> state;
  {
    const std::lock_guard<std::mutex> lock(states_mutex());
    const auto found = states().find(handle);
    TORCH_CHECK_VALUE(found != states().end(), "cudalab.", op, ": no all-reduce state ", handle);
    state = found->second;
  }
  const std::lock_guard<std::mutex> lock(state->mutex);
  TORCH_CHECK_VALUE(x.device() == state->device, "cudalab.", op, ": x is on ", x.device(), ", this rank's GPU is ",
                    state->device);
  check_tensor(op, "x", x, state->device, c10::nullopt, scalar_types(AllReduceElements{}));
  const c10::cuda::CUDAGuard guard(x.device());
  const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(x.device().index());
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(stream.stream(), &capturing));
  // A captured epoch would be the same on every replay, and the barriers would stop waiting.
  TORCH_CHECK(capturing == cudaStreamCaptureStatusNone, "cudalab.", op, ": cannot be captured in a CUDA graph");
  if (state->last.has_value() && *state->last != stream) {
    // Calls alternate buffer halves, safe in one stream's order: the first call on another stream
    // waits for everything the last one enqueued.
    if (state->switched == nullptr) C10_CUDA_CHECK(cudaEventCreateWithFlags(&state->switched, cudaEventDisableTiming));
    C10_CUDA_CHECK(cudaEventRecord(state->switched, state->last->stream()));
    C10_CUDA_CHECK(cudaStreamWaitEvent(stream.stream(), state->switched, 0));
  }
  state->last = stream;
  const auto gpus = static_cast<int>(state->buffers.size());
  with_element_type<AllReduceElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto step = static_cast<std::int64_t>(cudalab::all_reduce_ipc_capacity<T>(state->buffer_bytes));
    T* data = mutable_data<T>(x);
    for (std::int64_t start = 0; start < x.numel(); start += step) {
      TORCH_CHECK(state->epoch < 0x7FFFFFFFu, "cudalab.", op, ": 2^31 - 1 calls made; build a new AllReduce");
      ++state->epoch;
      call_library(op, [&] {
        cudalab::all_reduce_ipc(data + start, std::min(step, x.numel() - start), state->buffers.data(),
                                state->buffer_bytes, state->signals.data(), state->rank, gpus, state->epoch,
                                stream.stream(), state->timeout_seconds);
      });
    }
  });
}

// `bytes` of memory on `device` from cudaMalloc, outside torch's caching allocator (whose blocks
// hold other tensors too, all of which a handle would expose), and its CUDA IPC handle: the
// cudaIpcMemHandle_t's bytes in a CPU uint8 tensor, for the other ranks' _ipc_open.
std::tuple<at::Tensor, at::Tensor> ipc_buffer(std::int64_t bytes, at::Device device) {
  constexpr const char* op = "_ipc_buffer";
  TORCH_CHECK_VALUE(device.is_cuda() && device.has_index(), "cudalab.", op, ": a CUDA device with an index, got ",
                    device);
  TORCH_CHECK_VALUE(bytes > 0, "cudalab.", op, ": bytes must be positive, got ", bytes);
  const c10::cuda::CUDAGuard guard(device);
  void* memory = nullptr;
  cudaIpcMemHandle_t handle{};
  call_library(op, [&] {
    CUDALAB_CUDA_CHECK(cudaMalloc(&memory, static_cast<std::size_t>(bytes)));
    const cudaError_t exported = cudaIpcGetMemHandle(&handle, memory);
    if (exported != cudaSuccess) cudaFree(memory);
    CUDALAB_CUDA_CHECK(exported);
  });
  at::Tensor buffer = at::from_blob(
      memory, {bytes}, [](void* p) { cudaFree(p); }, at::TensorOptions().dtype(at::kByte).device(device));
  at::Tensor bytes_of_handle = at::empty({static_cast<std::int64_t>(sizeof(handle))}, at::kByte);
  std::memcpy(bytes_of_handle.data_ptr(), &handle, sizeof(handle));
  return {buffer, bytes_of_handle};
}

// Another rank's _ipc_buffer of `bytes`, opened for kernels on `device` (this rank's GPU) by
// cudalab::open_peer_buffer; the tensor says `device`, where it is addressed, and closes the
// mapping when freed.
at::Tensor ipc_open(const at::Tensor& handle, std::int64_t bytes, at::Device device) {
  constexpr const char* op = "_ipc_open";
  TORCH_CHECK_VALUE(device.is_cuda() && device.has_index(), "cudalab.", op, ": a CUDA device with an index, got ",
                    device);
  TORCH_CHECK_VALUE(handle.device().is_cpu() && handle.scalar_type() == at::kByte && handle.is_contiguous() &&
                        handle.numel() == static_cast<std::int64_t>(sizeof(cudaIpcMemHandle_t)),
                    "cudalab.", op, ": handle must be _ipc_buffer's ", sizeof(cudaIpcMemHandle_t), " CPU bytes, got ",
                    handle.sizes(), " ", handle.scalar_type(), " on ", handle.device());
  TORCH_CHECK_VALUE(bytes > 0, "cudalab.", op, ": bytes must be positive, got ", bytes);
  cudaIpcMemHandle_t ipc{};
  std::memcpy(&ipc, handle.data_ptr(), sizeof(ipc));
  void* mapped = nullptr;
  call_library(op, [&] { mapped = cudalab::open_peer_buffer(ipc, device.index()); });
  return at::from_blob(
      mapped, {bytes}, [](void* p) { cudaIpcCloseMemHandle(p); }, at::TensorOptions().dtype(at::kByte).device(device));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  define_op(m, "_all_reduce_ipc_(Tensor(a!) x, int handle) -> ()", &all_reduce_ipc_, AllReduceElements{});
  m.def("_ipc_all_reduce_create(Tensor[] buffers, Tensor[] signals, int rank, float timeout_seconds) -> int");
  m.impl("_ipc_all_reduce_create",
         torch::dispatch(c10::DispatchKey::CompositeExplicitAutograd, &ipc_all_reduce_create));
  m.def("_ipc_all_reduce_destroy(int handle) -> ()");
  m.impl("_ipc_all_reduce_destroy",
         torch::dispatch(c10::DispatchKey::CompositeExplicitAutograd, &ipc_all_reduce_destroy));
  // These take no CUDA tensor to dispatch on (or need none): one kernel for every backend.
  m.def("_ipc_buffer(int bytes, Device device) -> (Tensor, Tensor)");
  m.impl("_ipc_buffer", torch::dispatch(c10::DispatchKey::CompositeExplicitAutograd, &ipc_buffer));
  m.def("_ipc_open(Tensor handle, int bytes, Device device) -> Tensor");
  m.impl("_ipc_open", torch::dispatch(c10::DispatchKey::CompositeExplicitAutograd, &ipc_open));
}

}  // namespace cudalab::torch_ops
