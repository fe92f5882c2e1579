// The attention op's cuBLAS baseline without a GPU: its workspace size (fp32 scores, plus 16-bit P
// for bf16/f16, SIZE_MAX on overflow), the limits of cuBLAS's int sizes, and its registration (a
// baseline in every dtype of the op, held to the ceiling of the unit its dtype runs on).
#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "cudalab/dtype.hpp"
#include "harness/registry.hpp"
#include "ops/attention/cublas_unfused.hpp"
#include "ops/attention/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = attention_ids;
namespace v = attention_variants;

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

TEST(AttentionCublas, WorkspaceHoldsFp32ScoresAndSixteenBitProbabilities) {
  // 1 x 2 heads x 3 x 3 scores: 18 floats.
  EXPECT_EQ(v::cublas_workspace_bytes(1, 2, 3, sizeof(float)), 72u);
  EXPECT_EQ(v::cublas_workspace_bytes(1, 2, 3, 2), 72u + 36u);
  EXPECT_EQ(v::cublas_workspace_bytes(1, 2, 3, sizeof(float)), v::naive_workspace_bytes(1, 2, 3));
  EXPECT_EQ(v::cublas_workspace_bytes(0, 2, 3, 2), 0u);
  // 3 * 2^60 scores: 1.5 * 2^63 bytes of fp32 fit in 64 bits, another 0.75 * 2^63 of P do not.
  const std::int64_t seq = std::int64_t{1} << 30;
  EXPECT_EQ(v::cublas_workspace_bytes(3, 1, seq, sizeof(float)), 3 * (std::size_t{1} << 62));
  EXPECT_EQ(v::cublas_workspace_bytes(3, 1, seq, 2), kMax);
  EXPECT_EQ(v::cublas_workspace_bytes(1 << 20, 1 << 20, seq, sizeof(float)), kMax);
}

TEST(AttentionCublas, RefusesWhatCublasIntSizesCannotExpress) {
  const auto shape = [](std::int64_t batch, std::int64_t heads, std::int64_t kv_heads, std::int64_t seq,
                        std::int64_t head_dim) {
    return v::AttentionShape{batch, heads, kv_heads, seq, head_dim, 2, 90};
  };
  EXPECT_EQ(v::cublas_limits(shape(4, 16, 4, 4096, 128)), "");
  EXPECT_NE(v::cublas_limits(shape(1, 1, 1, 1, std::int64_t{1} << 31)).find("head_dim"), std::string::npos);
  // 4 query heads over one kv head at seq 2^29: one GEMM of 2^31 rows.
  EXPECT_NE(v::cublas_limits(shape(1, 4, 1, std::int64_t{1} << 29, 64)).find("GEMM"), std::string::npos);
  EXPECT_NE(v::cublas_limits(shape(std::int64_t{1} << 31, 1, 1, 1, 64)).find("batch count"), std::string::npos);
  // Each GEMM fits, but not the softmax's grid of batch * heads * seq rows.
  EXPECT_NE(v::cublas_limits(shape(4, 4, 4, std::int64_t{1} << 29, 64)).find("softmax"), std::string::npos);
}

TEST(AttentionCublas, IsTheBaselineInEveryDtype) {
  const Op* op = builtin_registry().find_op(ids::kForward);
  ASSERT_NE(op, nullptr);
  const Variant* cublas = op->find_variant(ids::kCublas);
  ASSERT_NE(cublas, nullptr);
  EXPECT_EQ(cublas->role, Role::baseline);
  EXPECT_EQ(compute_unit(cublas->engine, DType::bf16), ComputeUnit::bf16_tensor_cores);
  EXPECT_EQ(compute_unit(cublas->engine, DType::f16), ComputeUnit::fp16_tensor_cores);
  EXPECT_EQ(compute_unit(cublas->engine, DType::f32), ComputeUnit::fp32_cuda_cores) << "CUBLAS_COMPUTE_32F, no TF32";
  DeviceInfo hopper;
  hopper.compute_major = 9;
  for (DType dtype : op->dtypes) EXPECT_TRUE(cublas->supports(dtype)) << to_string(dtype);
  ASSERT_TRUE(cublas->workspace_bytes);
  for (const Problem& p : op->test_problems) {
    EXPECT_EQ(why_not(*cublas, hopper, p), "") << p.label();
    EXPECT_EQ(cublas->workspace_bytes(p),
              v::cublas_workspace_bytes(p.dim("batch"), p.dim("heads"), p.dim("seq"), size_of(p.dtype)))
        << p.label();
  }
}

}  // namespace
}  // namespace cudalab::harness
