// Experiment `managed_memory` (claim C31): data written by the host and consumed by a kernel,
// delivered by an explicit pinned copy or left in managed memory with no hint, with cudaMemAdvise,
// or with cudaMemPrefetchAsync; and the cost of the GPU's first touch of fresh managed pages.
#include <cstring>
#include <functional>
#include <string>

#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"
#include "harness/registry.hpp"
#include "harness/timer.hpp"
#include "ops/transfers/experiments.hpp"
#include "ops/transfers/host_memory.hpp"
#include "ops/transfers/kernels.hpp"
#include "ops/transfers/reference.hpp"

namespace cudalab::transfers {
namespace {

constexpr unsigned char kPoison = 0xAB;

class ManagedBuffer {
 public:
  explicit ManagedBuffer(std::size_t bytes) {
    CUDALAB_CUDA_CHECK(cudaMallocManaged(&data_, bytes, cudaMemAttachGlobal));
  }
  ManagedBuffer(const ManagedBuffer&) = delete;
  ManagedBuffer& operator=(const ManagedBuffer&) = delete;
  ~ManagedBuffer() { cudaFree(data_); }
  unsigned char* data() const { return static_cast<unsigned char*>(data_); }

 private:
  void* data_ = nullptr;
};

cudaMemLocation gpu_location() {
  int device = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  return {cudaMemLocationTypeDevice, device};
}

cudaMemLocation host_location() { return {cudaMemLocationTypeHost, 0}; }

struct DeviceAttributes {
  int managed = 0, concurrent = 0, pageable_access = 0;
};

DeviceAttributes read_attributes() {
  int device = 0;
  DeviceAttributes a;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&a.managed, cudaDevAttrManagedMemory, device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&a.concurrent, cudaDevAttrConcurrentManagedAccess, device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&a.pageable_access, cudaDevAttrPageableMemoryAccess, device));
  return a;
}

// One way of getting host-written data to a kernel. `prepare` runs untimed before each sample
// (it puts the data back where the host wrote it); `timed` is what the events bracket.
struct Scenario {
  std::string name;
  std::string timed_part;
  bool needs_concurrent_access;  // prefetch and advice need concurrentManagedAccess
  std::function<void(cudaStream_t)> prepare;
  std::function<void(cudaStream_t)> timed;
  std::function<const void*()> output;  // where the kernel's copy of the data lands
};

nlohmann::json run_managed(const harness::ExperimentContext& context) {
  const ExperimentScale scale = experiment_scale();
  const DeviceAttributes attributes = read_attributes();
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json notes = nlohmann::json::array();
  notes.push_back("device attributes: managedMemory = " + std::to_string(attributes.managed) +
                  ", concurrentManagedAccess = " + std::to_string(attributes.concurrent) +
                  ", pageableMemoryAccess = " + std::to_string(attributes.pageable_access));
  if (!attributes.managed) {
    notes.push_back("every row skipped: the device does not support managed memory");
    return {{"name", "managed_memory"}, {"op", "transfers"}, {"summary", "skipped"},
            {"columns", {"scenario"}},  {"rows", rows},      {"notes", notes}};
  }
  Stream stream;
  harness::KernelTimer timer;
  for (std::size_t requested : scale.managed_bytes) {
    // Three buffers of this size live on the device at once (managed input, device input,
    // output): keep them within an eighth of what is free.
    const std::size_t bytes = std::min(requested, free_device_bytes() / 8) / 16 * 16;
    HostMemory expected(HostKind::pageable, bytes), check(HostKind::pinned, bytes), pinned(HostKind::pinned, bytes);
    fill_pattern(expected.data(), bytes, context.seed);
    std::memcpy(pinned.data(), expected.data(), bytes);
    DeviceBuffer<unsigned char> device_in(static_cast<std::int64_t>(bytes)),
        device_out(static_cast<std::int64_t>(bytes));
    ManagedBuffer managed(bytes);
    // A fresh allocation per sample for the first-touch row; the previous one is freed first.
    std::unique_ptr<ManagedBuffer> fresh;
    ManagedBuffer resident(bytes);

    const auto host_writes_managed = [&](cudaStream_t) { std::memcpy(managed.data(), expected.data(), bytes); };
    const auto consume_managed = [&](cudaStream_t s) { copy_words(device_out.data(), managed.data(), bytes, s); };
    const auto advise = [&](cudaMemoryAdvise advice, cudaMemLocation where) {
      CUDALAB_CUDA_CHECK(cudaMemAdvise(managed.data(), bytes, advice, where));
    };
    const auto clear_advice = [&] {
      advise(cudaMemAdviseUnsetReadMostly, gpu_location());
      advise(cudaMemAdviseUnsetPreferredLocation, gpu_location());
      advise(cudaMemAdviseUnsetAccessedBy, gpu_location());
    };
    const auto out = [&] { return static_cast<const void*>(device_out.data()); };
    std::vector<Scenario> scenarios = {
        {"explicit pinned copy", "cudaMemcpyAsync H2D + kernel", false, nullptr,
         [&](cudaStream_t s) {
           CUDALAB_CUDA_CHECK(cudaMemcpyAsync(device_in.data(), pinned.data(), bytes, cudaMemcpyHostToDevice, s));
           copy_words(device_out.data(), device_in.data(), bytes, s);
         },
         out},
        {"device memory, kernel only", "kernel", false, nullptr,
         [&](cudaStream_t s) { copy_words(device_out.data(), device_in.data(), bytes, s); }, out},
        {"managed, no hint", "kernel (GPU page faults migrate the pages)", false, host_writes_managed, consume_managed,
         out},
        {"managed, advise read-mostly", "kernel (faults make read-only copies)", true,
         [&](cudaStream_t s) {
           host_writes_managed(s);
           advise(cudaMemAdviseSetReadMostly, gpu_location());
         },
         consume_managed, out},
        {"managed, advise preferred host + accessed by GPU", "kernel (reads host pages over PCIe, no faults)", true,
         [&](cudaStream_t s) {
           host_writes_managed(s);
           advise(cudaMemAdviseSetPreferredLocation, host_location());
           advise(cudaMemAdviseSetAccessedBy, gpu_location());
         },
         consume_managed, out},
        {"managed, prefetch", "cudaMemPrefetchAsync to GPU + kernel", true, host_writes_managed,
         [&](cudaStream_t s) {
           CUDALAB_CUDA_CHECK(cudaMemPrefetchAsync(managed.data(), bytes, gpu_location(), 0, s));
           consume_managed(s);
         },
         out},
        {"managed, after prefetch", "kernel (pages already on the GPU)", true,
         [&](cudaStream_t s) {
           host_writes_managed(s);
           CUDALAB_CUDA_CHECK(cudaMemPrefetchAsync(managed.data(), bytes, gpu_location(), 0, s));
         },
         consume_managed, out},
        {"managed, GPU first touch (write)", "kernel writing never-touched managed pages", false,
         [&](cudaStream_t) {
           fresh.reset();
           fresh = std::make_unique<ManagedBuffer>(bytes);
         },
         [&](cudaStream_t s) { copy_words(fresh->data(), device_in.data(), bytes, s); },
         [&] { return static_cast<const void*>(fresh->data()); }},
        {"managed, GPU write to resident pages", "kernel writing managed pages already on the GPU", false, nullptr,
         [&](cudaStream_t s) { copy_words(resident.data(), device_in.data(), bytes, s); },
         [&] { return static_cast<const void*>(resident.data()); }},
    };
    CUDALAB_CUDA_CHECK(cudaMemcpy(device_in.data(), expected.data(), bytes, cudaMemcpyHostToDevice));
    double explicit_ms = 0;
    for (const Scenario& scenario : scenarios) {
      if (scenario.needs_concurrent_access && !attributes.concurrent) {
        if (requested == scale.managed_bytes.front())
          notes.push_back("'" + scenario.name +
                          "' skipped: cudaMemAdvise and cudaMemPrefetchAsync to the GPU need "
                          "concurrentManagedAccess, which this device reports as 0");
        continue;
      }
      if (context.progress) context.progress("managed_memory " + format_bytes(double(bytes)) + " " + scenario.name);
      if (attributes.concurrent) clear_advice();  // advice is only ever set where the device takes it
      // Verify first: one untimed run into poisoned output, every byte compared.
      if (scenario.prepare) scenario.prepare(stream.get());
      CUDALAB_CUDA_CHECK(cudaMemsetAsync(device_out.data(), kPoison, bytes, stream.get()));
      scenario.timed(stream.get());
      CUDALAB_CUDA_CHECK(cudaMemcpyAsync(check.data(), scenario.output(), bytes, cudaMemcpyDefault, stream.get()));
      stream.synchronize();
      if (std::memcmp(check.data(), expected.data(), bytes) != 0)
        throw Error(ErrorKind::cuda, "managed_memory: '" + scenario.name + "' delivered wrong bytes", __FILE__,
                    __LINE__);
      harness::TimingOptions options = copy_timing(scale, 5);
      options.stopping.max_samples = scale.small ? 1 : 5;
      options.warmup_launches = 0;  // the check above was the warm-up
      const harness::Summary t = timer.time(scenario.timed, stream.get(), options,
                                            scenario.prepare ? scenario.prepare : std::function<void(cudaStream_t)>{});
      if (scenario.name == "explicit pinned copy") explicit_ms = t.median;
      rows.push_back({bytes >> 20, scenario.name, scenario.timed_part, t.median, t.min, bytes / (t.median * 1e-3) / 1e9,
                      explicit_ms / t.median, t.count});
    }
    if (attributes.concurrent) clear_advice();
  }
  notes.push_back(
      "median_ms: CUDA events around the timed part, 5 samples; the host rewrites the managed buffer "
      "(moving its pages back to the CPU) and advice is reset before every sample");
  notes.push_back(
      "explicit_over_this: the explicit pinned copy's time over this row's (above 1: faster than the explicit path)");
  notes.push_back("every row's output was first checked byte for byte against what the host wrote");
  notes.push_back("sizes are capped at an eighth of cudaMemGetInfo's free memory before any managed allocation");
  return {{"name", "managed_memory"},
          {"op", "transfers"},
          {"summary",
           "Host-written data consumed by a kernel: explicit copy vs managed memory with no hint, advice, prefetch; "
           "first touch (C31)"},
          {"columns", {"mib", "scenario", "timed", "median_ms", "min_ms", "gbps", "explicit_over_this", "samples"}},
          {"rows", rows},
          {"notes", notes}};
}

}  // namespace

harness::Experiment managed_memory_experiment() {
  return {"managed_memory", "transfers",
          "Managed memory: no hint, cudaMemAdvise, cudaMemPrefetchAsync, first touch, vs an explicit copy (C31)",
          run_managed,
          nlohmann::json::array({{{"title", "Host-written data delivered to a kernel: effective GB/s by size and path"},
                                  {"x", "mib"},
                                  {"y", "gbps"},
                                  {"series", "scenario"},
                                  {"x_log", true},
                                  {"y_log", true},
                                  {"y_label", "GB/s (bytes / timed part)"}}})};
}

}  // namespace cudalab::transfers
