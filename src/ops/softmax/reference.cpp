#include "ops/softmax/reference.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "harness/random.hpp"
#include "harness/widen.hpp"

namespace cudalab::harness {
namespace {

constexpr double kUnit = 0x1p-24;  // one fp32 rounding, relative

// The absolute floor reference.hpp explains: fp32's and bf16's smallest normal, fp16's subnormal step.
double absolute_floor(DType dtype) { return dtype == DType::f16 ? 0x1p-24 : 0x1p-126; }

// One unit in the last place of a 16-bit output, relative; 0 for fp32, whose last rounding the
// arithmetic bound counts.
double output_ulp(DType dtype) { return dtype == DType::f32 ? 0.0 : 2.0 * traits(dtype).unit_roundoff; }

double tree_depth(std::int64_t n) { return n > 1 ? std::ceil(std::log2(static_cast<double>(n))) : 1.0; }

// Element verdicts with a bound of their own, gathered by one worker over a contiguous range.
struct alignas(kHostCacheLine) Tally {  // a cache line of its own: one per host thread
  Comparison result;
  L2Error l2;
  std::int64_t worst = -1;  // the finite element with the largest error
  double worst_error = -1.0, worst_out = 0.0, worst_ref = 0.0;

  // `bound` is the element's whole allowance; `floor` its part that does not scale with |ref| (the
  // output's subnormal step, a cancelling dot product's error), excused from the L2 limit.
  void add(std::int64_t index, double out, double ref, double bound, double floor, bool unwritten) {
    ++result.count;
    const bool finite = std::isfinite(out);
    const double error = std::fabs(out - ref);
    if (unwritten) {
      ++result.unwritten;
    } else if (!finite) {
      ++result.non_finite;
    } else {
      l2.add(error, ref, floor);
      result.max_abs_error = std::max(result.max_abs_error, error);
      if (error > worst_error) {
        worst = index;
        worst_error = error;
        worst_out = out;
        worst_ref = ref;
      }
    }
    if (unwritten || !finite || !(error <= bound)) {
      if (result.mismatches++ == 0) {
        result.first_mismatch = index;
        result.first_mismatch_out = out;
        result.first_mismatch_ref = ref;
      }
    }
  }
};

bool is_poison(DType dtype, const void* values, std::int64_t index) {
  const std::size_t size = size_of(dtype);
  const auto* element = static_cast<const unsigned char*>(values) + static_cast<std::size_t>(index) * size;
  return std::all_of(element, element + size, [&](unsigned char c) { return c == poison_byte(dtype); });
}

// Runs check_row(row, tally) for every row, in parallel, and combines the workers' tallies (their
// ranges are in order, so the first worker with a mismatch holds the first one). An L2 error past
// the dtype's limit (L2Error) fails the check even when every element is inside its bound: the
// element with the largest error is then reported as the mismatch. Every rung and cuDNN failed the
// bare relative limit on an H100 at fp16 outputs near 1e-5 and at softmax gradients of a constant dy.
template <typename CheckRow>
Comparison check_rows(DType dtype, std::int64_t rows, std::int64_t features, Tolerance shown, CheckRow check_row) {
  const std::int64_t n = rows * features;
  Comparison total;
  total.tolerance = shown;
  if (n == 0) return total;
  std::vector<Tally> tallies(static_cast<std::size_t>(parallel_workers(n)));
  parallel_chunks(n, [&](int worker, std::int64_t begin, std::int64_t end) {
    Tally& tally = tallies[static_cast<std::size_t>(worker)];
    for (std::int64_t row = (begin + features - 1) / features; row * features < end; ++row) check_row(row, tally);
  });
  L2Error l2;
  const Tally* worst = nullptr;
  for (const Tally& t : tallies) {
    if (t.result.mismatches > 0 && total.mismatches == 0) {
      total.first_mismatch = t.result.first_mismatch;
      total.first_mismatch_out = t.result.first_mismatch_out;
      total.first_mismatch_ref = t.result.first_mismatch_ref;
    }
    total.count += t.result.count;
    total.mismatches += t.result.mismatches;
    total.unwritten += t.result.unwritten;
    total.non_finite += t.result.non_finite;
    total.max_abs_error = std::max(total.max_abs_error, t.result.max_abs_error);
    l2.merge(t.l2);
    if (t.worst >= 0 && (worst == nullptr || t.worst_error > worst->worst_error)) worst = &t;
  }
  total.rel_l2_error = l2.reference_squares > 0.0 ? std::sqrt(l2.error_squares / l2.reference_squares)
                                                  : (l2.error_squares > 0.0 ? INFINITY : 0.0);
  if (!l2.within(output_rel_l2_limit(dtype)) && total.mismatches == 0 && worst != nullptr) {
    total.mismatches = 1;
    total.first_mismatch = worst->worst;
    total.first_mismatch_out = worst->worst_out;
    total.first_mismatch_ref = worst->worst_ref;
  }
  return total;
}

}  // namespace

Comparison check_softmax(DType dtype, const void* x, const void* y, std::int64_t rows, std::int64_t features) {
  const double depth = tree_depth(features);
  const double atol = absolute_floor(dtype);
  const double ulp = output_ulp(dtype);
  const Tolerance shown{2 * kUnit * (4 * depth + 19) + ulp, atol};  // the bound at d = W = 0
  return check_rows(dtype, rows, features, shown, [&](std::int64_t row, Tally& tally) {
    const std::int64_t first = row * features;
    const std::vector<double> xs = widened(dtype, x, first, features);
    std::vector<double> e(static_cast<std::size_t>(features));
    double max = -INFINITY;
    for (const double v : xs) max = std::max(max, v);
    double sum = 0.0, weighted = 0.0;
    for (std::int64_t j = 0; j < features; ++j) {
      const double d = max - xs[static_cast<std::size_t>(j)];
      e[static_cast<std::size_t>(j)] = std::exp(-d);
      sum += e[static_cast<std::size_t>(j)];
      weighted += e[static_cast<std::size_t>(j)] * d;
    }
    const double w = weighted / sum;
    for (std::int64_t j = 0; j < features; ++j) {
      const std::int64_t i = first + j;
      const double d = max - xs[static_cast<std::size_t>(j)];
      const double ref = e[static_cast<std::size_t>(j)] / sum;
      const double rtol = 2 * kUnit * (3 * d + 3 * w + 4 * depth + 19) + ulp;
      tally.add(i, element_to_double(dtype, y, i), ref, atol + rtol * ref, atol, is_poison(dtype, y, i));
    }
  });
}

Comparison check_softmax_backward(DType dtype, const void* y, const void* dy, const void* dx, std::int64_t rows,
                                  std::int64_t features) {
  const double depth = tree_depth(features);
  const double atol = absolute_floor(dtype);
  const double ulp = output_ulp(dtype);
  const Tolerance shown{4 * kUnit + ulp, atol};  // the relative part; each row adds |y_j| times its dot's bound
  return check_rows(dtype, rows, features, shown, [&](std::int64_t row, Tally& tally) {
    const std::int64_t first = row * features;
    const std::vector<double> ys = widened(dtype, y, first, features);
    const std::vector<double> dys = widened(dtype, dy, first, features);
    double dot = 0.0, magnitude = 0.0;
    for (std::size_t j = 0; j < ys.size(); ++j) {
      const double product = ys[j] * dys[j];
      dot += product;
      magnitude += std::fabs(product);
    }
    const double dot_error = (4 * depth + 1) * kUnit * magnitude;
    for (std::int64_t i = first; i < first + features; ++i) {
      const auto j = static_cast<std::size_t>(i - first);
      const double yi = ys[j];
      const double ref = yi * (dys[j] - dot);
      const double floor = atol + 2 * std::fabs(yi) * dot_error;
      const double bound = floor + (4 * kUnit + ulp) * std::fabs(ref);
      tally.add(i, element_to_double(dtype, dx, i), ref, bound, floor, is_poison(dtype, dx, i));
    }
  });
}

}  // namespace cudalab::harness
