// The all-reduce of one process per GPU (cudalab.distributed): x summed in place over the GPUs whose
// staging buffers and signal arrays were shared through CUDA IPC (cudalab::all_reduce_ipc), and the
// sharing itself: a buffer from cudaMalloc with its IPC handle, and another rank's buffer opened for
// this rank's GPU. The epochs and the chunking of tensors larger than a buffer live in Python.
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/ops/from_blob.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/all_reduce.hpp"

namespace cudalab::torch_ops {
namespace {

// x (f32 or bf16, contiguous, this process's GPU) summed over the GPUs of `buffers` (uint8, each
// GPU's staging buffer, as large as the others and at least twice x's bytes: calls alternate
// halves) and `signals` (int32, each GPU's
// kAllReduceSignalWords words), both in rank order, this GPU's at `rank` and the others' opened by
// _ipc_open (so all of them on x's device); `epoch` as all_reduce_ipc takes it.
void all_reduce_ipc_(at::Tensor x, const std::vector<at::Tensor>& buffers, const std::vector<at::Tensor>& signals,
                     std::int64_t rank, std::int64_t epoch) {
  constexpr const char* op = "_all_reduce_ipc_";
  check_tensor(op, "x", x, x.device(), c10::nullopt, scalar_types(AllReduceElements{}));
  const auto gpus = static_cast<std::int64_t>(buffers.size());
  TORCH_CHECK_VALUE(gpus >= 1 && gpus <= kAllReduceMaxGpus && static_cast<std::int64_t>(signals.size()) == gpus,
                    "cudalab.", op, ": one buffer and one signal array per GPU, 1 to 8 GPUs; got ", buffers.size(),
                    " and ", signals.size());
  TORCH_CHECK_VALUE(rank >= 0 && rank < gpus, "cudalab.", op, ": rank ", rank, " of ", gpus, " GPUs");
  TORCH_CHECK_VALUE(epoch > 0 && epoch <= 0xFFFFFFFFll, "cudalab.", op, ": epoch ", epoch, " is not in 1..2^32-1");
  const c10::cuda::CUDAGuard guard(x.device());
  std::vector<void*> buffer_pointers;
  std::vector<unsigned*> signal_pointers;
  for (std::int64_t g = 0; g < gpus; ++g) {
    const at::Tensor& b = buffers[static_cast<std::size_t>(g)];
    const at::Tensor& s = signals[static_cast<std::size_t>(g)];
    TORCH_CHECK_VALUE(b.device() == x.device() && b.scalar_type() == at::kByte && b.is_contiguous() &&
                          b.nbytes() == buffers[0].nbytes() && b.nbytes() >= 2 * x.nbytes(),
                      "cudalab.", op, ": buffer ", g, " must be a contiguous uint8 tensor on x's device (", x.device(),
                      ") of at least twice x's ", x.nbytes(), " bytes, as large as buffer 0");
    TORCH_CHECK_VALUE(s.device() == x.device() && s.scalar_type() == at::kInt && s.is_contiguous() &&
                          s.numel() >= kAllReduceSignalWords,
                      "cudalab.", op, ": signals ", g, " must be a contiguous int32 tensor of ", kAllReduceSignalWords,
                      " words on x's device (", x.device(), ")");
    buffer_pointers.push_back(b.data_ptr());
    signal_pointers.push_back(reinterpret_cast<unsigned*>(s.data_ptr()));
  }
  with_element_type<AllReduceElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::all_reduce_ipc(mutable_data<T>(x), x.numel(), buffer_pointers.data(), buffers[0].nbytes(),
                              signal_pointers.data(), static_cast<int>(rank), static_cast<int>(gpus),
                              static_cast<unsigned>(epoch), current_stream(x));
    });
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
  define_op(m, "_all_reduce_ipc_(Tensor(a!) x, Tensor[] buffers, Tensor[] signals, int rank, int epoch) -> ()",
            &all_reduce_ipc_, AllReduceElements{});
  // Neither takes a CUDA tensor to dispatch on: one kernel for every backend.
  m.def("_ipc_buffer(int bytes, Device device) -> (Tensor, Tensor)");
  m.impl("_ipc_buffer", torch::dispatch(c10::DispatchKey::CompositeExplicitAutograd, &ipc_buffer));
  m.def("_ipc_open(Tensor handle, int bytes, Device device) -> Tensor");
  m.impl("_ipc_open", torch::dispatch(c10::DispatchKey::CompositeExplicitAutograd, &ipc_open));
}

}  // namespace cudalab::torch_ops
