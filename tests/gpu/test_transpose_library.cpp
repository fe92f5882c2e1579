// cudalab::transpose as a program would call it: odd shapes, sub-matrices at odd offsets,
// a stream, and nothing written outside the output.
#include <cmath>
#include <vector>

#include "cudalab/memory.hpp"
#include "cudalab/transpose.hpp"
#include "gpu_test_support.hpp"
#include "harness/random.hpp"

namespace cudalab {
namespace {

void check_transpose(std::int64_t rows, std::int64_t cols, std::int64_t in_offset, std::int64_t out_offset) {
  const std::int64_t n = rows * cols, room = n + 8;
  DeviceBuffer<float> in(room), out(room);
  Stream stream;
  harness::fill_random(in.data(), room, 31, harness::Distribution::normal, stream.get());
  harness::poison(out.data(), out.bytes(), stream.get());
  transpose(in.data() + in_offset, out.data() + out_offset, rows, cols, stream.get());
  std::vector<float> hin(room), hout(room);
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(hin.data(), in.data(), in.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(hout.data(), out.data(), out.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      ASSERT_EQ(hout[out_offset + c * rows + r], hin[in_offset + r * cols + c])
          << rows << "x" << cols << " r=" << r << " c=" << c;
  for (std::int64_t i = 0; i < room; ++i) {
    if (i < out_offset || i >= out_offset + n) {
      ASSERT_TRUE(std::isnan(hout[i])) << "wrote outside the output at " << i;
    }
  }
}

TEST(LibraryTranspose, OddShapesAndOffsets) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  for (auto [rows, cols] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1, 1}, {1, 77}, {77, 1}, {33, 31}, {64, 64}, {1000, 3}, {517, 1029}}) {
    check_transpose(rows, cols, 0, 0);
    check_transpose(rows, cols, 1, 3);
  }
}

}  // namespace
}  // namespace cudalab
