// Checks an output against a CPU reference computed in double. An element passes when
// |out - ref| <= atol + rtol * |ref|; NaN, infinity where the reference is finite, and elements
// still holding the poison pattern (never written) always fail. The summary also carries the
// relative L2 error and the largest absolute error, so a near miss can be told from garbage.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "cudalab/dtype.hpp"
#include "harness/random.hpp"
#include "harness/tensors.hpp"

namespace cudalab::harness {

struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;

  static Tolerance exact() { return {0.0, 0.0}; }
  // One rounding of an fp32 result: half an ulp is 2^-24 relative; allow one ulp.
  static Tolerance fp32_rounded() { return {1.0 / 8388608.0, 0.0}; }
  // One rounding to `dtype` of a value computed exactly (or in fp32 for the half types, whose own
  // rounding dominates): one ulp of the dtype, relative; exact for integers.
  static Tolerance rounded(DType dtype) { return {2.0 * traits(dtype).unit_roundoff, 0.0}; }
  // A sum of `terms` fp32 values whose magnitudes add to `sum_abs`: the worst-case bound of
  // recursive summation grows with n, tree and pairwise orders with log2(n); this allows the tree
  // bound with a factor of 2 to spare: 2 * ceil(log2 n) * eps * sum|x|.
  static Tolerance fp32_sum(std::int64_t terms, double sum_abs);
  // The same bound for a sum carried in double.
  static Tolerance fp64_sum(std::int64_t terms, double sum_abs);

  bool accepts(double out, double ref) const {
    if (std::isnan(out)) return false;
    if (std::isinf(ref) || std::isinf(out)) return out == ref;
    return std::fabs(out - ref) <= atol + rtol * std::fabs(ref);
  }
};

struct Comparison {
  std::int64_t count = 0;
  std::int64_t mismatches = 0;  // elements outside tolerance, including the two below
  std::int64_t unwritten = 0;   // still the poison pattern
  std::int64_t non_finite = 0;  // NaN or inf where the reference is finite
  std::int64_t first_mismatch = -1;
  double first_mismatch_out = 0.0;
  double first_mismatch_ref = 0.0;
  double max_abs_error = 0.0;
  double rel_l2_error = 0.0;  // ||out - ref|| / ||ref|| (0 when ref is all zeros and out too)
  Tolerance tolerance;

  bool passed() const { return mismatches == 0; }
  std::string summary() const;  // one line, for tables and failure messages
};

// The fused ops' accuracy targets for an output as a whole: relative L2 error at most
// 1e-5 in fp32, 4e-3 in bf16, 1e-3 in fp16, checked beside the per-element bounds.
double output_rel_l2_limit(DType dtype);

// An output's L2 error against such a limit: ||out - ref|| <= limit ||ref|| + ||floor||, where
// floor_i is the part of element i's bound that does not scale with |ref_i| (a 16-bit output's
// subnormal step, the error of a sum that cancels). Below the floors no relative limit can be
// met: fp16 outputs of 1e-5 round by 3e-3 of themselves, and a gradient that is exactly 0 comes
// out of the reference as 1e-11 from its inputs' rounding.
struct L2Error {
  double error_squares = 0.0, reference_squares = 0.0, floor_squares = 0.0;

  void add(double error, double reference, double floor) {
    error_squares += error * error;
    reference_squares += reference * reference;
    floor_squares += floor * floor;
  }
  void merge(const L2Error& other) {
    error_squares += other.error_squares;
    reference_squares += other.reference_squares;
    floor_squares += other.floor_squares;
  }
  bool within(double limit) const {
    return std::sqrt(error_squares) <= limit * std::sqrt(reference_squares) + std::sqrt(floor_squares);
  }
};

// Each host thread's accumulator starts a cache line of its own. Side by side in a vector and
// written for every element, accumulators sharing a line made a check on two threads take 3.5x
// the time of the same two threads on one core (check_bias_act, 2^27 elements).
inline constexpr std::size_t kHostCacheLine = 64;

// Accumulates element results; merge() lets parallel chunks combine.
class alignas(kHostCacheLine) ComparisonBuilder {
 public:
  explicit ComparisonBuilder(Tolerance tolerance) { result_.tolerance = tolerance; }
  void add(std::int64_t index, double out, double ref, bool unwritten);
  // One element held to a bound of its own, |out - ref| <= bound, in place of the builder's tolerance.
  void add_within(std::int64_t index, double out, double ref, double bound, bool unwritten);
  void merge(const ComparisonBuilder& other);
  // A part counted elsewhere (a GPU block, a loop of its own): its counts, first mismatch, largest
  // error and sums of squares.
  void merge(const Comparison& part, double error_squares, double reference_squares);
  Comparison finish() const;

 private:
  void add_judged(std::int64_t index, double out, double ref, bool unwritten, bool accepted);

  Comparison result_;
  double error_squares_ = 0.0;
  double reference_squares_ = 0.0;
};

// Calls chunk(worker, begin, end) over [0, n) split into `workers` contiguous pieces on host
// threads (fewer below ~1M elements, where threads cost more than they save). Returns the number
// of workers used; worker w gets the w-th piece.
int parallel_chunks(std::int64_t n, const std::function<void(int worker, std::int64_t begin, std::int64_t end)>& chunk);
int parallel_workers(std::int64_t n);

// Compares n outputs against ref(i), split over the host's cores. `is_poison(i)` says whether
// output i still holds the poison pattern.
Comparison compare_elements(
    std::int64_t n, Tolerance tolerance,
    const std::function<void(std::int64_t begin, std::int64_t end, ComparisonBuilder& builder)>& chunk);

// An array of T (float, int32, ...) against ref(i). An element whose bytes are all
// `poison_byte` counts as never written.
template <typename T, typename Reference>
Comparison compare_values(const T* out, std::int64_t n, Tolerance tolerance, Reference ref, unsigned char poison_byte) {
  T poison;
  std::memset(&poison, poison_byte, sizeof poison);
  return compare_elements(n, tolerance, [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
    for (std::int64_t i = begin; i < end; ++i)
      b.add(i, static_cast<double>(out[i]), ref(i), std::memcmp(&out[i], &poison, sizeof poison) == 0);
  });
}

// A tensor's host copy against ref(i), whatever its dtype; its dtype's poison pattern marks the
// elements never written.
template <typename Reference>
Comparison compare_tensor(const Tensor& out, Tolerance tolerance, Reference ref) {
  const unsigned char poison = poison_byte(out.dtype());
  const std::size_t size = size_of(out.dtype());
  const auto* bytes = static_cast<const unsigned char*>(out.host());
  return compare_elements(out.count(), tolerance, [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
    for (std::int64_t i = begin; i < end; ++i) {
      const unsigned char* element = bytes + static_cast<std::size_t>(i) * size;
      const bool unwritten = std::all_of(element, element + size, [&](unsigned char c) { return c == poison; });
      b.add(i, out.host_value(i), ref(i), unwritten);
    }
  });
}

// An output of any float dtype checked element by element against a reference computed in double,
// each within an evaluation error the caller derives plus the final rounding to the dtype (one unit
// roundoff of |ref| + that error, and half the dtype's smallest subnormal step); an infinity of
// ref's sign passes where the exact value lies within its bound of the dtype's overflow threshold.
struct RoundedOutput {
  const Tensor& out;
  double unit = traits(out.dtype()).unit_roundoff;
  double overflow = out.dtype() == DType::f16    ? 65520.0
                    : out.dtype() == DType::bf16 ? 0x1p128 * (1 - 0x1p-9)
                                                 : 0x1p128 * (1 - 0x1p-25);
  double absolute = out.dtype() == DType::f16 ? 0x1p-25 : out.dtype() == DType::bf16 ? 0x1p-134 : 0x1p-150;

  void add(ComparisonBuilder& builder, std::int64_t i, double ref, double evaluation_error) const {
    const double bound = evaluation_error + unit * (std::fabs(ref) + evaluation_error) + absolute;
    const double value = out.host_value(i);
    const bool overflowed =
        std::isinf(value) && std::signbit(value) == std::signbit(ref) && std::fabs(ref) + bound >= overflow;
    builder.add_within(i, value, overflowed ? value : ref, bound, unwritten(i));
  }

  // Whether element i still holds its dtype's poison pattern.
  bool unwritten(std::int64_t i) const {
    const std::size_t size = size_of(out.dtype());
    const auto* element = static_cast<const unsigned char*>(out.host()) + static_cast<std::size_t>(i) * size;
    return std::all_of(element, element + size, [&](unsigned char c) { return c == poison_byte(out.dtype()); });
  }
};

// The common case: an fp32 array whose poison is NaN (0xFF bytes).
template <typename Reference>
Comparison compare_fp32(const float* out, std::int64_t n, Tolerance tolerance, Reference ref) {
  return compare_values(out, n, tolerance, ref, 0xFF);
}

}  // namespace cudalab::harness
