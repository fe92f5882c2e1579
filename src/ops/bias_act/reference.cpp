#include "ops/bias_act/reference.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "harness/random.hpp"

namespace cudalab::harness {
namespace {

constexpr double kFp32Unit = 0x1p-24;
constexpr double kForwardEvaluation = 8;      // units of u (|y| + |v|): see reference.hpp
constexpr double kDerivativeEvaluation = 16;  // units of u |dy|
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCubic = 0.044715;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// What the backward check adds up per column: the exact dx values, their magnitudes, their
// evaluation errors, and the dx values the variant wrote and their magnitudes.
enum ColumnSum : std::size_t { kExactSum, kExactMagnitude, kEvaluation, kStoredSum, kStoredMagnitude, kColumnSums };

// What a check needs to know about the output type.
struct OutputType {
  double unit;      // unit roundoff: half an ulp, relative
  double absolute;  // half the smallest subnormal: the rounding error of the tiniest values
  double overflow;  // the smallest magnitude that rounds to infinity
};

OutputType output_type(DType dtype) {
  const double unit = traits(dtype).unit_roundoff;
  switch (dtype) {
    case DType::f16: return {unit, 0x1p-25, 0x1p16 * (1 - unit / 2)};
    case DType::bf16: return {unit, 0x1p-134, 0x1p128 * (1 - unit / 2)};
    default: return {unit, 0x1p-150, 0x1p128 * (1 - unit / 2)};
  }
}

// The value `out` is compared with: `ref`, or `out` itself when it is an infinity of ref's sign
// and the exact value is within its bound of overflowing (an overflow that rounding may give).
double comparand(double out, double ref, double bound, const OutputType& type) {
  const bool overflowed =
      std::isinf(out) && std::signbit(out) == std::signbit(ref) && std::fabs(ref) + bound >= type.overflow;
  return overflowed ? out : ref;
}

bool within(double out, double ref, double bound, const OutputType& type) {
  return Tolerance{0.0, bound}.accepts(out, comparand(out, ref, bound, type));
}

// Adds output element `index` against `ref` within `bound`.
void add_element(ComparisonBuilder& builder, std::int64_t index, double out, double ref, double bound,
                 const OutputType& type, bool unwritten) {
  builder.add_within(index, out, comparand(out, ref, bound, type), bound, unwritten);
}

double final_rounding(double error, double value, const OutputType& type) {
  return error + type.unit * (std::fabs(value) + error) + type.absolute;
}

bool is_poison(DType dtype, const void* values, std::int64_t index) {
  const std::size_t size = size_of(dtype);
  const auto* bytes = static_cast<const unsigned char*>(values) + static_cast<std::size_t>(index) * size;
  return std::all_of(bytes, bytes + size, [&](unsigned char c) { return c == poison_byte(dtype); });
}

// Outputs smaller than this are held to the elementwise bounds alone: the relative L2 error of a
// handful of values is the relative error of the largest one, and a single GELU value deep in the
// negative tail (v = -3: y = -0.004) is ill-conditioned enough that one rounding of x + bias to
// fp16 moves it by more than 1e-3. Over a thousand values the well-conditioned ones dominate.
constexpr std::int64_t kRelL2MinElements = 1024;

// cudalab's limit on relative L2 error, applied after the elementwise bounds: a tensor past it
// fails as one more mismatch, reported (when it is the first) at index -1 with the tensor's error
// as the value got and the limit as the value expected.
Comparison limit_rel_l2(Comparison c, double limit) {
  if (c.count >= kRelL2MinElements && !(c.rel_l2_error <= limit)) {
    if (c.mismatches == 0) {
      c.first_mismatch = -1;
      c.first_mismatch_out = c.rel_l2_error;
      c.first_mismatch_ref = limit;
    }
    ++c.mismatches;
  }
  return c;
}

// The merged comparison of several outputs, each already held to its limit (limit_rel_l2's extra
// mismatch carried over).
Comparison combined(const std::vector<ComparisonBuilder>& builders, const std::vector<Comparison>& limited) {
  ComparisonBuilder total(builders.front().finish().tolerance);
  std::int64_t extra = 0;
  for (std::size_t i = 0; i < builders.size(); ++i) {
    total.merge(builders[i]);
    extra += limited[i].mismatches - builders[i].finish().mismatches;
  }
  Comparison c = total.finish();
  if (extra > 0 && c.mismatches == 0) {
    for (const Comparison& l : limited) {
      if (l.mismatches > 0) {
        c.first_mismatch = l.first_mismatch;
        c.first_mismatch_out = l.first_mismatch_out;
        c.first_mismatch_ref = l.first_mismatch_ref;
        break;
      }
    }
  }
  c.mismatches += extra;
  return c;
}

ComparisonBuilder merged(const std::vector<ComparisonBuilder>& builders) {
  ComparisonBuilder total(builders.front().finish().tolerance);
  for (const ComparisonBuilder& b : builders) total.merge(b);
  return total;
}

}  // namespace

double activation_reference(Activation activation, double v) {
  switch (activation) {
    case Activation::relu: return v > 0 ? v : 0.0;
    case Activation::gelu_tanh: return 0.5 * v * (1 + std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
    case Activation::gelu_erf: return 0.5 * v * (1 + std::erf(v * kSqrtHalf));
    case Activation::silu: return v / (1 + std::exp(-v));
  }
  return NAN;
}

double activation_derivative_reference(Activation activation, double v) {
  switch (activation) {
    case Activation::relu: return v > 0 ? 1.0 : 0.0;
    case Activation::gelu_tanh: {
      const double t = std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
      return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * kSqrt2OverPi * (1 + 3 * kGeluCubic * v * v);
    }
    case Activation::gelu_erf: return 0.5 * (1 + std::erf(v * kSqrtHalf)) + v * kInvSqrt2Pi * std::exp(-0.5 * v * v);
    case Activation::silu: {
      const double s = 1 / (1 + std::exp(-v));
      return s * (1 + v * (1 - s));
    }
  }
  return NAN;
}

Comparison check_bias_act(DType dtype, Activation activation, const void* x, const void* bias, const void* y,
                          std::int64_t rows, std::int64_t features) {
  const OutputType type = output_type(dtype);
  const std::int64_t n = rows * features;
  std::vector<ComparisonBuilder> builders(static_cast<std::size_t>(parallel_workers(n)),
                                          ComparisonBuilder(Tolerance{type.unit, 0.0}));
  parallel_chunks(n, [&](int worker, std::int64_t begin, std::int64_t end) {
    ComparisonBuilder& b = builders[static_cast<std::size_t>(worker)];
    std::int64_t j = features > 0 ? begin % features : 0;
    for (std::int64_t i = begin; i < end; ++i) {
      const double v = element_to_double(dtype, x, i) + element_to_double(dtype, bias, j);
      const double ref = activation_reference(activation, v);
      const double evaluation = kForwardEvaluation * kFp32Unit * (std::fabs(ref) + std::fabs(v)) +
                                type.unit * std::fabs(v * activation_derivative_reference(activation, v));
      add_element(b, i, element_to_double(dtype, y, i), ref, final_rounding(evaluation, ref, type), type,
                  is_poison(dtype, y, i));
      if (++j == features) j = 0;
    }
  });
  return limit_rel_l2(merged(builders).finish(), output_rel_l2_limit(dtype));
}

std::size_t bias_act_backward_check_host_bytes(std::int64_t rows, std::int64_t features) {
  return static_cast<std::size_t>(parallel_workers(rows * features)) * kColumnSums *
         static_cast<std::size_t>(features) * sizeof(double);
}

Comparison check_bias_act_backward(DType dtype, Activation activation, const void* x, const void* bias, const void* dy,
                                   const void* dx, const void* dbias, std::int64_t rows, std::int64_t features) {
  const OutputType type = output_type(dtype);
  const std::int64_t n = rows * features;
  const double derivative_unit = activation == Activation::relu ? 0.0 : kDerivativeEvaluation * kFp32Unit;
  const auto workers = static_cast<std::size_t>(parallel_workers(n));
  std::vector<ComparisonBuilder> builders(workers, ComparisonBuilder(Tolerance{type.unit, 0.0}));
  // Per worker, kColumnSums values per column (ColumnSum's order).
  std::vector<std::vector<double>> columns(workers);
  parallel_chunks(n, [&](int worker, std::int64_t begin, std::int64_t end) {
    ComparisonBuilder& b = builders[static_cast<std::size_t>(worker)];
    std::vector<double>& sums = columns[static_cast<std::size_t>(worker)];
    sums.assign(kColumnSums * static_cast<std::size_t>(features), 0.0);
    std::int64_t j = features > 0 ? begin % features : 0;
    for (std::int64_t i = begin; i < end; ++i) {
      const double v = element_to_double(dtype, x, i) + element_to_double(dtype, bias, j);
      const double g = element_to_double(dtype, dy, i);
      const double ref = g * activation_derivative_reference(activation, v);
      const double evaluation = derivative_unit * std::fabs(g);
      const double out = element_to_double(dtype, dx, i);
      add_element(b, i, out, ref, final_rounding(evaluation, ref, type), type, is_poison(dtype, dx, i));
      double* column = &sums[kColumnSums * static_cast<std::size_t>(j)];
      column[kExactSum] += ref;
      column[kExactMagnitude] += std::fabs(ref);
      column[kEvaluation] += evaluation;
      column[kStoredSum] += out;
      column[kStoredMagnitude] += std::fabs(out);
      if (++j == features) j = 0;
    }
  });
  ComparisonBuilder sums(Tolerance{type.unit, 0.0});
  for (std::int64_t j = 0; j < features; ++j) {
    double total[kColumnSums] = {};
    for (const std::vector<double>& worker : columns)
      if (!worker.empty())
        for (std::size_t k = 0; k < kColumnSums; ++k) total[k] += worker[kColumnSums * static_cast<std::size_t>(j) + k];
    const double out = element_to_double(dtype, dbias, j);
    const bool unwritten = is_poison(dtype, dbias, j);
    // The sum of the exact terms, within their evaluation errors and an fp32 sum's bound.
    const Tolerance exact_order = Tolerance::fp32_sum(rows, total[kExactMagnitude]);
    const double exact_error = total[kEvaluation] + exact_order.atol + exact_order.rtol * std::fabs(total[kExactSum]);
    const double exact_bound = final_rounding(exact_error, total[kExactSum], type);
    // Or the sum of the dx values the variant wrote (rounded to T), within an fp32 sum's bound; a NaN
    // there comes from opposite infinities among them, which that sum gives too.
    const Tolerance stored_order = Tolerance::fp32_sum(rows, total[kStoredMagnitude]);
    const double stored_bound =
        final_rounding(stored_order.atol + stored_order.rtol * std::fabs(total[kStoredSum]), total[kStoredSum], type);
    if (!unwritten && std::isnan(total[kStoredSum]) && std::isnan(out)) {
      sums.add(n + j, 0.0, 0.0, false);
    } else if (!unwritten && !within(out, total[kExactSum], exact_bound, type) &&
               within(out, total[kStoredSum], stored_bound, type)) {
      add_element(sums, n + j, out, total[kStoredSum], stored_bound, type, false);
    } else {
      add_element(sums, n + j, out, total[kExactSum], exact_bound, type, unwritten);
    }
  }
  const ComparisonBuilder outputs = merged(builders);
  const double limit = output_rel_l2_limit(dtype);
  return combined({outputs, sums}, {limit_rel_l2(outputs.finish(), limit), limit_rel_l2(sums.finish(), limit)});
}

}  // namespace cudalab::harness
