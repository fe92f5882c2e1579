// The attention op: O = softmax(scale * Q K^T [causal mask]) V and the rows' log-sum-exp L over
// {batch, heads, seq, head_dim}, with parameters causal (0 or 1) and kv_heads (0: as many as heads;
// else a divisor of heads, grouped-query attention), in bf16, f16 and f32 with fp32 arithmetic
// inside. Its tensors, inputs (rows with one dominant score planted in Q and K, inputs.hpp), check
// (reference.hpp: every row of small problems, a sample of every (batch, head)'s rows of large
// ones), work model and ladder. The scale is always the library's default, 1 / sqrt(head_dim).
//
// A problem whose parameters are not of this form (kv_heads that does not divide heads, causal
// other than 0 or 1) is refused by every variant's can_implement, with the reason: Op::problem
// builds problems for every op and knows nothing of these rules. Its tensors are still sized (for
// kv_heads clamped to heads), so the runner's memory estimate and allocation never see a negative
// or absurd size.
//
// The backward op, attention_backward: dQ, dK, dV from Q, K, V, dO and the forward's O and L, which
// the harness computes from Q, K and V by the library's forward (Op::derive_inputs), so that P is a
// softmax; checked by reference.hpp's backward check.
//
// Beside the ops: the attention_memory experiment (memory_experiment.cpp) and claim C33 that its
// table answers (claims.cpp).
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "cudalab/attention.hpp"

#include "harness/registry.hpp"
#include "ops/attention/cublas_unfused.hpp"
#include "ops/attention/ids.hpp"
#include "ops/attention/inputs.hpp"
#include "ops/attention/reference.hpp"
#include "ops/attention/registration.hpp"
#include "ops/attention/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = attention_ids;
namespace v = attention_variants;

using namespace attention_registration;

constexpr char kDo[] = "do";
constexpr char kDq[] = "dq";
constexpr char kDk[] = "dk";
constexpr char kDv[] = "dv";

std::int64_t seq_of(const Problem& p) { return p.dim("seq"); }

// Empty when the parameters are of the op's form, else why not.
std::string parameters_unsupported(const Problem& p) {
  for (const std::string& why : {flag_unsupported(p, ids::kCausal), window_unsupported(p, ids::kWindowLeft),
                                 window_unsupported(p, ids::kWindowRight)})
    if (!why.empty()) return why;
  return kv_heads_unsupported(p);
}

// A window side: the parameter, or -1 (unbounded) where it is not of the op's form.
std::int64_t window_side(const Problem& p, const char* name) {
  return window_unsupported(p, name).empty() ? static_cast<std::int64_t>(p.param(name)) : -1;
}
std::int64_t window_left_of(const Problem& p) { return window_side(p, ids::kWindowLeft); }
std::int64_t window_right_of(const Problem& p) { return window_side(p, ids::kWindowRight); }
bool window_binds_problem(const Problem& p) {
  return v::window_binds(seq_of(p), causal_of(p), window_left_of(p), window_right_of(p));
}

std::int64_t kv_heads_of(const Problem& p) {
  return attention_registration::kv_heads_of(p, parameters_unsupported(p).empty());
}

std::int64_t query_elements(const Problem& p) { return batch_of(p) * heads_of(p) * seq_of(p) * head_dim_of(p); }
std::int64_t kv_elements(const Problem& p) { return batch_of(p) * kv_heads_of(p) * seq_of(p) * head_dim_of(p); }
std::int64_t query_rows(const Problem& p) { return batch_of(p) * heads_of(p) * seq_of(p); }

v::AttentionShape shape_of(const DeviceInfo& device, const Problem& p) {
  return {batch_of(p),
          heads_of(p),
          kv_heads_of(p),
          seq_of(p),
          head_dim_of(p),
          size_of(p.dtype),
          device.compute_capability(),
          window_binds_problem(p)};
}

// The (query, key) pairs the mask leaves: what the work model counts.
double visible_pairs(const Problem& p) {
  const std::int64_t seq = seq_of(p);
  const v::KeyWindow window = v::key_window(seq, causal_of(p), window_left_of(p), window_right_of(p));
  double pairs = 0.0;
  for (std::int64_t i = 0; i < seq; ++i) pairs += static_cast<double>(window.key_end(i, seq) - window.first_key(i));
  return pairs * static_cast<double>(batch_of(p) * heads_of(p));
}

// Fills the forward's AttentionArgs or the backward's AttentionBackwardArgs (whose O and L are
// inputs, beside dO, and whose outputs are dQ, dK and dV).
struct AttentionBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    bind_shared(args, problem, tensors, kv_heads_of(problem));
    args.window_left = window_left_of(problem);
    args.window_right = window_right_of(problem);
    if constexpr (std::is_same_v<Args, v::AttentionBackwardArgs<T>>) {
      args.d_o = tensors.data<T>(kDo);
      args.dq = tensors.data<T>(kDq);
      args.dk = tensors.data<T>(kDk);
      args.dv = tensors.data<T>(kDv);
    }
    args.seq = seq_of(problem);
    return args;
  }
};

template <typename... Args>
Variant variant(const char* id, const char* technique, Role role, Engine engine,
                std::string (*limits)(const v::AttentionShape&), void (*... launchers)(const Args&, cudaStream_t)) {
  Variant out = make_variant<AttentionBinding>(id, technique, role, launchers...);
  out.engine = engine;
  out.can_implement = [limits](const DeviceInfo& device, const Problem& p) {
    const std::string why = parameters_unsupported(p);
    return why.empty() ? limits(shape_of(device, p)) : why;
  };
  return out;
}

// The tensor fill of Q or K: fill_attention_queries or fill_attention_keys at the problem's seq,
// head_dim and scale.
using ScoreFill = void (*)(DType, void*, std::int64_t, std::uint64_t, Distribution, std::int64_t, std::int64_t, float,
                           cudaStream_t);
TensorFill score_fill(ScoreFill fill) {
  return [fill](void* device, std::int64_t count, std::uint64_t seed, Distribution distribution, const Problem& p,
                cudaStream_t stream) {
    fill(p.dtype, device, count, seed, distribution, seq_of(p), head_dim_of(p), scale_of(p), stream);
  };
}

// What the forward and the backward share: dims, dtypes, parameters.
Op attention_op(const char* name) {
  Op op;
  op.name = name;
  op.dim_names = {"batch", "heads", "seq", "head_dim"};
  op.dtypes = {DType::bf16, DType::f16, DType::f32};
  op.params = {{ids::kCausal, 0}, {ids::kKvHeads, 0}, {ids::kWindowLeft, -1}, {ids::kWindowRight, -1}};
  return op;
}

// fill_random from attention_score_distribution (normal for large_magnitude): the backward's V
// and dO. Values of 1e30 in both would overflow every fp32 product dO . V, and fp16's largest
// values give gradients past fp16's range: no kernel could return what the reference computes.
void moderate_fill(void* device, std::int64_t count, std::uint64_t seed, Distribution distribution, const Problem& p,
                   cudaStream_t stream) {
  fill_random(p.dtype, device, count, seed, attention_score_distribution(distribution), stream);
}

// Q, K and V (Q and K with the dominant-score fills; V by `v_fill`, fill_random's when empty), then
// O and L: the forward's outputs, the backward's inputs.
std::vector<TensorSpec> attention_tensors(TensorRole o_and_lse, TensorFill v_fill) {
  return {
      {kQ, TensorRole::input, {}, query_elements, score_fill(fill_attention_queries)},
      {kK, TensorRole::input, {}, kv_elements, score_fill(fill_attention_keys)},
      {kV, TensorRole::input, {}, kv_elements, v_fill},
      {kO, o_and_lse, {}, query_elements},
      {kLse, o_and_lse, DType::f32, query_rows},
  };
}

// The host tensors of the forward's or the backward's check, with the problem's window.
template <typename HostTensors>
HostTensors windowed_host_tensors(const CheckContext& c) {
  auto t = host_tensors<HostTensors>(c, kv_heads_of(c.problem), seq_of(c.problem));
  t.window_left = window_left_of(c.problem);
  t.window_right = window_right_of(c.problem);
  return t;
}

Comparison check(const CheckContext& c) { return check_attention(windowed_host_tensors<AttentionTensors>(c)); }

// The minimum traffic: Q, K and V read once, O and L written once. Arithmetic: Q K^T and P V, two
// multiply-adds per (query, key, dimension), over the pairs the mask leaves (half when causal, the
// diagonal's included as FlashAttention counts them: seq^2 / 2).
double counted_pairs(const Problem& p) {
  const double all =
      static_cast<double>(batch_of(p) * heads_of(p)) * static_cast<double>(seq_of(p)) * static_cast<double>(seq_of(p));
  if (window_binds_problem(p)) return visible_pairs(p);
  return causal_of(p) ? 0.5 * all : all;
}

Work work(const Problem& p) {
  const double element = static_cast<double>(size_of(p.dtype));
  const double pairs = counted_pairs(p);
  return Work{element * static_cast<double>(query_elements(p) + 2 * kv_elements(p)),
              element * static_cast<double>(query_elements(p)) + 4.0 * static_cast<double>(query_rows(p)),
              4.0 * pairs * static_cast<double>(head_dim_of(p))};
}

struct Shape {
  std::vector<std::int64_t> dims;  // batch, heads, seq, head_dim
  int causal;
  int kv_heads;
  std::int64_t window_left = -1, window_right = -1;
};

std::vector<Problem> problems(const Op& op, DType dtype, const std::vector<Shape>& shapes) {
  std::vector<Problem> out;
  for (const Shape& s : shapes)
    out.push_back(op.problem(s.dims, dtype,
                             {{ids::kCausal, double(s.causal)},
                              {ids::kKvHeads, double(s.kv_heads)},
                              {ids::kWindowLeft, double(s.window_left)},
                              {ids::kWindowRight, double(s.window_right)}}));
  return out;
}

// Test shapes: seq 1, 2, around a warp and the 64-row tiles (17, 63, 64, 65, 127, 129), 200 with
// grouped-query heads (8 over 2 kv heads), 1000 with one kv head (multi-query), head_dims 64 and
// 128 (the tensor-core rungs'), 385 at head_dim 128 with one kv head (four 128-key tiles of the
// wgmma rungs, the last partial), and 80 and 40 (padded by tiled and by the wgmma rungs, refused by
// the mma rungs), causal and not; each small enough for the CPU to check every row in well under a
// second. Then
// sliding windows whose edges cut the tiles of every rung (64 and 128 keys, 64 and 128 rows):
// causal with 100 keys back at 385 x 128, two-sided (37 back, 5 ahead) with grouped heads, ahead
// only (0 back, 70 ahead), head_dim 80 (the CUDA-core rungs), and 255 back at 2048 (most tiles
// skipped). Then one problem checked on sampled rows (1 x 4 x 4096 x 128), causal: the largest,
// which the GPU tests also run the broken tutorial rung at. Last, the other head_dims of the wgmma
// rungs: 256 (64-key tiles whose causal diagonal crosses two of them; grouped heads; a window),
// and 96, 192 and 32 on the build above them.
const std::vector<Shape> kTestShapes = {
    {{1, 1, 1, 64}, 0, 0},          {{2, 3, 2, 128}, 1, 0},          {{1, 2, 17, 64}, 0, 0},
    {{2, 2, 63, 128}, 1, 0},        {{1, 2, 64, 80}, 0, 0},          {{2, 2, 65, 64}, 1, 0},
    {{1, 3, 127, 128}, 0, 0},       {{1, 2, 129, 40}, 1, 0},         {{2, 8, 200, 64}, 1, 2},
    {{1, 2, 1000, 64}, 0, 1},       {{1, 2, 385, 128}, 0, 1},        {{1, 2, 385, 128}, 1, 1, 100},
    {{2, 8, 300, 64}, 0, 2, 37, 5}, {{1, 2, 200, 128}, 0, 0, 0, 70}, {{1, 3, 150, 80}, 1, 0, 20},
    {{1, 2, 2048, 64}, 1, 0, 255},  {{1, 4, 4096, 128}, 1, 0},       {{1, 2, 130, 256}, 1, 0},
    {{2, 4, 385, 256}, 0, 2},       {{1, 2, 300, 256}, 1, 0, 100},   {{1, 3, 129, 96}, 1, 0},
    {{1, 2, 200, 192}, 0, 1},       {{2, 2, 65, 32}, 1, 0},          {{1, 2, 1000, 256}, 1, 0},
};

// The backward's bench, and the forward's first: 4 x 16 x 4096 x 128 bf16, causal and not, and
// causal sliding windows of 1024 keys at 4096 and of 4096 (Mistral-7B's) at 16384.
const std::vector<Shape> kBenchShapes = {{{4, 16, 4096, 128}, 0, 0},
                                         {{4, 16, 4096, 128}, 1, 0},
                                         {{4, 16, 4096, 128}, 1, 0, 1023},
                                         {{1, 16, 16384, 128}, 1, 0, 4095}};

// Bench: bf16 at 4 x 16 x 4096 (head_dim 128, causal and not; head_dim 64), the windows above, and
// the sequence sweep at head_dim 128 with batch * seq = 16384 (the same number of query rows),
// causal and not; fp16 at the first; f32 at 4 x 16 x 1024 x 64 (the CUDA-core rungs only).
std::vector<Problem> bench_problems(const Op& op) {
  std::vector<Shape> bf16 = kBenchShapes;
  bf16.push_back({{4, 16, 4096, 64}, 0, 0});
  for (const std::int64_t seq : {512, 1024, 2048, 8192, 16384})
    for (const int causal : {0, 1}) bf16.push_back({{16384 / seq, 16, seq, 128}, causal, 0});
  std::vector<Problem> out = problems(op, DType::bf16, bf16);
  for (const Problem& p : problems(op, DType::f16, {{{4, 16, 4096, 128}, 0, 0}})) out.push_back(p);
  for (const Problem& p : problems(op, DType::f32, {{{4, 16, 1024, 64}, 0, 0}})) out.push_back(p);
  return out;
}

Comparison check_backward(const CheckContext& c) {
  auto t = windowed_host_tensors<AttentionBackwardTensors>(c);
  t.d_o = c.tensors[kDo].host();
  t.dq = c.tensors[kDq].host();
  t.dk = c.tensors[kDk].host();
  t.dv = c.tensors[kDv].host();
  return check_attention_backward(t);
}

// The backward's O and L: the library's forward of the problem's Q, K and V, so that P is a
// softmax and dO . O the value a training step would see.
void derive_forward_outputs(const Problem& p, Tensors& tensors, cudaStream_t stream) {
  if (!parameters_unsupported(p).empty() || query_elements(p) == 0) return;
  const AttentionDims dims{batch_of(p), heads_of(p), kv_heads_of(p), seq_of(p), head_dim_of(p)};
  AttentionOptions options;
  options.scale = scale_of(p);
  options.causal = causal_of(p);
  options.window_left = window_left_of(p);
  options.window_right = window_right_of(p);
  float* lse = tensors.data<float>(kLse);
  const auto run = [&](auto type) {
    using T = decltype(type);
    attention_forward(tensors.data<T>(kQ), tensors.data<T>(kK), tensors.data<T>(kV), tensors.data<T>(kO), lse, dims,
                      options, stream);
  };
  switch (p.dtype) {
    case DType::bf16: return run(__nv_bfloat16{});
    case DType::f16: return run(__half{});
    default: return run(float{});
  }
}

// The backward's minimum traffic: Q, K, V, O and dO read once (L too), dQ, dK and dV written once.
// Arithmetic: FlashAttention's count for the backward, 2.5 times the forward's: five products of
// seq x seq x head_dim (S again, dP, dV, dK, dQ), over the forward's pairs.
Work backward_work(const Problem& p) {
  const double element = static_cast<double>(size_of(p.dtype));
  const double pairs = counted_pairs(p);
  return Work{element * static_cast<double>(3 * query_elements(p) + 2 * kv_elements(p)) +
                  4.0 * static_cast<double>(query_rows(p)),
              element * static_cast<double>(query_elements(p) + 2 * kv_elements(p)),
              10.0 * pairs * static_cast<double>(head_dim_of(p))};
}

void register_attention_backward(Registry& registry) {
  Op op = attention_op(ids::kBackward);
  op.summary =
      "attention's gradients dQ, dK, dV from Q, K, V, dO and the forward's O and L (computed from Q, K, V by the "
      "library's forward), dK and dV summed over each kv head's query heads, scale 1/sqrt(head_dim), fp32 inside";
  op.tensors = attention_tensors(TensorRole::input, moderate_fill);
  op.tensors.push_back({kDo, TensorRole::input, {}, query_elements, moderate_fill});
  op.tensors.push_back({kDq, TensorRole::output, {}, query_elements});
  op.tensors.push_back({kDk, TensorRole::output, {}, kv_elements});
  op.tensors.push_back({kDv, TensorRole::output, {}, kv_elements});
  op.derive_inputs = derive_forward_outputs;
  op.work = backward_work;
  op.check = check_backward;
  op.check_host_bytes = [](const Problem& p) {
    return attention_backward_check_host_bytes(batch_of(p), heads_of(p), seq_of(p), head_dim_of(p));
  };
  op.bench_problems = problems(op, DType::bf16, kBenchShapes);
  for (DType dtype : op.dtypes)
    for (const Problem& p : problems(op, dtype, kTestShapes)) op.test_problems.push_back(p);
  Variant naive = variant(ids::kNaive,
                          "P and dS of every (row, key) into fp32 seq x seq workspaces by a thread each, then dK and "
                          "dV by a thread per (key, dimension) and dQ by a thread per (row, dimension)",
                          Role::ladder, Engine::cuda_cores, v::naive_backward_limits, v::naive_backward<__nv_bfloat16>,
                          v::naive_backward<__half>, v::naive_backward<float>);
  naive.workspace_bytes = [](const Problem& p) {
    return v::naive_backward_workspace_bytes(batch_of(p), heads_of(p), seq_of(p));
  };
  Variant cublas = variant(ids::kCublas,
                           "unfused through cuBLAS: S and dP by batched GEMMs into fp32, P and dS by a block per row, "
                           "then dV, dK and dQ by three more GEMMs, fp32 compute (no TF32), O(seq^2) memory",
                           Role::baseline, Engine::by_dtype, v::cublas_backward_limits,
                           v::cublas_backward<__nv_bfloat16>, v::cublas_backward<__half>, v::cublas_backward<float>);
  cublas.workspace_bytes = [](const Problem& p) {
    return v::cublas_backward_workspace_bytes(batch_of(p), heads_of(p), seq_of(p), size_of(p.dtype));
  };
  Variant mma = variant(ids::kMma,
                        "FlashAttention-2's backward on mma.sync: a block per 64 keys walks the query tiles of its "
                        "group's heads, dK and dV in registers, P^T and dS^T as A fragments, dQ through shared "
                        "memory and fp32 atomics",
                        Role::ladder, Engine::tensor_cores, v::mma_backward_limits, v::mma_backward<__nv_bfloat16>,
                        v::mma_backward<__half>);
  mma.workspace_bytes = [](const Problem& p) {
    return v::mma_backward_workspace_bytes(batch_of(p), heads_of(p), seq_of(p), head_dim_of(p));
  };
  Variant wgmma = variant(ids::kWgmma,
                          "Hopper: the mma rung's algorithm on wgmma in FlashAttention-3's shape, a producer "
                          "warpgroup (TMA loads, dQ reductions) and two consumers of 64 keys each, S^T and dP^T from "
                          "shared memory, dV and dK with P^T and dS^T in registers, dQ from a shared dS tile",
                          Role::ladder, Engine::tensor_cores, v::wgmma_backward_limits,
                          v::wgmma_backward<__nv_bfloat16>, v::wgmma_backward<__half>);
  wgmma.workspace_bytes = mma.workspace_bytes;
  op.variants = {naive, mma, wgmma, cublas};
  registry.add(std::move(op));
}

}  // namespace

void register_attention_memory(Registry& registry);
void register_attention_claims(Registry& registry);
void register_attention_decode(Registry& registry);

void register_attention(Registry& registry) {
  Op op = attention_op(ids::kForward);
  op.summary =
      "O = softmax(scale Q K^T [causal]) V and L = log-sum-exp of each row, Q/O [batch, heads, seq, head_dim], "
      "K/V [batch, kv_heads, seq, head_dim], scale 1/sqrt(head_dim), fp32 inside";
  op.tensors = attention_tensors(TensorRole::output, nullptr);
  op.work = work;
  op.check = check;
  op.check_host_bytes = [](const Problem& p) {
    return attention_check_host_bytes(batch_of(p), heads_of(p), seq_of(p), head_dim_of(p));
  };
  op.bench_problems = bench_problems(op);
  for (DType dtype : op.dtypes)
    for (const Problem& p : problems(op, dtype, kTestShapes)) op.test_problems.push_back(p);

  constexpr Engine kCuda = Engine::cuda_cores;
  Variant naive =
      variant(ids::kNaive,
              "three kernels: S = scale Q K^T into an fp32 seq x seq workspace, a block-per-row softmax "
              "in place, O = P V; 16x16 shared-memory tiles",
              Role::ladder, kCuda, v::naive_limits, v::naive<__nv_bfloat16>, v::naive<__half>, v::naive<float>);
  naive.workspace_bytes = [](const Problem& p) {
    return v::naive_workspace_bytes(batch_of(p), heads_of(p), seq_of(p));
  };
  // The baseline's GEMMs run on tensor cores for bf16/fp16 and, with CUBLAS_COMPUTE_32F (no TF32),
  // on CUDA cores for f32: by_dtype holds each to its unit's ceiling.
  Variant cublas = variant(ids::kCublas,
                           "unfused through cuBLAS: S = scale Q K^T by cublasGemmStridedBatchedEx into fp32, the naive "
                           "rung's row softmax, O = P V by a second batched GEMM, fp32 compute (no TF32), keeping "
                           "O(seq^2) memory",
                           Role::baseline, Engine::by_dtype, v::cublas_limits, v::cublas_unfused<__nv_bfloat16>,
                           v::cublas_unfused<__half>, v::cublas_unfused<float>);
  cublas.workspace_bytes = [](const Problem& p) {
    return v::cublas_workspace_bytes(batch_of(p), heads_of(p), seq_of(p), size_of(p.dtype));
  };
  op.variants = {
      naive,
      variant(ids::kTutorial,
              "tutorial 004's flashAttentionForward as written: a thread per query row, tile maxima only, the V update "
              "a comment, O and L never written (BROKEN)",
              Role::broken, kCuda, v::tutorial_limits, v::tutorial<__nv_bfloat16>, v::tutorial<__half>,
              v::tutorial<float>),
      variant(ids::kTutorialFixed,
              "the tutorial's kernel completed: a thread per query row, online softmax over 32-key shared tiles, "
              "O accumulated in local memory",
              Role::ladder, kCuda, v::tutorial_limits, v::tutorial_fixed<__nv_bfloat16>, v::tutorial_fixed<__half>,
              v::tutorial_fixed<float>),
      variant(ids::kTiled,
              "FlashAttention-2's split on CUDA cores: 64 query rows a block, 16 a warp, K/V tiles in shared "
              "memory, scores and O in registers, the key tiles the mask hides (causal, window) skipped",
              Role::ladder, kCuda, v::tiled_limits, v::tiled<__nv_bfloat16>, v::tiled<__half>, v::tiled<float>),
      variant(ids::kMma,
              "tensor cores: Q K^T and P V by mma.sync m16n8k16 from ldmatrix, P kept in registers, exp2 with the "
              "scale folded in",
              Role::ladder, Engine::tensor_cores, v::mma_limits, v::mma<__nv_bfloat16>, v::mma<__half>),
      variant(ids::kMmaPipelined,
              "mma plus cp.async K/V copies overlapped with the arithmetic and the key tiles the mask hides "
              "(above the causal diagonal, outside a window) skipped",
              Role::ladder, Engine::tensor_cores, v::mma_limits, v::mma_pipelined<__nv_bfloat16>,
              v::mma_pipelined<__half>),
      variant(ids::kWgmma,
              "Hopper: Q K^T and P V by wgmma from shared memory, K/V by TMA from a producer warpgroup into "
              "mbarrier rings, two consumer warpgroups overlapping each tile's softmax with the previous P V",
              Role::ladder, Engine::tensor_cores, v::wgmma_limits, v::wgmma<__nv_bfloat16>, v::wgmma<__half>),
      variant(ids::kWgmmaPingPong,
              "wgmma plus FlashAttention-3's ping-pong: named barriers make the two consumer warpgroups take "
              "turns at the tensor cores",
              Role::ladder, Engine::tensor_cores, v::wgmma_limits, v::wgmma_pingpong<__nv_bfloat16>,
              v::wgmma_pingpong<__half>),
      cublas,
  };
  registry.add(std::move(op));
  register_attention_backward(registry);
  register_attention_decode(registry);
  register_attention_memory(registry);
  register_attention_claims(registry);
}

}  // namespace cudalab::harness
