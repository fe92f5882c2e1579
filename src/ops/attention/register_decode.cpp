// The decode attention op, attention_decode: `tokens` new queries of each sequence against its
// key-value cache, over {batch, heads, tokens, cache, head_dim}, with parameters causal (0 or 1,
// aligned bottom-right), kv_heads (0: as many as heads; else a divisor of heads), ragged (0:
// every sequence fills the cache; 1: sequence b > 0 holds a length drawn from [tokens, cache])
// and page (0: dense caches; else keys a page: K and V as pages [batch * cache / page, kv_heads,
// page, head_dim] in an order block_table gives), and window_left and window_right (a sliding window
// about each query's position; -1 unbounded), in bf16, f16 and f32 with fp32 arithmetic inside. Sequence lengths
// are a function of the problem, not of the seed, so the work model counts exactly the keys read. Q and K are
// fill_random's (Distribution::integers gives one-hot softmax rows, where a key wrongly seen or
// missed shows); the check is the attention op's row reference (reference.hpp) with the decode
// fields set: every query row, every problem.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "harness/random.hpp"
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

constexpr char kLengths[] = "lengths";
constexpr char kBlockTable[] = "block_table";

std::int64_t tokens_of(const Problem& p) { return p.dim("tokens"); }
std::int64_t cache_of(const Problem& p) { return p.dim("cache"); }
// Keys a page (0: dense caches), and pages a sequence.
std::int64_t page_of(const Problem& p) { return static_cast<std::int64_t>(p.param(ids::kPage)); }
std::int64_t pages_per_sequence(const Problem& p) { return page_of(p) > 0 ? cache_of(p) / page_of(p) : 0; }

// Empty when the parameters are of the op's form, else why not.
std::string parameters_unsupported(const Problem& p) {
  for (const char* flag : {ids::kCausal, ids::kRagged})
    if (const std::string why = flag_unsupported(p, flag); !why.empty()) return why;
  for (const char* side : {ids::kWindowLeft, ids::kWindowRight})
    if (const std::string why = window_unsupported(p, side); !why.empty()) return why;
  if (const std::string why = kv_heads_unsupported(p); !why.empty()) return why;
  if (tokens_of(p) > cache_of(p))
    return "tokens (" + std::to_string(tokens_of(p)) + ") must be at most cache (" + std::to_string(cache_of(p)) +
           "): the new tokens are in the cache";
  const double page = p.param(ids::kPage);
  if (page != 0 && (page < 1 || page != std::floor(page) || cache_of(p) % static_cast<std::int64_t>(page) != 0))
    return "page must be 0 (dense caches) or a whole number of keys that divides cache (" +
           std::to_string(cache_of(p)) + "), got " + format_param(page);
  return "";
}

std::int64_t kv_heads_of(const Problem& p) {
  return attention_registration::kv_heads_of(p, parameters_unsupported(p).empty());
}

// The window over the cache: the parameters, or none where they are not of the op's form.
v::KeyWindow window_of(const Problem& p) {
  const bool supported = parameters_unsupported(p).empty();
  const auto side = [&](const char* name) { return supported ? static_cast<std::int64_t>(p.param(name)) : -1; };
  return v::key_window(cache_of(p), causal_of(p), side(ids::kWindowLeft), side(ids::kWindowRight));
}

// Sequence b's length: the whole cache, or when ragged (for b > 0) a length in [tokens, cache]
// drawn by a hash of (b, cache).
std::int32_t length_of(const Problem& p, std::int64_t b) {
  const std::int64_t cache = cache_of(p), tokens = std::min(tokens_of(p), cache);
  if (p.param(ids::kRagged) == 0 || b == 0) return static_cast<std::int32_t>(cache);
  const std::uint64_t span = static_cast<std::uint64_t>(cache - tokens + 1);
  const std::uint64_t draw = mix64(static_cast<std::uint64_t>(b) ^ mix64(static_cast<std::uint64_t>(cache)));
  return static_cast<std::int32_t>(tokens + static_cast<std::int64_t>(draw % span));
}

std::int64_t query_elements(const Problem& p) { return batch_of(p) * heads_of(p) * tokens_of(p) * head_dim_of(p); }
// Dense or paged, the caches hold batch * cache keys of each kv head: one page a sequence's
// cache / page keys, every page used once (in the order block_table draws).
std::int64_t cache_elements(const Problem& p) { return batch_of(p) * kv_heads_of(p) * cache_of(p) * head_dim_of(p); }
std::int64_t table_elements(const Problem& p) { return batch_of(p) * pages_per_sequence(p); }

// block_table: every page once, in an order drawn from the seed (Fisher-Yates on mix64), so that
// neighbouring keys of a sequence lie in pages far apart.
void fill_block_table(void* device, std::int64_t count, std::uint64_t seed, Distribution, const Problem&,
                      cudaStream_t stream) {
  std::vector<std::int32_t> pages(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) pages[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  std::uint64_t state = seed;
  for (std::int64_t i = count - 1; i > 0; --i)
    std::swap(pages[static_cast<std::size_t>(i)],
              pages[static_cast<std::size_t>((state = mix64(state)) % static_cast<std::uint64_t>(i + 1))]);
  // Pageable source: the copy has taken the values before it returns.
  if (count > 0)
    CUDALAB_CUDA_CHECK(
        cudaMemcpyAsync(device, pages.data(), pages.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice, stream));
}
std::int64_t query_rows(const Problem& p) { return batch_of(p) * heads_of(p) * tokens_of(p); }

void fill_lengths(void* device, std::int64_t count, std::uint64_t, Distribution, const Problem& p,
                  cudaStream_t stream) {
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(count));
  for (std::int64_t b = 0; b < count; ++b) lengths[static_cast<std::size_t>(b)] = length_of(p, b);
  // Pageable source: the copy has taken the values before it returns.
  if (count > 0)
    CUDALAB_CUDA_CHECK(
        cudaMemcpyAsync(device, lengths.data(), lengths.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice, stream));
}

// Q and K drawn from attention_score_distribution (1e30-sized values would overflow the scores).
void score_fill(void* device, std::int64_t count, std::uint64_t seed, Distribution distribution, const Problem& p,
                cudaStream_t stream) {
  fill_random(p.dtype, device, count, seed, attention_score_distribution(distribution), stream);
}

struct DecodeBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    Args args;
    bind_shared(args, problem, tensors, kv_heads_of(problem));
    args.lengths = tensors.data<std::int32_t>(kLengths);
    args.tokens = tokens_of(problem);
    args.cache = cache_of(problem);
    args.window_left = static_cast<std::int64_t>(problem.param(ids::kWindowLeft));
    args.window_right = static_cast<std::int64_t>(problem.param(ids::kWindowRight));
    if (page_of(problem) > 0) {
      args.block_table = tensors.data<std::int32_t>(kBlockTable);
      args.page_size = page_of(problem);
    }
    return args;
  }
};

Comparison check(const CheckContext& c) {
  auto t = host_tensors<AttentionTensors>(c, kv_heads_of(c.problem), cache_of(c.problem));
  t.queries = tokens_of(c.problem);
  t.lengths = c.tensors.host<std::int32_t>(kLengths);
  t.window_left = static_cast<std::int64_t>(c.problem.param(ids::kWindowLeft));
  t.window_right = static_cast<std::int64_t>(c.problem.param(ids::kWindowRight));
  // Paged: the reference reads dense caches, gathered here from the pages through the table.
  std::vector<unsigned char> k, v;
  if (page_of(c.problem) > 0) {
    v::DecodeArgs<unsigned char> pages;  // only its key_offset, in elements
    pages.kv_heads = t.kv_heads, pages.cache = t.seq, pages.head_dim = t.head_dim;
    pages.block_table = c.tensors.host<std::int32_t>(kBlockTable);
    pages.page_size = page_of(c.problem);
    const std::size_t element = size_of(t.dtype), row = static_cast<std::size_t>(t.head_dim) * element;
    k.resize(static_cast<std::size_t>(cache_elements(c.problem)) * element);
    v.resize(k.size());
    std::size_t out = 0;
    for (std::int64_t b = 0; b < t.batch; ++b)
      for (std::int64_t h = 0; h < t.kv_heads; ++h)
        for (std::int64_t key = 0; key < t.seq; ++key, out += row) {
          const std::size_t at = static_cast<std::size_t>(pages.key_offset(b, h, key)) * element;
          std::memcpy(k.data() + out, static_cast<const unsigned char*>(t.k) + at, row);
          std::memcpy(v.data() + out, static_cast<const unsigned char*>(t.v) + at, row);
        }
    t.k = k.data(), t.v = v.data();
  }
  return check_attention(t);
}

// The minimum traffic: Q, the keys and values some query of each sequence sees (its length, not the
// cache; with a window, from the earliest query's first key) and the lengths read once, O and L
// written once. Arithmetic: Q K^T and P V over the keys each query sees.
Work work(const Problem& p) {
  const double element = static_cast<double>(size_of(p.dtype)), dim = static_cast<double>(head_dim_of(p));
  const v::KeyWindow window = window_of(p);
  double pairs = 0.0, keys_read = 0.0;
  for (std::int64_t b = 0; b < batch_of(p); ++b) {
    const std::int64_t length = length_of(p, b);
    keys_read += static_cast<double>(length - window.first_key(length - tokens_of(p)));
    for (std::int64_t t = 0; t < tokens_of(p); ++t) {
      const std::int64_t position = length - tokens_of(p) + t;
      pairs +=
          static_cast<double>(std::max<std::int64_t>(0, window.key_end(position, length) - window.first_key(position)));
    }
  }
  const double kv_rows = keys_read * static_cast<double>(kv_heads_of(p));
  pairs *= static_cast<double>(heads_of(p));
  return Work{element * (static_cast<double>(query_elements(p)) + 2.0 * kv_rows * dim) + 4.0 * batch_of(p),
              element * static_cast<double>(query_elements(p)) + 4.0 * static_cast<double>(query_rows(p)),
              4.0 * pairs * dim};
}

struct Shape {
  std::vector<std::int64_t> dims;  // batch, heads, tokens, cache, head_dim
  int causal, kv_heads, ragged;
  int page = 0;
  std::int64_t window_left = -1;
};

std::vector<Problem> problems(const Op& op, DType dtype, const std::vector<Shape>& shapes) {
  std::vector<Problem> out;
  for (const Shape& s : shapes)
    out.push_back(op.problem(s.dims, dtype,
                             {{ids::kCausal, double(s.causal)},
                              {ids::kKvHeads, double(s.kv_heads)},
                              {ids::kRagged, double(s.ragged)},
                              {ids::kPage, double(s.page)},
                              {ids::kWindowLeft, double(s.window_left)}}));
  return out;
}

// Test shapes: one key; Llama-3's grouping (32 heads over 8) at 1 token; groups times tokens
// filling the 16 packed rows exactly (4 x 4, 1 x 16) and partly (2 x 3, not causal); a single
// sequence of 5000 keys (the most splits); head_dim 80 and a group of 8 x 8 tokens (64 rows),
// which only naive takes; a cache of 16384 keys at batch 4 (a sample of the bench's sizes).
const std::vector<Shape> kTestShapes = {
    {{1, 1, 1, 1, 64}, 1, 0, 0},
    {{2, 8, 1, 100, 128}, 1, 2, 1},
    {{3, 4, 4, 129, 64}, 1, 1, 1},
    {{2, 32, 1, 1000, 128}, 1, 8, 1},
    {{2, 6, 3, 65, 128}, 0, 3, 1},
    {{1, 2, 16, 300, 64}, 1, 2, 0},
    {{1, 2, 2, 5000, 128}, 1, 2, 1},
    {{1, 4, 1, 4097, 80}, 1, 1, 0},
    {{2, 16, 8, 64, 128}, 1, 2, 1},
    {{4, 32, 1, 16384, 128}, 1, 8, 1},
    // Paged caches: pages of 64 keys (the split kernel's tile), of 256 at Llama-3's grouping, and
    // of 100 (naive only).
    {{2, 8, 1, 1024, 128}, 1, 2, 1, 64},
    {{3, 4, 4, 192, 64}, 1, 1, 1, 64},
    {{2, 32, 1, 4096, 128}, 1, 8, 1, 256},
    {{1, 4, 2, 300, 128}, 1, 2, 0, 100},
    // Sliding windows: 100 keys back at Llama-3's grouping (a window's start inside a 64-key tile,
    // some splits wholly before it), 50 at 4 x 4 packed rows, 37 in pages of 100 keys (naive), and
    // 4095 over 5000 keys.
    {{2, 8, 1, 1000, 128}, 1, 2, 1, 0, 100},
    {{3, 4, 4, 300, 64}, 1, 1, 1, 0, 50},
    {{1, 4, 2, 300, 128}, 1, 2, 0, 100, 37},
    {{1, 2, 2, 5000, 128}, 1, 2, 1, 0, 4095},
};

// Bench: bf16, causal, head_dim 128, every sequence filling its cache. Llama-3-8B's grouping (32
// heads over 8 kv heads) at one token for batch 1 (cache 1k-128k), 8 (1k-32k), 32 and 64; a
// multi-head cache (32 over 32, Llama-2-7B) at batch 1 and 8; 4 tokens (speculative decoding) at
// batch 8; a ragged batch of 8; batch 8 x 8192 again in pages of 256 keys; and a window of 4096
// keys (Mistral's) over caches of 32768.
std::vector<Problem> bench_problems(const Op& op) {
  std::vector<Shape> shapes;
  for (const std::int64_t cache : {1024, 4096, 16384, 32768, 131072})
    shapes.push_back({{1, 32, 1, cache, 128}, 1, 8, 0});
  for (const std::int64_t cache : {1024, 4096, 8192, 32768}) shapes.push_back({{8, 32, 1, cache, 128}, 1, 8, 0});
  shapes.push_back({{32, 32, 1, 4096, 128}, 1, 8, 0});
  shapes.push_back({{64, 32, 1, 2048, 128}, 1, 8, 0});
  shapes.push_back({{1, 32, 1, 4096, 128}, 1, 32, 0});
  shapes.push_back({{8, 32, 1, 4096, 128}, 1, 32, 0});
  shapes.push_back({{8, 32, 4, 4096, 128}, 1, 8, 0});
  shapes.push_back({{8, 32, 1, 8192, 128}, 1, 8, 1});
  shapes.push_back({{8, 32, 1, 8192, 128}, 1, 8, 0, 256});
  shapes.push_back({{8, 32, 1, 32768, 128}, 1, 8, 0, 0, 4095});  // Mistral's window of 4096 keys
  return problems(op, DType::bf16, shapes);
}

}  // namespace

void register_attention_decode(Registry& registry) {
  Op op;
  op.name = ids::kDecode;
  op.summary =
      "decode attention: the newest `tokens` queries of each sequence (Q, O [batch, heads, tokens, head_dim]) against "
      "its key-value cache (K, V [batch, kv_heads, cache, head_dim]) of lengths[b] keys, causal aligned bottom-right, "
      "L = each row's log-sum-exp, scale 1/sqrt(head_dim), fp32 inside";
  op.dim_names = {"batch", "heads", "tokens", "cache", "head_dim"};
  op.dtypes = {DType::bf16, DType::f16, DType::f32};
  op.params = {{ids::kCausal, 1}, {ids::kKvHeads, 0},     {ids::kRagged, 0},
               {ids::kPage, 0},   {ids::kWindowLeft, -1}, {ids::kWindowRight, -1}};
  op.tensors = {
      {kQ, TensorRole::input, {}, query_elements, score_fill},
      {kK, TensorRole::input, {}, cache_elements, score_fill},
      {kV, TensorRole::input, {}, cache_elements},
      {kLengths, TensorRole::input, DType::i32, batch_of, fill_lengths},
      {kBlockTable, TensorRole::input, DType::i32, table_elements, fill_block_table},
      {kO, TensorRole::output, {}, query_elements},
      {kLse, TensorRole::output, DType::f32, query_rows},
  };
  op.work = work;
  op.check = check;
  op.check_host_bytes = [](const Problem& p) {
    return attention_check_host_bytes(batch_of(p), heads_of(p), cache_of(p), head_dim_of(p));
  };
  op.bench_problems = bench_problems(op);
  for (DType dtype : op.dtypes)
    for (const Problem& p : problems(op, dtype, kTestShapes)) op.test_problems.push_back(p);

  Variant naive = make_variant<DecodeBinding>(
      ids::kNaive,
      "a block per query row on CUDA cores: each warp every fourth key, a lane per 32nd dimension, a shuffle tree for "
      "the dot product, online softmax; K and V read once per query head and token",
      Role::ladder, v::decode_naive<__nv_bfloat16>, v::decode_naive<__half>, v::decode_naive<float>);
  naive.engine = Engine::cuda_cores;
  naive.can_implement = [](const DeviceInfo&, const Problem& p) {
    const std::string why = parameters_unsupported(p);
    return why.empty() ? v::decode_naive_limits(head_dim_of(p)) : why;
  };
  Variant split = make_variant<DecodeBinding>(
      ids::kSplitMma,
      "flash-decoding on mma.sync: a block per (key split, kv head, sequence) with the group's heads times the tokens "
      "packed as one m16 tile, so K and V are read once per kv head; 64-key tiles in a three-stage cp.async ring; the "
      "splits combined by a second kernel weighted by their log-sum-exps",
      Role::ladder, v::decode_split_mma<__nv_bfloat16>, v::decode_split_mma<__half>);
  split.engine = Engine::tensor_cores;
  split.can_implement = [](const DeviceInfo& device, const Problem& p) {
    const std::string why = parameters_unsupported(p);
    if (!why.empty()) return why;
    if (page_of(p) > 0 && !v::decode_split_page_limits(page_of(p)).empty())
      return v::decode_split_page_limits(page_of(p));
    return v::decode_split_limits(heads_of(p), kv_heads_of(p), tokens_of(p), head_dim_of(p),
                                  device.compute_capability());
  };
  split.workspace_bytes = [](const Problem& p) {
    return v::decode_workspace_bytes(batch_of(p), heads_of(p), kv_heads_of(p), tokens_of(p), cache_of(p),
                                     head_dim_of(p));
  };
  // For f32 the GEMMs run on CUDA cores (CUBLAS_COMPUTE_32F, no TF32), for bf16/f16 on tensor cores.
  Variant cublas = make_variant<DecodeBinding>(
      ids::kCublas,
      "unfused through cuBLAS, as a padded batch with a mask: S = scale Q K^T against the whole cache by "
      "cublasGemmStridedBatchedEx into fp32, a block-per-row softmax over each sequence's keys, O = P V by a second "
      "batched GEMM",
      Role::baseline, v::cublas_decode<__nv_bfloat16>, v::cublas_decode<__half>, v::cublas_decode<float>);
  cublas.engine = Engine::by_dtype;
  cublas.can_implement = [](const DeviceInfo&, const Problem& p) {
    const std::string why = parameters_unsupported(p);
    if (why.empty() && page_of(p) > 0) return std::string("the cuBLAS baseline takes dense caches (page 0)");
    return why.empty() ? v::cublas_decode_limits(batch_of(p), heads_of(p), kv_heads_of(p), tokens_of(p), cache_of(p),
                                                 head_dim_of(p))
                       : why;
  };
  cublas.workspace_bytes = [](const Problem& p) {
    return v::cublas_decode_workspace_bytes(batch_of(p), heads_of(p), tokens_of(p), cache_of(p), size_of(p.dtype));
  };
  op.variants = {naive, split, cublas};
  registry.add(std::move(op));
}

}  // namespace cudalab::harness
