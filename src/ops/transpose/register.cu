// The transpose op: out = inᵀ. Its tensors, exact check and work model, the ladder, the cuBLAS
// baseline, and the same-size copy that is its ceiling; the claim its numbers answer (C10) is in
// claims.cpp.
#include <string>
#include <vector>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/transpose.hpp"
#include "harness/registry.hpp"
#include "harness/timer.hpp"
#include "ops/transpose/ids.hpp"
#include "ops/transpose/variants.hpp"

namespace cudalab::harness {
namespace {

namespace ids = transpose_ids;
namespace v = transpose_variants;

// rows x cols: a square power of two, and a shape off every tile both ways.
const std::vector<std::vector<std::int64_t>> kBenchShapes = {{8192, 8192}, {8191, 4097}};

struct TransposeBinding {
  template <typename Args>
  static Args bind(const Problem& problem, Tensors& tensors) {
    using T = typename Args::Element;
    Args args;
    args.in = tensors.data<T>("in");
    args.out = tensors.data<T>("out");
    args.rows = problem.dim("rows");
    args.cols = problem.dim("cols");
    return args;
  }
};

template <typename... Args>
Variant variant(const char* id, const char* technique, Role role, void (*... launchers)(const Args&, cudaStream_t)) {
  return make_variant<TransposeBinding>(id, technique, role, launchers...);
}

// A transpose moves bits: output element i is out[c][r] with c = i / rows, r = i % rows, and must
// equal the input's in[r][c] exactly.
Comparison check_transpose(const CheckContext& c) {
  const Tensor& in = c.tensors["in"];
  const std::int64_t rows = c.problem.dim("rows"), cols = c.problem.dim("cols");
  return compare_tensor(c.tensors["out"], Tolerance::exact(),
                        [&](std::int64_t i) { return in.host_value((i % rows) * cols + i / rows); });
}

// ---- the ceiling: a copy of the same bytes, timed the same way ----------------------------------

__global__ void transpose_ceiling_copy_kernel(const float* __restrict__ in, float* __restrict__ out,
                                              std::int64_t vectors) {
  constexpr int kCount = Vector16<float>::kCount;
  for (std::int64_t i = global_thread_index(); i < vectors; i += global_thread_count())
    store_vector16(out + i * kCount, load_vector16(in + i * kCount));
}

// A transpose reads and writes each element once, as a copy does, so a copy of the same matrix
// is what it can at best reach. The library's transpose is timed beside it in the same process.
nlohmann::json run_copy_ceiling(const ExperimentContext& context) {
  KernelTimer timer;
  TimingOptions options;  // cold, as the op's records are
  Stream stream;
  nlohmann::json rows = nlohmann::json::array();
  for (const std::vector<std::int64_t>& shape : kBenchShapes) {
    const std::int64_t rows_count = shape[0], cols_count = shape[1];
    const std::string label = std::to_string(rows_count) + "x" + std::to_string(cols_count);
    const std::int64_t n = rows_count * cols_count;
    constexpr int kCount = Vector16<float>::kCount;
    const std::int64_t padded = ceil_div<std::int64_t>(n, kCount) * kCount;  // whole vectors
    DeviceBuffer<float> in(padded), out(padded);
    fill_random(in.data(), padded, context.seed, Distribution::uniform, stream.get());
    const std::int64_t vectors = padded / kCount;
    const int blocks = resident_grid_size(transpose_ceiling_copy_kernel, 256, vectors);
    auto copy = [&](cudaStream_t s) {
      transpose_ceiling_copy_kernel<<<blocks, 256, 0, s>>>(in.data(), out.data(), vectors);
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
    const double bytes = 2.0 * sizeof(float) * static_cast<double>(n);
    if (context.progress) context.progress(std::string(ids::kCopyCeiling) + " " + label);
    const Summary copy_time = timer.time(copy, stream.get(), options);
    const Summary transpose_time = timer.time(library, stream.get(), options);
    const double copy_gbps = bytes / (copy_time.median * 1e-3) / 1e9;
    const double transpose_gbps = bytes / (transpose_time.median * 1e-3) / 1e9;
    rows.push_back({label, "copy (float4, grid-stride)", copy_time.median * 1e3, copy_gbps,
                    100.0 * copy_gbps / context.ceilings.copy_gbps(), 100.0});
    rows.push_back({label, "cudalab::transpose", transpose_time.median * 1e3, transpose_gbps,
                    100.0 * transpose_gbps / context.ceilings.copy_gbps(), 100.0 * transpose_gbps / copy_gbps});
  }
  return {
      {"name", ids::kCopyCeiling},
      {"op", ids::kOp},
      {"summary", "the transpose's ceiling: a copy of the same matrix, timed the same way, beside cudalab::transpose"},
      {"columns", {"shape", "kernel", "median_us", "gbps", "pct_of_probe_copy", "pct_of_same_size_copy"}},
      {"rows", rows},
      {"notes",
       {"gbps: bytes read + bytes written (2 x 4 x rows x cols) over the median time; L2 flushed before each sample",
        "pct_of_probe_copy: against the probe's copy rate (2 x 1 GiB); pct_of_same_size_copy: against the copy row "
        "above",
        "both kernels' outputs are checked before timing: the copy bit for bit, the transpose element by element"}}};
}

}  // namespace

void register_transpose_claims(Registry& registry);

void register_transpose(Registry& registry) {
  Op op;
  op.name = ids::kOp;
  op.summary = "out = inᵀ, row-major rows x cols in, cols x rows out";
  op.dim_names = {"rows", "cols"};
  op.dtypes = {DType::f32};
  auto elements = [](const Problem& p) { return p.dim("rows") * p.dim("cols"); };
  op.tensors = {{"in", TensorRole::input, {}, elements}, {"out", TensorRole::output, {}, elements}};
  op.bench_problems = cross(op, kBenchShapes, op.dtypes);
  // A single element, sizes off the 32-wide tile both ways, one exact tile, a non-multiple
  // non-square matrix, and the two bench shapes.
  op.test_problems = cross(op, {{1, 1}, {31, 33}, {32, 32}, {1000, 1003}, {8192, 8192}, {8191, 4097}}, op.dtypes);
  op.work = [](const Problem& p) {
    const double bytes = static_cast<double>(size_of(p.dtype)) * static_cast<double>(p.elements());
    return Work{bytes, bytes, 0};
  };
  op.check = check_transpose;
  op.variants = {
      variant(ids::kNaiveRowRead, "one element per thread; reads along rows coalesce, writes stride a whole row",
              Role::ladder, v::naive_row_read),
      variant(ids::kNaiveColumnRead, "one element per thread; writes coalesce, reads stride a whole row", Role::ladder,
              v::naive_column_read),
      variant(ids::kTiled,
              "32x32 shared tile, 32x32 block: both global sides coalesce; the column read is a 32-way bank conflict",
              Role::ladder, v::tiled),
      variant(ids::kPadded, "the tile padded to [32][33]: the column read spreads over 32 banks", Role::ladder,
              v::padded),
      variant(ids::kSwizzled, "tile[32][32] with column c of row r at c ^ r: conflict-free without padding",
              Role::ladder, v::swizzled),
      variant(ids::kPadded4PerThread, "padded tile, 32x8 block: 4 elements per thread", Role::ladder,
              v::padded_4_per_thread),
      variant(ids::kSwizzled4PerThread, "swizzled tile, 32x8 block: 4 elements per thread", Role::ladder,
              v::swizzled_4_per_thread),
      variant(ids::kSwizzled8PerThread, "swizzled tile, 32x4 block: 8 elements per thread", Role::ladder,
              v::swizzled_8_per_thread),
      variant(ids::kPadded64Tile, "64x64 padded tile, 32x8 block: 16 elements per thread, 256-byte row runs",
              Role::ladder, v::padded_64_tile),
      variant(ids::kSwizzled64Tile, "64x64 swizzled tile, 32x8 block: 16 elements per thread, 256-byte row runs",
              Role::ladder, v::swizzled_64_tile),
      variant(ids::kCublasGeam, "cublasSgeam with op(A) = transpose, beta = 0: the library baseline", Role::baseline,
              v::cublas_geam),
  };
  registry.add(std::move(op));
  registry.add(Experiment{ids::kCopyCeiling, ids::kOp,
                          "a copy of the same matrix (the transpose's ceiling) beside cudalab::transpose",
                          run_copy_ceiling,
                          bar_plot("Transpose beside a copy of the same matrix",
                                   nlohmann::json::array({"shape", "kernel"}), "gbps", "GB/s (bytes read + written)")});
  register_transpose_claims(registry);
}

}  // namespace cudalab::harness
