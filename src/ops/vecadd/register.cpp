// The vector-add op: c = a + b. Its tensors, CPU reference and work model, the ladder, the Thrust
// baseline, and the host-pattern experiment; the claims its numbers answer are in claims.cpp.
#include "harness/registry.hpp"
#include "ops/vecadd/ids.hpp"
#include "ops/vecadd/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = vecadd_ids;
namespace v = vecadd_variants;

struct VecaddBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    return {tensors.data<T>("a"), tensors.data<T>("b"), tensors.data<T>("c"), problem.dim("n")};
  }
};

template <typename... Args>
Variant variant(const char* id, const char* technique, Role role, void (*... launchers)(const Args&, cudaStream_t)) {
  return make_variant<VecaddBinding>(id, technique, role, launchers...);
}

// c[i] = a[i] + b[i], the exact sum rounded once to the dtype (which is what an IEEE add gives),
// with one ulp to spare. Rounding the reference first also makes a half-precision overflow to
// infinity (f16's large inputs reach 65504) the expected answer, not a mismatch.
Comparison check_vecadd(const CheckContext& c) {
  const Tensor& a = c.tensors["a"];
  const Tensor& b = c.tensors["b"];
  const DType dtype = c.problem.dtype;
  return compare_tensor(c.tensors["c"], Tolerance::rounded(dtype), [&](std::int64_t i) {
    unsigned char rounded[8];
    element_from_double(dtype, a.host_value(i) + b.host_value(i), rounded, 0);
    return element_to_double(dtype, rounded, 0);
  });
}

}  // namespace

void register_vecadd_host_pattern(Registry& registry);
void register_vecadd_claims(Registry& registry);

void register_vecadd(Registry& registry) {
  Op op;
  op.name = ids::kOp;
  op.summary = "c = a + b, element-wise, in the inputs' dtype";
  op.dim_names = {"n"};
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  auto n = [](const Problem& p) { return p.dim("n"); };
  op.tensors = {{"a", TensorRole::input, {}, n}, {"b", TensorRole::input, {}, n}, {"c", TensorRole::output, {}, n}};
  op.bench_problems = cross(op, {{1 << 20}, {1 << 24}, {1 << 28}}, {DType::f32});
  // The half types at the two sizes that show the memory roofline (2^24: L2-sized, 2^28: DRAM).
  for (const Problem& p : cross(op, {{1 << 24}, {1 << 28}}, {DType::f16, DType::bf16})) op.bench_problems.push_back(p);
  // Edge sizes around a warp, a prime that is no multiple of 4 or of a block, and one array
  // larger than 2^31 bytes (2^29 + 3 floats) for 64-bit indexing and the vector tail.
  op.test_problems = cross(op, {{1}, {31}, {32}, {33}, {1000003}, {1 << 24}, {(std::int64_t{1} << 29) + 3}}, op.dtypes);
  op.work = [](const Problem& p) {
    const double n = static_cast<double>(p.dim("n")), size = static_cast<double>(size_of(p.dtype));
    return Work{2 * size * n, size * n, n};
  };
  op.check = check_vecadd;
  op.variants = {
      variant(ids::kOnePerThread, "one element per thread, a 256-thread block per 256 elements", Role::ladder,
              v::one_per_thread<float>, v::one_per_thread<__half>, v::one_per_thread<__nv_bfloat16>),
      variant(ids::kGridStride, "grid sized to resident capacity, threads stride through the array", Role::ladder,
              v::grid_stride<float>, v::grid_stride<__half>, v::grid_stride<__nv_bfloat16>),
      variant(ids::kSharedStaging, "operands staged through shared memory behind a barrier", Role::ladder,
              v::shared_staging<float>, v::shared_staging<__half>, v::shared_staging<__nv_bfloat16>),
      variant(ids::kVectorized, "16-byte vector loads and stores, one vector per thread", Role::ladder,
              v::vectorized<float>, v::vectorized<__half>, v::vectorized<__nv_bfloat16>),
      variant(ids::kVectorizedUnroll4, "four 16-byte vectors per operand per thread, loads issued before the adds",
              Role::ladder, v::vectorized_unroll4<float>, v::vectorized_unroll4<__half>,
              v::vectorized_unroll4<__nv_bfloat16>),
      variant(ids::kThrust, "thrust::transform (CCCL), the library baseline", Role::baseline,
              v::thrust_transform<float>, v::thrust_transform<__half>, v::thrust_transform<__nv_bfloat16>),
  };
  registry.add(std::move(op));
  register_vecadd_host_pattern(registry);
  register_vecadd_claims(registry);
}

}  // namespace cudalab::harness
