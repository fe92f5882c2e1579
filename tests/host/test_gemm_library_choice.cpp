// The library call's rung for each class of shape (ops/gemm/library_choice.cpp), pinned on Hopper
// (132 SMs, as the H100 SXM and H200) and on an sm_80 GPU of 108: a change to the rule shows here
// before any GPU runs it. The measurements behind each class are in library_choice.cpp.
#include <cstdint>

#include <gtest/gtest.h>

#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {
namespace {

constexpr int kHopper = 90, kHopperSms = 132;

// A m x k and B k x n (or n x k, `nt`), dense rows; A stored k x m with `tn`.
GemmShape product(std::int64_t m, std::int64_t n, std::int64_t k, bool nt = false, bool tn = false,
                  std::int64_t batch = 1) {
  GemmShape s;
  s.m = m, s.n = n, s.k = k, s.b_transposed = nt, s.a_transposed = tn, s.batch = batch;
  s.lda = tn ? m : k, s.ldb = nt ? k : n, s.ldc = n;
  s.stride_a = m * k, s.stride_b = n * k, s.stride_c = m * n;
  return s;
}

LibraryRung on_hopper(const GemmShape& s, OperandAlignment alignment = {}, bool may_copy = true) {
  return library_rung(s, alignment, kHopper, kHopperSms, may_copy);
}

class GemmLibraryChoice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!wgmma_persistent_limits(product(4096, 4096, 4096), kHopper).empty())
      GTEST_SKIP() << "this build holds no sm_90a code, so the Hopper rungs refuse every shape";
  }
};

// A C read at k <= 1024 and a fused activation at k <= 2048 move the large tiles' products to the
// ping-pong tiles; the rest keep their rung.
TEST_F(GemmLibraryChoice, EpiloguesThatReadOrComputeTakeThePingPongTiles) {
  const auto with = [](const GemmShape& s, bool reads_c, bool fused) {
    return epilogue_rung(on_hopper(s), s, reads_c, fused, kHopper);
  };
  EXPECT_EQ(with(product(8192, 4096, 1024, true), true, false), LibraryRung::wgmma_pingpong);  // a biased forward
  EXPECT_EQ(with(product(8192, 3072, 1024, true), true, false), LibraryRung::wgmma_pingpong);
  EXPECT_EQ(with(product(4096, 4096, 4096, true), true, false), LibraryRung::wgmma_persistent);  // long k
  EXPECT_EQ(with(product(8192, 8192, 8192), true, false), LibraryRung::wgmma_cluster);
  EXPECT_EQ(with(product(8192, 4096, 1024, true), false, false), on_hopper(product(8192, 4096, 1024, true)));
  EXPECT_EQ(with(product(8192, 4096, 1024, true), false, true), LibraryRung::wgmma_pingpong);  // fused
  EXPECT_EQ(with(product(8192, 8192, 2048, true), false, true), LibraryRung::wgmma_pingpong);
  EXPECT_EQ(with(product(8192, 12288, 3072, true), false, true), on_hopper(product(8192, 12288, 3072, true)));
  EXPECT_EQ(with(product(8192, 16384, 4096, true), false, true), on_hopper(product(8192, 16384, 4096, true)));
  EXPECT_NE(on_hopper(product(8192, 16384, 4096, true)), LibraryRung::wgmma_pingpong);
  // LibraryGemm.ActivationEpilogues' shapes past k = 2048: the fused epilogue on each large-tile rung.
  EXPECT_EQ(with(product(1096, 2048, 2304, true), false, true), LibraryRung::wgmma_persistent);
  EXPECT_EQ(with(product(1096, 2048, 2056, true), false, true), LibraryRung::wgmma_cluster);  // rows off lines
  EXPECT_EQ(with(product(2304, 768, 2304, true), false, true), LibraryRung::wgmma_mid);
  EXPECT_EQ(with(product(768, 3072, 8192, true), false, true), LibraryRung::wgmma_streamk);
  EXPECT_EQ(with(product(1024, 1024, 1024), true, true), on_hopper(product(1024, 1024, 1024)));  // small tiles stay
}

TEST_F(GemmLibraryChoice, BigProductsTakeTheBigTileHopperRungs) {
  EXPECT_EQ(on_hopper(product(8192, 8192, 8192)), LibraryRung::wgmma_cluster);                  // 7.8 waves of tiles
  EXPECT_EQ(on_hopper(product(8192, 28672, 8192, true)), LibraryRung::wgmma_cluster);           // a 70B MLP's forward
  EXPECT_EQ(on_hopper(product(4096, 4096, 4096)), LibraryRung::wgmma_persistent);               // 3.9 waves
  EXPECT_EQ(on_hopper(product(4096, 4096, 4096, false, true)), LibraryRung::wgmma_persistent);  // TN
  EXPECT_EQ(on_hopper(product(2048, 2048, 2048)), LibraryRung::wgmma_persistent);
  EXPECT_EQ(on_hopper(product(3072, 5120, 7168)), LibraryRung::wgmma_persistent);
}

TEST_F(GemmLibraryChoice, RowsOffCacheLinesTakeTheClusterRung) {
  EXPECT_EQ(on_hopper(product(3000, 5000, 7000)), LibraryRung::wgmma_cluster);  // A's and B's rows: 14000 bytes
  EXPECT_EQ(on_hopper(product(3072, 5000, 7168)), LibraryRung::wgmma_cluster);  // B k x n: rows of 10000 bytes
  EXPECT_EQ(on_hopper(product(3072, 5000, 7168, true)), LibraryRung::wgmma_persistent);  // B n x k: rows on lines
}

// 128x128 tiles where they take fewer rounds of the SMs than the large or small tiles would (library_choice.cpp).
TEST_F(GemmLibraryChoice, MidTilesWhereTheirRoundsCostLess) {
  EXPECT_EQ(on_hopper(product(3072, 2048, 8192, false, true)), LibraryRung::wgmma_mid);  // 192 large tiles: 2 rounds
  EXPECT_EQ(on_hopper(product(2304, 768, 8192, false, true)), LibraryRung::wgmma_mid);   // 108 mid tiles, 216 small
  EXPECT_EQ(on_hopper(product(512, 4096, 8192, false, true)), LibraryRung::wgmma_mid);
  EXPECT_EQ(on_hopper(product(512, 4096, 4096, true)), LibraryRung::wgmma_mid);
  EXPECT_EQ(on_hopper(product(1024, 2048, 2048, true)), LibraryRung::wgmma_mid);
  EXPECT_EQ(on_hopper(product(1024, 4096, 8192, false, true)), LibraryRung::wgmma_persistent);  // 1 round against 2
  EXPECT_EQ(on_hopper(product(768, 3072, 4096, false, true)), LibraryRung::wgmma_persistent);
  EXPECT_EQ(on_hopper(product(512, 2048, 8192, false, true)), LibraryRung::wgmma_small);  // 128 small tiles: 1 round
  EXPECT_EQ(on_hopper(product(1000, 2048, 4096, false, true)),
            LibraryRung::wgmma_small);  // A's rows off 128-byte lines
}

// Stream-K where sharing the large tiles' k-steps costs less than whole tiles, its fixed cost included.
TEST_F(GemmLibraryChoice, StreamKWhereOneRoundRunsPartEmptyOverLongK) {
  EXPECT_EQ(on_hopper(product(768, 3072, 8192, false, true)), LibraryRung::wgmma_streamk);  // 72 tiles, k = 8192
  EXPECT_EQ(on_hopper(product(3072, 768, 8192, false, true)), LibraryRung::wgmma_streamk);
  EXPECT_EQ(on_hopper(product(1280, 2048, 8192, false, true)), LibraryRung::wgmma_streamk);  // 80 tiles
  EXPECT_EQ(on_hopper(product(3072, 1024, 16384, false, true)), LibraryRung::wgmma_streamk);
  EXPECT_EQ(on_hopper(product(2560, 2048, 8192, false, true)), LibraryRung::wgmma_streamk);   // against mid's 3 rounds
  EXPECT_EQ(on_hopper(product(11264, 2048, 8192, false, true)), LibraryRung::wgmma_streamk);  // 5.3 rounds
  EXPECT_EQ(on_hopper(product(3072, 768, 8192, true)), LibraryRung::wgmma_streamk);           // NT
  EXPECT_EQ(on_hopper(product(3072, 1024, 8192, false, true)), LibraryRung::wgmma_streamk);   // 96 tiles: 73% full
  EXPECT_EQ(on_hopper(product(1408, 2048, 8192, false, true)), LibraryRung::wgmma_streamk);   // 88 tiles
  EXPECT_EQ(on_hopper(product(3328, 1024, 8192, false, true)), LibraryRung::wgmma_persistent);  // 104 tiles: 79%
  EXPECT_EQ(on_hopper(product(2048, 2048, 8192, false, true)), LibraryRung::wgmma_persistent);
  EXPECT_EQ(on_hopper(product(768, 3072, 4096, false, true)), LibraryRung::wgmma_persistent);  // k = 4096
  EXPECT_EQ(on_hopper(product(5632, 2048, 8192, false, true)), LibraryRung::wgmma_persistent);
  EXPECT_EQ(on_hopper(product(768, 3072, 8192, false, true, 2)), LibraryRung::wgmma_mid);  // a batch: no stream-K
}

TEST_F(GemmLibraryChoice, FewTilesTakeTheSmallRungs) {
  EXPECT_EQ(on_hopper(product(1024, 1024, 1024)), LibraryRung::wgmma_small);  // 32 big tiles
  EXPECT_EQ(on_hopper(product(128, 4096, 4096, true)), LibraryRung::wgmma_small);
  EXPECT_EQ(on_hopper(product(128, 8192, 8192, true)), LibraryRung::wgmma_small);
  EXPECT_EQ(on_hopper(product(64, 64, 64, false, false, 1024)), LibraryRung::mma_small);         // a batch, k = 64
  EXPECT_EQ(on_hopper(product(1024, 1024, 1024), {true, true, false}), LibraryRung::mma_small);  // C misaligned
}

// One row on CUDA cores; 2-4 rows on decode_mma against a narrow weight (wgmma_small's 128-column tiles
// would leave three quarters of the SMs idle: n = 4096, 32 tiles for 132 SMs) and on decode_wgmma against a
// wide one (on Hopper); 5-16 on decode_mma against a narrow weight (on decode_wgmma past k = 8192 on Hopper), else
// on wgmma_small; 17-64 on
// decode_wgmma against a narrow weight with k >= 4096, else on wgmma_small.
TEST_F(GemmLibraryChoice, DecodeStepsReadTheWeightOnTheDecodeRungs) {
  EXPECT_EQ(on_hopper(product(1, 4096, 4096, true)), LibraryRung::decode_gemv);
  EXPECT_EQ(library_rung(product(1, 8192, 8192, true), {}, 80, 108), LibraryRung::decode_gemv);
  for (const std::int64_t rows : {2, 3, 4}) {
    EXPECT_EQ(on_hopper(product(rows, 4096, 4096, true)), LibraryRung::decode_mma) << rows;
    EXPECT_EQ(on_hopper(product(rows, 8192, 8192, true)), LibraryRung::decode_wgmma) << rows;
    EXPECT_EQ(library_rung(product(rows, 8192, 8192, true), {}, 80, 108), LibraryRung::decode_mma) << rows;
  }
  for (const std::int64_t rows : {5, 8, 16}) {
    EXPECT_EQ(on_hopper(product(rows, 4096, 4096, true)), LibraryRung::decode_mma) << rows;
    EXPECT_EQ(on_hopper(product(rows, 4096, 8192, true)), LibraryRung::decode_mma) << rows;
    EXPECT_EQ(on_hopper(product(rows, 4096, 14336, true)), LibraryRung::decode_wgmma) << rows;
    EXPECT_EQ(library_rung(product(rows, 2048, 14336, true), {}, 80, 108), LibraryRung::decode_mma) << rows;
    EXPECT_EQ(on_hopper(product(rows, 8192, 8192, true)), LibraryRung::wgmma_small) << rows;
    EXPECT_EQ(on_hopper(product(rows, 14336, 4096, true)), LibraryRung::wgmma_small) << rows;
  }
  EXPECT_EQ(on_hopper(product(17, 8192, 8192, true)), LibraryRung::wgmma_small);  // past decode_mma's two groups
  for (const std::int64_t rows : {17, 32, 64}) {
    EXPECT_EQ(on_hopper(product(rows, 4096, 14336, true)), LibraryRung::decode_wgmma) << rows;
    EXPECT_EQ(on_hopper(product(rows, 4096, 11008, true)), LibraryRung::decode_wgmma) << rows;
    EXPECT_EQ(on_hopper(product(rows, 4096, 4096, true)), LibraryRung::decode_wgmma) << rows;
    EXPECT_EQ(on_hopper(product(rows, 4096, 2048, true)), LibraryRung::wgmma_small) << rows;
    EXPECT_EQ(on_hopper(product(rows, 8192, 14336, true)), LibraryRung::wgmma_small) << rows;
    EXPECT_EQ(library_rung(product(rows, 4096, 14336, true), {}, 80, 108), LibraryRung::mma_small) << rows;
  }
  EXPECT_EQ(on_hopper(product(65, 4096, 14336, true)), LibraryRung::wgmma_small);  // past decode_wgmma's 64
  EXPECT_EQ(on_hopper(product(1, 4096, 4096)), LibraryRung::wgmma_small);          // B as K x N: not a weight read
  EXPECT_EQ(on_hopper(product(2, 4096, 4096, true, false, 4)), LibraryRung::wgmma_small);  // a batch
  EXPECT_EQ(on_hopper(product(1, 4096, 4090, true)), LibraryRung::mma_small);  // k of no 8: no 16-byte chunks
  EXPECT_EQ(on_hopper(product(8, 4096, 4096, true), {false, true, true}), LibraryRung::mma_small);  // A off 16 bytes
}

TEST_F(GemmLibraryChoice, MisalignedRowsAreCopiedToAlignedPitchesOnHopper) {
  const GemmShape odd = product(4095, 4097, 4093);
  EXPECT_EQ(on_hopper(odd), LibraryRung::aligned_copies);
  EXPECT_EQ(on_hopper(odd, {}, false), LibraryRung::mma_swizzled);  // the scratch could not be had
  EXPECT_EQ(on_hopper(product(4095, 4097, 4093, false, true), {}, false), LibraryRung::mma_small);    // TN
  EXPECT_EQ(on_hopper(product(4096, 4096, 4096), {false, true, true}), LibraryRung::aligned_copies);  // A's address
  EXPECT_EQ(on_hopper(odd, {true, true, false}), LibraryRung::mma_swizzled);  // C off a boundary: no copies
  const GemmShape copied = with_aligned_pitches(odd, {});
  EXPECT_EQ(copied.lda, 4096);
  EXPECT_EQ(copied.ldb, 4160);     // whole 128-byte lines: TMA reads them at full speed
  EXPECT_EQ(copied.ldc, odd.ldc);  // C is written where it lies
  EXPECT_EQ(on_hopper(copied, {}, false), LibraryRung::wgmma_mid);  // 544 large tiles (5 rounds), 1056 mid (8)
}

// Every product of a training step at the sizes `python -m cudalab.models` names (gpt2-124m at 8192
// tokens, llama-1b at 4096): each Linear's forward (y = x W^T), input gradient (dx = dy W) and weight
// gradient (dW = dy^T x, A read transposed) runs on a Hopper tensor-core rung, with no copy.
TEST_F(GemmLibraryChoice, EveryProductOfTheNamedModelsTakesAWgmmaRung) {
  struct Linear {
    const char* name;
    std::int64_t tokens, in, out;
  };
  const Linear linears[] = {
      {"gpt2 qkv", 8192, 768, 2304},      {"gpt2 proj", 8192, 768, 768},        {"gpt2 fc", 8192, 768, 3072},
      {"gpt2 fc2", 8192, 3072, 768},      {"gpt2 head", 8192, 768, 50304},      {"llama qkv", 4096, 2048, 3072},
      {"llama o", 4096, 2048, 2048},      {"llama gate_up", 4096, 2048, 16384}, {"llama down", 4096, 8192, 2048},
      {"llama head", 4096, 2048, 128256},
  };
  const auto on_wgmma = [](LibraryRung rung) {
    return rung == LibraryRung::wgmma_cluster || rung == LibraryRung::wgmma_persistent ||
           rung == LibraryRung::wgmma_mid || rung == LibraryRung::wgmma_streamk || rung == LibraryRung::wgmma_small;
  };
  for (const Linear& l : linears) {
    EXPECT_TRUE(on_wgmma(on_hopper(product(l.tokens, l.out, l.in, true)))) << l.name << " forward";
    EXPECT_TRUE(on_wgmma(on_hopper(product(l.tokens, l.in, l.out)))) << l.name << " input gradient";
    EXPECT_TRUE(on_wgmma(on_hopper(product(l.out, l.in, l.tokens, false, true)))) << l.name << " weight gradient";
  }
}

// The weight-gradient shapes of the GPU test LibraryGemm.WeightGradientWithTheBiasGradient: each
// persistent rung, which add A's rows in their k-loop, and the rungs that sum them in a pass after.
TEST_F(GemmLibraryChoice, WeightGradientTestShapesTakeTheirRungs) {
  const auto dw = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return on_hopper(product(m, n, k, false, true));
  };
  EXPECT_EQ(dw(1024, 4096, 8192), LibraryRung::wgmma_persistent);
  EXPECT_EQ(dw(1088, 8192, 2000), LibraryRung::wgmma_mid);
  EXPECT_EQ(dw(2304, 768, 8192), LibraryRung::wgmma_mid);
  EXPECT_EQ(dw(3072, 768, 8192), LibraryRung::wgmma_streamk);
  EXPECT_EQ(dw(512, 2048, 8192), LibraryRung::wgmma_small);
  EXPECT_EQ(dw(1000, 1024, 4000), LibraryRung::wgmma_small);
  EXPECT_EQ(dw(1024, 128, 8192), LibraryRung::wgmma_small);
  EXPECT_EQ(dw(2048, 4096, 256), LibraryRung::wgmma_persistent);
  EXPECT_EQ(dw(3000, 4096, 1024), LibraryRung::wgmma_cluster);
  EXPECT_EQ(dw(1002, 4096, 1024), LibraryRung::aligned_copies);
  EXPECT_EQ(dw(130, 264, 72), LibraryRung::mma_small);
}

// Needs no sm_90a code: off Hopper every wgmma rung refuses anyway.
TEST(GemmLibraryChoiceElsewhere, OtherGpusTakeTheMmaSyncRungs) {
  EXPECT_EQ(library_rung(product(4096, 4096, 4096), {}, 80, 108), LibraryRung::mma_pipelined);
  EXPECT_EQ(library_rung(product(4095, 4097, 4093), {}, 89, 128), LibraryRung::mma_swizzled);
  EXPECT_EQ(library_rung(product(1024, 1024, 1024), {}, 86, 84), LibraryRung::mma_small);
}

}  // namespace
}  // namespace cudalab::gemm_variants
