#include "harness/compare.hpp"

#include <algorithm>
#include <limits>
#include <thread>
#include <vector>

#include "core/format.hpp"

namespace cudalab::harness {

namespace {
Tolerance sum_tolerance(std::int64_t terms, double sum_abs, double eps) {
  const double depth = terms > 1 ? std::ceil(std::log2(static_cast<double>(terms))) : 1.0;
  return {eps, 2.0 * depth * eps * sum_abs};
}
}  // namespace

double output_rel_l2_limit(DType dtype) {
  switch (dtype) {
    case DType::bf16: return 4e-3;
    case DType::f16: return 1e-3;
    default: return 1e-5;
  }
}

Tolerance Tolerance::fp32_sum(std::int64_t terms, double sum_abs) {
  return sum_tolerance(terms, sum_abs, std::numeric_limits<float>::epsilon());
}

Tolerance Tolerance::fp64_sum(std::int64_t terms, double sum_abs) {
  return sum_tolerance(terms, sum_abs, std::numeric_limits<double>::epsilon());
}

void ComparisonBuilder::add(std::int64_t index, double out, double ref, bool unwritten) {
  add_judged(index, out, ref, unwritten, result_.tolerance.accepts(out, ref));
}

void ComparisonBuilder::add_within(std::int64_t index, double out, double ref, double bound, bool unwritten) {
  add_judged(index, out, ref, unwritten, Tolerance{0.0, bound}.accepts(out, ref));
}

void ComparisonBuilder::add_judged(std::int64_t index, double out, double ref, bool unwritten, bool accepted) {
  Comparison& r = result_;
  ++r.count;
  const bool finite_ref = std::isfinite(ref);
  if (finite_ref) reference_squares_ += ref * ref;
  const bool bad = unwritten || !accepted;
  if (unwritten) {
    ++r.unwritten;
  } else if (!std::isfinite(out) && finite_ref) {
    ++r.non_finite;
  } else if (finite_ref) {
    const double error = std::fabs(out - ref);
    r.max_abs_error = std::max(r.max_abs_error, error);
    error_squares_ += error * error;
  }
  if (bad) {
    if (r.mismatches == 0 || index < r.first_mismatch) {
      r.first_mismatch = index;
      r.first_mismatch_out = out;
      r.first_mismatch_ref = ref;
    }
    ++r.mismatches;
  }
}

void ComparisonBuilder::merge(const ComparisonBuilder& other) {
  merge(other.result_, other.error_squares_, other.reference_squares_);
}

void ComparisonBuilder::merge(const Comparison& o, double error_squares, double reference_squares) {
  Comparison& r = result_;
  if (o.mismatches > 0 && (r.mismatches == 0 || o.first_mismatch < r.first_mismatch)) {
    r.first_mismatch = o.first_mismatch;
    r.first_mismatch_out = o.first_mismatch_out;
    r.first_mismatch_ref = o.first_mismatch_ref;
  }
  r.count += o.count;
  r.mismatches += o.mismatches;
  r.unwritten += o.unwritten;
  r.non_finite += o.non_finite;
  r.max_abs_error = std::max(r.max_abs_error, o.max_abs_error);
  error_squares_ += error_squares;
  reference_squares_ += reference_squares;
}

Comparison ComparisonBuilder::finish() const {
  Comparison r = result_;
  if (reference_squares_ > 0.0) {
    r.rel_l2_error = std::sqrt(error_squares_ / reference_squares_);
  } else {
    r.rel_l2_error = error_squares_ > 0.0 ? std::numeric_limits<double>::infinity() : 0.0;
  }
  return r;
}

std::string Comparison::summary() const {
  if (passed()) {
    return "ok: " + std::to_string(count) + " elements, rel L2 " + format_scientific(rel_l2_error, 2) + ", max abs " +
           format_scientific(max_abs_error, 2);
  }
  std::string text =
      "FAILED: " + std::to_string(mismatches) + " of " + std::to_string(count) + " elements out of tolerance";
  if (unwritten > 0) text += " (" + std::to_string(unwritten) + " never written)";
  if (non_finite > 0) text += " (" + std::to_string(non_finite) + " NaN/inf)";
  text += "; first at " + std::to_string(first_mismatch) + ": got " + format_general(first_mismatch_out) +
          ", expected " + format_general(first_mismatch_ref);
  return text;
}

int parallel_workers(std::int64_t n) {
  const std::int64_t min_chunk = 1 << 20;
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(hardware, n / min_chunk)));
}

int parallel_chunks(std::int64_t n, const std::function<void(int, std::int64_t, std::int64_t)>& chunk) {
  const int workers = parallel_workers(n);
  const std::int64_t per_worker = (n + workers - 1) / workers;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    const std::int64_t begin = std::min(n, w * per_worker);
    const std::int64_t end = std::min(n, begin + per_worker);
    if (w + 1 == workers) {
      chunk(w, begin, end);
    } else {
      threads.emplace_back([&chunk, w, begin, end] { chunk(w, begin, end); });
    }
  }
  for (auto& thread : threads) thread.join();
  return workers;
}

Comparison compare_elements(std::int64_t n, Tolerance tolerance,
                            const std::function<void(std::int64_t, std::int64_t, ComparisonBuilder&)>& chunk) {
  std::vector<ComparisonBuilder> builders(static_cast<std::size_t>(parallel_workers(n)), ComparisonBuilder(tolerance));
  parallel_chunks(n, [&](int worker, std::int64_t begin, std::int64_t end) {
    chunk(begin, end, builders[static_cast<std::size_t>(worker)]);
  });
  ComparisonBuilder total(tolerance);
  for (const auto& builder : builders) total.merge(builder);
  return total.finish();
}

}  // namespace cudalab::harness
