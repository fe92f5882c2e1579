// cudalab::conv2d as a program would call it: dense and pitched rows, aligned and unaligned
// (the scalar paths), every filter width, images smaller than a tile, against the CPU reference.
#include <cstdint>
#include <vector>

#include "cudalab/conv2d.hpp"
#include "cudalab/memory.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"
#include "ops/conv2d/reference.hpp"

namespace cudalab {
namespace {

// Runs conv2d on a height x width image stored `offset` floats into a buffer with rows `pitch`
// apart (the output likewise), over a poisoned output, and checks every pixel.
void check_library(std::int64_t height, std::int64_t width, std::int64_t pitch, std::int64_t offset, int r) {
  std::vector<float> image(height * width), filter(r * r);
  for (std::int64_t i = 0; i < height * width; ++i)
    image[i] = harness::random_value(11, i, height * width, harness::Distribution::uniform);
  for (int i = 0; i < r * r; ++i) filter[i] = harness::random_value(12, i, r * r, harness::Distribution::uniform);
  const std::int64_t floats = offset + height * pitch;
  DeviceBuffer<float> input(floats), output(floats), taps(r * r);
  Stream stream;
  const std::size_t row_bytes = sizeof(float) * width, pitch_bytes = sizeof(float) * pitch;
  CUDALAB_CUDA_CHECK(cudaMemcpy2DAsync(input.data() + offset, pitch_bytes, image.data(), row_bytes, row_bytes, height,
                                       cudaMemcpyHostToDevice, stream.get()));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(taps.data(), filter.data(), taps.bytes(), cudaMemcpyHostToDevice, stream.get()));
  harness::poison(output.data(), output.bytes(), stream.get());
  conv2d(input.data() + offset, height, width, pitch, taps.data(), r, output.data() + offset, pitch, stream.get());
  std::vector<float> result(height * width);
  CUDALAB_CUDA_CHECK(cudaMemcpy2DAsync(result.data(), row_bytes, output.data() + offset, pitch_bytes, row_bytes, height,
                                       cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  const harness::Comparison c =
      harness::check_conv2d(image.data(), height, width, width, filter.data(), r, result.data(), width);
  EXPECT_TRUE(c.passed()) << height << "x" << width << " pitch " << pitch << " offset " << offset << " R " << r << ": "
                          << c.summary();
}

TEST(LibraryConv2d, MatchesTheReferenceForEveryWidthAndLayout) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for (int r : {1, 3, 5, 7}) {
    for (auto [height, width] :
         {std::pair<std::int64_t, std::int64_t>{1, 1}, {2, 3}, {37, 45}, {65, 257}, {300, 129}}) {
      check_library(height, width, width, 0, r);                    // dense
      check_library(height, width, width + 7, 1, r);                // unaligned rows: scalar loads and stores
      check_library(height, width, (width + 3) / 4 * 4 + 4, 4, r);  // aligned, padded rows
    }
  }
}

}  // namespace
}  // namespace cudalab
