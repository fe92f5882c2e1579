// cudalab::gemm at odd shapes, strides and offsets, in FP32 and on tensor cores in BF16/FP16 (both
// layouts of A and of B, strided batches), and the FP64 device reference against the host one (the device
// reference checks the large problems of the ladder).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cudalab/dtype.hpp"
#include "cudalab/gemm.hpp"
#include "cudalab/memory.hpp"
#include "error_kind.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/bias_act/reference.hpp"
#include "ops/gemm/cublas_gemm.hpp"
#include "ops/gemm/reference.hpp"

namespace cudalab {
namespace {

template <typename T>
std::vector<T> to_host(const T* device, std::int64_t count) {
  std::vector<T> host(static_cast<std::size_t>(count));
  CUDALAB_CUDA_CHECK(cudaMemcpy(host.data(), device, sizeof(T) * count, cudaMemcpyDeviceToHost));
  return host;
}

// C (m x n, pitch ldc, `offset` floats into its buffer) = alpha A B + beta C, checked element-wise,
// and the padding between rows left untouched.
void check_gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t pad, std::int64_t offset, float beta) {
  const std::int64_t lda = (k > 0 ? k : 1) + pad, ldb = n + pad, ldc = n + pad;
  DeviceBuffer<float> a(m * lda + offset), b(k * ldb + offset), c(m * ldc + offset);
  harness::fill_random(a.data(), a.size(), 1, harness::Distribution::uniform, nullptr);
  harness::fill_random(b.data(), b.size(), 2, harness::Distribution::normal, nullptr);
  harness::fill_random(c.data(), c.size(), 3, harness::Distribution::uniform, nullptr);
  const auto ha = to_host(a.data(), a.size()), hb = to_host(b.data(), b.size()), c0 = to_host(c.data(), c.size());
  Stream stream;
  gemm(m, n, k, 0.75f, a.data() + offset, lda, b.data() + offset, ldb, beta, c.data() + offset, ldc, stream.get());
  stream.synchronize();
  const auto hc = to_host(c.data(), c.size());
  const auto ref = harness::gemm_reference(m, n, k, 0.75, ha.data() + offset, lda, hb.data() + offset, ldb, beta,
                                           c0.data() + offset, ldc);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < ldc; ++j) {
      const std::int64_t at = offset + i * ldc + j;
      if (j >= n) {
        ASSERT_EQ(std::memcmp(&hc[at], &c0[at], sizeof(float)), 0) << "padding written at " << i << "," << j;
        continue;
      }
      const double want = ref.value[i * n + j];
      ASSERT_LE(std::fabs(hc[at] - want), harness::gemm_error_bound(k, ref.bound[i * n + j]))
          << m << "x" << n << "x" << k << " pad " << pad << " at " << i << "," << j;
    }
}

TEST(LibraryGemm, OddShapesStridesAndOffsets) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_gemm(1, 1, 1, 0, 0, 0.5f);
  check_gemm(129, 67, 33, 3, 1, -0.5f);   // misaligned rows: the predicated path
  check_gemm(256, 256, 64, 4, 4, 1.0f);   // whole tiles, aligned pitches: the fast path
  check_gemm(300, 130, 0, 0, 0, 2.0f);    // k = 0: C = beta C
  check_gemm(1000, 64, 517, 1, 0, 0.0f);  // beta = 0
}

TEST(LibraryGemm, BetaZeroIgnoresNaNInC) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t side = 128;
  DeviceBuffer<float> a(side * side), b(side * side), c(side * side);
  harness::fill_random(a.data(), a.size(), 5, harness::Distribution::integers, nullptr);
  harness::fill_random(b.data(), b.size(), 6, harness::Distribution::integers, nullptr);
  harness::poison(c.data(), c.bytes(), nullptr);  // NaN
  gemm(side, side, side, 1.0f, a.data(), side, b.data(), side, 0.0f, c.data(), side);
  for (float x : to_host(c.data(), c.size())) ASSERT_FALSE(std::isnan(x));
}

// A host array of 16-bit values widened to float (exact).
template <typename T>
std::vector<float> widened(const std::vector<T>& x) {
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    out[i] = static_cast<float>(element_to_double(dtype_of_v<T>, x.data(), static_cast<std::int64_t>(i)));
  return out;
}

// The tensor-core call: `batch` matrices `stride` elements apart (A, B and C alike, each buffer
// sized for the largest), pitches padded by `pad`, pointers `offset` elements into their buffers
// (an odd offset leaves them 2-byte aligned: the rungs that copy 16-byte chunks must step aside).
// Every element within the BF16/FP16 bound, the padding between rows untouched.
template <typename T>
void check_half_gemm(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t pad,
                     std::int64_t offset, float beta, Transpose transpose_b, Transpose transpose_a) {
  const bool a_t = transpose_a == Transpose::yes, bt = transpose_b == Transpose::yes;
  const std::int64_t lda = (a_t ? m : (k > 0 ? k : 1)) + pad, ldb = (bt ? (k > 0 ? k : 1) : n) + pad, ldc = n + pad;
  const std::int64_t size_a = (a_t ? k : m) * lda, size_b = (bt ? n : k) * ldb, size_c = m * ldc;
  DeviceBuffer<T> a(batch * size_a + offset), b(batch * size_b + offset), c(batch * size_c + offset);
  const DType dtype = dtype_of_v<T>;
  harness::fill_random(dtype, a.data(), a.size(), 11, harness::Distribution::normal, nullptr);
  harness::fill_random(dtype, b.data(), b.size(), 12, harness::Distribution::uniform, nullptr);
  harness::fill_random(dtype, c.data(), c.size(), 13, harness::Distribution::normal, nullptr);
  const auto ha = widened(to_host(a.data(), a.size())), hb = widened(to_host(b.data(), b.size()));
  const auto c0_raw = to_host(c.data(), c.size());
  const auto c0 = widened(c0_raw);
  Stream stream;
  if (batch == 1) {
    gemm(m, n, k, 0.75f, a.data() + offset, lda, b.data() + offset, ldb, beta, c.data() + offset, ldc, stream.get(),
         transpose_b, transpose_a);
  } else {
    gemm_batched(batch, m, n, k, 0.75f, a.data() + offset, lda, size_a, b.data() + offset, ldb, size_b, beta,
                 c.data() + offset, ldc, size_c, stream.get(), transpose_b, transpose_a);
  }
  stream.synchronize();
  const auto hc_raw = to_host(c.data(), c.size());
  const auto hc = widened(hc_raw);
  harness::GemmTolerance tolerance;
  tolerance.accumulate_unit = 1.0 / 8388608.0;
  tolerance.output_unit = traits(dtype).unit_roundoff;
  tolerance.output_absolute = dtype == DType::f16 ? 1.0 / 33554432.0 : 0.0;
  for (std::int64_t z = 0; z < batch; ++z) {
    const std::int64_t base = offset + z * size_c;
    const auto ref =
        harness::gemm_reference(m, n, k, 0.75, ha.data() + offset + z * size_a, lda, hb.data() + offset + z * size_b,
                                ldb, beta, c0.data() + base, ldc, bt, a_t);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < ldc; ++j) {
        const std::int64_t at = base + i * ldc + j;
        if (j >= n) {
          ASSERT_EQ(std::memcmp(&hc_raw[at], &c0_raw[at], sizeof(T)), 0) << "padding written at " << i << "," << j;
          continue;
        }
        const double want = ref.value[i * n + j];
        ASSERT_LE(std::fabs(hc[at] - want), harness::gemm_error_bound(k, ref.bound[i * n + j], tolerance, want))
            << to_string(dtype) << " batch " << z << " of " << batch << ", " << m << "x" << n << "x" << k << " pad "
            << pad << " offset " << offset << (a_t ? " A^T" : "") << (bt ? " B^T" : "") << " at " << i << "," << j;
      }
  }
}

template <typename T>
void check_half_gemm_shapes() {
  for (const Transpose ta : {Transpose::no, Transpose::yes})
    for (const Transpose tb : {Transpose::no, Transpose::yes}) {
      check_half_gemm<T>(1, 1, 1, 1, 0, 0, 0.5f, tb, ta);
      check_half_gemm<T>(1, 129, 67, 33, 3, 1, -0.5f, tb, ta);      // odd pitches and offsets: the any-alignment rung
      check_half_gemm<T>(1, 256, 256, 64, 8, 8, 1.0f, tb, ta);      // 16-byte aligned pitches, small: mma_small
      check_half_gemm<T>(1, 1096, 2048, 264, 8, 0, -0.5f, tb, ta);  // big and aligned: wgmma (Hopper) or cp.async tiles
      check_half_gemm<T>(1, 1024, 1984, 320, 0, 0, -0.5f, tb, ta);  // 128 tiles of 128x128: wgmma_mid on Hopper
      check_half_gemm<T>(1, 300, 136, 0, 0, 0, 2.0f, tb, ta);       // k = 0: C = beta C
      check_half_gemm<T>(1, 1000, 72, 520, 0, 0, 0.0f, tb, ta);     // beta = 0, partial tiles, aligned
      check_half_gemm<T>(1, 127, 131, 131, 5, 0, -0.5f, tb, ta);    // pitches 136: K and N tails inside 16-byte chunks
      check_half_gemm<T>(1, 70, 64, 24, 0, 0, 1.0f, tb, ta);        // K below one k-tile
      check_half_gemm<T>(7, 65, 130, 72, 0, 0, -0.5f, tb, ta);      // a batch, aligned
      check_half_gemm<T>(3, 33, 17, 9, 1, 3, 0.25f, tb, ta);        // a batch, misaligned
      check_half_gemm<T>(1, 1100, 2060, 261, 0, 0, -0.5f, tb, ta);  // big, pitches of no 8: TMA rungs on aligned copies
      check_half_gemm<T>(1, 1, 4096, 4096, 0, 0, -0.5f, tb, ta);    // a decode step: decode_gemv for B as N x K
      check_half_gemm<T>(1, 5, 1001, 72, 8, 0, 0.0f, tb, ta);       // 5 rows, n of no multiple of 4, beta = 0
      check_half_gemm<T>(4, 2, 67, 1032, 0, 0, 0.5f, tb, ta);       // a batch of 2-row products
    }
}

TEST(LibraryGemm, Bf16ShapesLayoutsAndBatches) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_half_gemm_shapes<__nv_bfloat16>();
}

TEST(LibraryGemm, Fp16ShapesLayoutsAndBatches) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_half_gemm_shapes<__half>();
}

// The caller's scratch: the size gemm_workspace_bytes states runs the product the stream-ordered
// call runs (bit for bit: the same rung on the same copies), less is refused, and a product that
// makes no copies needs none.
TEST(LibraryGemm, CallerWorkspace) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  using T = __nv_bfloat16;
  const std::int64_t m = 1100, n = 2056, k = 261;  // A's pitch of no multiple of 8, B's of 8
  DeviceBuffer<T> a(m * k), b(k * n), c(m * n), c_caller(m * n);
  harness::fill_random(DType::bf16, a.data(), a.size(), 21, harness::Distribution::normal, nullptr);
  harness::fill_random(DType::bf16, b.data(), b.size(), 22, harness::Distribution::normal, nullptr);
  const std::size_t bytes = gemm_workspace_bytes(m, n, k, a.data(), k, b.data(), n, c.data(), n);
  int device = 0, major = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major == 9) {
    EXPECT_EQ(bytes, static_cast<std::size_t>(m * 320) * sizeof(T));  // A copied to whole 128-byte lines
  }
  DeviceBuffer<unsigned char> workspace(bytes > 0 ? bytes : 1);
  gemm(m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
  gemm(m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c_caller.data(), n, bytes > 0 ? workspace.data() : nullptr, bytes,
       nullptr);
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
  const auto want = to_host(c.data(), c.size()), got = to_host(c_caller.data(), c_caller.size());
  ASSERT_EQ(std::memcmp(want.data(), got.data(), sizeof(T) * want.size()), 0);
  if (bytes > 0) {
    EXPECT_EQ(test_support::thrown_kind([&] {
                gemm(m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c_caller.data(), n, workspace.data(), bytes - 16,
                     nullptr);
              }),
              ErrorKind::invalid_argument);
  }
  EXPECT_EQ(gemm_workspace_bytes(m, n, 264, a.data(), 264, b.data(), n, c.data(), n), 0u);  // aligned: no copies
}

// D = alpha A op(B) + beta C with C read where it lies: a bias row (ldc 0) and a matrix of wider
// pitch, against the in-place call on D prefilled with the same C (bit for bit: the same rung, the
// same blend), on shapes that reach wgmma_persistent, wgmma_cluster (rows off 128-byte lines),
// wgmma_mid, wgmma_streamk, wgmma_small, decode_gemv, mma_small and aligned copies (those but the Hopper tile rungs
// fill D with C first). D's columns past n stay untouched.
TEST(LibraryGemm, CReadWhereItLies) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  using T = __nv_bfloat16;
  struct Shape {
    std::int64_t m, n, k;
    bool nt;
  };
  for (const Shape& s : {Shape{2048, 2048, 1024, true}, Shape{3000, 1000, 520, false}, Shape{1024, 1024, 1024, true},
                         Shape{1024, 2048, 2048, true}, Shape{3072, 768, 8192, true}, Shape{2, 4096, 4096, true},
                         Shape{100, 200, 64, false}, Shape{1100, 2056, 261, false}}) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + (s.nt ? " NT" : " NN"));
    const std::int64_t lda = s.k, ldb = s.nt ? s.k : s.n, ldd = s.n + 8, ldc = s.n + 16;
    DeviceBuffer<T> a(s.m * lda), b((s.nt ? s.n : s.k) * ldb), bias(s.n), c(s.m * ldc), d(s.m * ldd), want(s.m * ldd);
    harness::fill_random(DType::bf16, a.data(), a.size(), 31, harness::Distribution::normal, nullptr);
    harness::fill_random(DType::bf16, b.data(), b.size(), 32, harness::Distribution::normal, nullptr);
    harness::fill_random(DType::bf16, bias.data(), bias.size(), 33, harness::Distribution::normal, nullptr);
    harness::fill_random(DType::bf16, c.data(), c.size(), 34, harness::Distribution::normal, nullptr);
    const Transpose tb = s.nt ? Transpose::yes : Transpose::no;
    for (const bool bias_row : {true, false}) {
      SCOPED_TRACE(bias_row ? "bias row" : "matrix");
      const T* source = bias_row ? bias.data() : c.data();
      const std::int64_t source_ld = bias_row ? 0 : ldc;
      // The in-place reference: D's rows filled with C, then D = alpha A op(B) + beta D.
      harness::poison(want.data(), want.bytes(), nullptr);
      for (std::int64_t r = 0; r < s.m; ++r)
        CUDALAB_CUDA_CHECK(
            cudaMemcpy(want.data() + r * ldd, source + r * source_ld, s.n * sizeof(T), cudaMemcpyDeviceToDevice));
      gemm(s.m, s.n, s.k, 1.25f, a.data(), lda, b.data(), ldb, 0.5f, want.data(), ldd, nullptr, tb);
      harness::poison(d.data(), d.bytes(), nullptr);
      const std::size_t bytes = gemm_workspace_bytes(s.m, s.n, s.k, a.data(), lda, b.data(), ldb, d.data(), ldd, tb);
      DeviceBuffer<unsigned char> workspace(bytes > 0 ? static_cast<std::int64_t>(bytes) : 1);
      gemm(s.m, s.n, s.k, 1.25f, a.data(), lda, b.data(), ldb, 0.5f, source, source_ld, d.data(), ldd,
           bytes > 0 ? workspace.data() : nullptr, bytes, nullptr, tb);
      CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
      const auto got = to_host(d.data(), d.size()), expected = to_host(want.data(), want.size());
      ASSERT_EQ(std::memcmp(got.data(), expected.data(), sizeof(T) * got.size()), 0);
    }
  }
}

// gemm_activation and gemm_activation_backward against the FP64 reference product, on shapes that
// reach the Hopper tile rungs (fused epilogues: 1096 x 2048, 520 x 1024, the aligned copies of
// 1000 x 1000 x 330) and rungs that run them as a second pass (k below 256: mma_small; two rows:
// decode; n of no multiple of 8: no TMA store; A stored k x m). Bounds, with e_v the product's
// (gemm_error_bound), |act'| <= 1.2, |act''| <= 1 and u = 2^-24:
//   y = act(v)            1.2 e_v + 16 u (|y| + |v|) + 2 u_T |y|   (act of an fp32 or a rounded v)
//   g = act'(v)           e_v + 16 u + 2 u_T |g|   (ReLU's step not checked within e_v of 0)
//   dz = p G              |G| e_p + 2 u_T |dz|     (G: random, as a forward's g stands in)
//   dbias_j = sum_i dz    the sum of the dz bounds + m 2^-23 sum |dz| + u_T |dbias|
// y without g kept: within y's bound too.
template <typename T>
void check_gemm_activation(std::int64_t m, std::int64_t n, std::int64_t k, bool nt, bool a_t, Activation act) {
  SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + (nt ? " NT" : " NN") +
               (a_t ? " A^T" : "") + " activation " + std::to_string(static_cast<int>(act)));
  const DType dtype = dtype_of_v<T>;
  const std::int64_t lda = a_t ? m : k, ldb = nt ? k : n, ldd = n;
  DeviceBuffer<T> a((a_t ? k : m) * lda), b((nt ? n : k) * ldb), bias(n), y(m * ldd), y_alone(m * ldd), g(m * ldd),
      given(m * ldd), dz(m * ldd), dbias(n);
  harness::fill_random(dtype, a.data(), a.size(), 41, harness::Distribution::normal, nullptr);
  harness::fill_random(dtype, b.data(), b.size(), 42, harness::Distribution::normal, nullptr);
  harness::fill_random(dtype, bias.data(), bias.size(), 43, harness::Distribution::normal, nullptr);
  harness::fill_random(dtype, given.data(), given.size(), 44, harness::Distribution::normal, nullptr);
  const Transpose tb = nt ? Transpose::yes : Transpose::no, ta = a_t ? Transpose::yes : Transpose::no;
  const std::size_t forward_bytes = gemm_workspace_bytes(m, n, k, a.data(), lda, b.data(), ldb, y.data(), ldd, tb, ta);
  const std::size_t backward_bytes =
      gemm_activation_backward_workspace_bytes(m, n, k, a.data(), lda, b.data(), ldb, dz.data(), ldd, tb, ta);
  DeviceBuffer<unsigned char> workspace(
      static_cast<std::int64_t>(std::max<std::size_t>({forward_bytes, backward_bytes, std::size_t{1}})));
  const float alpha = 0.75f;
  // NaN where the outputs go: an element left unwritten fails, and TMA stores, which initcheck does
  // not count as writes, land on initialized memory.
  for (DeviceBuffer<T>* out : {&y, &y_alone, &g, &dz}) harness::poison(out->data(), out->bytes(), nullptr);
  gemm_activation(m, n, k, alpha, a.data(), lda, b.data(), ldb, 1.0f, bias.data(), 0, y.data(), ldd, act, g.data(),
                  workspace.data(), forward_bytes, nullptr, tb, ta);
  gemm_activation(m, n, k, alpha, a.data(), lda, b.data(), ldb, 1.0f, bias.data(), 0, y_alone.data(), ldd, act,
                  static_cast<T*>(nullptr), workspace.data(), forward_bytes, nullptr, tb, ta);
  gemm_activation_backward(m, n, k, alpha, a.data(), lda, b.data(), ldb, given.data(), ldd, dz.data(), ldd,
                           dbias.data(), workspace.data(), backward_bytes, nullptr, tb, ta);
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
  const auto ha = widened(to_host(a.data(), a.size())), hb = widened(to_host(b.data(), b.size()));
  const auto hbias = widened(to_host(bias.data(), bias.size())), hgiven = widened(to_host(given.data(), given.size()));
  const auto hy = widened(to_host(y.data(), y.size())), hy_alone = widened(to_host(y_alone.data(), y_alone.size()));
  const auto hg = widened(to_host(g.data(), g.size()));
  const auto hdz = widened(to_host(dz.data(), dz.size())), hdbias = widened(to_host(dbias.data(), dbias.size()));
  harness::GemmTolerance tolerance;
  tolerance.accumulate_unit = 1.0 / 8388608.0;
  tolerance.output_unit = traits(dtype).unit_roundoff;
  tolerance.output_absolute = dtype == DType::f16 ? 1.0 / 33554432.0 : 0.0;
  const double u = 1.0 / 16777216.0, u_t = traits(dtype).unit_roundoff;
  const auto biased =
      harness::gemm_reference(m, n, k, alpha, ha.data(), lda, hb.data(), ldb, 1.0, hbias.data(), 0, nt, a_t);
  const auto plain = harness::gemm_reference(m, n, k, alpha, ha.data(), lda, hb.data(), ldb, 0.0, nullptr, 0, nt, a_t);
  std::vector<double> sum(n, 0.0), sum_bound(n, 0.0), magnitude(n, 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t at = i * n + j;
      const double want_v = biased.value[at], e_v = harness::gemm_error_bound(k, biased.bound[at], tolerance, want_v);
      const double want_y = harness::activation_reference(act, want_v);
      const double y_bound = 1.2 * e_v + 16 * u * (std::fabs(want_y) + std::fabs(want_v)) +
                             2 * u_t * std::fabs(want_y) + tolerance.output_absolute;
      ASSERT_LE(std::fabs(hy[at] - want_y), y_bound)
          << "y at " << i << "," << j << ": " << hy[at] << " against " << want_y;
      ASSERT_LE(std::fabs(hy_alone[at] - want_y), y_bound) << "y without g at " << i << "," << j;
      const double want_g = harness::activation_derivative_reference(act, want_v);
      if (act != Activation::relu || std::fabs(want_v) > e_v) {
        ASSERT_LE(std::fabs(hg[at] - want_g), e_v + 16 * u + 2 * u_t * std::fabs(want_g) + tolerance.output_absolute)
            << "g at " << i << "," << j << ": " << hg[at] << " against " << want_g;
      }
      const double p = plain.value[at], e_p = harness::gemm_error_bound(k, plain.bound[at], tolerance, p);
      const double want_dz = p * hgiven[at];
      const double dz_bound = std::fabs(hgiven[at]) * e_p + 2 * u_t * std::fabs(want_dz) + tolerance.output_absolute;
      ASSERT_LE(std::fabs(hdz[at] - want_dz), dz_bound)
          << "dz at " << i << "," << j << ": " << hdz[at] << " against " << want_dz;
      sum[j] += want_dz;
      sum_bound[j] += dz_bound;
      magnitude[j] += std::fabs(want_dz);
    }
  for (std::int64_t j = 0; j < n; ++j) {
    const double bound = sum_bound[j] + static_cast<double>(m) * 2 * u * magnitude[j] + u_t * std::fabs(sum[j]) +
                         tolerance.output_absolute;
    ASSERT_LE(std::fabs(hdbias[j] - sum[j]), bound) << "dbias at " << j << ": " << hdbias[j] << " against " << sum[j];
  }
}

// gemm_weight_gradient: D = alpha Aᵀ B for A stored k x m (a Linear's dy) and B k x n (its x), and A's
// column sums. D has gemm's bits (the same rung, fused or not), the sums the same bits twice, within a
// float64 sum's error bound.
template <typename T>
void check_gemm_weight_gradient(std::int64_t m, std::int64_t n, std::int64_t k) {
  SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
  const DType dtype = dtype_of_v<T>;
  const std::int64_t ld = std::max<std::int64_t>(n, 1), lda = std::max<std::int64_t>(m, 1);
  DeviceBuffer<T> a(k * m), b(k * n), d(m * n), want(m * n), sums(m), again(m);
  harness::fill_random(dtype, a.data(), a.size(), 81, harness::Distribution::normal, nullptr);
  harness::fill_random(dtype, b.data(), b.size(), 82, harness::Distribution::normal, nullptr);
  const std::size_t plain_bytes =
      gemm_workspace_bytes(m, n, k, a.data(), lda, b.data(), ld, want.data(), ld, Transpose::no, Transpose::yes);
  const std::size_t bytes = gemm_weight_gradient_workspace_bytes(m, n, k, a.data(), b.data(), ld, d.data(), ld);
  EXPECT_GE(bytes, plain_bytes);
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(std::max<std::size_t>(bytes, 1)));
  harness::poison(want.data(), want.bytes(), nullptr);  // TMA stores are not writes to initcheck
  gemm(m, n, k, 0.5f, a.data(), lda, b.data(), ld, 0.0f, want.data(), ld, workspace.data(), plain_bytes, nullptr,
       Transpose::no, Transpose::yes);
  for (DeviceBuffer<T>* out : {&d, &sums, &again})
    if (out->bytes() > 0) harness::poison(out->data(), out->bytes(), nullptr);
  gemm_weight_gradient(m, n, k, 0.5f, a.data(), b.data(), ld, d.data(), ld, sums.data(), workspace.data(), bytes,
                       nullptr);
  gemm_weight_gradient(m, n, k, 0.5f, a.data(), b.data(), ld, d.data(), ld, again.data(), workspace.data(), bytes,
                       nullptr);
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = to_host(d.data(), d.size()), expected = to_host(want.data(), want.size());
  ASSERT_EQ(std::memcmp(got.data(), expected.data(), sizeof(T) * got.size()), 0);
  const auto first = to_host(sums.data(), sums.size()), second = to_host(again.data(), again.size());
  ASSERT_EQ(std::memcmp(first.data(), second.data(), sizeof(T) * first.size()), 0);
  const auto ha = widened(to_host(a.data(), a.size())), hsums = widened(first);
  const double u_t = traits(dtype).unit_roundoff;
  for (std::int64_t i = 0; i < m; ++i) {
    double sum = 0.0, magnitude = 0.0;
    for (std::int64_t t = 0; t < k; ++t) {
      sum += ha[t * m + i];
      magnitude += std::fabs(ha[t * m + i]);
    }
    // fp32 adds at most k / 16 deep in a thread, then a shuffle tree, a hand-over or stream-K's
    // peers (the pass: 16 a lane, a tree of 8, a partial per 128 rows), and one rounding to T: a
    // wrong swizzle, a lost k-step or a lost peer's sums land far outside.
    const double bound = (static_cast<double>(k) / 16.0 + 24.0) * magnitude / 16777216.0 + u_t * std::fabs(sum);
    ASSERT_LE(std::fabs(hsums[i] - sum), bound) << "bias gradient at " << i << ": " << hsums[i] << " against " << sum;
  }
}

// The shapes' rungs on Hopper (host test GemmLibraryChoice.WeightGradientTestShapesTakeTheirRungs):
// the persistent rungs add A's rows in their k-loop; the cluster rung, the aligned copies and the
// mma rungs take a pass after the product.
TEST(LibraryGemm, WeightGradientWithTheBiasGradient) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_gemm_weight_gradient<__nv_bfloat16>(1024, 4096, 8192);  // a GPT's fc2 dW: large tiles
  check_gemm_weight_gradient<__nv_bfloat16>(1088, 8192, 2000);  // mid tiles, the last tile's second half past m
  check_gemm_weight_gradient<__half>(2304, 768, 8192);          // mid tiles
  check_gemm_weight_gradient<__nv_bfloat16>(3072, 768, 8192);   // stream-K: the owners add their peers' sums
  check_gemm_weight_gradient<__nv_bfloat16>(512, 2048, 8192);   // small tiles: the warpgroups' k-steps handed over
  check_gemm_weight_gradient<__nv_bfloat16>(1000, 1024, 4000);  // small tiles, the last past m, k off 64
  check_gemm_weight_gradient<__nv_bfloat16>(1024, 128, 8192);   // small tiles, one column: no columns to add
  check_gemm_weight_gradient<__nv_bfloat16>(2048, 4096, 256);   // large tiles, fewer k-tiles than columns
  check_gemm_weight_gradient<__nv_bfloat16>(3000, 4096, 1024);  // A's rows off 128-byte lines: cluster, a pass
  check_gemm_weight_gradient<__nv_bfloat16>(1002, 4096, 1024);  // A's rows off 16 bytes: aligned copies, a pass
  check_gemm_weight_gradient<__half>(130, 264, 72);             // mma_small, a pass
  check_gemm_weight_gradient<__nv_bfloat16>(1024, 4096, 0);     // no tokens: D = 0, zero sums
  check_gemm_weight_gradient<__nv_bfloat16>(256, 0, 512);       // no columns: the sums still
  check_gemm_weight_gradient<__nv_bfloat16>(0, 512, 512);       // no rows
}

// A null bias gradient (m > 0), too little scratch and a bias gradient over A: refused before any launch.
TEST(LibraryGemm, WeightGradientArguments) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  using T = __nv_bfloat16;
  const std::int64_t m = 1024, n = 512, k = 1024;
  DeviceBuffer<T> a(k * m), b(k * n), d(m * n), sums(m);
  const std::size_t bytes = gemm_weight_gradient_workspace_bytes(m, n, k, a.data(), b.data(), n, d.data(), n);
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(bytes));
  const auto call = [&](T* out, std::size_t given) {
    return test_support::thrown_kind([&] {
      gemm_weight_gradient(m, n, k, 1.0f, a.data(), b.data(), n, d.data(), n, out, workspace.data(), given, nullptr);
    });
  };
  EXPECT_EQ(call(nullptr, bytes), ErrorKind::invalid_argument);
  EXPECT_EQ(call(sums.data(), bytes / 2), ErrorKind::invalid_argument);
  EXPECT_EQ(call(a.data(), bytes), ErrorKind::invalid_argument);  // overlaps A
}

// A thread whose first CUDA work is a product has no current context (an autograd worker
// thread's case): its tensor maps are encoded anyway, and the product has the calling thread's bits.
TEST(LibraryGemm, FirstCudaWorkOfANewThread) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  using T = __nv_bfloat16;
  const std::int64_t m = 4096, n = 4096, k = 4096;  // Hopper tiles: tensor maps encoded before any launch
  DeviceBuffer<T> a(m * k), b(n * k), here(m * n), there(m * n);
  harness::fill_random(DType::bf16, a.data(), a.size(), 61, harness::Distribution::normal, nullptr);
  harness::fill_random(DType::bf16, b.data(), b.size(), 62, harness::Distribution::normal, nullptr);
  gemm(m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, here.data(), n, nullptr, Transpose::yes);
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
  std::string error;
  std::thread worker([&] {
    try {
      gemm(m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, there.data(), n, nullptr, Transpose::yes);
      CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  worker.join();
  ASSERT_EQ(error, "");
  const auto h = to_host(here.data(), here.size()), t = to_host(there.data(), there.size());
  EXPECT_EQ(std::memcmp(h.data(), t.data(), h.size() * sizeof(T)), 0);
}

TEST(LibraryGemm, ActivationEpilogues) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_gemm_activation<__nv_bfloat16>(1096, 2048, 264, true, false, Activation::gelu_tanh);  // fused, big tiles
  check_gemm_activation<__nv_bfloat16>(520, 1024, 320, false, false, Activation::gelu_erf);   // fused, small tiles
  check_gemm_activation<__half>(1000, 1000, 330, false, false, Activation::relu);             // fused, aligned copies
  check_gemm_activation<__half>(1096, 2048, 264, true, false, Activation::gelu_erf);
  check_gemm_activation<__nv_bfloat16>(130, 264, 72, true, false, Activation::gelu_tanh);   // mma_small, second pass
  check_gemm_activation<__nv_bfloat16>(2, 4096, 1024, true, false, Activation::gelu_erf);   // decode, second pass
  check_gemm_activation<__nv_bfloat16>(300, 1004, 264, false, false, Activation::relu);     // no TMA store
  check_gemm_activation<__nv_bfloat16>(520, 512, 264, false, true, Activation::gelu_tanh);  // A stored k x m
  check_gemm_activation<__nv_bfloat16>(1096, 2048, 264, true, false, Activation::silu);     // fused, big tiles
  check_gemm_activation<__half>(130, 264, 72, true, false, Activation::silu);               // second pass
}

// Past k = 2048 the large-tile rungs keep a fused activation (host test GemmLibraryChoice.
// EpiloguesThatReadOrComputeTakeThePingPongTiles pins each shape's rung).
TEST(LibraryGemm, ActivationEpiloguesOnTheLargeTiles) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  check_gemm_activation<__nv_bfloat16>(1096, 2048, 2304, true, false, Activation::gelu_tanh);  // persistent
  check_gemm_activation<__nv_bfloat16>(1096, 2048, 2056, true, false, Activation::relu);       // cluster
  check_gemm_activation<__half>(2304, 768, 2304, true, false, Activation::silu);               // mid
  check_gemm_activation<__nv_bfloat16>(768, 3072, 8192, true, false, Activation::gelu_erf);    // stream-K
}

// No bias gradient asked (null: no scratch for it); too little scratch, D over the derivative, an
// activation outside the enum and the derivative over D: refused before any launch.
TEST(LibraryGemm, ActivationEpilogueArguments) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  using T = __nv_bfloat16;
  const std::int64_t m = 1096, n = 2048, k = 264;
  DeviceBuffer<T> a(m * k), b(n * k), z(m * n), dz(m * n), dbias(n);
  harness::fill_random(DType::bf16, a.data(), a.size(), 51, harness::Distribution::normal, nullptr);
  harness::fill_random(DType::bf16, b.data(), b.size(), 52, harness::Distribution::normal, nullptr);
  harness::fill_random(DType::bf16, z.data(), z.size(), 53, harness::Distribution::normal, nullptr);
  const Transpose tb = Transpose::yes;
  const std::size_t bytes =
      gemm_activation_backward_workspace_bytes(m, n, k, a.data(), k, b.data(), k, dz.data(), n, tb);
  EXPECT_GE(bytes, static_cast<std::size_t>((m + 15) / 16 * n) * sizeof(float));
  DeviceBuffer<unsigned char> workspace(static_cast<std::int64_t>(bytes));
  gemm_activation_backward(m, n, k, 1.0f, a.data(), k, b.data(), k, z.data(), n, dz.data(), n, static_cast<T*>(nullptr),
                           nullptr, 0, nullptr, tb);
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
  const auto backward = [&](std::size_t given, T* d) {
    return test_support::thrown_kind([&] {
      gemm_activation_backward(m, n, k, 1.0f, a.data(), k, b.data(), k, z.data(), n, d, n, dbias.data(),
                               workspace.data(), given, nullptr, tb);
    });
  };
  const auto forward = [&](Activation act, T* derivative) {
    return test_support::thrown_kind([&] {
      gemm_activation(m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, static_cast<const T*>(nullptr), 0, dz.data(), n,
                      act, derivative, nullptr, 0, nullptr, tb);
    });
  };
  EXPECT_EQ(backward(bytes - 256, dz.data()), ErrorKind::invalid_argument);
  EXPECT_EQ(backward(bytes, z.data() + 8), ErrorKind::invalid_argument);  // D over the derivative
  EXPECT_EQ(forward(static_cast<Activation>(7), z.data()), ErrorKind::invalid_argument);
  EXPECT_EQ(forward(Activation::gelu_tanh, dz.data() + 16), ErrorKind::invalid_argument);  // the derivative over D
}

TEST(LibraryGemm, SeparateCArgumentErrors) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  using T = __nv_bfloat16;
  DeviceBuffer<T> a(64 * 64), b(64 * 64), d(64 * 64);
  const auto call = [&](const T* c, std::int64_t ldc, float beta) {
    return test_support::thrown_kind(
        [&] { gemm(64, 64, 64, 1.0f, a.data(), 64, b.data(), 64, beta, c, ldc, d.data(), 64, nullptr, 0, nullptr); });
  };
  EXPECT_EQ(call(nullptr, 0, 1.0f), ErrorKind::invalid_argument);        // beta reads a null C
  EXPECT_EQ(call(a.data(), 32, 1.0f), ErrorKind::invalid_argument);      // ldc below n
  EXPECT_EQ(call(d.data() + 8, 64, 1.0f), ErrorKind::invalid_argument);  // D overlaps C
}

TEST(LibraryGemm, HalfArgumentErrors) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<__nv_bfloat16> x(64);
  EXPECT_EQ(test_support::thrown_kind([&] { gemm(-1, 4, 4, 1.0f, x.data(), 4, x.data(), 4, 0.0f, x.data(), 4); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(test_support::thrown_kind([&] { gemm(4, 4, 8, 1.0f, x.data(), 4, x.data(), 4, 0.0f, x.data(), 4); }),
            ErrorKind::invalid_argument);  // lda below k
  EXPECT_EQ(test_support::thrown_kind(
                [&] { gemm(4, 8, 4, 1.0f, x.data(), 4, x.data(), 4, 0.0f, x.data(), 8, nullptr, Transpose::no); }),
            ErrorKind::invalid_argument);  // ldb below n
  EXPECT_EQ(test_support::thrown_kind(
                [&] { gemm<__nv_bfloat16>(4, 4, 4, 1.0f, x.data(), 4, x.data(), 4, 0.0f, nullptr, 4); }),
            ErrorKind::invalid_argument);  // C null
  EXPECT_EQ(test_support::thrown_kind(
                [&] { gemm_batched(2, 4, 4, 4, 1.0f, x.data(), 4, 16, x.data(), 4, 16, 0.0f, x.data(), 4, 8); }),
            ErrorKind::invalid_argument);  // C's matrices overlap
  EXPECT_EQ(test_support::thrown_kind([&] {
              gemm(8, 8, 4, 1.0f, x.data(), 4, x.data(), 8, 0.0f, x.data(), 8, nullptr, Transpose::no, Transpose::yes);
            }),
            ErrorKind::invalid_argument);  // lda below m for A stored k x m
  // A pointer between elements faults inside a kernel ("misaligned address") and poisons the
  // context; the call refuses it instead, and the next call still runs.
  const auto* odd = reinterpret_cast<const __nv_bfloat16*>(reinterpret_cast<const char*>(x.data()) + 1);
  EXPECT_EQ(test_support::thrown_kind([&] { gemm(4, 4, 4, 1.0f, odd, 4, x.data(), 4, 0.0f, x.data() + 32, 4); }),
            ErrorKind::invalid_argument);
  gemm(4, 4, 4, 1.0f, x.data(), 4, x.data() + 16, 4, 0.0f, x.data() + 32, 4);
  CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(GemmReference, DeviceMatchesHost) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t m = 67, n = 45, k = 129;
  DeviceBuffer<float> a(m * k), b(k * n), c0(m * n);
  harness::fill_random(a.data(), a.size(), 7, harness::Distribution::normal, nullptr);
  harness::fill_random(b.data(), b.size(), 8, harness::Distribution::uniform, nullptr);
  harness::fill_random(c0.data(), c0.size(), 9, harness::Distribution::uniform, nullptr);
  DeviceBuffer<double> value(m * n), bound(m * n), scratch(m * k + k * n);
  gemm_variants::dgemm_reference(DType::f32, m, n, k, 1.5f, a.data(), b.data(), false, false, -0.5f, c0.data(),
                                 value.data(), bound.data(), scratch.data(), nullptr);
  const auto ha = to_host(a.data(), a.size()), hb = to_host(b.data(), b.size()), hc = to_host(c0.data(), c0.size());
  const auto host = harness::gemm_reference(m, n, k, 1.5, ha.data(), k, hb.data(), n, -0.5, hc.data(), n);
  const auto dv = to_host(value.data(), value.size()), db = to_host(bound.data(), bound.size());
  for (std::int64_t i = 0; i < m * n; ++i) {
    // Both in double: agreement to ~k ulps of double.
    ASSERT_NEAR(dv[i], host.value[i], 1e-12 * host.bound[i]) << i;
    ASSERT_NEAR(db[i], host.bound[i], 1e-12 * host.bound[i]) << i;
  }
}

// The BF16 path with A stored k x m and B stored n x k: the widening kernel and the transposed DGEMM.
TEST(GemmReference, DeviceMatchesHostBf16Transposed) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t m = 33, n = 70, k = 95;
  DeviceBuffer<__nv_bfloat16> a(k * m), b(n * k), c0(m * n);
  harness::fill_random(DType::bf16, a.data(), a.size(), 17, harness::Distribution::normal, nullptr);
  harness::fill_random(DType::bf16, b.data(), b.size(), 18, harness::Distribution::normal, nullptr);
  harness::fill_random(DType::bf16, c0.data(), c0.size(), 19, harness::Distribution::uniform, nullptr);
  DeviceBuffer<double> value(m * n), bound(m * n), scratch(m * k + k * n);
  gemm_variants::dgemm_reference(DType::bf16, m, n, k, 1.5f, a.data(), b.data(), true, true, -0.5f, c0.data(),
                                 value.data(), bound.data(), scratch.data(), nullptr);
  const auto ha = widened(to_host(a.data(), a.size())), hb = widened(to_host(b.data(), b.size()));
  const auto hc = widened(to_host(c0.data(), c0.size()));
  const auto host = harness::gemm_reference(m, n, k, 1.5, ha.data(), m, hb.data(), k, -0.5, hc.data(), n, true, true);
  const auto dv = to_host(value.data(), value.size()), db = to_host(bound.data(), bound.size());
  for (std::int64_t i = 0; i < m * n; ++i) {
    ASSERT_NEAR(dv[i], host.value[i], 1e-12 * host.bound[i]) << i;
    ASSERT_NEAR(db[i], host.bound[i], 1e-12 * host.bound[i]) << i;
  }
}

// The device comparison the large problems use gives compare_gemm's verdict, counts, first mismatch
// and largest error, in every output type, with mismatches planted in different blocks' ranges.
template <typename T>
void expect_device_comparison_matches_host(DType dtype, const harness::GemmTolerance& tolerance) {
  const std::int64_t count = 300001, k = 77;
  std::vector<double> value(count), bound(count);
  std::vector<T> out(count);
  std::vector<float> widened_out(count);
  for (std::int64_t i = 0; i < count; ++i) {
    value[i] = std::sin(0.37 * static_cast<double>(i)) * 8.0;
    bound[i] = std::fabs(value[i]) + 1.0;
    out[i] = static_cast<T>(static_cast<float>(value[i]));
  }
  DeviceBuffer<double> device_value(count), device_bound(count);
  DeviceBuffer<T> device_out(count);
  CUDALAB_CUDA_CHECK(cudaMemcpy(device_value.data(), value.data(), count * sizeof(double), cudaMemcpyHostToDevice));
  CUDALAB_CUDA_CHECK(cudaMemcpy(device_bound.data(), bound.data(), count * sizeof(double), cudaMemcpyHostToDevice));
  for (const bool planted : {false, true}) {
    if (planted) {
      out[299999] = static_cast<T>(1000.0f);  // planted from the last block back: the first must win
      out[150001] = static_cast<T>(NAN);
      out[12345] = static_cast<T>(static_cast<float>(value[12345] + 3.0));
    }
    for (std::int64_t i = 0; i < count; ++i) widened_out[i] = static_cast<float>(out[i]);
    CUDALAB_CUDA_CHECK(cudaMemcpy(device_out.data(), out.data(), count * sizeof(T), cudaMemcpyHostToDevice));
    const harness::Comparison host =
        harness::compare_gemm(widened_out.data(), count, value.data(), bound.data(), k, tolerance);
    const harness::Comparison device = harness::compare_gemm_on_device(
        dtype, device_out.data(), count, device_value.data(), device_bound.data(), k, tolerance, nullptr);
    EXPECT_EQ(host.passed(), !planted) << to_string(dtype);
    EXPECT_EQ(device.count, host.count);
    EXPECT_EQ(device.mismatches, host.mismatches) << to_string(dtype);
    EXPECT_EQ(device.non_finite, host.non_finite);
    EXPECT_EQ(device.first_mismatch, host.first_mismatch);
    EXPECT_EQ(device.first_mismatch_out, host.first_mismatch_out);
    EXPECT_EQ(device.first_mismatch_ref, host.first_mismatch_ref);
    EXPECT_EQ(device.max_abs_error, host.max_abs_error);
    EXPECT_NEAR(device.rel_l2_error, host.rel_l2_error, 1e-12 * host.rel_l2_error);
    EXPECT_EQ(device.tolerance.rtol, host.tolerance.rtol);
    EXPECT_EQ(device.tolerance.atol, host.tolerance.atol);
    if (planted) {
      EXPECT_EQ(device.first_mismatch, 12345);
    }
  }
}

TEST(GemmReference, DeviceComparisonMatchesHost) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  harness::GemmTolerance sixteen_bit;
  sixteen_bit.accumulate_unit = 1.0 / 8388608.0;
  sixteen_bit.output_unit = 1.0 / 256.0;
  expect_device_comparison_matches_host<float>(DType::f32, {});
  expect_device_comparison_matches_host<__nv_bfloat16>(DType::bf16, sixteen_bit);
  sixteen_bit.output_unit = 1.0 / 2048.0;
  sixteen_bit.output_absolute = 1.0 / 33554432.0;
  expect_device_comparison_matches_host<__half>(DType::f16, sixteen_bit);
}

}  // namespace
}  // namespace cudalab
