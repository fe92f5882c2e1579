// cudalab::attention_forward and attention_backward as a program would call them, for bf16, fp16
// and fp32: the kernels each chooses between (tensor cores for 16-bit head_dim 64 / 128 on 16-byte
// aligned arrays, CUDA cores otherwise: fp32, other head dims, arrays off a 16-byte boundary),
// causal and not, sliding windows, grouped-query heads, sequences that are no multiple of any tile,
// an explicit scale, the backward's two workspace overloads, empty shapes, argument errors; and
// nothing outside the outputs (O and L; dQ, dK and dV) is written.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "cudalab/attention.hpp"
#include "cudalab/device.hpp"
#include "cudalab/memory.hpp"
#include "error_kind.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/attention/inputs.hpp"
#include "ops/attention/reference.hpp"
#include "ops/attention/variants.hpp"

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
  for (std::size_t b = 0; b < out.size(); ++b) {
    if (b < begin || b >= end) {
      ASSERT_EQ(out[b], harness::kFloatPoisonByte) << "wrote outside the output at byte " << b;
    }
  }
}

struct Case {
  AttentionDims dims;
  bool causal;
  std::int64_t offset;  // elements every 16-bit array starts past its allocation (1: not 16-byte aligned)
  float scale;          // 0: the default
  std::int64_t window_left = -1, window_right = -1;  // a sliding window (-1: unbounded)
};

std::string label(const Case& c) {
  const AttentionDims& d = c.dims;
  return std::to_string(d.batch) + "x" + std::to_string(d.heads) + "(" + std::to_string(d.kv_heads) + ")x" +
         std::to_string(d.seq) + "x" + std::to_string(d.head_dim) + (c.causal ? " causal" : "") + " offset " +
         std::to_string(c.offset) + " scale " + std::to_string(c.scale) + " window " + std::to_string(c.window_left) +
         " " + std::to_string(c.window_right);
}

const std::vector<Case> kCases = {
    {{1, 1, 1, 1, 64}, false, 0, 0.0f},
    {{2, 3, 3, 17, 64}, true, 0, 0.0f},
    {{1, 4, 2, 129, 128}, false, 0, 0.0f},
    {{1, 4, 1, 200, 128}, true, 0, 0.0f},
    {{2, 2, 2, 1000, 64}, true, 0, 0.0f},
    {{1, 2, 2, 300, 128}, false, 1, 0.0f},
    {{1, 2, 2, 130, 40}, true, 0, 0.0f},
    {{1, 2, 1, 257, 64}, false, 0, 0.05f},
    {{1, 2, 2, 2500, 128}, true, 0, 0.0f},
    // Sliding windows: causal on the tensor cores, two-sided, off a 16-byte boundary (the CUDA-core
    // kernels), and at a head_dim only those take.
    {{1, 4, 2, 700, 128}, true, 0, 0.0f, 200},
    {{2, 2, 2, 333, 64}, false, 0, 0.0f, 50, 20},
    {{1, 2, 2, 300, 128}, true, 1, 0.0f, 64},
    {{1, 2, 2, 130, 40}, false, 0, 0.0f, 10, 10},
};

// Q, K and V of a case as the harness fills them (rows with a dominant score planted in Q and K;
// V from the scores' distribution, as the backward op's), O and L poisoned, then written by
// attention_forward: the forward's test and the backward's inputs. Every array starts `offset`
// elements into a buffer with 8 elements of poisoned room after it.
template <typename T>
struct ForwardRun {
  const Case& c;
  const std::int64_t rows, q_count, kv_count;
  const float scale;  // as the kernels get it
  DeviceBuffer<T> q, k, v, o;
  DeviceBuffer<float> lse;

  ForwardRun(const Case& c_, harness::Distribution distribution, cudaStream_t stream)
      : c(c_),
        rows(c.dims.batch * c.dims.heads * c.dims.seq),
        q_count(rows * c.dims.head_dim),
        kv_count(c.dims.batch * c.dims.kv_heads * c.dims.seq * c.dims.head_dim),
        scale(c.scale > 0.0f ? c.scale : harness::attention_default_scale(c.dims.head_dim)),
        q(q_count + c.offset + 8),
        k(kv_count + c.offset + 8),
        v(kv_count + c.offset + 8),
        o(q_count + c.offset + 8),
        lse(rows + 8) {
    const AttentionDims& d = c.dims;
    const DType dtype = dtype_of_v<T>;
    // The room around the arrays poisoned too, so that every byte the host copies back was written
    // (initcheck).
    for (const DeviceBuffer<T>* input : {&q, &k, &v}) harness::poison(input->data(), input->bytes(), stream);
    harness::fill_attention_queries(dtype, at(q), q_count, kSeed, distribution, d.seq, d.head_dim, scale, stream);
    harness::fill_attention_keys(dtype, at(k), kv_count, kSeed + 1, distribution, d.seq, d.head_dim, scale, stream);
    harness::fill_random(dtype, at(v), kv_count, kSeed + 2, harness::attention_score_distribution(distribution),
                         stream);
    harness::poison(o.data(), o.bytes(), stream);
    harness::poison(lse.data(), lse.bytes(), stream);
    attention_forward(at(q), at(k), at(v), at(o), lse.data(), d, options(), stream);
  }

  T* at(const DeviceBuffer<T>& buffer) const { return buffer.data() + c.offset; }
  AttentionOptions options() const {
    AttentionOptions out;
    out.scale = c.scale;
    out.causal = c.causal;
    out.window_left = c.window_left;
    out.window_right = c.window_right;
    return out;
  }
  // Bytes a host copy of a T buffer skips to reach the array.
  std::size_t skip() const { return static_cast<std::size_t>(c.offset) * sizeof(T); }

  // Host copies of the buffers of Q, K, V, O and L, poisoned room included.
  struct Host {
    std::vector<unsigned char> q, k, v, o, lse;
  };
  Host copy_to_host(cudaStream_t stream) const {
    return {to_host(q.data(), q.bytes(), stream), to_host(k.data(), k.bytes(), stream),
            to_host(v.data(), v.bytes(), stream), to_host(o.data(), o.bytes(), stream),
            to_host(lse.data(), lse.bytes(), stream)};
  }
  // The forward's or the backward's host tensors over `h`: its Q, K, V, O and L, dims, scale, mask.
  template <typename HostTensors>
  HostTensors host_tensors(const Host& h) const {
    HostTensors t;
    t.dtype = dtype_of_v<T>;
    t.q = h.q.data() + skip();
    t.k = h.k.data() + skip();
    t.v = h.v.data() + skip();
    t.o = h.o.data() + skip();
    t.lse = reinterpret_cast<const float*>(h.lse.data());
    t.batch = c.dims.batch;
    t.heads = c.dims.heads;
    t.kv_heads = c.dims.kv_heads;
    t.seq = c.dims.seq;
    t.head_dim = c.dims.head_dim;
    t.scale = scale;
    t.causal = c.causal;
    t.window_left = c.window_left;
    t.window_right = c.window_right;
    return t;
  }
};

template <typename T>
void check_case(const Case& c, harness::Distribution distribution) {
  SCOPED_TRACE(std::string(to_string(dtype_of_v<T>)) + " " + label(c) + " " + harness::to_string(distribution));
  Stream stream;
  const ForwardRun<T> run(c, distribution, stream.get());
  const auto host = run.copy_to_host(stream.get());
  const harness::Comparison result =
      harness::check_attention(run.template host_tensors<harness::AttentionTensors>(host));
  EXPECT_TRUE(result.passed()) << result.summary();
  expect_untouched_outside(host.o, run.skip(), run.skip() + static_cast<std::size_t>(run.q_count) * sizeof(T));
  expect_untouched_outside(host.lse, 0, static_cast<std::size_t>(run.rows) * sizeof(float));
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

// Hopper's kernel runs persistent but for causal sequences past 8192: with more row blocks than
// SMs each block walks several, in rounds that alternate direction (causal and not, ragged last
// row block, grouped heads). The last case is causal past 8192, on a block a row block.
TEST(LibraryAttention, PersistentRoundsAndLongCausalSequences) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for (const Case& c : {Case{{3, 12, 4, 700, 64}, true, 0, 0.0f}, Case{{3, 12, 4, 700, 64}, false, 0, 0.0f},
                        Case{{3, 12, 4, 520, 128}, true, 0, 0.0f}, Case{{2, 12, 4, 1024, 128}, false, 0, 0.0f},
                        Case{{1, 9, 3, 2048, 128}, false, 0, 0.0f}, Case{{2, 3, 3, 3900, 64}, true, 0, 0.0f},
                        Case{{1, 2, 1, 8300, 128}, true, 0, 0.0f}}) {
    check_case<__nv_bfloat16>(c, harness::Distribution::normal);
    check_case<__half>(c, harness::Distribution::uniform);
  }
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
  EXPECT_EQ(kind(good, {-1.0f, false, {}}, o.data(), l.data()), ErrorKind::invalid_argument);  // negative scale
  EXPECT_EQ(kind(good, {}, nullptr, l.data()), ErrorKind::invalid_argument);                   // o null
  EXPECT_EQ(kind(good, {}, q.data(), l.data()), ErrorKind::invalid_argument);                  // o is q
  EXPECT_EQ(kind(good, {}, o.data(), reinterpret_cast<float*>(o.data())), ErrorKind::invalid_argument);  // L in O
  EXPECT_EQ(kind({1, 2, 2, 8, 300}, {}, o.data(), l.data()), ErrorKind::invalid_argument);  // head_dim no kernel takes
}

// ---- backward

// attention_backward of a case on the forward's O and L and a random dO (from the scores'
// distribution, as the backward op's), through the stream-ordered overload or a caller workspace
// of exactly attention_backward_workspace_bytes; checked against the double reference, and every
// byte around dQ, dK and dV still poisoned.
template <typename T>
void check_backward_case(const Case& c, harness::Distribution distribution, bool caller_workspace,
                         bool deterministic = false) {
  SCOPED_TRACE(std::string(to_string(dtype_of_v<T>)) + " " + label(c) + " " + harness::to_string(distribution) +
               (caller_workspace ? ", caller workspace" : ", stream-ordered workspace") +
               (deterministic ? ", deterministic" : ""));
  Stream stream;
  const cudaStream_t st = stream.get();
  const ForwardRun<T> run(c, distribution, st);
  const DType dtype = dtype_of_v<T>;
  DeviceBuffer<T> d_o(run.q.size()), dq(run.q.size()), dk(run.k.size()), dv(run.v.size());
  harness::poison(d_o.data(), d_o.bytes(), st);
  harness::fill_random(dtype, run.at(d_o), run.q_count, kSeed + 3, harness::attention_score_distribution(distribution),
                       st);
  for (const DeviceBuffer<T>* out : {&dq, &dk, &dv}) harness::poison(out->data(), out->bytes(), st);
  AttentionOptions options = run.options();
  options.deterministic = deterministic;
  const auto backward = [&] {
    if (caller_workspace) {
      const std::size_t bytes = attention_backward_workspace_bytes(c.dims, dtype, run.skip() % 16 == 0, deterministic);
      DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(bytes));
      attention_backward(run.at(run.q), run.at(run.k), run.at(run.v), run.at(run.o), run.lse.data(), run.at(d_o),
                         run.at(dq), run.at(dk), run.at(dv), c.dims, options, workspace.data(), bytes, st);
      CUDALAB_CUDA_CHECK(cudaStreamSynchronize(st));  // before the workspace is freed
    } else {
      attention_backward(run.at(run.q), run.at(run.k), run.at(run.v), run.at(run.o), run.lse.data(), run.at(d_o),
                         run.at(dq), run.at(dk), run.at(dv), c.dims, options, st);
    }
  };
  backward();
  const auto host = run.copy_to_host(st), hdo = to_host(d_o.data(), d_o.bytes(), st);
  const auto hdq = to_host(dq.data(), dq.bytes(), st), hdk = to_host(dk.data(), dk.bytes(), st);
  const auto hdv = to_host(dv.data(), dv.bytes(), st);
  if (deterministic) {
    // Twice more: the same bits every time.
    for (int again = 0; again < 2; ++again) {
      backward();
      EXPECT_EQ(to_host(dq.data(), dq.bytes(), st), hdq) << "dq differs between runs";
      EXPECT_EQ(to_host(dk.data(), dk.bytes(), st), hdk) << "dk differs between runs";
      EXPECT_EQ(to_host(dv.data(), dv.bytes(), st), hdv) << "dv differs between runs";
    }
  }
  const std::size_t skip = run.skip();
  auto t = run.template host_tensors<harness::AttentionBackwardTensors>(host);
  t.d_o = hdo.data() + skip;
  t.dq = hdq.data() + skip;
  t.dk = hdk.data() + skip;
  t.dv = hdv.data() + skip;
  const harness::Comparison result = harness::check_attention_backward(t);
  EXPECT_TRUE(result.passed()) << result.summary();
  expect_untouched_outside(hdq, skip, skip + static_cast<std::size_t>(run.q_count) * sizeof(T));
  expect_untouched_outside(hdk, skip, skip + static_cast<std::size_t>(run.kv_count) * sizeof(T));
  expect_untouched_outside(hdv, skip, skip + static_cast<std::size_t>(run.kv_count) * sizeof(T));
}

// Every case through both overloads: the stream-ordered one on uniform inputs, the caller's
// workspace on normal ones (the CPU check is what costs; each case is checked twice, not four times).
template <typename T>
void check_every_backward_case() {
  for (const Case& c : kCases) {
    check_backward_case<T>(c, harness::Distribution::uniform, false);
    check_backward_case<T>(c, harness::Distribution::normal, true);
  }
}

// dQ in a fixed order (options.deterministic): against the reference as every case, and the same bits
// in three runs, on Hopper's kernel (head_dim 64 and 128, causal, grouped heads, a window, a
// sequence of one tile and a ragged one; without a mask, the key blocks' staggered walks, with as
// many query tiles as key blocks at head_dim 64 and twice as many at 128) and the CUDA-core
// fallback (fp32).
TEST(LibraryAttentionBackward, DeterministicGivesTheSameBitsEveryRun) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  if (device_info().compute_capability() != 90) GTEST_SKIP() << "the deterministic tensor-core backward is Hopper's";
  const Case staggered{{1, 4, 2, 1100, 128}, false, 0, 0.0f};
  for (const Case& c :
       {kCases[1], kCases[2], kCases[3], kCases[4], kCases[7], kCases[8], kCases[9], kCases[10], staggered}) {
    check_backward_case<__nv_bfloat16>(c, harness::Distribution::normal, true, true);
    check_backward_case<__half>(c, harness::Distribution::uniform, false, true);
  }
  check_backward_case<float>(kCases[1], harness::Distribution::normal, false, true);
}

TEST(LibraryAttentionBackward, Bf16ShapesCausalGroupedAndUnaligned) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_backward_case<__nv_bfloat16>();
}

TEST(LibraryAttentionBackward, Fp16ShapesCausalGroupedAndUnaligned) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_backward_case<__half>();
}

TEST(LibraryAttentionBackward, Fp32ShapesCausalGroupedAndUnaligned) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_backward_case<float>();
}

// The tensor-core path's scratch is O(seq) (dQ's fp32 accumulator, rows of head_dim rounded up to
// 64 or 128 on Hopper, and D); the fallback's (fp32, head_dim 36, arrays off 16 bytes; head_dim 40
// off Hopper) is P and dS in fp32, O(seq^2).
TEST(LibraryAttentionBackward, WorkspaceBytesFollowThePath) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const auto bytes = [](std::int64_t head_dim, DType dtype, bool aligned) {
    return attention_backward_workspace_bytes({2, 4, 2, 300, head_dim}, dtype, aligned);
  };
  const std::size_t materialized = 8u * 2 * 4 * 300 * 300;
  EXPECT_EQ(bytes(64, DType::f32, true), materialized);
  EXPECT_EQ(bytes(64, DType::bf16, false), materialized);
  EXPECT_EQ(bytes(36, DType::f16, true), materialized);
  const bool hopper =
      attention_variants::wgmma_backward_limits({2, 4, 2, 300, 40, 2, device_info().compute_capability(), false})
          .empty();
  EXPECT_EQ(bytes(40, DType::f16, true), hopper ? std::size_t{4u * 2 * 4 * 300 * 65} : materialized);
  if (device_info().compute_capability() >= 80) {
    EXPECT_EQ(bytes(64, DType::bf16, true), 4u * 2 * 4 * 300 * 65);
    EXPECT_EQ(bytes(128, DType::f16, true), 4u * 2 * 4 * 300 * 129);
  }
}

TEST(LibraryAttentionBackward, EmptyShapesDoNothing) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<__nv_bfloat16> x(8);
  DeviceBuffer<float> l(8);
  // head_dim 0 leaves dQ, dK and dV with no elements: nothing to write.
  for (const AttentionDims& d : {AttentionDims{0, 2, 2, 8, 64}, AttentionDims{1, 2, 2, 0, 64},
                                 AttentionDims{1, 0, 0, 8, 64}, AttentionDims{1, 2, 2, 8, 0}}) {
    EXPECT_EQ(attention_backward_workspace_bytes(d, DType::bf16), 0u);
    EXPECT_NO_THROW(attention_backward(x.data(), x.data(), x.data(), x.data(), l.data(), x.data(), x.data(), x.data(),
                                       x.data(), d));
    EXPECT_NO_THROW(attention_backward(x.data(), x.data(), x.data(), x.data(), l.data(), x.data(), x.data(), x.data(),
                                       x.data(), d, {}, nullptr, 0));
  }
}

TEST(LibraryAttentionBackward, ArgumentErrors) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<__nv_bfloat16> q(4096), k(4096), v(4096), o(4096), d_o(4096), dq(4096), dk(4096), dv(4096);
  DeviceBuffer<float> l(64);
  const AttentionDims good{1, 2, 2, 8, 64};
  const std::size_t bytes = attention_backward_workspace_bytes(good, DType::bf16);
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(bytes));
  const auto kind = [&](AttentionDims d, AttentionOptions options, __nv_bfloat16* grad_q, void* scratch,
                        std::size_t scratch_bytes) {
    return test_support::thrown_kind([&] {
      attention_backward(q.data(), k.data(), v.data(), o.data(), l.data(), d_o.data(), grad_q, dk.data(), dv.data(), d,
                         options, scratch, scratch_bytes);
    });
  };
  const auto invalid = ErrorKind::invalid_argument;
  void* w = workspace.data();
  EXPECT_EQ(kind(good, {}, dq.data(), w, bytes - 4), invalid);              // a workspace 4 bytes short
  EXPECT_EQ(kind(good, {}, dq.data(), nullptr, bytes), invalid);            // workspace null
  EXPECT_EQ(kind(good, {}, q.data(), w, bytes), invalid);                   // dq is q
  EXPECT_EQ(kind(good, {}, nullptr, w, bytes), invalid);                    // dq null
  EXPECT_EQ(kind({1, 3, 2, 8, 64}, {}, dq.data(), w, bytes), invalid);      // 3 heads over 2 kv heads
  EXPECT_EQ(kind({1, -2, 2, 8, 64}, {}, dq.data(), w, bytes), invalid);     // negative heads
  EXPECT_EQ(kind(good, {-1.0f, false, {}}, dq.data(), w, bytes), invalid);  // negative scale
  EXPECT_EQ(test_support::thrown_kind([&] { attention_backward_workspace_bytes(good, DType::i32); }), invalid);
  EXPECT_EQ(test_support::thrown_kind([&] {
              attention_backward_workspace_bytes({1, -1, 1, 8, 64}, DType::f32);
            }),
            invalid);
  // 70000 (batch, head)s: past the fallback's grid, and fp32 has no other kernel.
  EXPECT_EQ(test_support::thrown_kind([&] {
              attention_backward_workspace_bytes({70000, 1, 1, 8, 64}, DType::f32);
            }),
            invalid);
  EXPECT_NO_THROW(attention_backward(q.data(), k.data(), v.data(), o.data(), l.data(), d_o.data(), dq.data(), dk.data(),
                                     dv.data(), good, {}, w, bytes));
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
}

// ---- layouts: arrays at strides other than dense

// The row offset of row r = (b * heads + h) * seq + i at strides s.
std::int64_t row_at(const AttentionStrides& s, std::int64_t r, std::int64_t heads, std::int64_t seq) {
  const std::int64_t z = r / seq, i = r % seq;
  return z / heads * s.batch + z % heads * s.head + i * s.row;
}

// Writes the host bytes of a dense [batch, heads, seq, head_dim] array into `into` as laid out at
// `s` from element `offset` on; and reads them back.
void scatter(const std::vector<unsigned char>& dense, std::size_t element_size, const AttentionStrides& s,
             const AttentionDims& d, std::int64_t heads, std::vector<unsigned char>& into, std::int64_t offset) {
  const std::size_t row_bytes = static_cast<std::size_t>(d.head_dim) * element_size;
  for (std::int64_t r = 0; r < d.batch * heads * d.seq; ++r)
    std::copy_n(dense.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * row_bytes), row_bytes,
                into.begin() + static_cast<std::ptrdiff_t>((offset + row_at(s, r, heads, d.seq)) * element_size));
}
std::vector<unsigned char> gather(const std::vector<unsigned char>& strided, std::size_t element_size,
                                  const AttentionStrides& s, const AttentionDims& d, std::int64_t heads,
                                  std::int64_t offset) {
  const std::size_t row_bytes = static_cast<std::size_t>(d.head_dim) * element_size;
  std::vector<unsigned char> dense(static_cast<std::size_t>(d.batch * heads * d.seq) * row_bytes);
  for (std::int64_t r = 0; r < d.batch * heads * d.seq; ++r)
    std::copy_n(strided.begin() + static_cast<std::ptrdiff_t>((offset + row_at(s, r, heads, d.seq)) * element_size),
                row_bytes, dense.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * row_bytes));
  return dense;
}

template <typename T>
float host_float(const unsigned char* bytes) {
  T x;
  std::memcpy(&x, bytes, sizeof(T));
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __half2float(x);
  } else {
    return __bfloat162float(x);
  }
}

// Each element of `got` within 2 units of T's last place (plus 1e-3 of the largest) of `want`.
template <typename T>
void expect_close(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want, const char* name) {
  ASSERT_EQ(got.size(), want.size()) << name;
  const float eps = std::is_same_v<T, float> ? 1e-6f : (std::is_same_v<T, __half> ? 1.0f / 1024 : 1.0f / 128);
  float largest = 0.0f;
  for (std::size_t i = 0; i < want.size(); i += sizeof(T))
    largest = std::max(largest, std::fabs(host_float<T>(want.data() + i)));
  for (std::size_t i = 0; i < want.size(); i += sizeof(T)) {
    const float a = host_float<T>(got.data() + i), b = host_float<T>(want.data() + i);
    ASSERT_LE(std::fabs(a - b), 2 * eps * std::fabs(b) + 1e-3f * largest)
        << name << " element " << i / sizeof(T) << ": " << a << " against dense " << b;
  }
}

// q, k and v packed in one [batch, seq, heads + 2 kv_heads, head_dim] array with `pad` elements
// after each position's heads (so that rows written at the wrong place would land on poison), o
// [batch, seq, heads, head_dim]; the backward's dO like o and dQ, dK, dV packed like q, k and v.
// Forward and backward against the same call on dense copies: O and L equal to the bit, the
// gradients within 2 units of the last place (dQ's sums are added in no fixed order); every
// element no row covers still poisoned.
template <typename T>
void check_layouts(const AttentionDims& d, bool causal, std::int64_t pad) {
  SCOPED_TRACE(std::string(to_string(dtype_of_v<T>)) + " " + std::to_string(d.batch) + "x" + std::to_string(d.heads) +
               "(" + std::to_string(d.kv_heads) + ")x" + std::to_string(d.seq) + "x" + std::to_string(d.head_dim) +
               (causal ? " causal" : "") + " pad " + std::to_string(pad));
  Stream stream;
  const cudaStream_t st = stream.get();
  const DType dtype = dtype_of_v<T>;
  const std::int64_t hd = d.head_dim, width = (d.heads + 2 * d.kv_heads) * hd + pad;
  const std::int64_t q_count = d.batch * d.heads * d.seq * hd, kv_count = d.batch * d.kv_heads * d.seq * hd;
  const std::int64_t packed_count = d.batch * d.seq * width, o_count = q_count;
  AttentionLayout layout;
  layout.q = {d.seq * width, hd, width};
  layout.k = {d.seq * width, hd, width};
  layout.v = {d.seq * width, hd, width};
  layout.o = {d.seq * d.heads * hd, hd, d.heads * hd};
  layout.d_o = layout.o;
  layout.dq = layout.q, layout.dk = layout.k, layout.dv = layout.v;
  const std::int64_t k_at = d.heads * hd, v_at = (d.heads + d.kv_heads) * hd;  // in the packed row

  // Dense inputs and the dense calls' results.
  DeviceBuffer<T> q(q_count), k(kv_count), v(kv_count), o(q_count), d_o(q_count), dq(q_count), dk(kv_count),
      dv(kv_count);
  DeviceBuffer<float> lse(d.batch * d.heads * d.seq), strided_lse(d.batch * d.heads * d.seq);
  harness::fill_random(dtype, q.data(), q_count, kSeed + 10, harness::Distribution::normal, st);
  harness::fill_random(dtype, k.data(), kv_count, kSeed + 11, harness::Distribution::normal, st);
  harness::fill_random(dtype, v.data(), kv_count, kSeed + 12, harness::Distribution::normal, st);
  harness::fill_random(dtype, d_o.data(), q_count, kSeed + 13, harness::Distribution::normal, st);
  AttentionOptions dense_options;
  dense_options.causal = causal;
  attention_forward(q.data(), k.data(), v.data(), o.data(), lse.data(), d, dense_options, st);
  attention_backward(q.data(), k.data(), v.data(), o.data(), lse.data(), d_o.data(), dq.data(), dk.data(), dv.data(), d,
                     dense_options, st);
  const auto host = [&](const DeviceBuffer<T>& b) { return to_host(b.data(), b.bytes(), st); };
  const auto hq = host(q), hk = host(k), hv = host(v), ho = host(o), hdo = host(d_o);
  const auto hdq = host(dq), hdk = host(dk), hdv = host(dv);
  const auto hlse = to_host(lse.data(), lse.bytes(), st);

  // The same inputs in the packed layout (its padding poisoned); outputs poisoned.
  std::vector<unsigned char> packed(static_cast<std::size_t>(packed_count) * sizeof(T), harness::kFloatPoisonByte);
  scatter(hq, sizeof(T), layout.q, d, d.heads, packed, 0);
  scatter(hk, sizeof(T), layout.k, d, d.kv_heads, packed, k_at);
  scatter(hv, sizeof(T), layout.v, d, d.kv_heads, packed, v_at);
  std::vector<unsigned char> do_strided(static_cast<std::size_t>(o_count) * sizeof(T));
  scatter(hdo, sizeof(T), layout.d_o, d, d.heads, do_strided, 0);
  DeviceBuffer<T> qkv(packed_count), so(o_count), sdo(o_count), dqkv(packed_count);
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(qkv.data(), packed.data(), packed.size(), cudaMemcpyHostToDevice, st));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(sdo.data(), do_strided.data(), do_strided.size(), cudaMemcpyHostToDevice, st));
  harness::poison(so.data(), so.bytes(), st);
  harness::poison(dqkv.data(), dqkv.bytes(), st);

  AttentionOptions options;
  options.causal = causal;
  options.layout = layout;
  attention_forward(qkv.data(), qkv.data() + k_at, qkv.data() + v_at, so.data(), strided_lse.data(), d, options, st);
  attention_backward(qkv.data(), qkv.data() + k_at, qkv.data() + v_at, so.data(), strided_lse.data(), sdo.data(),
                     dqkv.data(), dqkv.data() + k_at, dqkv.data() + v_at, d, options, st);
  const auto got_o = host(so), got_d = host(dqkv);
  const auto got_lse = to_host(strided_lse.data(), strided_lse.bytes(), st);
  EXPECT_EQ(gather(got_o, sizeof(T), layout.o, d, d.heads, 0), ho) << "o";
  EXPECT_EQ(got_lse, hlse) << "lse";
  expect_close<T>(gather(got_d, sizeof(T), layout.dq, d, d.heads, 0), hdq, "dq");
  expect_close<T>(gather(got_d, sizeof(T), layout.dk, d, d.kv_heads, k_at), hdk, "dk");
  expect_close<T>(gather(got_d, sizeof(T), layout.dv, d, d.kv_heads, v_at), hdv, "dv");
  // The padding after each position's heads: never written.
  for (std::int64_t position = 0; position < d.batch * d.seq; ++position)
    for (std::int64_t e = width - pad; e < width; ++e)
      for (std::size_t b = 0; b < sizeof(T); ++b)
        ASSERT_EQ(got_d[static_cast<std::size_t>(position * width + e) * sizeof(T) + b], harness::kFloatPoisonByte)
            << "dqkv padding written at position " << position;
}

// bf16 and fp16 run on the Hopper kernels where they lie (the backward at head_dim 64 and 128; on
// other GPUs, for the rest and for fp32 everywhere, on dense copies); causal and not, grouped
// heads, a sequence of no tile's multiple, and a packed row padded by 8 elements or not.
TEST(LibraryAttentionLayouts, PackedQkvAndSeqMajorOutputsMatchDense) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for (const bool causal : {false, true}) {
    check_layouts<__nv_bfloat16>({2, 4, 2, 129, 64}, causal, 8);
    check_layouts<__nv_bfloat16>({1, 2, 2, 200, 128}, causal, 0);
    check_layouts<__half>({1, 3, 1, 70, 128}, causal, 8);
    check_layouts<__nv_bfloat16>({1, 2, 1, 33, 40}, causal, 8);
    check_layouts<float>({1, 2, 2, 65, 64}, causal, 0);
  }
}

TEST(LibraryAttentionLayouts, OverlappingOrNegativeStridesAreRefused) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<__nv_bfloat16> x(1 << 16), y(1 << 16);
  DeviceBuffer<float> l(64);
  CUDALAB_CUDA_CHECK(cudaMemset(x.data(), 0, x.bytes()));  // the calls that pass their checks read them
  CUDALAB_CUDA_CHECK(cudaMemset(l.data(), 0, l.bytes()));
  const AttentionDims d{1, 2, 2, 8, 64};
  const auto forward = [&](AttentionLayout layout) {
    AttentionOptions options;
    options.layout = layout;
    attention_forward(x.data(), x.data(), x.data(), y.data(), l.data(), d, options);
  };
  const auto refused = [](auto&& call) { return test_support::thrown_kind(call) == ErrorKind::invalid_argument; };
  AttentionLayout rows_on_rows;
  rows_on_rows.o = {1024, 64, 32};  // o's rows 32 apart: each overlaps the next
  EXPECT_TRUE(refused([&] { forward(rows_on_rows); }));
  AttentionLayout negative;
  negative.q = {1024, -64, 128};
  EXPECT_TRUE(refused([&] { forward(negative); }));
  AttentionLayout seq_major;
  seq_major.o = {1024, 64, 128};  // [batch, seq, heads, head_dim]: fine
  EXPECT_NO_THROW(forward(seq_major));
  // dK and dV in one buffer with the same strides: refused where dv's heads start among dk's.
  const auto backward = [&](AttentionStrides strides, std::int64_t dv_offset) {
    AttentionOptions options;
    options.layout.dk = strides;
    options.layout.dv = strides;
    attention_backward(x.data(), x.data(), x.data(), x.data(), l.data(), x.data(), y.data() + 8192, y.data(),
                       y.data() + dv_offset, d, options);
  };
  EXPECT_TRUE(refused([&] { backward({1024, 64, 128}, 64); }));  // dv's head 0 is dk's head 1
  EXPECT_NO_THROW(backward({2048, 64, 256}, 128));               // dv's heads after dk's two, positions 256 apart
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
}

// ---- variable-length batches

// Sequences as (queries, keys), packed [total, heads, head_dim] with no padding.
struct VarlenCase {
  std::vector<std::pair<int, int>> lengths;
  std::int64_t heads, kv_heads, head_dim;
  bool causal;
  std::int64_t window_left = -1, window_right = -1;
};

std::vector<std::int32_t> cumulative(const std::vector<std::pair<int, int>>& lengths, bool keys) {
  std::vector<std::int32_t> out{0};
  for (const auto& [q, k] : lengths) out.push_back(out.back() + (keys ? k : q));
  return out;
}

// Rows [first, first + count) of a packed [total, heads, head_dim] host array as dense [heads,
// count, head_dim]: one sequence as the reference reads it.
std::vector<unsigned char> sequence_rows(const std::vector<unsigned char>& packed, std::size_t element,
                                         std::int64_t first, std::int64_t count, std::int64_t heads,
                                         std::int64_t head_dim) {
  std::vector<unsigned char> dense(static_cast<std::size_t>(heads * count * head_dim) * element);
  const std::size_t row_bytes = static_cast<std::size_t>(head_dim) * element;
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < count; ++i)
      std::memcpy(dense.data() + static_cast<std::size_t>(h * count + i) * row_bytes,
                  packed.data() + static_cast<std::size_t>((first + i) * heads + h) * row_bytes, row_bytes);
  return dense;
}

// The forward against the double reference, each sequence as a decode problem of its queries at
// the end of its keys (the same bottom-right alignment), every byte past O and L still poisoned;
// then the backward of self-attention sequences against the dense backward of each sequence where
// it lies (verified on its own above): dK and dV to the bit, dQ within 2 units of the last place.
template <typename T>
void check_varlen_case(const VarlenCase& c) {
  SCOPED_TRACE(std::string(to_string(dtype_of_v<T>)) + " heads " + std::to_string(c.heads) + "/" +
               std::to_string(c.kv_heads) + " head_dim " + std::to_string(c.head_dim) + (c.causal ? " causal" : "") +
               " window " + std::to_string(c.window_left) + " " + std::to_string(c.window_right));
  Stream stream;
  const std::vector<std::int32_t> cu_q = cumulative(c.lengths, false), cu_k = cumulative(c.lengths, true);
  const std::int64_t total_q = cu_q.back(), total_k = cu_k.back(), h = c.heads, hk = c.kv_heads, d = c.head_dim;
  std::int64_t max_q = 0, max_k = 0;
  for (const auto& [n_q, n_k] : c.lengths)
    max_q = std::max<std::int64_t>(max_q, n_q), max_k = std::max<std::int64_t>(max_k, n_k);
  const AttentionVarlenDims dims{static_cast<std::int64_t>(c.lengths.size()), h, hk, total_q, total_k, max_q, max_k, d};
  const std::int64_t q_count = total_q * h * d, kv_count = total_k * hk * d;
  DeviceBuffer<T> q(q_count), k(kv_count), v(kv_count), o(q_count + 8), d_o(q_count), dq(q_count + 8), dk(kv_count + 8),
      dv(kv_count + 8), dq_dense(q_count), dk_dense(kv_count), dv_dense(kv_count);
  DeviceBuffer<float> lse(h * total_q + 8), lse_sequence(h * std::max<std::int64_t>(max_q, 1));
  DeviceBuffer<std::int32_t> cu_q_device(cu_q.size()), cu_k_device(cu_k.size());
  CUDALAB_CUDA_CHECK(
      cudaMemcpyAsync(cu_q_device.data(), cu_q.data(), cu_q_device.bytes(), cudaMemcpyHostToDevice, stream.get()));
  CUDALAB_CUDA_CHECK(
      cudaMemcpyAsync(cu_k_device.data(), cu_k.data(), cu_k_device.bytes(), cudaMemcpyHostToDevice, stream.get()));
  const DType dtype = dtype_of_v<T>;
  harness::fill_random(dtype, q.data(), q_count, kSeed, harness::Distribution::normal, stream.get());
  harness::fill_random(dtype, k.data(), kv_count, kSeed + 1, harness::Distribution::normal, stream.get());
  harness::fill_random(dtype, v.data(), kv_count, kSeed + 2, harness::Distribution::normal, stream.get());
  harness::fill_random(dtype, d_o.data(), q_count, kSeed + 3, harness::Distribution::normal, stream.get());
  // The dense backward's outputs too: its dK and dV go by TMA stores, which initcheck does not count
  // as writes, so an unpoisoned buffer reads as uninitialized when copied back.
  for (auto* out : {&o, &dq, &dk, &dv, &dq_dense, &dk_dense, &dv_dense})
    harness::poison(out->data(), out->bytes(), stream.get());
  harness::poison(lse.data(), lse.bytes(), stream.get());
  AttentionOptions options;
  options.causal = c.causal;
  options.window_left = c.window_left;
  options.window_right = c.window_right;
  // Self-attention passes one array of lengths for both (the dense batch's mask), as a caller would.
  bool self = true;
  for (const auto& [n_q, n_k] : c.lengths) self = self && n_q == n_k;
  const std::int32_t* keys_cumulative = self ? cu_q_device.data() : cu_k_device.data();
  attention_forward_varlen(q.data(), k.data(), v.data(), cu_q_device.data(), keys_cumulative, o.data(), lse.data(),
                           dims, options, stream.get());

  const auto hq = to_host(q.data(), q.bytes(), stream.get()), hk_ = to_host(k.data(), k.bytes(), stream.get()),
             hv = to_host(v.data(), v.bytes(), stream.get()), ho = to_host(o.data(), o.bytes(), stream.get()),
             hl = to_host(lse.data(), lse.bytes(), stream.get());
  expect_untouched_outside(ho, 0, static_cast<std::size_t>(q_count) * sizeof(T));
  expect_untouched_outside(hl, 0, static_cast<std::size_t>(h * total_q) * sizeof(float));
  for (std::size_t b = 0; b < c.lengths.size(); ++b) {
    const std::int32_t n_q = c.lengths[b].first, n_k = c.lengths[b].second;
    if (n_q == 0) continue;
    SCOPED_TRACE("sequence " + std::to_string(b) + ": " + std::to_string(n_q) + " queries, " + std::to_string(n_k) +
                 " keys");
    const auto sq = sequence_rows(hq, sizeof(T), cu_q[b], n_q, h, d),
               so = sequence_rows(ho, sizeof(T), cu_q[b], n_q, h, d);
    const auto sk = sequence_rows(hk_, sizeof(T), cu_k[b], n_k, hk, d),
               sv = sequence_rows(hv, sizeof(T), cu_k[b], n_k, hk, d);
    std::vector<float> sl(static_cast<std::size_t>(h * n_q));
    for (std::int64_t head = 0; head < h; ++head)
      std::memcpy(sl.data() + head * n_q, hl.data() + (head * total_q + cu_q[b]) * sizeof(float),
                  static_cast<std::size_t>(n_q) * sizeof(float));
    harness::AttentionTensors t;
    t.dtype = dtype;
    t.q = sq.data(), t.k = sk.data(), t.v = sv.data(), t.o = so.data(), t.lse = sl.data();
    t.batch = 1, t.heads = h, t.kv_heads = hk, t.seq = n_k, t.head_dim = d;
    t.scale = harness::attention_default_scale(d);
    t.causal = c.causal, t.window_left = c.window_left, t.window_right = c.window_right;
    t.queries = n_q, t.lengths = &n_k;
    const harness::Comparison result = harness::check_attention(t);
    EXPECT_TRUE(result.passed()) << result.summary();
  }

  if (!self) return;  // the dense backward takes one length for queries and keys
  attention_backward_varlen(q.data(), k.data(), v.data(), o.data(), lse.data(), d_o.data(), cu_q_device.data(),
                            keys_cumulative, dq.data(), dk.data(), dv.data(), dims, options, stream.get());
  // Each sequence's dense backward where its rows lie: [1, heads, n, head_dim] at row stride heads *
  // head_dim; L copied to the dense [heads, n] the dense call reads.
  for (std::size_t b = 0; b < c.lengths.size(); ++b) {
    const std::int64_t n = c.lengths[b].first, first = cu_q[b];
    if (n == 0) continue;
    CUDALAB_CUDA_CHECK(cudaMemcpy2DAsync(lse_sequence.data(), n * sizeof(float), lse.data() + first,
                                         total_q * sizeof(float), n * sizeof(float), h, cudaMemcpyDeviceToDevice,
                                         stream.get()));
    AttentionOptions where = options;
    const AttentionStrides query_rows{8, d, h * d}, key_rows{8, d, hk * d};
    where.layout = {query_rows, key_rows, key_rows, query_rows, query_rows, query_rows, key_rows, key_rows};
    const std::int64_t at_q = first * h * d, at_k = first * hk * d;
    attention_backward(q.data() + at_q, k.data() + at_k, v.data() + at_k, o.data() + at_q, lse_sequence.data(),
                       d_o.data() + at_q, dq_dense.data() + at_q, dk_dense.data() + at_k, dv_dense.data() + at_k,
                       AttentionDims{1, h, hk, n, d}, where, stream.get());
  }
  auto got_dq = to_host(dq.data(), dq.bytes(), stream.get()), got_dk = to_host(dk.data(), dk.bytes(), stream.get()),
       got_dv = to_host(dv.data(), dv.bytes(), stream.get());
  expect_untouched_outside(got_dq, 0, static_cast<std::size_t>(q_count) * sizeof(T));
  expect_untouched_outside(got_dk, 0, static_cast<std::size_t>(kv_count) * sizeof(T));
  expect_untouched_outside(got_dv, 0, static_cast<std::size_t>(kv_count) * sizeof(T));
  for (auto* got : {&got_dq, &got_dk, &got_dv}) got->resize(got->size() - 8 * sizeof(T));
  expect_close<T>(got_dq, to_host(dq_dense.data(), dq_dense.bytes(), stream.get()), "dq");
  EXPECT_EQ(got_dk, to_host(dk_dense.data(), dk_dense.bytes(), stream.get())) << "dk";
  EXPECT_EQ(got_dv, to_host(dv_dense.data(), dv_dense.bytes(), stream.get())) << "dv";
}

const std::vector<VarlenCase> kVarlenCases = {
    {{{130, 130}, {1, 1}, {0, 0}, {257, 257}, {64, 64}}, 4, 2, 128, true},
    {{{130, 130}, {1, 1}, {0, 0}, {257, 257}, {64, 64}}, 3, 3, 64, false},
    {{{300, 300}, {17, 17}}, 4, 1, 64, true, 100},
    {{{5, 300}, {129, 129}, {1, 64}, {260, 391}, {0, 9}}, 4, 2, 128, true},
    {{{5, 300}, {129, 129}, {1, 64}, {260, 391}}, 2, 2, 64, false, 30, 40},
    // Causal, 200 queries over 50 keys: the first 150 see none, inside whole 64-row groups.
    {{{200, 50}, {70, 70}}, 4, 2, 128, true},
};

template <typename T>
void check_every_varlen_case() {
  if (device_info().compute_capability() != 90) GTEST_SKIP() << "variable-length batches run on Hopper only";
  for (const VarlenCase& c : kVarlenCases) check_varlen_case<T>(c);
}

TEST(LibraryAttentionVarlen, Bf16AgainstTheReferenceAndTheDenseBackward) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_varlen_case<__nv_bfloat16>();
}

TEST(LibraryAttentionVarlen, Fp16AgainstTheReferenceAndTheDenseBackward) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_every_varlen_case<__half>();
}

TEST(LibraryAttentionVarlen, ArgumentErrors) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<__nv_bfloat16> x(4096);
  DeviceBuffer<float> xf(4096), l(256);
  DeviceBuffer<std::int32_t> cu(3);
  const AttentionVarlenDims good{2, 2, 2, 8, 8, 4, 4, 64};
  const auto kind = [&](AttentionVarlenDims d, const std::int32_t* cu_q) {
    return test_support::thrown_kind([&] {
      attention_forward_varlen(x.data(), x.data() + 1024, x.data() + 2048, cu_q, cu.data(), x.data() + 3072, l.data(),
                               d);
    });
  };
  EXPECT_EQ(kind({2, -1, 2, 8, 8, 4, 4, 64}, cu.data()), ErrorKind::invalid_argument);     // negative heads
  EXPECT_EQ(kind({2, 3, 2, 8, 8, 4, 4, 64}, cu.data()), ErrorKind::invalid_argument);      // 3 heads over 2
  EXPECT_EQ(kind({70000, 2, 2, 8, 8, 4, 4, 64}, cu.data()), ErrorKind::invalid_argument);  // past the grid
  EXPECT_EQ(kind(good, nullptr), ErrorKind::invalid_argument);                             // no cu_seqlens_q
  EXPECT_EQ(kind({2, 2, 2, 8, 8, 4, 4, 100}, cu.data()), ErrorKind::invalid_argument);     // head_dim no kernel takes
  EXPECT_EQ(test_support::thrown_kind([&] {
              attention_forward_varlen(xf.data(), xf.data(), xf.data(), cu.data(), cu.data(), xf.data() + 2048,
                                       l.data(), good);
            }),
            ErrorKind::invalid_argument);  // fp32: the Hopper kernels take 16-bit elements
  EXPECT_EQ(test_support::thrown_kind([&] {
              attention_forward_varlen(x.data() + 1, x.data(), x.data(), cu.data(), cu.data(), x.data() + 2048,
                                       l.data(), good);
            }),
            ErrorKind::invalid_argument);  // q off a 16-byte boundary
  EXPECT_NO_THROW(attention_forward_varlen(x.data(), x.data(), x.data(), cu.data(), cu.data(), x.data(), l.data(),
                                           AttentionVarlenDims{0, 2, 2, 0, 0, 0, 0, 64}));  // nothing to do
}

}  // namespace
}  // namespace cudalab
