#include "ops/scan/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "harness/random.hpp"

namespace cudalab::harness {
namespace {

using scan_variants::ScanKind;

// compare_elements hands each host thread a range of the output; a prefix sum at the range's
// start needs every input before it. One sequential pass records the running sums every
// kCheckpointStride elements, so each range starts from the checkpoint below it.
constexpr std::int64_t kCheckpointStride = std::int64_t{1} << 16;

// int32 sums accumulate in uint32, whose overflow is defined to wrap modulo 2^32: the same bits
// as the GPU's two's-complement int32 additions.
struct IntegerSum {
  std::uint32_t sum = 0;
  void add(std::int32_t x) { sum += static_cast<std::uint32_t>(x); }
  std::int32_t value() const {
    std::int32_t v;
    std::memcpy(&v, &sum, sizeof v);
    return v;
  }
};

struct FloatSum {
  double sum = 0.0;
  double magnitude = 0.0;  // sum of |x|, for the tolerance
  void add(float x) {
    sum += static_cast<double>(x);
    magnitude += std::fabs(static_cast<double>(x));
  }
};

template <typename Sum, typename T>
std::vector<Sum> checkpoints(const T* in, std::int64_t n) {
  // Entry k holds the sums of in[0, k * kCheckpointStride), for every such point up to n.
  std::vector<Sum> result(static_cast<std::size_t>(n / kCheckpointStride + 1));
  Sum running;
  for (std::int64_t i = 0;; ++i) {
    if (i % kCheckpointStride == 0) result[static_cast<std::size_t>(i / kCheckpointStride)] = running;
    if (i == n) return result;
    running.add(in[i]);
  }
}

// Calls element(i, sum_before_i) for i in [begin, end), sum_before_i being the sum of in[0, i).
template <typename Sum, typename T, typename Element>
void walk(const T* in, const std::vector<Sum>& marks, std::int64_t begin, std::int64_t end, Element element) {
  Sum running = marks[static_cast<std::size_t>(begin / kCheckpointStride)];
  for (std::int64_t i = begin / kCheckpointStride * kCheckpointStride; i < begin; ++i) running.add(in[i]);
  for (std::int64_t i = begin; i < end; ++i) {
    element(i, running);
    running.add(in[i]);
  }
}

}  // namespace

std::size_t check_scan_host_bytes(std::int64_t n) {
  return static_cast<std::size_t>(n / kCheckpointStride + 1) * std::max(sizeof(IntegerSum), sizeof(FloatSum));
}

Comparison check_scan(const std::int32_t* in, const std::int32_t* out, std::int64_t n, ScanKind kind) {
  const auto marks = checkpoints<IntegerSum>(in, n);
  std::int32_t poison;
  std::memset(&poison, kIntegerPoisonByte, sizeof poison);
  return compare_elements(n, Tolerance::exact(), [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
    walk(in, marks, begin, end, [&](std::int64_t i, IntegerSum before) {
      if (kind == ScanKind::inclusive) before.add(in[i]);
      const std::int32_t ref = before.value();
      b.add(i, static_cast<double>(out[i]), static_cast<double>(ref), out[i] == poison && ref != poison);
    });
  });
}

Comparison check_scan(const float* in, const float* out, std::int64_t n, ScanKind kind) {
  const auto marks = checkpoints<FloatSum>(in, n);
  FloatSum all = marks.back();
  for (std::int64_t i = n / kCheckpointStride * kCheckpointStride; i < n; ++i) all.add(in[i]);
  const Tolerance loosest = Tolerance::fp32_sum(n, all.magnitude);
  float poison;
  std::memset(&poison, kFloatPoisonByte, sizeof poison);
  return compare_elements(n, loosest, [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
    walk(in, marks, begin, end, [&](std::int64_t i, FloatSum before) {
      if (kind == ScanKind::inclusive) before.add(in[i]);
      const Tolerance own = Tolerance::fp32_sum(n, before.magnitude);
      const bool unwritten = std::memcmp(&out[i], &poison, sizeof poison) == 0;
      if (!unwritten && own.accepts(out[i], before.sum)) {
        // Within its own tolerance, hence within the loosest: b records it as a pass.
        b.add(i, static_cast<double>(out[i]), before.sum, false);
      } else {
        // A failure judged by the element's own tolerance, merged into the chunk's counts.
        ComparisonBuilder failure(own);
        failure.add(i, static_cast<double>(out[i]), before.sum, unwritten);
        b.merge(failure);
      }
    });
  });
}

}  // namespace cudalab::harness
