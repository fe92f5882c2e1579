#include "ops/norms/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "harness/random.hpp"
#include "harness/widen.hpp"

namespace cudalab::harness {
namespace {

using norms_variants::Norm;

constexpr double kUnit = 1.0 / 16777216.0;  // 2^-24: fp32's unit roundoff

// The error of an fp32 sum of n terms of total magnitude m, in any tree or chained order the
// kernels use: Tolerance::fp32_sum's 2 ceil(log2 n) eps m, plus the terms' own rounding.
double sum_bound(std::int64_t n, double magnitude) {
  const double levels = n > 1 ? std::ceil(std::log2(static_cast<double>(n))) : 1.0;
  return (2.0 * levels + 2.0) * 2.0 * kUnit * magnitude;
}

// The last rounding, to the output's dtype: its unit roundoff and half its smallest subnormal.
struct OutputRounding {
  double unit;
  double absolute;
};

OutputRounding rounding_of(DType dtype) {
  switch (dtype) {
    case DType::f16: return {std::ldexp(1.0, -11), std::ldexp(1.0, -25)};
    case DType::bf16: return {std::ldexp(1.0, -8), std::ldexp(1.0, -134)};
    default: return {kUnit, std::ldexp(1.0, -150)};
  }
}

// The bound on an output whose fp32 computation is off by at most `error` from `reference`:
// twice the error, for slack, then rounded to the output's dtype.
double output_bound(double error, double reference, OutputRounding rounding) {
  return 2.0 * error + rounding.unit * (std::fabs(reference) + 2.0 * error) + rounding.absolute;
}

bool is_poison(const void* data, std::size_t element_size, std::int64_t i) {
  const auto* bytes = static_cast<const unsigned char*>(data) + static_cast<std::size_t>(i) * element_size;
  return std::all_of(bytes, bytes + element_size, [](unsigned char b) { return b == kFloatPoisonByte; });
}

// One output's elements against per-element bounds, and its relative L2 error.
class alignas(kHostCacheLine) BoundedCheck {  // a cache line of its own: one per host thread
 public:
  // `floor`: the part of `bound` that does not scale with |reference| (a 16-bit output's
  // subnormal step), excused from the L2 limit as it is in the softmax check.
  void add(std::int64_t index, double out, double reference, double bound, bool unwritten, double floor = 0.0) {
    max_bound_ = std::max(max_bound_, bound);
    const double error = std::fabs(out - reference);
    if (!unwritten && std::isfinite(out)) l2_.add(error, reference, floor);
    if (!unwritten && std::isfinite(out) && error <= bound) {
      passed_.add(index, out, reference, false);
    } else {
      // The bound decided; a tolerance nothing meets records the failure with its kind.
      ComparisonBuilder failure(Tolerance{-1.0, -1.0});
      failure.add(index, out, reference, unwritten);
      passed_.merge(failure);
    }
    if (!unwritten && std::isfinite(out) && error > worst_error_) {
      worst_error_ = error;
      worst_ = {index, out, reference};
    }
  }

  void merge(const BoundedCheck& other) {
    passed_.merge(other.passed_);
    max_bound_ = std::max(max_bound_, other.max_bound_);
    l2_.merge(other.l2_);
    if (other.worst_error_ > worst_error_) {
      worst_error_ = other.worst_error_;
      worst_ = other.worst_;
    }
  }

  // rel_l2_limit 0: none. An L2 error past the limit (L2Error), with every element in bounds,
  // reports the element of largest error as the one mismatch (an fp16 dx of 6.6e-6, subnormal,
  // rounded by 2.6e-8 = 4e-3 relative failed the bare 1e-3 limit on an H100).
  Comparison finish(double rel_l2_limit) const {
    Comparison c = passed_.finish();
    c.tolerance = {0.0, max_bound_};
    if (rel_l2_limit > 0.0 && !l2_.within(rel_l2_limit) && c.mismatches == 0) {
      c.mismatches = 1;
      c.first_mismatch = worst_.index;
      c.first_mismatch_out = worst_.out;
      c.first_mismatch_ref = worst_.reference;
    }
    return c;
  }

 private:
  struct Element {
    std::int64_t index = -1;
    double out = 0.0;
    double reference = 0.0;
  };
  ComparisonBuilder passed_{Tolerance{0.0, std::numeric_limits<double>::infinity()}};
  double max_bound_ = 0.0;
  L2Error l2_;
  double worst_error_ = -1.0;
  Element worst_;
};

Comparison combine(const std::vector<Comparison>& parts) {
  Comparison total;
  std::int64_t offset = 0;
  double max_bound = 0.0;
  for (const Comparison& part : parts) {
    if (part.mismatches > 0 && total.mismatches == 0) {
      total.first_mismatch = offset + part.first_mismatch;
      total.first_mismatch_out = part.first_mismatch_out;
      total.first_mismatch_ref = part.first_mismatch_ref;
    }
    total.count += part.count;
    total.mismatches += part.mismatches;
    total.unwritten += part.unwritten;
    total.non_finite += part.non_finite;
    total.max_abs_error = std::max(total.max_abs_error, part.max_abs_error);
    total.rel_l2_error = std::max(total.rel_l2_error, part.rel_l2_error);
    max_bound = std::max(max_bound, part.tolerance.atol);
    offset += part.count;
  }
  total.tolerance = {0.0, max_bound};
  return total;
}

// Calls row(worker, r) for every row, the rows split over host threads by their elements;
// returns the number of workers (row_workers(rows, features)).
std::int64_t row_elements(std::int64_t rows, std::int64_t features) {
  return rows * std::max<std::int64_t>(features, 1);
}
int row_workers(std::int64_t rows, std::int64_t features) { return parallel_workers(row_elements(rows, features)); }

template <typename Row>
int for_each_row(std::int64_t rows, std::int64_t features, Row row) {
  const std::int64_t width = std::max<std::int64_t>(features, 1);
  return parallel_chunks(row_elements(rows, features), [&](int worker, std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = (begin + width - 1) / width; r < rows && r * width < end; ++r) row(worker, r);
  });
}

// Per-output checks, one per worker, merged in worker order.
class OutputChecks {
 public:
  OutputChecks(std::size_t outputs, int workers)
      : by_output_(outputs, std::vector<BoundedCheck>(static_cast<std::size_t>(workers))) {}
  BoundedCheck& at(std::size_t output, int worker) { return by_output_[output][static_cast<std::size_t>(worker)]; }
  Comparison finish(std::size_t output, double rel_l2_limit) const {
    BoundedCheck total;
    for (const BoundedCheck& b : by_output_[output]) total.merge(b);
    return total.finish(rel_l2_limit);
  }

 private:
  std::vector<std::vector<BoundedCheck>> by_output_;
};

}  // namespace

// The add_ forms' sum as the kernels form it: x + residual in fp32, rounded once to the dtype,
// checked bit for bit against the sum written. Returns the host sum, which the forward check then
// normalizes in place of x.
std::vector<unsigned char> residual_sum(const NormForwardHost& h, Comparison& sum_check) {
  const std::int64_t count = h.rows * h.features;
  const std::size_t size = size_of(h.dtype);
  std::vector<unsigned char> sum(static_cast<std::size_t>(count) * size);
  std::vector<BoundedCheck> checks(static_cast<std::size_t>(parallel_workers(count)));
  parallel_chunks(count, [&](int worker, std::int64_t begin, std::int64_t end) {
    BoundedCheck& check = checks[static_cast<std::size_t>(worker)];
    for (std::int64_t i = begin; i < end; ++i) {
      const float x = static_cast<float>(element_to_double(h.dtype, h.x, i));
      const float r = static_cast<float>(element_to_double(h.dtype, h.residual, i));
      element_from_double(h.dtype, static_cast<double>(x + r), sum.data(), i);
      const double reference = element_to_double(h.dtype, sum.data(), i);
      check.add(i, element_to_double(h.dtype, h.residual_out, i), reference, 0.0, is_poison(h.residual_out, size, i));
    }
  });
  BoundedCheck total;
  for (const BoundedCheck& check : checks) total.merge(check);
  sum_check = total.finish(0.0);
  return sum;
}

Comparison check_norm_forward(const NormForwardHost& given) {
  NormForwardHost h = given;
  Comparison sum_check;
  std::vector<unsigned char> sum;
  if (given.residual != nullptr) {
    sum = residual_sum(given, sum_check);
    h.x = sum.data();
  }
  const bool layer = h.norm == Norm::layer;
  const std::int64_t f = h.features;
  const double count = static_cast<double>(f);
  const double eps = static_cast<float>(h.eps);  // what the kernels add
  const OutputRounding out_rounding = rounding_of(h.dtype);
  const OutputRounding f32_rounding = rounding_of(DType::f32);
  const std::size_t size = size_of(h.dtype);
  enum { kY, kMean, kRstd, kOutputs };
  const int workers = row_workers(h.rows, f);
  OutputChecks checks(kOutputs, workers);
  const auto value = [&](const void* data, std::int64_t i) { return element_to_double(h.dtype, data, i); };
  // Each value widened once: gamma and beta for all rows, x a row at a time into its worker's buffer.
  const std::vector<double> gamma = widened(h.dtype, h.gamma, 0, f);
  const std::vector<double> beta = layer ? widened(h.dtype, h.beta, 0, f) : std::vector<double>();
  std::vector<std::vector<double>> rows_x(static_cast<std::size_t>(workers));
  for_each_row(h.rows, f, [&](int worker, std::int64_t r) {
    const std::int64_t base = r * f;
    std::vector<double>& row = rows_x[static_cast<std::size_t>(worker)];
    widen_into(row, h.dtype, h.x, base, f);
    const double pivot = layer && f > 0 ? row[0] : 0.0;
    double mean_d = 0.0, mean_error = 0.0, rstd = 0.0, rstd_relative_error = 0.0;
    if (layer) {
      double sum = 0.0, magnitude = 0.0;
      for (std::int64_t j = 0; j < f; ++j) {
        const double d = row[j] - pivot;
        sum += d;
        magnitude += std::fabs(d);
      }
      mean_d = sum / count;
      mean_error = sum_bound(f, magnitude) / count + 2.0 * kUnit * std::fabs(mean_d);
      double squares = 0.0, deviations = 0.0, weighted = 0.0;
      for (std::int64_t j = 0; j < f; ++j) {
        const double d = row[j] - pivot;
        const double deviation = d - mean_d;
        squares += deviation * deviation;
        deviations += std::fabs(deviation);
        weighted += std::fabs(deviation) * std::fabs(d);
      }
      const double squares_error = 2.0 * mean_error * deviations + count * mean_error * mean_error +
                                   2.0 * kUnit * weighted + sum_bound(f, squares) + 2.0 * kUnit * squares;
      const double var = squares / count;
      const double v = var + eps;
      const double v_error = squares_error / count + 2.0 * kUnit * var + kUnit * v + kUnit * eps;
      rstd = 1.0 / std::sqrt(v);
      rstd_relative_error = 0.5 * v_error / v + 4.0 * kUnit;
    } else {
      double squares = 0.0;
      for (std::int64_t j = 0; j < f; ++j) squares += row[j] * row[j];
      const double mean_square = squares / count;
      const double v = mean_square + eps;
      const double v_error = sum_bound(f, squares) / count + 2.0 * kUnit * mean_square + kUnit * v + kUnit * eps;
      rstd = 1.0 / std::sqrt(v);
      rstd_relative_error = 0.5 * v_error / v + 4.0 * kUnit;
    }
    BoundedCheck& y = checks.at(kY, worker);
    for (std::int64_t j = 0; j < f; ++j) {
      const double x = row[j];
      const double g = gamma[j];
      double reference = 0.0, error = 0.0;
      if (layer) {
        const double b = beta[j];
        const double d = x - pivot;
        const double deviation = d - mean_d;
        reference = deviation * rstd * g + b;
        error = std::fabs(g) * rstd * (kUnit * std::fabs(d) + mean_error) +
                std::fabs(deviation * rstd * g) * (rstd_relative_error + 3.0 * kUnit) +
                kUnit * (std::fabs(b) + std::fabs(reference));
      } else {
        reference = x * rstd * g;
        error = std::fabs(reference) * (rstd_relative_error + 3.0 * kUnit);
      }
      y.add(base + j, value(h.y, base + j), reference, output_bound(error, reference, out_rounding),
            is_poison(h.y, size, base + j), out_rounding.absolute);
    }
    if (layer) {
      const double mean = pivot + mean_d;
      checks.at(kMean, worker)
          .add(r, h.mean[r], mean, output_bound(mean_error + kUnit * std::fabs(mean), mean, f32_rounding),
               is_poison(h.mean, sizeof(float), r));
    }
    checks.at(kRstd, worker)
        .add(r, h.rstd[r], rstd, output_bound(rstd * rstd_relative_error, rstd, f32_rounding),
             is_poison(h.rstd, sizeof(float), r));
  });
  std::vector<Comparison> parts = {checks.finish(kY, output_rel_l2_limit(h.dtype))};
  if (given.residual != nullptr) parts.push_back(sum_check);
  if (layer) parts.push_back(checks.finish(kMean, 0.0));
  parts.push_back(checks.finish(kRstd, output_rel_l2_limit(DType::f32)));
  return combine(parts);
}

Comparison check_norm_backward(const NormBackwardHost& h) {
  const bool layer = h.norm == Norm::layer;
  const std::int64_t f = h.features;
  const double count = static_cast<double>(f);
  const OutputRounding out_rounding = rounding_of(h.dtype);
  const std::size_t size = size_of(h.dtype);
  const auto value = [&](const void* data, std::int64_t i) { return element_to_double(h.dtype, data, i); };
  // Column sums of dy * xhat and dy and their magnitudes, per worker.
  struct Columns {
    std::vector<double> dgamma, dgamma_magnitude, dbeta, dbeta_magnitude;
  };
  const std::size_t width = static_cast<std::size_t>(f);
  const int workers = row_workers(h.rows, f);
  std::vector<Columns> columns(static_cast<std::size_t>(workers));
  OutputChecks dx_checks(1, workers);
  // Each value widened once: gamma for all rows, x and dy a row at a time into the worker's buffers.
  const std::vector<double> gamma = widened(h.dtype, h.gamma, 0, f);
  std::vector<std::vector<double>> rows_x(static_cast<std::size_t>(workers)), rows_dy(rows_x.size());
  for_each_row(h.rows, f, [&](int worker, std::int64_t r) {
    Columns& c = columns[static_cast<std::size_t>(worker)];
    if (c.dgamma.empty())
      c = {std::vector<double>(width), std::vector<double>(width), std::vector<double>(width),
           std::vector<double>(width)};
    const std::int64_t base = r * f;
    std::vector<double>& x = rows_x[static_cast<std::size_t>(worker)];
    std::vector<double>& dys = rows_dy[static_cast<std::size_t>(worker)];
    widen_into(x, h.dtype, h.x, base, f);
    widen_into(dys, h.dtype, h.dy, base, f);
    const double mean = layer ? h.mean[r] : 0.0;
    const double rstd = h.rstd[r];
    double sum = 0.0, sum_magnitude = 0.0, sum_xhat = 0.0, sum_xhat_magnitude = 0.0;
    for (std::int64_t j = 0; j < f; ++j) {
      const double xhat = (x[j] - mean) * rstd;
      const double dy = dys[j];
      const double a = gamma[j] * dy;
      sum += a;
      sum_magnitude += std::fabs(a);
      sum_xhat += a * xhat;
      sum_xhat_magnitude += std::fabs(a * xhat);
      const auto column = static_cast<std::size_t>(j);
      c.dgamma[column] += dy * xhat;
      c.dgamma_magnitude[column] += std::fabs(dy * xhat);
      c.dbeta[column] += dy;
      c.dbeta_magnitude[column] += std::fabs(dy);
    }
    // xhat is off by 2u relative for LayerNorm (the subtraction, the product), u for RMSNorm.
    const double xhat_unit = layer ? 2.0 * kUnit : kUnit;
    const double c1 = layer ? sum / count : 0.0;
    const double c2 = sum_xhat / count;
    const double c1_error =
        layer ? (sum_bound(f, sum_magnitude) + kUnit * sum_magnitude) / count + 2.0 * kUnit * std::fabs(c1) : 0.0;
    const double c2_error = (sum_bound(f, sum_xhat_magnitude) + (kUnit + xhat_unit) * sum_xhat_magnitude) / count +
                            2.0 * kUnit * std::fabs(c2);
    BoundedCheck& dx = dx_checks.at(0, worker);
    for (std::int64_t j = 0; j < f; ++j) {
      const double xhat = (x[j] - mean) * rstd;
      const double a = gamma[j] * dys[j];
      const double gradient = rstd * (a - c1 - xhat * c2);
      double error = rstd * (kUnit * std::fabs(a) + c1_error + std::fabs(xhat) * c2_error +
                             std::fabs(c2) * xhat_unit * std::fabs(xhat)) +
                     4.0 * kUnit * rstd * (std::fabs(a) + std::fabs(c1) + std::fabs(xhat * c2));
      // The add_ forms: the residual's gradient added in fp32, one more rounding.
      const double dresidual = h.dresidual != nullptr ? value(h.dresidual, base + j) : 0.0;
      const double reference = gradient + dresidual;
      if (h.dresidual != nullptr) error += kUnit * (std::fabs(gradient) + std::fabs(dresidual) + error);
      // Every term of `error` is an fp32 rounding of a, c1 or xhat c2, which may cancel: in a
      // one-feature row a - c1 is exactly 0, where a kernel that contracts gamma * dy - c1 into
      // one FMA keeps a's rounding, up to 2^-24 |a|. Only the output's last rounding scales with
      // |reference|; the rest is the L2 limit's floor (compare.hpp).
      const double bound = output_bound(error, reference, out_rounding);
      dx.add(base + j, value(h.dx, base + j), reference, bound, is_poison(h.dx, size, base + j),
             bound - out_rounding.unit * std::fabs(reference));
    }
  });
  BoundedCheck dgamma_check, dbeta_check;
  const double xhat_unit = layer ? 2.0 * kUnit : kUnit;
  for (std::int64_t j = 0; j < f; ++j) {
    double dgamma = 0.0, dgamma_magnitude = 0.0, dbeta = 0.0, dbeta_magnitude = 0.0;
    for (const Columns& c : columns) {
      if (c.dgamma.empty()) continue;
      const auto column = static_cast<std::size_t>(j);
      dgamma += c.dgamma[column];
      dgamma_magnitude += c.dgamma_magnitude[column];
      dbeta += c.dbeta[column];
      dbeta_magnitude += c.dbeta_magnitude[column];
    }
    const double dgamma_error = sum_bound(h.rows, dgamma_magnitude) + (kUnit + xhat_unit) * dgamma_magnitude;
    dgamma_check.add(j, value(h.dgamma, j), dgamma, output_bound(dgamma_error, dgamma, out_rounding),
                     is_poison(h.dgamma, size, j));
    if (layer)
      dbeta_check.add(j, value(h.dbeta, j), dbeta,
                      output_bound(sum_bound(h.rows, dbeta_magnitude), dbeta, out_rounding),
                      is_poison(h.dbeta, size, j));
  }
  std::vector<Comparison> parts = {dx_checks.finish(0, output_rel_l2_limit(h.dtype)), dgamma_check.finish(0.0)};
  if (layer) parts.push_back(dbeta_check.finish(0.0));
  return combine(parts);
}

}  // namespace cudalab::harness
