// The RoPE ops: `rope` (q or k rotated by position) and `rope_backward` (the gradient, rotated
// back), over [batch, seq, heads, head_dim] in f32, bf16 and f16 with fp32 angle tables. Their
// tensors, double-precision checks, work models and ladders.
#include <cmath>
#include <cstdint>
#include <vector>

#include "cudalab/rope.hpp"
#include "harness/registry.hpp"
#include "ops/rope/inputs.hpp"
#include "ops/rope/variants.hpp"

namespace cudalab::harness {
namespace {

namespace v = rope_variants;
using Elements = RopeElements;

constexpr double kFp32Unit = 0x1p-24;

std::int64_t elements(const Problem& p) { return p.dim("batch") * p.dim("seq") * p.dim("heads") * p.dim("head_dim"); }
std::int64_t positions_of(const Problem& p) {
  return static_cast<std::int64_t>(p.param("position_offset")) + p.dim("seq");
}
std::int64_t table_elements(const Problem& p) { return positions_of(p) * (p.dim("head_dim") / 2); }
bool interleaved_of(const Problem& p) { return p.param("interleaved") != 0; }

// Dense [batch, seq, heads, head_dim].
RopeShape shape_of(const Problem& p) {
  RopeShape s;
  s.batch = p.dim("batch"), s.seq = p.dim("seq"), s.heads = p.dim("heads"), s.head_dim = p.dim("head_dim");
  s.heads_stride = s.head_dim, s.seq_stride = s.heads * s.head_dim, s.batch_stride = s.seq * s.seq_stride;
  return s;
}

template <bool kBackward>
struct Binding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.x = tensors.data<T>(kBackward ? "dy" : "x");
    args.y = tensors.data<T>(kBackward ? "dx" : "y");
    args.shape = shape_of(problem);
    args.tables = {tensors.data<float>("cos"), tensors.data<float>("sin"), positions_of(problem),
                   problem.dim("head_dim") / 2};
    args.interleaved = interleaved_of(problem);
    args.position_offset = static_cast<std::int64_t>(problem.param("position_offset"));
    args.sign = kBackward ? -1.0f : 1.0f;
    args.workspace = tensors.workspace();
    return args;
  }
};

// Each output element is a member of a pair rotated by its angle: y_a = x_a c - x_b s and
// y_b = x_b c + x_a s (s negated backward), within three fp32 roundings of its two products.
Comparison check(const CheckContext& c, const char* in_name, const char* out_name, double sign) {
  const Tensor& in = c.tensors[in_name];
  const RoundedOutput out{c.tensors[out_name]};
  const auto* cos = static_cast<const float*>(c.tensors["cos"].host());
  const auto* sin = static_cast<const float*>(c.tensors["sin"].host());
  const RopeShape s = shape_of(c.problem);
  const std::int64_t half = s.head_dim / 2, offset = static_cast<std::int64_t>(c.problem.param("position_offset"));
  const bool interleaved = interleaved_of(c.problem);
  return compare_elements(elements(c.problem), Tolerance{out.unit, out.absolute},
                          [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
                            for (std::int64_t k = begin; k < end; ++k) {
                              const std::int64_t j = k % s.head_dim, row = k / s.head_dim;
                              const std::int64_t token = row / s.heads % s.seq, position = offset + token;
                              const std::int64_t pair = interleaved ? j / 2 : j % half;
                              const bool first = interleaved ? j % 2 == 0 : j < half;
                              const std::int64_t partner =
                                  interleaved ? (first ? k + 1 : k - 1) : (first ? k + half : k - half);
                              const double cv = cos[position * half + pair], sv = sign * sin[position * half + pair];
                              const double x = in.host_value(k), other = in.host_value(partner);
                              const double ref = first ? x * cv - other * sv : x * cv + other * sv;
                              out.add(b, k, ref, 3 * kFp32Unit * (std::fabs(x * cv) + std::fabs(other * sv)));
                            }
                          });
}

void fill_cos(void* device, std::int64_t, std::uint64_t, Distribution, const Problem& p, cudaStream_t stream) {
  fill_rope_table(static_cast<float*>(device), positions_of(p), p.dim("head_dim"), false, stream);
}
void fill_sin(void* device, std::int64_t, std::uint64_t, Distribution, const Problem& p, cudaStream_t stream) {
  fill_rope_table(static_cast<float*>(device), positions_of(p), p.dim("head_dim"), true, stream);
}

// Llama-like q and k at training and decode shapes: 8 x 4096 tokens of 32 heads of 128 (the forward
// of q), 8 kv heads (k under grouped-query attention), a decode step at position 4095 of a batch of
// 64, and GPT-J's interleaved pairs. Tests: one pair; head_dim 2, 6 (runs past the 16-byte
// vectors), 64 and 128; odd token and head counts; a position offset.
Op rope_op(const char* name, const char* summary) {
  Op op;
  op.name = name;
  op.summary = summary;
  op.dim_names = {"batch", "seq", "heads", "head_dim"};
  op.dtypes = dtypes_of(Elements{});
  op.params = {{"interleaved", 0}, {"position_offset", 0}};
  op.bench_problems = cross(op, {{8, 4096, 32, 128}, {8, 4096, 8, 128}}, {DType::bf16, DType::f32}) +
                      cross(op, {{8, 4096, 32, 128}}, {DType::bf16}, {{"interleaved", 1}}) +
                      cross(op, {{64, 1, 32, 128}}, {DType::bf16}, {{"position_offset", 4095}});
  const std::vector<std::vector<std::int64_t>> tests = {
      {1, 1, 1, 2}, {2, 3, 5, 6}, {1, 17, 3, 64}, {3, 129, 4, 128}, {2, 1000, 2, 128}};
  op.test_problems = cross(op, tests, op.dtypes) + cross(op, tests, op.dtypes, {{"interleaved", 1}}) +
                     cross(op, tests, op.dtypes, {{"position_offset", 7}});
  return op;
}

template <bool kBackward>
std::vector<Variant> ladder() {
  Variant baseline = make_variant<Binding<kBackward>, v::RopeArgs>(
      "unfused", "as Hugging Face's apply_rotary_pos_emb: rotate_half(x) into a copy, then x cos + rotated sin",
      Role::baseline, Elements{}, CUDALAB_LAUNCHER(v::unfused));
  baseline.workspace_bytes = [](const Problem& p) { return v::workspace_bytes(shape_of(p), size_of(p.dtype)); };
  return {
      baseline,
      make_variant<Binding<kBackward>, v::RopeArgs>("scalar", "one pair per thread, element accesses", Role::ladder,
                                                    Elements{}, CUDALAB_LAUNCHER(v::scalar)),
      make_variant<Binding<kBackward>, v::RopeArgs>(
          "vectorized", "16 bytes of each member run per thread (half split: both halves; interleaved: the pairs)",
          Role::ladder, Elements{}, CUDALAB_LAUNCHER(v::vectorized)),
      make_variant<Binding<kBackward>, v::RopeArgs>(
          "positions",
          "a thread group per token position, each thread's run of every head: angles read once a position",
          Role::ladder, Elements{}, CUDALAB_LAUNCHER(v::positions)),
  };
}

// Read x and the two tables, write y; per pair four products and two sums.
Work rope_work(const Problem& p) {
  const double n = static_cast<double>(elements(p)), size = static_cast<double>(size_of(p.dtype));
  return Work{size * n + 2 * 4 * static_cast<double>(table_elements(p)), size * n, 3 * n};
}

}  // namespace

void register_rope(Registry& registry) {
  Op forward = rope_op("rope", "q or k rotated pair by pair by its position's angles (rotary position embedding)");
  forward.tensors = {{"x", TensorRole::input, {}, elements},
                     {"cos", TensorRole::input, DType::f32, table_elements, fill_cos},
                     {"sin", TensorRole::input, DType::f32, table_elements, fill_sin},
                     {"y", TensorRole::output, {}, elements}};
  forward.work = rope_work;
  forward.check = [](const CheckContext& c) { return check(c, "x", "y", 1.0); };
  forward.variants = ladder<false>();
  registry.add(std::move(forward));

  Op backward = rope_op("rope_backward", "the gradient of rope: dy rotated back by the opposite angles");
  backward.tensors = {{"dy", TensorRole::input, {}, elements},
                      {"cos", TensorRole::input, DType::f32, table_elements, fill_cos},
                      {"sin", TensorRole::input, DType::f32, table_elements, fill_sin},
                      {"dx", TensorRole::output, {}, elements}};
  backward.work = rope_work;
  backward.check = [](const CheckContext& c) { return check(c, "dy", "dx", -1.0); };
  backward.variants = ladder<true>();
  registry.add(std::move(backward));
}

}  // namespace cudalab::harness
