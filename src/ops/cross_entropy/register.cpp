// The cross-entropy ops: `cross_entropy` (loss, lse and the gradient in one call) and
// `cross_entropy_backward` (the gradient from lse), over logits [rows, vocab] in f32, bf16 and f16
// with int64 targets. Their tensors, double-precision checks with error bounds derived from the
// kernels' fp32 evaluation order, work models and ladders.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cudalab/cross_entropy.hpp"
#include "harness/registry.hpp"
#include "harness/widen.hpp"
#include "ops/cross_entropy/inputs.hpp"
#include "ops/cross_entropy/variants.hpp"
#include "ops/softmax/inputs.hpp"

namespace cudalab::harness {
namespace {

namespace v = cross_entropy_variants;
using Elements = CrossEntropyElements;

constexpr double kFp32Unit = 0x1p-24;
// The fewest threads a rung splits a row over: each adds at most vocab / kFewestThreads terms in
// sequence before the block's merge tree, which is what an fp32 sum's error grows with.
constexpr std::int64_t kFewestThreads = 512;

std::int64_t rows_of(const Problem& p) { return p.dim("rows"); }
std::int64_t vocab_of(const Problem& p) { return p.dim("vocab"); }
std::int64_t logits_of(const Problem& p) { return rows_of(p) * vocab_of(p); }
float smoothing_of(const Problem& p) { return static_cast<float>(p.param("label_smoothing")); }

// What both directions take from the problem: the sizes, the loss's options and the workspace.
template <typename Args>
void bind_options(const Problem& problem, Tensors& tensors, Args& args) {
  args.rows = rows_of(problem), args.vocab = vocab_of(problem);
  args.ignore_index = kCrossEntropyIgnoreIndex;
  args.label_smoothing = smoothing_of(problem);
  args.z_loss = static_cast<float>(problem.param("z_loss"));
  args.softcap = static_cast<float>(problem.param("softcap"));
  args.workspace = tensors.workspace();
}

struct ForwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.logits = tensors.data<T>("logits");
    args.target = tensors.data<std::int64_t>("target");
    args.loss = tensors.data<float>("loss");
    args.lse = tensors.data<float>("lse");
    args.dlogits = tensors.data<T>("dlogits");
    bind_options(problem, tensors, args);
    return args;
  }
};

struct BackwardBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.logits = tensors.data<T>("logits");
    args.target = tensors.data<std::int64_t>("target");
    args.lse = tensors.data<float>("lse");
    args.dloss = tensors.data<float>("dloss");
    args.dloss_stride = 1;
    args.dlogits = tensors.data<T>("dlogits");
    bind_options(problem, tensors, args);
    return args;
  }
};

// The loss's options as a problem names them, and a logit as the loss sees it (capped) in double
// with its fp32 evaluation error: tanhf's 2 ulps (4 units), the division's and the product's.
struct LossOptions {
  double smoothing, z_loss, softcap;
  double capped(double x) const { return softcap > 0 ? softcap * std::tanh(x / softcap) : x; }
  double capped_error(double c) const { return softcap > 0 ? 6 * kFp32Unit * std::fabs(c) : 0; }
};
LossOptions options_of(const Problem& p) { return {smoothing_of(p), p.param("z_loss"), p.param("softcap")}; }

// One row's statistics in double over the capped logits c, and the fp32 evaluation errors of the
// kernels: the sum of exponentials (relative: sum_error) adds vocab / kFewestThreads terms per
// thread, then merges over a tree of at most 10 levels of about 6 roundings each, each term off by
// exp2f's 2 ulp, 3 |c - max| roundings of its argument (terms more than 40 below the max are too
// small to matter) and, with a softcap, c's and max's own errors (8 units of the cap); lse
// (absolute: lse_error) adds logf's and the final sum's roundings. The smoothed loss's sum of the
// logits, or of c - max - log(sum) as the baseline sums them, errs likewise over their magnitudes.
struct RowStatistics {
  double max = -INFINITY, log_sum = 0, lse = 0, sum_x = 0, sum_abs_x = 0, sum_error = 0, lse_error = 0, sum_x_error = 0;
};
// From a row's logits as the loss sees them (capped), widened to double once.
RowStatistics row_statistics(const std::vector<double>& capped, const LossOptions& o) {
  RowStatistics s;
  const auto vocab = static_cast<std::int64_t>(capped.size());
  for (const double c : capped) s.max = std::max(s.max, c);
  double sum = 0, spread = 0;
  for (const double c : capped) {
    sum += std::exp(c - s.max);
    s.sum_x += c;
    s.sum_abs_x += std::fabs(c);
    spread = std::max(spread, std::min(s.max - c, 40.0));
  }
  s.log_sum = std::log(sum);
  s.lse = s.max + s.log_sum;
  const double sequence = static_cast<double>(vocab / kFewestThreads + 1) + 6 * 10;
  s.sum_error = (sequence + 4 + 3 * spread + 8 * o.softcap) * kFp32Unit;
  s.lse_error = s.sum_error + 4 * kFp32Unit * (std::fabs(s.lse) + std::fabs(s.max));
  const double log_vocab = std::log(static_cast<double>(vocab));
  s.sum_x_error =
      (sequence + 6) * kFp32Unit * (s.sum_abs_x + static_cast<double>(vocab) * (std::fabs(s.max) + log_vocab + 1));
  return s;
}

// Element (row, j)'s gradient, scale (p (1 + 2 z lse) - e / vocab - (1 - e) [j == target]) dc/dx
// with p = exp(c - lse), and its evaluation error, from `shifted` = c - lse formed without adding
// log(sum) to a large max (at |max| ~ 1e30 a double's lse would drop it, and k tied maxima would
// each get 1 instead of 1 / k). p, formed as exp(c - max) / sum (or from c - max - log(sum)),
// carries `relative` (the sum's, or the baseline's) and its own (exp2f, 3 roundings of c - max, c's
// error, the reciprocal, the product); 1 + 2 z lse carries lse's error (`lse_error`); then fp32
// roundings of the difference and of the scaling; with a softcap, dc/dx = 1 - (c / cap)^2 errs by
// 11 units absolute (c's error, doubled by the square, and three roundings).
struct Gradient {
  double value, error;
};
Gradient gradient(double c, double shifted, double relative, double lse, double lse_error, double max, std::int64_t j,
                  std::int64_t target, const LossOptions& o, std::int64_t vocab, double scale) {
  const double p = std::exp(shifted);
  const double spread = o.smoothing / static_cast<double>(vocab), hit = j == target ? 1.0 - o.smoothing : 0.0;
  const double factor = 1 + 2 * o.z_loss * lse;
  const double c_error = o.capped_error(c) + o.capped_error(max);
  const double p_error = p * (relative + (8 + 3 * std::fabs(max - c)) * kFp32Unit + c_error);
  const double factor_error = 2 * o.z_loss * lse_error + 2 * kFp32Unit * std::fabs(factor);
  const double dc = scale * (p * factor - spread - hit);
  const double dc_error = std::fabs(scale) * (p_error * std::fabs(factor) + p * factor_error +
                                              4 * kFp32Unit * (std::fabs(p * factor) + spread + hit));
  if (o.softcap <= 0) return {dc, dc_error};
  const double ratio = c / o.softcap, slope = 1 - ratio * ratio;
  return {dc * slope, dc_error * slope + std::fabs(dc) * 11 * kFp32Unit};
}

Comparison check_forward(const CheckContext& c) {
  const Tensor& logits = c.tensors["logits"];
  const Tensor& target = c.tensors["target"];
  const RoundedOutput dlogits{c.tensors["dlogits"]};
  const RoundedOutput loss_out{c.tensors["loss"]}, lse_out{c.tensors["lse"]};
  const std::int64_t rows = rows_of(c.problem), vocab = vocab_of(c.problem);
  const LossOptions o = options_of(c.problem);
  const std::int64_t n = rows * vocab;
  const double sum_relative_extra = 2 * (std::log(static_cast<double>(vocab)) + 1) * kFp32Unit;
  // One comparison over every output: the gradient's elements, then each row's loss and lse.
  return compare_elements(
      n + 2 * rows, Tolerance{dlogits.unit, dlogits.absolute},
      [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
        std::int64_t cached_row = -1;
        RowStatistics s;
        std::vector<double> row_values;  // the cached row's logits, capped, in double
        for (std::int64_t k = begin; k < end; ++k) {
          const std::int64_t row = k < n ? k / vocab : (k - n) / 2;
          const std::int64_t t = static_cast<const std::int64_t*>(target.host())[row];
          const bool ignored = t == kCrossEntropyIgnoreIndex;
          if (!ignored && row != cached_row) {
            widen_into(row_values, logits.dtype(), logits.host(), row * vocab, vocab);
            for (double& x : row_values) x = o.capped(x);
            s = row_statistics(row_values, o);
            cached_row = row;
          }
          if (k < n) {
            const std::int64_t j = k % vocab;
            Gradient g{0, 0};
            if (!ignored) {
              const double x = row_values[static_cast<std::size_t>(j)];
              g = gradient(x, (x - s.max) - s.log_sum, s.sum_error + sum_relative_extra, s.lse, s.lse_error, s.max, j,
                           t, o, vocab, 1.0);
            }
            dlogits.add(b, k, g.value, g.error);
            continue;
          }
          // fp32 results: an overflow to inf (z lse^2 at lse ~ 1e32) is the right answer where the
          // reference lies beyond fp32's range (RoundedOutput's rule).
          const bool is_loss = (k - n) % 2 == 0;
          if (ignored) {
            (is_loss ? loss_out : lse_out).add(b, row, 0, 0);
          } else if (is_loss) {
            const double c_target = row_values[static_cast<std::size_t>(t)];
            const double z_term = o.z_loss * s.lse * s.lse;
            const double ref = s.lse - (1 - o.smoothing) * c_target - o.smoothing * s.sum_x / vocab + z_term;
            const double bound =
                s.lse_error + o.smoothing * s.sum_x_error / vocab + o.capped_error(c_target) +
                2 * o.z_loss * std::fabs(s.lse) * s.lse_error +
                4 * kFp32Unit *
                    (std::fabs(s.lse) + std::fabs(c_target) + o.smoothing * s.sum_abs_x / vocab + 2 * z_term);
            loss_out.add(b, row, ref, bound);
          } else {
            lse_out.add(b, row, s.lse, s.lse_error);
          }
        }
      });
}

Comparison check_backward(const CheckContext& c) {
  const Tensor& logits = c.tensors["logits"];
  const auto* target = static_cast<const std::int64_t*>(c.tensors["target"].host());
  const auto* lse = static_cast<const float*>(c.tensors["lse"].host());
  const auto* dloss = static_cast<const float*>(c.tensors["dloss"].host());
  const RoundedOutput dlogits{c.tensors["dlogits"]};
  const std::int64_t vocab = vocab_of(c.problem);
  const LossOptions o = options_of(c.problem);
  return compare_elements(logits_of(c.problem), Tolerance{dlogits.unit, dlogits.absolute},
                          [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
                            for (std::int64_t k = begin; k < end; ++k) {
                              const std::int64_t row = k / vocab, t = target[row];
                              // lse is given exactly (an input); exp(c - lse) errs by its argument's roundings, which
                              // lse's distance stands in for, and (the baseline) by a row sum of the spread gradient,
                              // of vocab / kFewestThreads terms.
                              const double x = o.capped(logits.host_value(k));
                              const double relative = static_cast<double>(vocab / kFewestThreads + 12) * kFp32Unit;
                              const Gradient g = t == kCrossEntropyIgnoreIndex
                                                     ? Gradient{0, 0}
                                                     : gradient(x, x - lse[row], relative, lse[row], 0, lse[row],
                                                                k % vocab, t, o, vocab, dloss[row]);
                              dlogits.add(b, k, g.value, g.error);
                            }
                          });
}

void fill_logits(void* device, std::int64_t count, std::uint64_t seed, Distribution distribution,
                 const Problem& problem, cudaStream_t stream) {
  (void)count;
  fill_softmax_logits(problem.dtype, device, rows_of(problem), vocab_of(problem), seed, distribution, stream);
}

void fill_targets(void* device, std::int64_t count, std::uint64_t seed, Distribution, const Problem& problem,
                  cudaStream_t stream) {
  fill_cross_entropy_targets(device, count, vocab_of(problem), seed, stream);
}

void fill_lse(void* device, std::int64_t count, std::uint64_t seed, Distribution, const Problem& problem,
              cudaStream_t stream) {
  fill_cross_entropy_lse(device, count, vocab_of(problem), seed, stream);
}

// Vocabularies of real models: GPT-2 50257, Llama 2 32000, Llama 3 128256, Gemma 256000, at 4096
// tokens (512 and a decode-sized 64 for Llama 3's: where the library's two rungs trade places).
// Tests: one class, rows of every offset from a 16-byte boundary (7, 31, 4097, 65537 classes), a
// width of no multiple (1000), the largest vocabulary plus one.
Op cross_entropy_op(const char* name, const char* summary) {
  Op op;
  op.name = name;
  op.summary = summary;
  op.dim_names = {"rows", "vocab"};
  op.dtypes = dtypes_of(Elements{});
  op.params = {{"label_smoothing", 0.0}, {"z_loss", 0.0}, {"softcap", 0.0}};
  op.bench_problems =
      cross(op, {{4096, 32000}, {4096, 50257}, {4096, 128256}, {4096, 256000}, {512, 128256}, {64, 128256}},
            {DType::bf16, DType::f32});
  // 600 rows of GPT-2's vocabulary and 300 of 65537: more rows than the resident rung's blocks, so
  // they reuse their shared row; at 65537 in 16-bit types (one block an SM: 132 on an H100) a
  // block's rows start at different offsets from a 16-byte boundary, which moves its columns.
  const std::vector<std::vector<std::int64_t>> tests = {{1, 1},    {9, 7},       {16, 31},    {24, 1000},
                                                        {8, 4097}, {300, 65537}, {3, 256001}, {600, 50257}};
  // Gemma 2's final softcap (30), and PaLM-like z-loss with label smoothing.
  op.test_problems = cross(op, tests, op.dtypes) + cross(op, tests, op.dtypes, {{"label_smoothing", 0.1}}) +
                     cross(op, tests, op.dtypes, {{"softcap", 30.0}}) +
                     cross(op, tests, op.dtypes, {{"z_loss", 0.01}, {"label_smoothing", 0.1}});
  return op;
}

// The unfused baseline: its [rows, vocab] fp32 intermediate is the variant's workspace.
Variant with_workspace(Variant baseline) {
  baseline.workspace_bytes = [](const Problem& p) { return v::workspace_bytes(rows_of(p), vocab_of(p)); };
  baseline.can_implement = [](const DeviceInfo&, const Problem& p) {
    return p.param("z_loss") == 0.0 && p.param("softcap") == 0.0 ? std::string() : std::string(v::kPlainOnly);
  };
  return baseline;
}

// The resident rung: rows up to kResidentRowBytes, and what the GPU's shared memory holds.
Variant resident_variant() {
  Variant x = make_variant<ForwardBinding, v::CrossEntropyArgs>(
      "resident", "a block per row keeping its row in shared memory: the gradient pass reads it there, not from memory",
      Role::ladder, Elements{}, CUDALAB_LAUNCHER(v::resident));
  x.can_implement = [](const DeviceInfo& device, const Problem& p) {
    return v::resident_limits(vocab_of(p), size_of(p.dtype), device.shared_memory_per_block_optin);
  };
  return x;
}

// The pipelined rung: rows of which two fit a block's shared memory.
Variant pipelined_variant() {
  Variant x = make_variant<ForwardBinding, v::CrossEntropyArgs>(
      "pipelined",
      "a block per SM holding two rows in shared memory: the next row arrives by cp.async while this one is read",
      Role::ladder, Elements{}, CUDALAB_LAUNCHER(v::pipelined));
  x.can_implement = [](const DeviceInfo& device, const Problem& p) {
    return v::pipelined_limits(vocab_of(p), size_of(p.dtype), device.shared_memory_per_block_optin);
  };
  return x;
}

// The cluster rung: rows of up to kMaxClusterCtas shares of kClusterShareBytes, on Hopper.
Variant cluster_variant() {
  Variant x = make_variant<ForwardBinding, v::CrossEntropyArgs>(
      "cluster",
      "a cluster of CTAs a row, each keeping its share in shared memory; the row's sums exchanged through "
      "distributed shared memory",
      Role::ladder, Elements{}, CUDALAB_LAUNCHER(v::cluster));
  x.can_implement = [](const DeviceInfo& device, const Problem& p) {
    return v::cluster_limits(vocab_of(p), size_of(p.dtype), device.compute_capability());
  };
  return x;
}

}  // namespace

void register_cross_entropy(Registry& registry) {
  Op forward = cross_entropy_op(
      "cross_entropy", "per row: loss, log-sum-exp and the gradient of cross-entropy over a vocabulary, fp32 inside");
  forward.tensors = {
      {"logits", TensorRole::input, {}, logits_of, fill_logits},
      {"target", TensorRole::input, DType::i64, rows_of, fill_targets},
      {"loss", TensorRole::output, DType::f32, rows_of},
      {"lse", TensorRole::output, DType::f32, rows_of},
      {"dlogits", TensorRole::output, {}, logits_of},
  };
  // Read the logits once from DRAM (the gradient pass re-reads them from L2), write the gradient;
  // per element an exp, a max, a product and two sums.
  forward.work = [](const Problem& p) {
    const double n = static_cast<double>(logits_of(p)), rows = static_cast<double>(rows_of(p));
    const double size = static_cast<double>(size_of(p.dtype));
    return Work{size * n + 8 * rows, size * n + 8 * rows, 6 * n};
  };
  forward.check = check_forward;
  forward.variants = {
      with_workspace(make_variant<ForwardBinding, v::CrossEntropyArgs>(
          "unfused", "eager PyTorch's passes: log_softmax into an fp32 array, the loss from it, the gradient from it",
          Role::baseline, Elements{}, CUDALAB_LAUNCHER(v::unfused))),
      make_variant<ForwardBinding, v::CrossEntropyArgs>("online_scalar",
                                                        "a block per row, element loads: online pass, gradient pass",
                                                        Role::ladder, Elements{}, CUDALAB_LAUNCHER(v::online_scalar)),
      make_variant<ForwardBinding, v::CrossEntropyArgs>("online_vectorized", "a block per row, 16-byte accesses",
                                                        Role::ladder, Elements{},
                                                        CUDALAB_LAUNCHER(v::online_vectorized)),
      make_variant<ForwardBinding, v::CrossEntropyArgs>(
          "persistent", "a block of 1024 threads per SM walking rows: the gradient pass re-reads from L2", Role::ladder,
          Elements{}, CUDALAB_LAUNCHER(v::persistent)),
      resident_variant(),
      pipelined_variant(),
      cluster_variant(),
  };
  registry.add(std::move(forward));

  Op backward = cross_entropy_op("cross_entropy_backward",
                                 "dlogits = dloss * (softmax - smoothed one-hot target) from the forward's lse");
  backward.tensors = {
      {"logits", TensorRole::input, {}, logits_of},
      {"target", TensorRole::input, DType::i64, rows_of, fill_targets},
      {"lse", TensorRole::input, DType::f32, rows_of, fill_lse},
      {"dloss", TensorRole::input, DType::f32, rows_of},
      {"dlogits", TensorRole::output, {}, logits_of},
  };
  backward.work = [](const Problem& p) {
    const double n = static_cast<double>(logits_of(p)), rows = static_cast<double>(rows_of(p));
    const double size = static_cast<double>(size_of(p.dtype));
    return Work{size * n + 16 * rows, size * n, 4 * n};
  };
  backward.check = check_backward;
  backward.variants = {
      with_workspace(make_variant<BackwardBinding, v::CrossEntropyBackwardArgs>(
          "unfused", "eager PyTorch's passes: nll_loss's gradient into an fp32 array, then log_softmax's backward",
          Role::baseline, Elements{}, CUDALAB_LAUNCHER(v::backward_unfused))),
      make_variant<BackwardBinding, v::CrossEntropyBackwardArgs>(
          "persistent", "a block of 1024 threads per SM walking rows, 16-byte accesses", Role::ladder, Elements{},
          CUDALAB_LAUNCHER(v::backward_persistent)),
      make_variant<BackwardBinding, v::CrossEntropyBackwardArgs>(
          "flat", "the rows as one flat array: 16-byte vectors, two a thread, rows starting anywhere in a vector",
          Role::ladder, Elements{}, CUDALAB_LAUNCHER(v::backward_flat)),
  };
  registry.add(std::move(backward));
}

}  // namespace cudalab::harness
