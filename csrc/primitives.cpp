// The library's primitives on CUDA tensors: reduce_sum, the scans, select_at_least, histogram,
// transpose and conv2d. Each reads its input as the library does (a flat array, a matrix or one
// image), refuses what the library would before anything is allocated, and takes the scratch of the
// library's workspace overloads from torch's caching allocator, on the current stream.
#include <cstdint>
#include <limits>
#include <type_traits>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/conv2d.hpp"
#include "cudalab/histogram.hpp"
#include "cudalab/reduce.hpp"
#include "cudalab/scan.hpp"
#include "cudalab/select.hpp"
#include "cudalab/transpose.hpp"

namespace cudalab::torch_ops {
namespace {

// The dtypes the sum and the scans take.
constexpr at::ScalarType kSumTypes[] = {at::kFloat, at::kInt};

// f(T*) with T the library's element type for a sum or scan of `x` (checked before: float, int32).
template <typename F>
void with_sum_type(const at::Tensor& x, F&& f) {
  if (x.scalar_type() == at::kFloat) return f(static_cast<float*>(nullptr));
  return f(static_cast<std::int32_t*>(nullptr));
}

at::Tensor reduce_sum(const at::Tensor& x) {
  constexpr const char* op = "reduce_sum";
  check_tensor(op, "x", x, x.device(), c10::nullopt, kSumTypes);
  const c10::cuda::CUDAGuard guard(x.device());
  const std::int64_t n = x.numel();
  at::Tensor sum = at::empty({}, x.options());
  with_sum_type(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      const std::size_t bytes = cudalab::reduce_sum_workspace_bytes(n);
      at::Tensor scratch = workspace(x, bytes);
      // n == 0 writes 0, as torch.sum gives.
      cudalab::reduce_sum(data<T>(x), n, mutable_data<T>(sum), scratch.mutable_data_ptr(), bytes, current_stream(x));
    });
  });
  return sum;
}

at::Tensor scan(const char* op, const at::Tensor& x, bool inclusive) {
  check_tensor(op, "x", x, x.device(), c10::nullopt, kSumTypes);
  const c10::cuda::CUDAGuard guard(x.device());
  const std::int64_t n = x.numel();
  at::Tensor out = at::empty_like(x);
  with_sum_type(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      const std::size_t bytes = cudalab::scan_workspace_bytes(n);
      at::Tensor scratch = workspace(x, bytes);
      if (inclusive) {
        cudalab::inclusive_scan(data<T>(x), mutable_data<T>(out), n, scratch.mutable_data_ptr(), bytes,
                                current_stream(x));
      } else {
        cudalab::exclusive_scan(data<T>(x), mutable_data<T>(out), n, scratch.mutable_data_ptr(), bytes,
                                current_stream(x));
      }
    });
  });
  return out;
}

at::Tensor inclusive_scan(const at::Tensor& x) { return scan("inclusive_scan", x, true); }
at::Tensor exclusive_scan(const at::Tensor& x) { return scan("exclusive_scan", x, false); }

at::Tensor select_at_least(const at::Tensor& x, std::int64_t threshold) {
  constexpr const char* op = "select_at_least";
  check_tensor(op, "x", x, x.device(), c10::nullopt, at::kInt);
  TORCH_CHECK_VALUE(
      threshold >= std::numeric_limits<std::int32_t>::min() && threshold <= std::numeric_limits<std::int32_t>::max(),
      "cudalab.select_at_least: threshold must be an int32 like x's elements, got ", threshold);
  const c10::cuda::CUDAGuard guard(x.device());
  const std::int64_t n = x.numel();
  at::Tensor selected = at::empty({n}, x.options());
  at::Tensor count = at::empty({}, x.options().dtype(at::kLong));
  call_library(op, [&] {
    const std::size_t bytes = cudalab::select_workspace_bytes(n);
    at::Tensor scratch = workspace(x, bytes);
    cudalab::select_at_least(data<std::int32_t>(x), n, static_cast<std::int32_t>(threshold),
                             mutable_data<std::int32_t>(selected), count.mutable_data_ptr<std::int64_t>(),
                             scratch.mutable_data_ptr(), bytes, current_stream(x));
  });
  // The output's size is on the device: reading it waits for the stream, as masked_select does.
  const std::int64_t kept = count.item<std::int64_t>();
  // A copy of the kept part, so that the result does not hold on to room for all n.
  return kept == n ? selected : selected.narrow(0, 0, kept).clone();
}

at::Tensor histogram(const at::Tensor& samples, std::int64_t bins) {
  constexpr const char* op = "histogram";
  check_tensor(op, "samples", samples, samples.device(), c10::nullopt, {at::kByte, at::kUInt16});
  const bool byte_samples = samples.scalar_type() == at::kByte;
  TORCH_CHECK_VALUE(!byte_samples || bins == kByteHistogramBins,
                    "cudalab.histogram: bins must be 256 for uint8 samples (one bin per byte value), got ", bins);
  TORCH_CHECK_VALUE(byte_samples || (bins >= 1 && bins <= kMaxHistogramBins),
                    "cudalab.histogram: bins must be in [1, 65536] for uint16 samples, got ", bins);
  const std::int64_t n = samples.numel();
  TORCH_CHECK_VALUE(n <= std::numeric_limits<std::int32_t>::max(),
                    "cudalab.histogram: samples must have fewer than 2^31 elements (the counts are int32), got ", n);
  const c10::cuda::CUDAGuard guard(samples.device());
  at::Tensor counts = at::empty({bins}, samples.options().dtype(at::kInt));
  // The library counts in uint32: below 2^31 samples every count has the same bits as an int32.
  auto* const out = mutable_data<std::uint32_t>(counts);
  call_library(op, [&] {
    if (byte_samples) {
      cudalab::histogram_even(data<std::uint8_t>(samples), n, out, current_stream(samples));
    } else {
      cudalab::histogram_even(data<std::uint16_t>(samples), n, out, static_cast<int>(bins), current_stream(samples));
    }
  });
  return counts;
}

at::Tensor transpose(const at::Tensor& x) {
  constexpr const char* op = "transpose";
  check_tensor(op, "x", x, x.device(), c10::nullopt, at::kFloat);
  TORCH_CHECK_VALUE(x.dim() == 2, "cudalab.transpose: x must be a matrix [rows, cols], got ", x.sizes());
  const c10::cuda::CUDAGuard guard(x.device());
  const std::int64_t rows = x.size(0), cols = x.size(1);
  at::Tensor out = at::empty({cols, rows}, x.options());
  call_library(op,
               [&] { cudalab::transpose(data<float>(x), mutable_data<float>(out), rows, cols, current_stream(x)); });
  return out;
}

at::Tensor conv2d(const at::Tensor& image, const at::Tensor& filter) {
  constexpr const char* op = "conv2d";
  check_tensor(op, "image", image, image.device(), c10::nullopt, at::kFloat);
  check_tensor(op, "filter", filter, image.device(), c10::nullopt, at::kFloat);
  TORCH_CHECK_VALUE(image.dim() == 2, "cudalab.conv2d: image must be [height, width] (one channel), got ",
                    image.sizes());
  TORCH_CHECK_VALUE(image.size(0) <= kMaxConv2dHeight, "cudalab.conv2d: image must have at most ", kMaxConv2dHeight,
                    " rows, got ", image.sizes());
  const std::int64_t width = filter.dim() == 2 ? filter.size(0) : 0;
  TORCH_CHECK_VALUE(filter.dim() == 2 && filter.size(1) == width && width % 2 == 1 && width <= kMaxConv2dFilterWidth,
                    "cudalab.conv2d: filter must be square [R, R] with R odd, 1 to ", kMaxConv2dFilterWidth, ", got ",
                    filter.sizes());
  const c10::cuda::CUDAGuard guard(image.device());
  at::Tensor out = at::empty_like(image);
  call_library(op, [&] {
    cudalab::conv2d(data<float>(image), image.size(0), image.size(1), data<float>(filter), static_cast<int>(width),
                    mutable_data<float>(out), current_stream(image));
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  define_op(m, "reduce_sum(Tensor x) -> Tensor", &reduce_sum);
  define_op(m, "inclusive_scan(Tensor x) -> Tensor", &inclusive_scan);
  define_op(m, "exclusive_scan(Tensor x) -> Tensor", &exclusive_scan);
  define_op(m, "select_at_least(Tensor x, int threshold) -> Tensor", &select_at_least);
  define_op(m, "histogram(Tensor samples, int bins) -> Tensor", &histogram);
  define_op(m, "transpose(Tensor x) -> Tensor", &transpose);
  define_op(m, "conv2d(Tensor image, Tensor filter) -> Tensor", &conv2d);
}

}  // namespace cudalab::torch_ops
