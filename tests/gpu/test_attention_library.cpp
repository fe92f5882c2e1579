// cudalab::attention_forward as a program would call it, for bf16, fp16 and fp32: both kernels it
// chooses between (tensor cores for 16-bit head_dim 64 / 128 on 16-byte aligned arrays, CUDA cores
// otherwise: fp32, other head dims, arrays off a 16-byte boundary), causal and not, grouped-query
// heads, sequences that are no multiple of any tile, an explicit scale, empty shapes, argument
// errors; and nothing outside O and L is written.
#include <cstdint>
#include <string>
#include <vector>

#include "cudalab/attention.hpp"
#include "cudalab/memory.hpp"
#include "error_kind.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/attention/inputs.hpp"
#include "ops/attention/reference.hpp"

namespace cudalab {
namespace {

constexpr std::uint64_t kSeed = 0xA77E;

std::vector<unsigned char> to_host(const void* device, std::size_t bytes, cudaStream_t stream) {
  std::vector<unsigned char> host(bytes);
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), device, bytes, cudaMemcpyDeviceToHost, stream));
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// Fails when a byte of `out` outside [begin, end) is not the poison pattern.
void expect_untouched_outside(const std::vector<unsigned char>& out, std::size_t begin, std::size_t end) {
  for (std::size_t b = 0; b < out.size(); ++b)
    if (b < begin || b >= end) ASSERT_EQ(out[b], harness::kFloatPoisonByte) << "wrote outside the output at byte " << b;
}

struct Case {
  AttentionDims dims;
  bool causal;
  std::int64_t offset;  // elements every 16-bit array starts past its allocation (1: not 16-byte aligned)
  float scale;          // 0: the default
};

std::string label(const Case& c) {
  const AttentionDims& d = c.dims;
  return std::to_string(d.batch) + "x" + std::to_string(d.heads) + "(" + std::to_string(d.kv_heads) + ")x" +
         std::to_string(d.seq) + "x" + std::to_string(d.head_dim) + (c.causal ? " causal" : "") + " offset " +
         std::to_string(c.offset) + " scale " + std::to_string(c.scale);
}

const std::vector<Case> kCases = {
    {{1, 1, 1, 1, 64}, false, 0, 0.0f},   {{2, 3, 3, 17, 64}, true, 0, 0.0f},    {{1, 4, 2, 129, 128}, false, 0, 0.0f},
    {{1, 4, 1, 200, 128}, true, 0, 0.0f}, {{2, 2, 2, 1000, 64}, true, 0, 0.0f},  {{1, 2, 2, 300, 128}, false, 1, 0.0f},
    {{1, 2, 2, 130, 40}, true, 0, 0.0f},  {{1, 2, 1, 257, 64}, false, 0, 0.05f}, {{1, 2, 2, 2500, 128}, true, 0, 0.0f},
};

template <typename T>
void check_case(const Case& c, harness::Distribution distribution) {
  SCOPED_TRACE(std::string(to_string(dtype_of_v<T>)) + " " + label(c) + " " + harness::to_string(distribution));
  const AttentionDims& d = c.dims;
  const std::int64_t rows = d.batch * d.heads * d.seq, q_count = rows * d.head_dim;
  const std::int64_t kv_count = d.batch * d.kv_heads * d.seq * d.head_dim, room = c.offset + 8;
  DeviceBuffer<T> q(q_count + room), k(kv_count + room), v(kv_count + room), o(q_count + room);
  DeviceBuffer<float> lse(rows + 8);
  Stream stream;
  const float scale = c.scale > 0.0f ? c.scale : harness::attention_default_scale(d.head_dim);
  const DType dtype = dtype_of_v<T>;
  harness::fill_attention_queries(dtype, q.data() + c.offset, q_count, kSeed, distribution, d.seq, d.head_dim, scale,
                                  stream.get());
  harness::fill_attention_keys(dtype, k.data() + c.offset, kv_count, kSeed + 1, distribution, d.seq, d.head_dim, scale,
                               stream.get());
  harness::fill_random(dtype, v.data() + c.offset, kv_count, kSeed + 2, distribution, stream.get());
  harness::poison(o.data(), o.bytes(), stream.get());
  harness::poison(lse.data(), lse.bytes(), stream.get());
  AttentionOptions options;
  options.scale = c.scale;
  options.causal = c.causal;
  attention_forward(q.data() + c.offset, k.data() + c.offset, v.data() + c.offset, o.data() + c.offset, lse.data(), d,
                    options, stream.get());
  const auto hq = to_host(q.data(), q.bytes(), stream.get()), hk = to_host(k.data(), k.bytes(), stream.get());
  const auto hv = to_host(v.data(), v.bytes(), stream.get()), ho = to_host(o.data(), o.bytes(), stream.get());
  const auto hl = to_host(lse.data(), lse.bytes(), stream.get());
  const std::size_t skip = static_cast<std::size_t>(c.offset) * sizeof(T);
  harness::AttentionTensors t;
  t.dtype = dtype;
  t.q = hq.data() + skip;
  t.k = hk.data() + skip;
  t.v = hv.data() + skip;
  t.o = ho.data() + skip;
  t.lse = reinterpret_cast<const float*>(hl.data());
  t.batch = d.batch;
  t.heads = d.heads;
  t.kv_heads = d.kv_heads;
  t.seq = d.seq;
  t.head_dim = d.head_dim;
  t.scale = scale;
  t.causal = c.causal;
  const harness::Comparison result = harness::check_attention(t);
  EXPECT_TRUE(result.passed()) << result.summary();
  expect_untouched_outside(ho, skip, skip + static_cast<std::size_t>(q_count) * sizeof(T));
  expect_untouched_outside(hl, 0, static_cast<std::size_t>(rows) * sizeof(float));
}

template <typename T>
void check_every_case() {
  for (const Case& c : kCases)
    for (harness::Distribution distribution : {harness::Distribution::uniform, harness::Distribution::normal})
      check_case<T>(c, distribution);
}

TEST(LibraryAttention, Bf16ShapesCausalGroupedAndUnaligned) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_case<__nv_bfloat16>();
}

TEST(LibraryAttention, Fp16ShapesCausalGroupedAndUnaligned) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_case<__half>();
}

TEST(LibraryAttention, Fp32ShapesCausalGroupedAndUnaligned) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_case<float>();
}

TEST(LibraryAttention, EmptyShapesDoNothing) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<__nv_bfloat16> x(8);
  DeviceBuffer<float> l(8);
  for (const AttentionDims& d : {AttentionDims{0, 2, 2, 8, 64}, AttentionDims{1, 2, 2, 0, 64},
                                 AttentionDims{1, 0, 0, 8, 64}, AttentionDims{1, 2, 2, 8, 0}})
    EXPECT_NO_THROW(attention_forward(x.data(), x.data(), x.data(), x.data(), l.data(), d));
}

TEST(LibraryAttention, ArgumentErrors) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<__nv_bfloat16> q(4096), k(4096), v(4096), o(4096);
  DeviceBuffer<float> l(64);
  const AttentionDims good{1, 2, 2, 8, 64};
  const auto kind = [&](AttentionDims d, AttentionOptions options, __nv_bfloat16* out, float* lse) {
    return test_support::thrown_kind([&] { attention_forward(q.data(), k.data(), v.data(), out, lse, d, options); });
  };
  EXPECT_EQ(kind({1, -2, 2, 8, 64}, {}, o.data(), l.data()), ErrorKind::invalid_argument);  // negative heads
  EXPECT_EQ(kind({1, 3, 2, 8, 64}, {}, o.data(), l.data()), ErrorKind::invalid_argument);   // 3 heads over 2 kv heads
  EXPECT_EQ(kind({1, 2, 0, 8, 64}, {}, o.data(), l.data()), ErrorKind::invalid_argument);   // no kv heads
  EXPECT_EQ(kind(good, {-1.0f, false}, o.data(), l.data()), ErrorKind::invalid_argument);   // negative scale
  EXPECT_EQ(kind(good, {}, nullptr, l.data()), ErrorKind::invalid_argument);                // o null
  EXPECT_EQ(kind(good, {}, q.data(), l.data()), ErrorKind::invalid_argument);               // o is q
  EXPECT_EQ(kind(good, {}, o.data(), reinterpret_cast<float*>(o.data())), ErrorKind::invalid_argument);  // L in O
  EXPECT_EQ(kind({1, 2, 2, 8, 300}, {}, o.data(), l.data()), ErrorKind::invalid_argument);  // head_dim no kernel takes
}

}  // namespace
}  // namespace cudalab
