// Registry entries for stream compaction: one op per selectivity (the predicate x >= threshold on
// the harness's int32 inputs, whole numbers uniform in [-16, 16]), the ladder and CUB's
// DeviceSelect::If as the baseline.
#include <climits>
#include <cstring>
#include <memory>
#include <string>

#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/registry.hpp"
#include "ops/select/reference.hpp"
#include "ops/select/variants.hpp"

namespace cudalab::harness {
namespace {

class SelectWorkload final : public Workload {
 public:
  SelectWorkload(std::int64_t n, std::int32_t threshold)
      : n_(n),
        threshold_(threshold),
        in_(n),
        out_(n),
        count_(1),
        host_in_(new std::int32_t[n > 0 ? n : 1]),
        host_out_(new std::int32_t[n > 0 ? n : 1]) {}

  void generate(std::uint64_t seed, Distribution distribution, cudaStream_t stream) override {
    fill_random(in_.data(), n_, seed, distribution, stream);
    if (n_ > 0)
      CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_in_.get(), in_.data(), in_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  void poison(cudaStream_t stream) override {
    harness::poison(out_.data(), out_.bytes(), stream, kIntegerPoisonByte);
    harness::poison(count_.data(), count_.bytes(), stream, kIntegerPoisonByte);
  }

  // Only the first `count` outputs are copied back and compared: the rest is not the selection's.
  Comparison check(cudaStream_t stream) override {
    std::int64_t count = 0;
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(&count, count_.data(), sizeof count, cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    // A wrong count still gets the outputs the reference expects compared, as far as out reaches.
    const std::int64_t copied = count >= 0 && count <= n_ ? count : n_;
    if (copied > 0)
      CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_out_.get(), out_.data(), static_cast<std::size_t>(copied) * 4,
                                         cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    // Past `copied` the host copy must read as never written, not as a stale earlier result.
    if (copied < n_)
      std::memset(host_out_.get() + copied, kIntegerPoisonByte, static_cast<std::size_t>(n_ - copied) * 4);
    return check_select(host_in_.get(), n_, threshold_, host_out_.get(), count);
  }

  void launch(select_variants::Launcher launcher, cudaStream_t stream) {
    launcher(in_.data(), n_, threshold_, out_.data(), count_.data(), workspace_, stream);
  }

 private:
  std::int64_t n_;
  std::int32_t threshold_;
  DeviceBuffer<std::int32_t> in_, out_;
  DeviceBuffer<std::int64_t> count_;
  // CUB's temporary storage and the look-back's status words, allocated during the untimed check
  // and kept, so a timed launch is the selection alone.
  GrowingWorkspace workspace_;
  // Left uninitialised (no zero-fill of gigabytes): every element read is copied or set first.
  std::unique_ptr<std::int32_t[]> host_in_, host_out_;
};

Variant variant(std::string id, std::string technique, Role role, select_variants::Launcher launcher,
                bool int32_positions = false) {
  Variant v;
  v.id = std::move(id);
  v.technique = std::move(technique);
  v.role = role;
  v.launch = [launcher](Workload& w, cudaStream_t s) { static_cast<SelectWorkload&>(w).launch(launcher, s); };
  if (int32_positions)
    v.unsupported = [](const DeviceInfo&, const Problem& p) {
      return p.n <= INT_MAX ? std::string() : std::string("int32 positions hold n < 2^31");
    };
  return v;
}

// `selectivity`: the expected fraction kept on the uniform inputs the bench times, for the work
// model (the bytes written depend on the data).
Op select_op(std::string name, std::string summary, std::int32_t threshold, double selectivity) {
  namespace v = select_variants;
  Op op;
  op.name = std::move(name);
  op.summary = std::move(summary);
  op.bench_problems = {{1 << 20}, {1 << 28}};
  // Empty; around a warp; a prime that is no multiple of the 4096-element tile or of 4 (partial
  // tile, scalar tail); 2^24 and 2^28 (1 GiB, 65536 tiles of look-back).
  op.test_problems = {{0}, {1}, {31}, {32}, {33}, {1000003}, {1 << 24}, {1 << 28}};
  op.work = [selectivity](const Problem& p) {
    Work w;
    w.bytes_read = 4.0 * static_cast<double>(p.n);
    w.bytes_written = 4.0 * selectivity * static_cast<double>(p.n) + sizeof(std::int64_t);
    w.flops = 0;
    return w;
  };
  // Input and output, three_pass's positions (n int32), the status words (n/512 bytes) and a
  // margin for CUB's temporary storage at the smallest sizes.
  op.device_bytes = [](const Problem& p) {
    return static_cast<std::size_t>(p.n) * 3 * sizeof(std::int32_t) + static_cast<std::size_t>(p.n) / 256 +
           (std::size_t{1} << 20);
  };
  // Host copies of input and output.
  op.host_bytes = [](const Problem& p) {
    return static_cast<std::size_t>(p.n) * 2 * sizeof(std::int32_t) + (std::size_t{1} << 20);
  };
  op.make_workload = [threshold](const Problem& p) { return std::make_unique<SelectWorkload>(p.n, threshold); };
  op.variants = {
      variant("three_pass", "flags pass, the scan ladder's exclusive scan of the flags, scatter pass", Role::ladder,
              v::three_pass, true),
      variant("decoupled_lookback",
              "single pass: int4 loads, per-tile counts by popcount and shuffles, look-back, stores from registers",
              Role::ladder, v::decoupled_lookback),
      variant("decoupled_lookback_staged",
              "single pass, 8192-element tiles, kept elements packed in shared memory, then stored contiguously",
              Role::ladder, v::decoupled_lookback_staged),
      variant("cub", "cub::DeviceSelect::If (CCCL), temporary storage kept across launches", Role::baseline,
              v::cub_device_select),
  };
  return op;
}

}  // namespace

void register_select(Registry& registry) {
  // The uniform inputs are the 33 whole numbers -16..16: x >= 17 keeps none, x >= 0 keeps 17 of 33
  // (51.5%), x >= -16 keeps all.
  registry.add(select_op("select_if_i32_0", "int32 stream compaction, keep x >= 17: none of the inputs", 17, 0.0));
  registry.add(select_op("select_if_i32_50", "int32 stream compaction, keep x >= 0: 17/33 (51.5%) of the inputs", 0,
                         17.0 / 33.0));
  registry.add(select_op("select_if_i32_100", "int32 stream compaction, keep x >= -16: all of the inputs", -16, 1.0));
}

}  // namespace cudalab::harness
