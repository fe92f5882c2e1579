// The chunked H2D -> kernel -> D2H pipeline the tutorials teach (streams; the best-practices guide's overlap section):
// pinned input and output on the host, the data cut into chunks, each chunk copied in, transformed
// by affine_steps and copied out, with the chunks spread over several streams so that one chunk's
// copy-in, another's kernel and a third's copy-out run at the same time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "cudalab/memory.hpp"
#include "ops/transfers/reference.hpp"

namespace cudalab::transfers {

enum class IssueOrder {
  depth_first,    // per chunk: copy in, kernel, copy out, on stream chunk % streams
  breadth_first,  // every chunk's copy in, then every kernel, then every copy out
  staged_events,  // one stream per stage; events order each chunk's stages across them
};
const char* to_string(IssueOrder order);

struct PipelineConfig {
  int streams = 1;  // 1..kMaxStreams; staged_events always uses 3
  std::int64_t chunks = 1;
  IssueOrder order = IssueOrder::depth_first;
  // Enqueue a cudaLaunchHostFunc after each chunk's copy out that tells the host the chunk has
  // landed (it spot-checks the chunk's first and last element and counts it), the way a program
  // would hand results on as they arrive.
  bool host_callback = false;
  // Record an event pair around every stage of every chunk, for stage_spans() (a timeline).
  bool trace = false;
};

// One stage of one chunk on the timeline, in milliseconds from the pipeline's start.
struct StageSpan {
  const char* stage;  // "H2D", "kernel", "D2H"
  std::int64_t chunk;
  int stream;
  double start_ms, end_ms;
};

class Pipeline {
 public:
  static constexpr int kMaxStreams = 16;

  // n elements of uint32 input (seeded random), each transformed by kPipelineStep `iterations`
  // times. Allocates pinned input/output and device input/output.
  Pipeline(std::int64_t n, std::int64_t iterations, std::uint64_t seed);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  std::int64_t size() const { return n_; }
  std::size_t bytes() const { return static_cast<std::size_t>(n_) * sizeof(std::uint32_t); }
  void set_iterations(std::int64_t iterations);

  // The whole pipeline, stream-ordered after `origin`'s prior work and before its later work (the
  // worker streams fork from and join back into it), so events on `origin` time it and stream
  // capture of `origin` records it as a graph.
  void enqueue(const PipelineConfig& config, cudaStream_t origin);
  // The three stages alone, over the whole buffer, on `stream`: the ideal bound's terms.
  void enqueue_copy_in(cudaStream_t stream);
  void enqueue_kernel(cudaStream_t stream);
  void enqueue_copy_out(cudaStream_t stream);
  // Both copies of the whole buffer at once, on two streams (forked from and joined into
  // `origin`): the link's rate when it carries both directions, as the pipeline makes it do.
  void enqueue_copies_both_ways(cudaStream_t origin);

  // Writes the complement of each right answer into the host output (any uint32 can be a right
  // answer, so no single poison value would do), so an element the pipeline skipped fails.
  void poison_output();
  // Index of the first wrong output element, or -1 when all are right.
  std::int64_t first_wrong_output() const;
  // Chunks the host callbacks saw land, and those whose spot check failed, since the last
  // poison_output().
  std::int64_t chunks_delivered() const { return chunks_delivered_.load(); }
  std::int64_t callback_failures() const { return callback_failures_.load(); }
  // The spans of the last traced enqueue, once it has finished.
  std::vector<StageSpan> stage_spans() const;

 private:
  struct CallbackChunk {
    const Pipeline* pipeline;
    ChunkRange range;
  };
  static void CUDART_CB check_chunk_callback(void* data);
  bool element_is_right(std::int64_t i) const;
  void copy_in(ChunkRange range, cudaStream_t stream);
  void transform(ChunkRange range, cudaStream_t stream);
  void copy_out(ChunkRange range, cudaStream_t stream);
  void fork(int streams, cudaStream_t origin);
  void join(int streams, cudaStream_t origin);
  struct TracedStage {
    const char* stage;
    std::int64_t chunk;
    int stream;
    Event start, end;
  };

  std::int64_t n_;
  std::int64_t iterations_;
  AffineMap composed_;  // kPipelineStep^iterations: the host's check
  PinnedBuffer<std::uint32_t> host_in_, host_out_;
  DeviceBuffer<std::uint32_t> device_in_, device_out_;
  std::vector<Stream> streams_;
  std::vector<Event> fork_join_;                // one per worker stream, plus the fork
  std::vector<Event> copied_in_, transformed_;  // per chunk, for staged_events
  std::vector<CallbackChunk> callback_chunks_;
  std::vector<TracedStage> traced_;
  mutable std::atomic<std::int64_t> chunks_delivered_{0};
  mutable std::atomic<std::int64_t> callback_failures_{0};
};

}  // namespace cudalab::transfers
