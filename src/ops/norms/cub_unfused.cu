// Baseline: the normalization as separate vendor-library passes, what composing framework ops
// (a mean, a variance, an elementwise normalize) costs without fusion. Each statistic is a
// cub::DeviceSegmentedReduce::Sum over the rows (CUB's one-block-per-segment reduction) reading x
// through a transform iterator; y and the saved statistics are cub::DeviceFor::Bulk passes.
//   LayerNorm: sum(x - x[0]) per row; sum((x - x[0] - mean_d)^2) per row; y; mean and rstd.
//   RMSNorm:   sum(x^2) per row; y; rstd.
// The shift by the row's first element is the ladder's (variants.hpp), so the numbers compare the
// same arithmetic. x crosses from memory three times for LayerNorm, twice for RMSNorm.
#include <algorithm>
#include <cstdint>
#include <string>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_for.cuh>
#include <cub/device/device_segmented_reduce.cuh>

#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

// The offset of row r's first element.
struct RowStart {
  std::int64_t features;
  __host__ __device__ std::int64_t operator()(std::int64_t row) const { return row * features; }
};

// The value element i contributes to a row statistic: x - x[row start] for the shifted sum
// (LayerNorm's first pass), (x - x[row start] - mean_d)^2 for the second, x^2 for RMSNorm's.
template <typename T>
struct RowTerm {
  enum class Kind { shifted, squared_deviation, square };
  const T* x;
  const float* shifted_sums;
  std::int64_t features;
  float inverse_count;
  Kind kind;

  __device__ float operator()(std::int64_t i) const {
    const float v = to_float(x[i]);
    if (kind == Kind::square) return v * v;
    const std::int64_t row = i / features;
    const float d = v - to_float(x[row * features]);
    if (kind == Kind::shifted) return d;
    const float deviation = d - shifted_sums[row] * inverse_count;
    return deviation * deviation;
  }
};

template <typename T>
using TermIterator = thrust::transform_iterator<RowTerm<T>, thrust::counting_iterator<std::int64_t>>;
using OffsetIterator = thrust::transform_iterator<RowStart, thrust::counting_iterator<std::int64_t>>;

template <typename T>
cudaError_t segmented_sum(void* temp, std::size_t& temp_bytes, const RowTerm<T>& term, float* out, std::int64_t rows,
                          cudaStream_t stream) {
  const TermIterator<T> in(thrust::counting_iterator<std::int64_t>(0), term);
  const OffsetIterator begin(thrust::counting_iterator<std::int64_t>(0), RowStart{term.features});
  return cub::DeviceSegmentedReduce::Sum(temp, temp_bytes, in, out, rows, begin, begin + 1, stream);
}

// y[i] from the per-row sums.
template <typename T>
struct WriteNormalized {
  NormForwardArgs<T> a;
  const float* shifted_sums;
  const float* squares;
  float inverse_count;

  __device__ void operator()(std::int64_t i) const {
    const std::int64_t row = i / a.features;
    const std::int64_t column = i - row * a.features;
    const float g = to_float(a.gamma[column]);
    if (a.norm == Norm::rms) {
      a.y[i] = from_float<T>(to_float(a.x[i]) * rsqrtf(squares[row] * inverse_count + a.eps) * g);
      return;
    }
    const float mean_d = shifted_sums[row] * inverse_count;
    const float rstd = rsqrtf(squares[row] * inverse_count + a.eps);
    const float d = to_float(a.x[i]) - to_float(a.x[row * a.features]);
    a.y[i] = from_float<T>(fmaf((d - mean_d) * rstd, g, to_float(a.beta[column])));
  }
};

template <typename T>
struct WriteStatistics {
  NormForwardArgs<T> a;
  const float* shifted_sums;
  const float* squares;
  float inverse_count;

  __device__ void operator()(std::int64_t row) const {
    if (a.norm == Norm::layer && a.mean != nullptr)
      a.mean[row] = to_float(a.x[row * a.features]) + shifted_sums[row] * inverse_count;
    if (a.rstd != nullptr) a.rstd[row] = rsqrtf(squares[row] * inverse_count + a.eps);
  }
};

// The per-row sums in front of CUB's temporary storage, each array 256-byte aligned.
std::size_t sums_bytes(std::int64_t rows) {
  return static_cast<std::size_t>((rows * static_cast<std::int64_t>(sizeof(float)) + 255) / 256 * 256);
}

template <typename T>
std::size_t temp_bytes(Norm norm, std::int64_t rows, std::int64_t features) {
  using Kind = typename RowTerm<T>::Kind;
  std::size_t most = 0;
  const auto query = [&](Kind kind) {
    std::size_t bytes = 0;
    CUDALAB_CUDA_CHECK(
        segmented_sum(nullptr, bytes, RowTerm<T>{nullptr, nullptr, features, 0.0f, kind}, nullptr, rows, nullptr));
    most = std::max(most, bytes);
  };
  if (norm == Norm::layer) {
    query(Kind::shifted);
    query(Kind::squared_deviation);
  } else {
    query(Kind::square);
  }
  return most;
}

}  // namespace

template <typename T>
std::size_t cub_unfused_workspace_bytes(Norm norm, std::int64_t rows, std::int64_t features) {
  if (rows == 0) return 0;
  return 2 * sums_bytes(rows) + temp_bytes<T>(norm, rows, features);
}

template <typename T>
void cub_unfused(const NormForwardArgs<T>& a, cudaStream_t stream) {
  const std::string why = forward_shape_limits(a.rows, a.features);
  CUDALAB_REQUIRE(why.empty(), "cub_unfused: " + why);
  if (a.rows == 0) return;
  auto* base = static_cast<unsigned char*>(
      workspace_of(a, cub_unfused_workspace_bytes<T>(a.norm, a.rows, a.features), "cub_unfused"));
  auto* shifted_sums = reinterpret_cast<float*>(base);
  auto* squares = reinterpret_cast<float*>(base + sums_bytes(a.rows));
  void* temp = base + 2 * sums_bytes(a.rows);
  std::size_t bytes = temp_bytes<T>(a.norm, a.rows, a.features);
  const float inverse_count = 1.0f / static_cast<float>(a.features);
  using Kind = typename RowTerm<T>::Kind;
  if (a.norm == Norm::layer) {
    CUDALAB_CUDA_CHECK(segmented_sum(temp, bytes, RowTerm<T>{a.x, nullptr, a.features, inverse_count, Kind::shifted},
                                     shifted_sums, a.rows, stream));
    CUDALAB_CUDA_CHECK(segmented_sum(temp, bytes,
                                     RowTerm<T>{a.x, shifted_sums, a.features, inverse_count, Kind::squared_deviation},
                                     squares, a.rows, stream));
  } else {
    CUDALAB_CUDA_CHECK(segmented_sum(temp, bytes, RowTerm<T>{a.x, nullptr, a.features, inverse_count, Kind::square},
                                     squares, a.rows, stream));
  }
  CUDALAB_CUDA_CHECK(
      cub::DeviceFor::Bulk(a.rows * a.features, WriteNormalized<T>{a, shifted_sums, squares, inverse_count}, stream));
  CUDALAB_CUDA_CHECK(cub::DeviceFor::Bulk(a.rows, WriteStatistics<T>{a, shifted_sums, squares, inverse_count}, stream));
}

#define CUDALAB_CUB_UNFUSED_WORKSPACE_BYTES(T, a, b) \
  template std::size_t cub_unfused_workspace_bytes<T>(Norm, std::int64_t, std::int64_t);
CUDALAB_NORM_ELEMENTS(CUDALAB_CUB_UNFUSED_WORKSPACE_BYTES, , )
CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, cub_unfused, NormForwardArgs)

}  // namespace cudalab::norms_variants
