// Registry entries for the fp32 transpose: the workload (input, poisoned output, exact check),
// the ladder, the cuBLAS baseline, the same-size copy that is its ceiling, and claim C10.
#include <memory>
#include <string>

#include "core/format.hpp"
#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/transpose.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "harness/results.hpp"
#include "harness/timer.hpp"
#include "ops/transpose/variants.hpp"

namespace cudalab::harness {
namespace {

using Launcher = void (*)(const float*, float*, std::int64_t, std::int64_t, cudaStream_t);

class TransposeWorkload final : public Workload {
 public:
  TransposeWorkload(std::int64_t rows, std::int64_t cols)
      : rows_(rows),
        cols_(cols),
        in_(rows * cols),
        out_(rows * cols),
        host_in_(new float[rows * cols]),
        host_out_(new float[rows * cols]) {}

  void generate(std::uint64_t seed, Distribution distribution, cudaStream_t stream) override {
    fill_random(in_.data(), in_.size(), seed, distribution, stream);
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_in_.get(), in_.data(), in_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  void poison(cudaStream_t stream) override { harness::poison(out_.data(), out_.bytes(), stream); }

  // A transpose moves bits: every element must equal its source exactly.
  Comparison check(cudaStream_t stream) override {
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_out_.get(), out_.data(), out_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    const float* in = host_in_.get();
    const std::int64_t rows = rows_, cols = cols_;
    // Output element i is out[c][r] with c = i / rows, r = i % rows: the input's in[r][c].
    return compare_fp32(host_out_.get(), rows * cols, Tolerance::exact(), [in, rows, cols](std::int64_t i) {
      return static_cast<double>(in[(i % rows) * cols + i / rows]);
    });
  }

  void launch(Launcher launcher, cudaStream_t stream) const { launcher(in_.data(), out_.data(), rows_, cols_, stream); }

 private:
  std::int64_t rows_, cols_;
  DeviceBuffer<float> in_, out_;
  std::unique_ptr<float[]> host_in_, host_out_;  // uninitialised: copied over before they are read
};

Variant variant(std::string id, std::string technique, Role role, Launcher launcher) {
  Variant v;
  v.id = std::move(id);
  v.technique = std::move(technique);
  v.role = role;
  v.launch = [launcher](Workload& w, cudaStream_t s) { static_cast<TransposeWorkload&>(w).launch(launcher, s); };
  return v;
}

const std::vector<Problem> kBenchShapes = {Problem::shaped({8192, 8192}), Problem::shaped({8191, 4097})};

// ---- the ceiling: a copy of the same bytes, timed the same way ----------------------------------

__global__ void transpose_ceiling_copy_kernel(const float4* __restrict__ in, float4* __restrict__ out,
                                              std::int64_t count) {
  for (std::int64_t i = global_thread_index(); i < count; i += global_thread_count()) out[i] = in[i];
}

// A transpose reads and writes each element once, as a copy does, so a copy of the same matrix
// is what it can at best reach. The library's transpose is timed beside it in the same process.
nlohmann::json run_copy_ceiling(const ExperimentContext& context) {
  KernelTimer timer;
  TimingOptions options;  // cold, as the op's records are
  Stream stream;
  nlohmann::json rows = nlohmann::json::array();
  for (const Problem& p : kBenchShapes) {
    const std::int64_t rows_count = p.shape[0], cols_count = p.shape[1];
    const std::int64_t n = rows_count * cols_count;
    const std::int64_t padded = ceil_div<std::int64_t>(n, 4) * 4;  // whole float4s
    DeviceBuffer<float> in(padded), out(padded);
    fill_random(in.data(), padded, context.seed, Distribution::uniform, stream.get());
    const std::int64_t count = padded / 4;
    const int blocks = resident_grid_size(transpose_ceiling_copy_kernel, 256, count);
    auto copy = [&](cudaStream_t s) {
      transpose_ceiling_copy_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<const float4*>(in.data()),
                                                           reinterpret_cast<float4*>(out.data()), count);
    };
    auto library = [&](cudaStream_t s) { transpose(in.data(), out.data(), rows_count, cols_count, s); };
    // Both checked before they are timed: the copy bit for bit, the transpose at every element.
    std::vector<float> host_in(static_cast<std::size_t>(n)), host_out(static_cast<std::size_t>(n));
    CUDALAB_CUDA_CHECK(
        cudaMemcpyAsync(host_in.data(), in.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream.get()));
    poison(out.data(), out.bytes(), stream.get());
    copy(stream.get());
    CUDALAB_CUDA_CHECK(
        cudaMemcpyAsync(host_out.data(), out.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    if (host_out != host_in)
      throw Error(ErrorKind::cuda, "transpose_copy_ceiling: the copy's output differs from its input", __FILE__,
                  __LINE__);
    poison(out.data(), out.bytes(), stream.get());
    library(stream.get());
    CUDALAB_CUDA_CHECK(
        cudaMemcpyAsync(host_out.data(), out.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    for (std::int64_t i = 0; i < n; ++i)
      if (host_out[i] != host_in[(i % rows_count) * cols_count + i / rows_count])
        throw Error(ErrorKind::cuda, "transpose_copy_ceiling: cudalab::transpose is wrong at " + std::to_string(i),
                    __FILE__, __LINE__);
    const double bytes = 2.0 * 4.0 * static_cast<double>(n);
    if (context.progress) context.progress("transpose_copy_ceiling " + p.label());
    const Summary copy_time = timer.time(copy, stream.get(), options);
    const Summary transpose_time = timer.time(library, stream.get(), options);
    const double copy_gbps = bytes / (copy_time.median * 1e-3) / 1e9;
    const double transpose_gbps = bytes / (transpose_time.median * 1e-3) / 1e9;
    rows.push_back({p.label(), "copy (float4, grid-stride)", copy_time.median * 1e3, copy_gbps,
                    100.0 * copy_gbps / context.ceilings.copy_gbps(), 100.0});
    rows.push_back({p.label(), "cudalab::transpose", transpose_time.median * 1e3, transpose_gbps,
                    100.0 * transpose_gbps / context.ceilings.copy_gbps(), 100.0 * transpose_gbps / copy_gbps});
  }
  return {
      {"name", "transpose_copy_ceiling"},
      {"op", "transpose_f32"},
      {"summary", "the transpose's ceiling: a copy of the same matrix, timed the same way, beside cudalab::transpose"},
      {"columns", {"shape", "kernel", "median_us", "gbps", "pct_of_probe_copy", "pct_of_same_size_copy"}},
      {"rows", rows},
      {"notes",
       {"gbps: bytes read + bytes written (2 x 4 x rows x cols) over the median time; L2 flushed before each sample",
        "pct_of_probe_copy: against the probe's copy rate (2 x 1 GiB); pct_of_same_size_copy: against the copy row "
        "above",
        "both kernels' outputs are checked before timing: the copy bit for bit, the transpose element by element"}}};
}

// ---- claim C10 --------------------------------------------------------------------------------

// Seed 000: padding the shared tile to [32][33] makes the tiled transpose 6.2x faster (45 to 280 GB/s).
nlohmann::json claim_c10(const nlohmann::json& results) {
  const std::int64_t n = largest_timed_n(results, "transpose_f32");
  const auto* plain = timed_record(results, "transpose_f32", "tiled", n);
  const auto* padded = timed_record(results, "transpose_f32", "padded", n);
  if (plain == nullptr || padded == nullptr) return nullptr;
  const double ratio = median_ms(*plain) / median_ms(*padded);
  const double bytes = 8.0 * static_cast<double>(n);
  auto gbps = [bytes](const nlohmann::json& r) { return bytes / (median_ms(r) * 1e-3) / 1e9; };
  return verdict("C10", "Padding the transpose's shared tile to [32][33] makes it 6.2x faster than the unpadded tile",
                 "seed 000", "6.2x (45 -> 280 GB/s)",
                 "tiled " + format_fixed(gbps(*plain), 0) + " GB/s, padded " + format_fixed(gbps(*padded), 0) +
                     " GB/s at " + (*padded)["problem"].get<Problem>().label(),
                 ratio, speedup_verdict(ratio, 6.2));
}

}  // namespace

void register_transpose(Registry& registry) {
  namespace v = transpose_variants;
  Op op;
  op.name = "transpose_f32";
  op.summary = "out = inᵀ, fp32, row-major rows x cols in, cols x rows out";
  op.shape_names = {"rows", "cols"};
  op.bench_problems = kBenchShapes;
  // A single element, sizes off the 32-wide tile both ways, one exact tile, a non-multiple
  // non-square matrix, and the two bench shapes.
  op.test_problems = {Problem::shaped({1, 1}),       Problem::shaped({31, 33}),     Problem::shaped({32, 32}),
                      Problem::shaped({1000, 1003}), Problem::shaped({8192, 8192}), Problem::shaped({8191, 4097})};
  op.work = [](const Problem& p) {
    Work w;
    w.bytes_read = 4.0 * static_cast<double>(p.n);
    w.bytes_written = 4.0 * static_cast<double>(p.n);
    return w;
  };
  op.device_bytes = [](const Problem& p) { return static_cast<std::size_t>(p.n) * 2 * sizeof(float); };
  op.host_bytes = op.device_bytes;
  op.make_workload = [](const Problem& p) { return std::make_unique<TransposeWorkload>(p.shape[0], p.shape[1]); };
  op.variants = {
      variant("naive_row_read", "one element per thread; reads along rows coalesce, writes stride a whole row",
              Role::ladder, v::naive_row_read),
      variant("naive_column_read", "one element per thread; writes coalesce, reads stride a whole row", Role::ladder,
              v::naive_column_read),
      variant("tiled",
              "32x32 shared tile, 32x32 block: both global sides coalesce; the column read is a 32-way bank conflict",
              Role::ladder, v::tiled),
      variant("padded", "the tile padded to [32][33]: the column read spreads over 32 banks", Role::ladder, v::padded),
      variant("swizzled", "tile[32][32] with column c of row r at c ^ r: conflict-free without padding", Role::ladder,
              v::swizzled),
      variant("padded_4_per_thread", "padded tile, 32x8 block: 4 elements per thread", Role::ladder,
              v::padded_4_per_thread),
      variant("swizzled_4_per_thread", "swizzled tile, 32x8 block: 4 elements per thread", Role::ladder,
              v::swizzled_4_per_thread),
      variant("swizzled_8_per_thread", "swizzled tile, 32x4 block: 8 elements per thread", Role::ladder,
              v::swizzled_8_per_thread),
      variant("padded_64_tile", "64x64 padded tile, 32x8 block: 16 elements per thread, 256-byte row runs",
              Role::ladder, v::padded_64_tile),
      variant("swizzled_64_tile", "64x64 swizzled tile, 32x8 block: 16 elements per thread, 256-byte row runs",
              Role::ladder, v::swizzled_64_tile),
      variant("cublas_geam", "cublasSgeam with op(A) = transpose, beta = 0: the library baseline", Role::baseline,
              v::cublas_geam),
  };
  registry.add(std::move(op));
  registry.add(Experiment{"transpose_copy_ceiling", "transpose_f32",
                          "a copy of the same matrix (the transpose's ceiling) beside cudalab::transpose",
                          run_copy_ceiling,
                          bar_plot("Transpose beside a copy of the same matrix",
                                   nlohmann::json::array({"shape", "kernel"}), "gbps", "GB/s (bytes read + written)")});
  registry.add(ClaimCheck{"C10", "transpose_f32", claim_c10});
}

}  // namespace cudalab::harness
