// Experiments `streams_pipeline`, `streams_chunk_size` and `streams_concurrency` (claim C29): the
// chunked H2D -> kernel -> D2H pipeline over 1..16 streams in depth-first and breadth-first issue
// order, with events between per-stage streams, with a host callback per chunk, and as a CUDA
// graph; the chunk-size sweep; concurrent small kernels and stream priorities.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/registry.hpp"
#include "harness/timer.hpp"
#include "ops/transfers/experiments.hpp"
#include "ops/transfers/kernels.hpp"
#include "ops/transfers/pipeline.hpp"

namespace cudalab::transfers {
namespace {

using harness::Summary;

// The pipeline with its kernel's iteration count chosen so the kernel over the whole buffer takes
// about as long as the copy in: three equal stages, the case where overlap matters most.
struct CalibratedPipeline {
  std::unique_ptr<Pipeline> pipeline;
  std::int64_t iterations = 0;
  double copy_in_ms = 0, kernel_ms = 0, copy_out_ms = 0;
  double both_ways_ms = 0;  // H2D and D2H of the whole buffer at the same time
  double ideal_ms() const { return std::max(copy_in_ms, std::max(kernel_ms, copy_out_ms)); }
  // The bound once the link's two-way rate is counted: the copies cannot finish before both
  // directions together do.
  double duplex_bound_ms() const { return std::max(both_ways_ms, kernel_ms); }
};

CalibratedPipeline calibrate(const ExperimentScale& scale, std::uint64_t seed, harness::KernelTimer& timer,
                             cudaStream_t stream) {
  constexpr std::int64_t kProbeIterations = 256;
  CalibratedPipeline c;
  c.pipeline = std::make_unique<Pipeline>(scale.pipeline_elements, kProbeIterations, seed);
  Pipeline& p = *c.pipeline;
  const auto options = copy_timing(scale, 10);
  c.copy_in_ms = timer.time([&](cudaStream_t s) { p.enqueue_copy_in(s); }, stream, options).median;
  const double probe_ms = timer.time([&](cudaStream_t s) { p.enqueue_kernel(s); }, stream, options).median;
  c.iterations = std::max<std::int64_t>(1, static_cast<std::int64_t>(kProbeIterations * c.copy_in_ms / probe_ms));
  p.set_iterations(c.iterations);
  c.kernel_ms = timer.time([&](cudaStream_t s) { p.enqueue_kernel(s); }, stream, options).median;
  c.copy_out_ms = timer.time([&](cudaStream_t s) { p.enqueue_copy_out(s); }, stream, options).median;
  c.both_ways_ms = timer.time([&](cudaStream_t s) { p.enqueue_copies_both_ways(s); }, stream, options).median;
  return c;
}

void require_right_output(const Pipeline& p, const std::string& what, std::int64_t callbacks_expected) {
  const std::int64_t wrong = p.first_wrong_output();
  if (wrong >= 0)
    throw Error(ErrorKind::cuda,
                "streams pipeline '" + what + "': output element " + std::to_string(wrong) + " is wrong", __FILE__,
                __LINE__);
  if (p.chunks_delivered() != callbacks_expected || p.callback_failures() != 0)
    throw Error(ErrorKind::cuda,
                "streams pipeline '" + what + "': host callbacks saw " + std::to_string(p.chunks_delivered()) +
                    " chunks (expected " + std::to_string(callbacks_expected) + "), " +
                    std::to_string(p.callback_failures()) + " failed their spot check",
                __FILE__, __LINE__);
}

// A CUDA graph captured from the pipeline's enqueue on `stream`.
class PipelineGraph {
 public:
  PipelineGraph(Pipeline& p, const PipelineConfig& config, cudaStream_t stream) {
    CUDALAB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    p.enqueue(config, stream);
    CUDALAB_CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
    CUDALAB_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  PipelineGraph(const PipelineGraph&) = delete;
  PipelineGraph& operator=(const PipelineGraph&) = delete;
  ~PipelineGraph() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) cudaGraphDestroy(graph_);
  }
  void launch(cudaStream_t stream) const { CUDALAB_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

struct PipelineRun {
  std::string label;
  PipelineConfig config;
  bool as_graph = false;
};

// Verifies one run of `run` (into poisoned output), then times it.
Summary verify_and_time(CalibratedPipeline& c, const PipelineRun& run, const ExperimentScale& scale,
                        harness::KernelTimer& timer, cudaStream_t stream) {
  Pipeline& p = *c.pipeline;
  std::unique_ptr<PipelineGraph> graph;
  if (run.as_graph) graph = std::make_unique<PipelineGraph>(p, run.config, stream);
  const auto launch = [&](cudaStream_t s) {
    if (graph)
      graph->launch(s);
    else
      p.enqueue(run.config, s);
  };
  p.poison_output();
  launch(stream);
  CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::int64_t chunks = std::min<std::int64_t>(run.config.chunks, p.size());
  require_right_output(p, run.label, run.config.host_callback ? chunks : 0);
  return timer.time(launch, stream, copy_timing(scale, 10));
}

nlohmann::json stage_notes(const CalibratedPipeline& c) {
  return {
      "data: " + format_bytes(double(c.pipeline->bytes())) +
          " of uint32 in pinned host memory, copied in, transformed by " + std::to_string(c.iterations) +
          " dependent multiply-adds per element (chosen so the kernel takes about as "
          "long as the copy in), copied out to pinned host memory",
      "ideal_ms = max(H2D, kernel, D2H), each stage timed alone over the whole buffer on one stream: H2D " +
          format_fixed(c.copy_in_ms, 3) + " ms, kernel " + format_fixed(c.kernel_ms, 3) + " ms, D2H " +
          format_fixed(c.copy_out_ms, 3) + " ms (sum " + format_fixed(c.copy_in_ms + c.kernel_ms + c.copy_out_ms, 3) +
          " ms: what one stream with no overlap should take)",
      "pct_of_ideal = 100 x ideal_ms / time_ms (100: the slowest stage hides the other two entirely); "
      "measured_over_ideal is its inverse",
      "pct_of_duplex_bound = 100 x max(H2D and D2H at once, kernel) / time_ms: H2D and D2H of the whole buffer "
      "issued together on two streams took " +
          format_fixed(c.both_ways_ms, 3) + " ms, against " + format_fixed(std::max(c.copy_in_ms, c.copy_out_ms), 3) +
          " ms for the slower one alone",
      "every configuration's output was first checked element by element against the host's closed form "
      "(the kernel's affine map composed in O(log iterations)), into output poisoned with each element's complement",
      "time_ms: CUDA events on an origin stream that the worker streams fork from and join back into; median of "
      "samples (at least 10) until a 2% spread or a 0.1 s budget"};
}

nlohmann::json pipeline_row(const PipelineRun& run, const CalibratedPipeline& c, const Summary& t,
                            double sequential_ms) {
  const int streams = run.config.order == IssueOrder::staged_events ? 3 : run.config.streams;
  return {run.label,
          to_string(run.config.order),
          streams,
          run.config.chunks,
          double(c.pipeline->bytes()) / run.config.chunks / (1 << 20),
          t.median,
          c.ideal_ms(),
          t.median / c.ideal_ms(),
          100 * c.ideal_ms() / t.median,
          100 * c.duplex_bound_ms() / t.median,
          sequential_ms > 0 ? sequential_ms / t.median : 1.0,
          t.count};
}

// CUDALAB_TRACE=path: one traced run each of the 4-stream depth-first, breadth-first and staged
// pipelines, as Chrome trace events (one process per run, one thread per stream, microseconds).
void write_timeline(CalibratedPipeline& c, cudaStream_t stream, const std::string& path) {
  nlohmann::json events = nlohmann::json::array();
  int pid = 0;
  for (IssueOrder order : {IssueOrder::depth_first, IssueOrder::breadth_first, IssueOrder::staged_events}) {
    c.pipeline->enqueue({4, 32, order, false, true}, stream);
    CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"args", {{"name", std::string(to_string(order)) + ", 32 chunks"}}}});
    for (const StageSpan& span : c.pipeline->stage_spans())
      events.push_back({{"name", std::string(span.stage) + " " + std::to_string(span.chunk)},
                        {"cat", span.stage},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", span.stream},
                        {"ts", span.start_ms * 1e3},
                        {"dur", (span.end_ms - span.start_ms) * 1e3}});
    ++pid;
  }
  std::ofstream out(path);
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
  if (!out) throw Error(ErrorKind::invalid_argument, "cannot write the timeline to " + path, __FILE__, __LINE__);
}

nlohmann::json run_streams_pipeline(const harness::ExperimentContext& context) {
  const ExperimentScale scale = experiment_scale();
  Stream stream;
  harness::KernelTimer timer;
  CalibratedPipeline c = calibrate(scale, context.seed, timer, stream.get());
  constexpr std::int64_t kChunks = 32;

  std::vector<PipelineRun> runs = {{"sequential (1 stream, no chunks)", {1, 1, IssueOrder::depth_first, false}, false}};
  for (IssueOrder order : {IssueOrder::depth_first, IssueOrder::breadth_first})
    for (int streams : {1, 2, 3, 4, 6, 8, 12, 16})
      runs.push_back(
          {std::to_string(streams) + " streams, " + to_string(order), {streams, kChunks, order, false}, false});
  runs.push_back(
      {"3 streams (one per stage), events between stages", {3, kChunks, IssueOrder::staged_events, false}, false});
  runs.push_back(
      {"4 streams, depth-first, host callback per chunk", {4, kChunks, IssueOrder::depth_first, true}, false});
  runs.push_back({"4 streams, depth-first, as one CUDA graph", {4, kChunks, IssueOrder::depth_first, false}, true});

  nlohmann::json rows = nlohmann::json::array();
  double sequential_ms = 0;
  for (const PipelineRun& run : runs) {
    if (context.progress) context.progress("streams_pipeline " + run.label);
    const Summary t = verify_and_time(c, run, scale, timer, stream.get());
    if (sequential_ms == 0) sequential_ms = t.median;
    rows.push_back(pipeline_row(run, c, t, sequential_ms));
  }
  nlohmann::json notes = stage_notes(c);
  if (const char* path = std::getenv("CUDALAB_TRACE"); path != nullptr && *path != '\0') {
    write_timeline(c, stream.get(), path);
    notes.push_back(std::string("timeline of the 4-stream depth-first, breadth-first and staged runs written to ") +
                    path + " (Chrome trace JSON: open in chrome://tracing or ui.perfetto.dev)");
  }
  notes.push_back(
      "host callback: cudaLaunchHostFunc after each chunk's copy out; it spot-checks the chunk's first "
      "and last element and counts the chunk (all " +
      std::to_string(kChunks) + " counted, none wrong)");
  notes.push_back(
      "CUDA graph: the 4-stream depth-first pipeline captured once (fork and join through events), "
      "instantiated untimed, then replayed with one cudaGraphLaunch per sample");
  return {
      {"name", "streams_pipeline"},
      {"op", "transfers"},
      {"summary",
       "Chunked H2D -> kernel -> D2H pipeline: 1..16 streams, depth- vs breadth-first, events, callback, graph (C29)"},
      {"columns", pipeline_columns()},
      {"rows", rows},
      {"notes", notes}};
}

nlohmann::json run_streams_chunk_size(const harness::ExperimentContext& context) {
  const ExperimentScale scale = experiment_scale();
  Stream stream;
  harness::KernelTimer timer;
  CalibratedPipeline c = calibrate(scale, context.seed, timer, stream.get());
  constexpr int kStreams = 4;
  nlohmann::json rows = nlohmann::json::array();
  double sequential_ms = 0;
  for (IssueOrder order : {IssueOrder::depth_first, IssueOrder::breadth_first})
    for (std::int64_t chunks : {1, 2, 4, 8, 16, 32, 64, 128, 256, 1024}) {
      const PipelineRun run{
          std::to_string(chunks) + " chunks, " + to_string(order), {kStreams, chunks, order, false}, false};
      if (context.progress) context.progress("streams_chunk_size " + run.label);
      const Summary t = verify_and_time(c, run, scale, timer, stream.get());
      if (sequential_ms == 0) sequential_ms = t.median;  // 1 chunk: nothing to overlap
      rows.push_back(pipeline_row(run, c, t, sequential_ms));
    }
  nlohmann::json notes = stage_notes(c);
  notes.push_back("4 streams throughout; speedup_vs_sequential is over the 1-chunk depth-first row (nothing overlaps)");
  return {{"name", "streams_chunk_size"},
          {"op", "transfers"},
          {"summary", "Chunk-size sweep of the 4-stream pipeline, depth- and breadth-first (C29)"},
          {"columns", pipeline_columns()},
          {"rows", rows},
          {"notes", notes}};
}

// ---- concurrency: small kernels side by side, and stream priorities --------------------------

class PriorityStream {
 public:
  explicit PriorityStream(int priority) {
    CUDALAB_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
  }
  PriorityStream(const PriorityStream&) = delete;
  PriorityStream& operator=(const PriorityStream&) = delete;
  ~PriorityStream() { cudaStreamDestroy(stream_); }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Inputs 0..n-1 (distinct), outputs checked against the closed form.
struct AffineData {
  explicit AffineData(std::int64_t n) : n(n), in(n), out(n), host(n) {
    for (std::int64_t i = 0; i < n; ++i) host.data()[i] = static_cast<std::uint32_t>(i);
    CUDALAB_CUDA_CHECK(cudaMemcpy(in.data(), host.data(), in.bytes(), cudaMemcpyHostToDevice));
  }
  void require_right(std::int64_t iterations, const std::string& what) {
    CUDALAB_CUDA_CHECK(cudaMemcpy(host.data(), out.data(), out.bytes(), cudaMemcpyDeviceToHost));
    const AffineMap expected = affine_power(kPipelineStep, iterations);
    for (std::int64_t i = 0; i < n; ++i)
      if (host.data()[i] != expected.apply(static_cast<std::uint32_t>(i)))
        throw Error(ErrorKind::cuda, "streams_concurrency '" + what + "': element " + std::to_string(i) + " is wrong",
                    __FILE__, __LINE__);
  }
  std::int64_t n;
  DeviceBuffer<std::uint32_t> in, out;
  PinnedBuffer<std::uint32_t> host;  // the inputs, then a check's scratch
};

nlohmann::json run_streams_concurrency(const harness::ExperimentContext& context) {
  const ExperimentScale scale = experiment_scale();
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json notes = nlohmann::json::array();
  Stream origin;
  harness::KernelTimer timer;
  harness::TimingOptions options = copy_timing(scale, 5);

  // Concurrent kernels: 16 launches of 4 blocks each use 64 of the SMs; one stream runs them one
  // after another, 16 streams let the hardware queues run them at once.
  constexpr int kKernels = 16, kBlocksEach = 4, kBlockThreads = 256;
  constexpr std::int64_t kSmallN = kBlocksEach * kBlockThreads;
  AffineData small(kSmallN * kKernels);
  std::vector<Stream> streams(kKernels);
  Event fork;
  std::vector<Event> joins(kKernels);
  std::int64_t small_iterations = 20000;
  const auto launch_small = [&](cudaStream_t s, int k) {
    affine_steps(small.out.data() + k * kSmallN, small.in.data() + k * kSmallN, kSmallN, kPipelineStep,
                 small_iterations, s, kBlocksEach);
  };
  {  // scale the iterations so one small kernel takes about 0.5 ms (its latency-bound chain)
    const double ms = timer.time([&](cudaStream_t s) { launch_small(s, 0); }, origin.get(), options).median;
    small_iterations =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(small_iterations * (scale.small ? 0.02 : 0.5) / ms));
  }
  const auto one_stream = [&](cudaStream_t s) {
    for (int k = 0; k < kKernels; ++k) launch_small(s, k);
  };
  const auto many_streams = [&](cudaStream_t s) {
    fork.record(s);
    for (int k = 0; k < kKernels; ++k) {
      CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(streams[k].get(), fork.get(), 0));
      launch_small(streams[k].get(), k);
      joins[k].record(streams[k].get());
      CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(s, joins[k].get(), 0));
    }
  };
  double serial_ms = 0;
  for (const auto& [label, launch] :
       {std::pair<std::string, std::function<void(cudaStream_t)>>{"16 small kernels, one stream", one_stream},
        {"16 small kernels, 16 streams", many_streams}}) {
    if (context.progress) context.progress("streams_concurrency " + label);
    CUDALAB_CUDA_CHECK(cudaMemset(small.out.data(), 0xAB, small.out.bytes()));
    launch(origin.get());
    origin.synchronize();
    small.require_right(small_iterations, label);
    const Summary t = timer.time(launch, origin.get(), options);
    if (serial_ms == 0) serial_ms = t.median;
    rows.push_back({"concurrent kernels", label, t.median, serial_ms / t.median, t.count});
  }
  notes.push_back("concurrent kernels: 16 launches of " + std::to_string(kBlocksEach) + " blocks x " +
                  std::to_string(kBlockThreads) + " threads, " + std::to_string(small_iterations) +
                  " dependent multiply-adds per element; time_ms for all 16; ratio = one-stream time / this time");

  // Priorities: a long background kernel of many short blocks on a low-priority stream; 2 ms after
  // it starts, a one-wave urgent kernel is enqueued. Its latency (enqueue to finish, events on its
  // stream) shows whether its blocks wait for the background's remaining blocks.
  int least = 0, greatest = 0;
  CUDALAB_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  const DeviceInfo info = device_info();
  const std::int64_t background_n = scale.small ? (1 << 16) : (std::int64_t{1} << 25);
  const std::int64_t urgent_n = std::int64_t{info.sm_count} * kBlockThreads * 4;
  AffineData background(background_n), urgent(urgent_n);
  PriorityStream low(least), equal(least), high(greatest);
  std::int64_t background_iterations = 64;
  const std::int64_t urgent_iterations = 256;
  {  // about 20 ms of background work
    const double ms = timer
                          .time(
                              [&](cudaStream_t s) {
                                affine_steps(background.out.data(), background.in.data(), background_n, kPipelineStep,
                                             background_iterations, s);
                              },
                              origin.get(), options)
                          .median;
    background_iterations =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(background_iterations * (scale.small ? 1.0 : 20.0) / ms));
  }
  Event urgent_start, urgent_stop;
  const auto urgent_latency_ms = [&](cudaStream_t urgent_stream, bool with_background) {
    std::vector<double> samples;
    const int count = scale.small ? 1 : 5;
    for (int i = 0; i < count; ++i) {
      CUDALAB_CUDA_CHECK(cudaMemset(urgent.out.data(), 0xAB, urgent.out.bytes()));
      if (with_background) {
        CUDALAB_CUDA_CHECK(cudaMemset(background.out.data(), 0xAB, background.out.bytes()));
        affine_steps(background.out.data(), background.in.data(), background_n, kPipelineStep, background_iterations,
                     low.get());
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      urgent_start.record(urgent_stream);
      affine_steps(urgent.out.data(), urgent.in.data(), urgent_n, kPipelineStep, urgent_iterations, urgent_stream);
      urgent_stop.record(urgent_stream);
      CUDALAB_CUDA_CHECK(cudaDeviceSynchronize());
      samples.push_back(urgent_stop.elapsed_ms_since(urgent_start));
      urgent.require_right(urgent_iterations, "urgent kernel");
      if (with_background) background.require_right(background_iterations, "background kernel");
    }
    return harness::summarize(samples);
  };
  const Summary alone = urgent_latency_ms(equal.get(), false);
  rows.push_back({"priority", "urgent kernel alone", alone.median, 1.0, alone.count});
  const Summary same = urgent_latency_ms(equal.get(), true);
  rows.push_back({"priority", "urgent kernel behind background, equal priority", same.median,
                  alone.median / same.median, same.count});
  const Summary prioritized = urgent_latency_ms(high.get(), true);
  rows.push_back({"priority", "urgent kernel behind background, high priority", prioritized.median,
                  alone.median / prioritized.median, prioritized.count});
  notes.push_back("priority: stream priorities " + std::to_string(least) + " (least) to " + std::to_string(greatest) +
                  " (greatest); background " + std::to_string(background_n) + " elements x " +
                  std::to_string(background_iterations) +
                  " iterations (~20 ms, many short blocks) on a least-priority "
                  "stream; urgent kernel one wave (" +
                  std::to_string(urgent_n) + " elements x " + std::to_string(urgent_iterations) +
                  " iterations) enqueued 2 ms later; time_ms = its enqueue-to-finish "
                  "latency, median of 5; ratio = alone latency / this latency");
  notes.push_back("every kernel's output was checked element by element against the host's closed form");
  return {{"name", "streams_concurrency"},
          {"op", "transfers"},
          {"summary",
           "Concurrent small kernels on 16 streams; an urgent kernel behind background work, equal vs high priority"},
          {"columns", {"case", "config", "time_ms", "ratio", "samples"}},
          {"rows", rows},
          {"notes", notes}};
}

}  // namespace

harness::Experiment streams_pipeline_experiment() {
  return {
      "streams_pipeline", "transfers",
      "Chunked H2D/kernel/D2H pipeline: 1..16 streams, issue order, events, host callback, CUDA graph (C29)",
      run_streams_pipeline,
      nlohmann::json::array({{{"title", "Pipeline speedup over the sequential run by stream count (32 chunks)"},
                              {"x", "streams"},
                              {"y", "speedup_vs_sequential"},
                              {"series", "order"},
                              {"x_log", false},
                              {"y_log", false},
                              {"y_label", "speedup over one stream, no chunks"},
                              {"predicted", harness::predicted_level("tutorials 000, 001: 24 to 10 ms (C29)", 2.4)}}})};
}

harness::Experiment streams_chunk_size_experiment() {
  return {"streams_chunk_size", "transfers", "Chunk-size sweep of the 4-stream pipeline (C29)", run_streams_chunk_size,
          nlohmann::json::array({{{"title", "Pipeline time as % of the ideal overlap bound, by chunk size (4 streams)"},
                                  {"x", "chunk_mib"},
                                  {"y", "pct_of_ideal"},
                                  {"series", "order"},
                                  {"x_log", true},
                                  {"y_log", false},
                                  {"y_label", "% of ideal (100 = perfect overlap)"}}})};
}

harness::Experiment streams_concurrency_experiment() {
  return {"streams_concurrency", "transfers", "Concurrent kernels on 16 streams; stream priorities",
          run_streams_concurrency,
          harness::bar_plot("Concurrent kernels and stream priorities", "config", "time_ms",
                            "ms (16 kernels in all; the urgent kernel's enqueue-to-finish)")};
}

const nlohmann::json& pipeline_columns() {
  static const nlohmann::json columns = {"config",
                                         "order",
                                         "streams",
                                         "chunks",
                                         "chunk_mib",
                                         "time_ms",
                                         "ideal_ms",
                                         "measured_over_ideal",
                                         "pct_of_ideal",
                                         "pct_of_duplex_bound",
                                         "speedup_vs_sequential",
                                         "samples"};
  return columns;
}

}  // namespace cudalab::transfers
