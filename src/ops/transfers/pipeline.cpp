#include "ops/transfers/pipeline.hpp"

#include "cudalab/error.hpp"
#include "harness/random.hpp"
#include "ops/transfers/kernels.hpp"

namespace cudalab::transfers {

const char* to_string(IssueOrder order) {
  switch (order) {
    case IssueOrder::depth_first: return "depth-first";
    case IssueOrder::breadth_first: return "breadth-first";
    case IssueOrder::staged_events: return "staged, events";
  }
  return "unknown";
}

Pipeline::Pipeline(std::int64_t n, std::int64_t iterations, std::uint64_t seed)
    : n_(n), iterations_(0), host_in_(n), host_out_(n), device_in_(n), device_out_(n) {
  CUDALAB_REQUIRE(n > 0, "Pipeline: n must be > 0");
  set_iterations(iterations);
  for (std::int64_t i = 0; i < n; ++i) host_in_.data()[i] = static_cast<std::uint32_t>(harness::mix64(seed + i));
  streams_.resize(kMaxStreams);
  fork_join_.resize(kMaxStreams + 1);
}

Pipeline::~Pipeline() = default;

void Pipeline::set_iterations(std::int64_t iterations) {
  iterations_ = iterations;
  composed_ = affine_power(kPipelineStep, iterations);
}

void Pipeline::copy_in(ChunkRange r, cudaStream_t stream) {
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(device_in_.data() + r.begin, host_in_.data() + r.begin,
                                     r.count * sizeof(std::uint32_t), cudaMemcpyHostToDevice, stream));
}

void Pipeline::transform(ChunkRange r, cudaStream_t stream) {
  affine_steps(device_out_.data() + r.begin, device_in_.data() + r.begin, r.count, kPipelineStep, iterations_, stream);
}

void Pipeline::copy_out(ChunkRange r, cudaStream_t stream) {
  CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host_out_.data() + r.begin, device_out_.data() + r.begin,
                                     r.count * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, stream));
}

void Pipeline::enqueue_copy_in(cudaStream_t stream) { copy_in({0, n_}, stream); }
void Pipeline::enqueue_kernel(cudaStream_t stream) { transform({0, n_}, stream); }
void Pipeline::enqueue_copy_out(cudaStream_t stream) { copy_out({0, n_}, stream); }

void Pipeline::enqueue(const PipelineConfig& config, cudaStream_t origin) {
  const int used = config.order == IssueOrder::staged_events ? 3 : config.streams;
  CUDALAB_REQUIRE(used >= 1 && used <= kMaxStreams, "Pipeline: streams must be in 1.." + std::to_string(kMaxStreams));
  const std::vector<ChunkRange> chunks = split_into_chunks(n_, config.chunks);
  if (config.order == IssueOrder::staged_events && copied_in_.size() < chunks.size()) {
    copied_in_.resize(chunks.size());
    transformed_.resize(chunks.size());
  }
  if (config.host_callback) callback_chunks_.assign(chunks.size(), CallbackChunk{this, {}});

  fork(used, origin);
  if (config.trace) {
    traced_.clear();
    traced_.reserve(3 * chunks.size());
  }
  // One stage of chunk c on worker stream s, with its event pair when tracing.
  enum class Stage { copy_in, transform, copy_out };
  const auto run = [&](Stage stage, std::size_t c, int s) {
    cudaStream_t stream = streams_[s].get();
    static const char* const names[] = {"H2D", "kernel", "D2H"};
    if (config.trace) {
      traced_.push_back({names[static_cast<int>(stage)], static_cast<std::int64_t>(c), s, Event(), Event()});
      traced_.back().start.record(stream);
    }
    if (stage == Stage::copy_in) copy_in(chunks[c], stream);
    if (stage == Stage::transform) transform(chunks[c], stream);
    if (stage == Stage::copy_out) copy_out(chunks[c], stream);
    if (config.trace) traced_.back().end.record(stream);
    if (stage == Stage::copy_out && config.host_callback) {
      callback_chunks_[c].range = chunks[c];
      CUDALAB_CUDA_CHECK(cudaLaunchHostFunc(stream, check_chunk_callback, &callback_chunks_[c]));
    }
  };
  const auto stream_of = [&](std::size_t c) { return static_cast<int>(c % used); };

  switch (config.order) {
    case IssueOrder::depth_first:
      for (std::size_t c = 0; c < chunks.size(); ++c) {
        run(Stage::copy_in, c, stream_of(c));
        run(Stage::transform, c, stream_of(c));
        run(Stage::copy_out, c, stream_of(c));
      }
      break;
    case IssueOrder::breadth_first:
      for (std::size_t c = 0; c < chunks.size(); ++c) run(Stage::copy_in, c, stream_of(c));
      for (std::size_t c = 0; c < chunks.size(); ++c) run(Stage::transform, c, stream_of(c));
      for (std::size_t c = 0; c < chunks.size(); ++c) run(Stage::copy_out, c, stream_of(c));
      break;
    case IssueOrder::staged_events:
      // Each copy engine and the SMs get their own in-order queue (streams 0, 1, 2); only true
      // dependencies wait.
      for (std::size_t c = 0; c < chunks.size(); ++c) {
        run(Stage::copy_in, c, 0);
        copied_in_[c].record(streams_[0].get());
        CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(streams_[1].get(), copied_in_[c].get(), 0));
        run(Stage::transform, c, 1);
        transformed_[c].record(streams_[1].get());
        CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(streams_[2].get(), transformed_[c].get(), 0));
        run(Stage::copy_out, c, 2);
      }
      break;
  }

  join(used, origin);
}

// Every worker stream starts after what `origin` holds so far.
void Pipeline::fork(int streams, cudaStream_t origin) {
  fork_join_[kMaxStreams].record(origin);
  for (int s = 0; s < streams; ++s)
    CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(streams_[s].get(), fork_join_[kMaxStreams].get(), 0));
}

// `origin` continues once every worker stream is done.
void Pipeline::join(int streams, cudaStream_t origin) {
  for (int s = 0; s < streams; ++s) {
    fork_join_[s].record(streams_[s].get());
    CUDALAB_CUDA_CHECK(cudaStreamWaitEvent(origin, fork_join_[s].get(), 0));
  }
}

void Pipeline::enqueue_copies_both_ways(cudaStream_t origin) {
  fork(2, origin);
  copy_in({0, n_}, streams_[0].get());
  copy_out({0, n_}, streams_[1].get());
  join(2, origin);
}

std::vector<StageSpan> Pipeline::stage_spans() const {
  std::vector<StageSpan> spans;
  const Event& began = fork_join_[kMaxStreams];
  for (const TracedStage& t : traced_)
    spans.push_back({t.stage, t.chunk, t.stream, t.start.elapsed_ms_since(began), t.end.elapsed_ms_since(began)});
  return spans;
}

void Pipeline::poison_output() {
  for (std::int64_t i = 0; i < n_; ++i) host_out_.data()[i] = ~composed_.apply(host_in_.data()[i]);
  chunks_delivered_ = 0;
  callback_failures_ = 0;
}

bool Pipeline::element_is_right(std::int64_t i) const {
  return host_out_.data()[i] == composed_.apply(host_in_.data()[i]);
}

std::int64_t Pipeline::first_wrong_output() const {
  for (std::int64_t i = 0; i < n_; ++i)
    if (!element_is_right(i)) return i;
  return -1;
}

// Runs on the CUDA runtime's callback thread once the chunk's copy out has finished; it may not
// call CUDA, and the stream waits for it (which is the cost the experiment measures), so it does
// little: the full check runs after the pipeline.
void CUDART_CB Pipeline::check_chunk_callback(void* data) {
  const auto* chunk = static_cast<const CallbackChunk*>(data);
  const Pipeline& p = *chunk->pipeline;
  if (!p.element_is_right(chunk->range.begin) || !p.element_is_right(chunk->range.begin + chunk->range.count - 1))
    ++p.callback_failures_;
  ++p.chunks_delivered_;
}

}  // namespace cudalab::transfers
