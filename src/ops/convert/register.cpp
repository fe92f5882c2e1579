// The convert op: fp32 <-> fp16/bf16, element-wise. The op's dtype is the 16-bit type and its
// `direction` parameter the way: 0 narrows fp32 to the dtype (round to nearest even), 1 widens
// the dtype to fp32 (exact). Its tensors, inputs, bit-exact check and work model, the ladder and
// the Thrust baseline.
//
// One op rather than two (convert_to_half, convert_from_half): a TensorSpec's dtype is fixed or
// the problem's and cannot follow a parameter, but its element count is any function of the
// problem. So the op declares both directions' tensors, x_f32 -> y_half and x_half -> y_f32, and
// the direction gives one pair n elements and the other none. The harness allocates, fills,
// poisons and copies nothing for an empty tensor, and the work model and the fits-in-memory check
// count only the live pair; one op keeps one page, one `bench --only convert`, one launcher per
// dtype, and a configuration per dtype and direction in the tables (convert_f16,
// convert_f16_direction1, ...).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/registry.hpp"
#include "ops/convert/ids.hpp"
#include "ops/convert/inputs.hpp"
#include "ops/convert/reference.hpp"
#include "ops/convert/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = convert_ids;
namespace v = convert_variants;

// The tensors: narrowing reads x_f32 and writes y_half, widening reads x_half and writes y_f32.
constexpr char kXF32[] = "x_f32";
constexpr char kXHalf[] = "x_half";
constexpr char kYHalf[] = "y_half";
constexpr char kYF32[] = "y_f32";

bool narrows(const Problem& p) { return p.param(ids::kDirection) == 0; }
bool widens(const Problem& p) { return p.param(ids::kDirection) == 1; }

// n elements for a tensor of the problem's direction, none for the other direction's.
std::function<std::int64_t(const Problem&)> live_in(bool (*direction)(const Problem&)) {
  return [direction](const Problem& p) -> std::int64_t { return direction(p) ? p.dim("n") : 0; };
}

struct ConvertBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.direction = widens(problem) ? v::ConvertDirection::widen : v::ConvertDirection::narrow;
    args.f32_in = tensors.data<float>(kXF32);
    args.half_out = tensors.data<T>(kYHalf);
    args.half_in = tensors.data<T>(kXHalf);
    args.f32_out = tensors.data<float>(kYF32);
    args.n = problem.dim("n");
    return args;
  }
};

// Every variant runs both directions and nothing else: --param direction=2 is a bad request.
template <typename... Args>
Variant variant(const char* id, const char* technique, Role role, void (*... launchers)(const Args&, cudaStream_t)) {
  Variant v = make_variant<ConvertBinding>(id, technique, role, launchers...);
  v.can_implement = [](const DeviceInfo&, const Problem& p) -> std::string {
    if (narrows(p) || widens(p)) return "";
    return "direction is 0 (fp32 -> " + std::string(to_string(p.dtype)) + ") or 1 (" + to_string(p.dtype) +
           " -> fp32), got " + format_param(p.param(ids::kDirection));
  };
  return v;
}

Comparison check_convert(const CheckContext& c) {
  const std::int64_t n = c.problem.dim("n");
  if (narrows(c.problem))
    return check_conversion(DType::f32, c.tensors[kXF32].host(), c.problem.dtype, c.tensors[kYHalf].host(), n);
  return check_conversion(c.problem.dtype, c.tensors[kXHalf].host(), DType::f32, c.tensors[kYF32].host(), n);
}

}  // namespace

void register_convert(Registry& registry) {
  Op op;
  op.name = ids::kOp;
  op.summary = "fp32 <-> the dtype, element-wise: direction=0 rounds fp32 to it (nearest even), 1 widens it (exact)";
  op.dim_names = {"n"};
  op.dtypes = {DType::bf16, DType::f16};
  op.params = {{ids::kDirection, 0}};
  op.tensors = {
      {kXF32, TensorRole::input, DType::f32, live_in(narrows),
       [](void* device, std::int64_t count, std::uint64_t seed, Distribution, const Problem& p, cudaStream_t stream) {
         fill_narrowing_inputs(static_cast<float*>(device), count, seed, p.dtype, stream);
       }},
      {kXHalf,
       TensorRole::input,
       {},
       live_in(widens),
       [](void* device, std::int64_t count, std::uint64_t seed, Distribution, const Problem&, cudaStream_t stream) {
         fill_widening_inputs(device, count, seed, stream);
       }},
      {kYHalf, TensorRole::output, {}, live_in(narrows)},
      {kYF32, TensorRole::output, DType::f32, live_in(widens)},
  };
  // 2^24 (100 MB moved: past the 50 MB L2) and 2^28 (1.5 GB). Test sizes: empty, one element, less
  // than a chunk of 8, exactly one, a prime (a tail of 3) and 2^24 + 5 (a tail of 5).
  const std::vector<std::vector<std::int64_t>> test_sizes = {{0}, {1}, {3}, {8}, {1000003}, {(1 << 24) + 5}};
  for (const double direction : {0.0, 1.0}) {
    const std::vector<Param> params = {{ids::kDirection, direction}};
    for (const Problem& p : cross(op, {{1 << 24}, {1 << 28}}, op.dtypes, params)) op.bench_problems.push_back(p);
    for (const Problem& p : cross(op, test_sizes, op.dtypes, params)) op.test_problems.push_back(p);
  }
  // A copy that changes the element size: 4 bytes on the fp32 side, 2 on the other, no arithmetic
  // a roofline counts.
  op.work = [](const Problem& p) {
    const double n = static_cast<double>(p.dim("n"));
    const double wide = 4 * n, narrow = static_cast<double>(size_of(p.dtype)) * n;
    return narrows(p) ? Work{wide, narrow, 0} : Work{narrow, wide, 0};
  };
  op.check = check_convert;
  op.variants = {
      variant(ids::kOnePerThread, "one element per thread, a 256-thread block per 256 elements, scalar conversions",
              Role::ladder, v::one_per_thread<__nv_bfloat16>, v::one_per_thread<__half>),
      variant(ids::kVectorized, "resident grid striding over chunks of one 16-byte output vector, conversions in pairs",
              Role::ladder, v::vectorized<__nv_bfloat16>, v::vectorized<__half>),
      variant(ids::kThrust, "thrust::transform (CCCL) with a conversion functor, the library baseline", Role::baseline,
              v::thrust_transform<__nv_bfloat16>, v::thrust_transform<__half>),
  };
  registry.add(std::move(op));
}

}  // namespace cudalab::harness
