// The all-reduce of one process per GPU (cudalab.distributed): x summed in place over the GPUs whose
// staging buffers and signal arrays were shared through CUDA IPC (cudalab::all_reduce_ipc). The
// sharing, the epochs and the chunking of tensors larger than a buffer live in Python.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/all_reduce.hpp"
#include "cudalab/device.hpp"

namespace cudalab::torch_ops {
namespace {

// x (f32 or bf16, contiguous, this process's GPU) summed over the GPUs of `buffers` (uint8, each
// GPU's staging buffer of at least x's bytes) and `signals` (int32, each GPU's
// kAllReduceSignalWords words), both in rank order, this GPU's at `rank`; `epoch` as
// all_reduce_ipc takes it.
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
    TORCH_CHECK_VALUE(b.is_cuda() && b.scalar_type() == at::kByte && b.is_contiguous() && b.nbytes() >= x.nbytes(),
                      "cudalab.", op, ": buffer ", g, " must be a contiguous CUDA uint8 tensor of at least ",
                      x.nbytes(), " bytes");
    TORCH_CHECK_VALUE(s.is_cuda() && s.scalar_type() == at::kInt && s.is_contiguous() &&
                          s.numel() >= kAllReduceSignalWords && s.device() == b.device(),
                      "cudalab.", op, ": signals ", g, " must be a contiguous CUDA int32 tensor of ",
                      kAllReduceSignalWords, " words on its buffer's GPU");
    TORCH_CHECK_VALUE((g == rank) == (b.device() == x.device()), "cudalab.", op, ": buffer ", g,
                      g == rank ? " must be on x's GPU" : " must be on another GPU than x's");
    TORCH_CHECK(cudalab::enable_peer_access(x.device().index(), b.device().index()), "cudalab.", op, ": GPU ",
                x.device().index(), " cannot address GPU ", b.device().index(), "'s memory (no peer access)");
    buffer_pointers.push_back(b.data_ptr());
    signal_pointers.push_back(reinterpret_cast<unsigned*>(s.data_ptr()));
  }
  with_element_type<AllReduceElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::all_reduce_ipc(mutable_data<T>(x), x.numel(), buffer_pointers.data(), signal_pointers.data(),
                              static_cast<int>(rank), static_cast<int>(gpus), static_cast<unsigned>(epoch),
                              current_stream(x));
    });
  });
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  define_op(m, "_all_reduce_ipc_(Tensor(a!) x, Tensor[] buffers, Tensor[] signals, int rank, int epoch) -> ()",
            &all_reduce_ipc_, AllReduceElements{});
}

}  // namespace cudalab::torch_ops
