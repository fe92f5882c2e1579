// The transfer experiments' kernels and the chunked stream pipeline, verified on the GPU at small
// sizes in every issue order.
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cudalab/memory.hpp"
#include "gpu_test_support.hpp"
#include "harness/registry.hpp"
#include "ops/transfers/host_memory.hpp"
#include "ops/transfers/kernels.hpp"
#include "ops/transfers/pipeline.hpp"
#include "ops/transfers/reference.hpp"

namespace cudalab::transfers {
namespace {

using test_support::thrown_kind;

TEST(TransfersGpu, CopyWordsMovesMappedHostBytesBothWays) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::size_t bytes = (std::size_t{1} << 20) + 48;
  HostMemory source(HostKind::mapped, bytes), back(HostKind::mapped, bytes);
  fill_pattern(source.data(), bytes, 3);
  std::memset(back.data(), 0xAB, bytes);
  DeviceBuffer<unsigned char> device(static_cast<std::int64_t>(bytes));
  copy_words(device.data(), source.device_view(), bytes, nullptr);
  copy_words(back.device_view(), device.data(), bytes, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(std::memcmp(source.data(), back.data(), bytes), 0);
}

// Runs a multi-GPU experiment at the small scale (CUDALAB_TRANSFERS_SMALL). With one GPU its table
// has no rows and a note that says why, checked here; returns the table and the GPU count.
std::pair<nlohmann::json, int> run_on_every_gpu(const char* name, std::uint64_t seed,
                                                const std::vector<std::int64_t>& sizes = {}) {
  // Sets the small scale for this run only, also when the experiment throws.
  struct SmallScale {
    SmallScale() { setenv("CUDALAB_TRANSFERS_SMALL", "1", 1); }
    ~SmallScale() { unsetenv("CUDALAB_TRANSFERS_SMALL"); }
  };
  int count = 0;
  EXPECT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  const harness::Experiment* e = harness::builtin_registry().find_experiment(name);
  if (e == nullptr) {
    ADD_FAILURE() << "no experiment " << name;
    return {nlohmann::json::object(), count};
  }
  harness::ExperimentContext context;
  context.seed = seed;
  context.sizes = sizes;
  nlohmann::json table;
  {
    const SmallScale small;
    table = harness::run_experiment(*e, context);
  }
  if (count < 2) {
    EXPECT_TRUE(table["rows"].empty());
    EXPECT_NE(table["notes"][0].get<std::string>().find("needs two or more"), std::string::npos);
  }
  for (const auto& row : table["rows"]) EXPECT_EQ(row.size(), table["columns"].size());
  return {table, count};
}

// peer_transfers: every path of every ordered pair checked (a wrong byte throws) and timed. Per
// pair at the small scale's one size: memcpy_peer and its 4-byte latency, both ways, host-staged,
// and the SM paths where peer access allows them.
TEST(TransfersGpu, PeerTransfersRunEveryPairOrSayWhyNot) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const auto [table, count] = run_on_every_gpu("peer_transfers", 5);
  if (count < 2) return;
  EXPECT_GE(table["rows"].size(), static_cast<std::size_t>(count * (count - 1) * 4));
  for (const auto& row : table["rows"]) EXPECT_GT(row[9].get<double>(), 0.0) << row.dump();  // gbps
}

// all_reduce: every rung that can run at every size checked against the exact sum (a wrong
// element throws) and timed; host_staged alone gives 8 KiB .. 512 KiB in both dtypes.
TEST(TransfersGpu, AllReduceRunsEveryRungOrSaysWhyNot) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const auto [table, count] = run_on_every_gpu("all_reduce", 9);
  if (count < 2) return;
  EXPECT_GE(table["rows"].size(), 2u * 4u);
  for (const auto& row : table["rows"]) EXPECT_GT(row[7].get<double>(), 0.0) << row.dump();  // busbw_gbps
}

// The same at element counts of no multiple (--n): one element (every GPU but the first has an
// empty part), a few, and more than a vector per GPU with a ragged last part.
TEST(TransfersGpu, AllReduceIsExactAtOddCounts) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const auto [table, count] = run_on_every_gpu("all_reduce", 10, {1, 17, 1000003});
  if (count < 2) return;
  std::set<std::int64_t> bytes;
  for (const auto& row : table["rows"]) bytes.insert(row[3].get<std::int64_t>());
  EXPECT_EQ(bytes, (std::set<std::int64_t>{2, 4, 34, 68, 2000006, 4000012})) << table["rows"].dump();
}

TEST(TransfersGpu, CopyWordsRejectsUnalignedArguments) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<unsigned char> a(64), b(64);
  EXPECT_EQ(thrown_kind([&] { copy_words(a.data(), b.data(), 15, nullptr); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { copy_words(a.data() + 4, b.data(), 16, nullptr); }), ErrorKind::invalid_argument);
  copy_words(a.data(), b.data(), 0, nullptr);  // empty: nothing to do
}

TEST(TransfersGpu, AffineStepsMatchesClosedFormWithCappedGrid) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  const std::int64_t n = 100003, iterations = 777;
  std::vector<std::uint32_t> host(n);
  for (std::int64_t i = 0; i < n; ++i) host[i] = static_cast<std::uint32_t>(i * 2654435761u);
  DeviceBuffer<std::uint32_t> in(n), out(n);
  ASSERT_EQ(cudaMemcpy(in.data(), host.data(), in.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  const AffineMap expected = affine_power(kPipelineStep, iterations);
  for (int blocks : {0, 1, 7}) {
    ASSERT_EQ(cudaMemset(out.data(), 0xAB, out.bytes()), cudaSuccess);
    affine_steps(out.data(), in.data(), n, kPipelineStep, iterations, nullptr, blocks);
    std::vector<std::uint32_t> result(n);
    ASSERT_EQ(cudaMemcpy(result.data(), out.data(), out.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_EQ(result[i], expected.apply(host[i])) << "blocks " << blocks << " i " << i;
  }
}

TEST(TransfersGpu, PipelineIsRightInEveryOrderStreamCountAndChunking) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  Pipeline pipeline(1000003, 50, 11);
  Stream origin;
  for (IssueOrder order : {IssueOrder::depth_first, IssueOrder::breadth_first, IssueOrder::staged_events})
    for (int streams : {1, 3, 16})
      for (std::int64_t chunks : {1, 7, 64})
        for (bool callback : {false, true}) {
          pipeline.poison_output();
          pipeline.enqueue({streams, chunks, order, callback}, origin.get());
          origin.synchronize();
          EXPECT_EQ(pipeline.first_wrong_output(), -1)
              << to_string(order) << " streams " << streams << " chunks " << chunks << " callback " << callback;
          EXPECT_EQ(pipeline.chunks_delivered(), callback ? chunks : 0);
          EXPECT_EQ(pipeline.callback_failures(), 0);
        }
}

TEST(TransfersGpu, PipelineCapturedAsGraphIsRight) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  Pipeline pipeline(65537, 9, 5);
  Stream origin;
  ASSERT_EQ(cudaStreamBeginCapture(origin.get(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
  pipeline.enqueue({4, 16, IssueOrder::depth_first, false}, origin.get());
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(origin.get(), &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    pipeline.poison_output();
    ASSERT_EQ(cudaGraphLaunch(exec, origin.get()), cudaSuccess);
    origin.synchronize();
    EXPECT_EQ(pipeline.first_wrong_output(), -1) << "replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST(TransfersGpu, TracedPipelineGivesOneOrderedSpanPerStage) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  Pipeline pipeline(4096, 3, 2);
  Stream origin;
  pipeline.poison_output();
  pipeline.enqueue({2, 8, IssueOrder::depth_first, false, true}, origin.get());
  origin.synchronize();
  EXPECT_EQ(pipeline.first_wrong_output(), -1);
  const auto spans = pipeline.stage_spans();
  ASSERT_EQ(spans.size(), 24u);
  for (const StageSpan& span : spans) {
    EXPECT_GE(span.start_ms, 0.0);
    EXPECT_GE(span.end_ms, span.start_ms);
    EXPECT_EQ(span.stream, span.chunk % 2);
  }
}

TEST(TransfersGpu, PipelineRejectsBadStreamCounts) {
  CUDALAB_REQUIRE_GPU_OR_SKIP();
  Pipeline pipeline(1024, 1, 1);
  Stream origin;
  EXPECT_EQ(thrown_kind([&] {
              pipeline.enqueue({0, 4, IssueOrder::depth_first, false}, origin.get());
            }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] {
              pipeline.enqueue({17, 4, IssueOrder::depth_first, false}, origin.get());
            }),
            ErrorKind::invalid_argument);
}

}  // namespace
}  // namespace cudalab::transfers
