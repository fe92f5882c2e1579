// Data layout (claim C07): a particle update on an array of structures against a structure of
// arrays, and a linked list walked against an array read in order.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/format.hpp"
#include "core/launch.cuh"
#include "cudalab/memory.hpp"
#include "harness/claims.hpp"
#include "harness/experiment_support.hpp"
#include "harness/registry.hpp"

namespace cudalab::harness::memory_experiments {
namespace {

constexpr std::int64_t kParticles = std::int64_t{1} << 24;
constexpr int kFields = 6;  // x, y, z, vx, vy, vz
constexpr float kDt = 0.01f;
constexpr int kBlock = 256;

struct Particle {
  float x, y, z, vx, vy, vz;
};
static_assert(sizeof(Particle) == kFields * sizeof(float), "no padding");

// Both layouts live in one buffer of 6 x kParticles floats: field f of particle i sits at
// 6 i + f (AoS) or f kParticles + i (SoA).
std::int64_t aos_index(std::int64_t i, int f) { return kFields * i + f; }
std::int64_t soa_index(std::int64_t i, int f) { return f * kParticles + i; }

// A warp's 32 loads of one AoS field are 24 bytes apart: 768 bytes of sectors for 128 bytes used.
__global__ void aos_update_all_kernel(Particle* particles, std::int64_t n, float dt) {
  const std::int64_t i = global_thread_index();
  if (i >= n) return;
  Particle p = particles[i];
  particles[i].x = fmaf(p.vx, dt, p.x);
  particles[i].y = fmaf(p.vy, dt, p.y);
  particles[i].z = fmaf(p.vz, dt, p.z);
}

__global__ void soa_update_all_kernel(float* fields, std::int64_t n, float dt) {
  const std::int64_t i = global_thread_index();
  if (i >= n) return;
  for (int axis = 0; axis < 3; ++axis)
    fields[axis * n + i] = fmaf(fields[(axis + 3) * n + i], dt, fields[axis * n + i]);
}

__global__ void aos_update_x_kernel(Particle* particles, std::int64_t n, float dt) {
  const std::int64_t i = global_thread_index();
  if (i < n) particles[i].x = fmaf(particles[i].vx, dt, particles[i].x);
}

__global__ void soa_update_x_kernel(float* fields, std::int64_t n, float dt) {
  const std::int64_t i = global_thread_index();
  if (i < n) fields[i] = fmaf(fields[3 * n + i], dt, fields[i]);
}

__global__ void soa_to_aos_kernel(const float* soa, float* aos, std::int64_t n) {
  const std::int64_t i = global_thread_index();
  if (i < n)
    for (int f = 0; f < kFields; ++f) aos[kFields * i + f] = soa[f * n + i];
}

unsigned blocks_for(std::int64_t n) { return static_cast<unsigned>(ceil_div<std::int64_t>(n, kBlock)); }

nlohmann::json run_aos_soa(const ExperimentContext& context) {
  const std::int64_t total = kFields * kParticles;
  Stream stream;
  KernelTimer timer;
  DeviceBuffer<float> soa(total), aos(total);
  std::vector<float> initial(static_cast<std::size_t>(total)), host(static_cast<std::size_t>(total));
  nlohmann::json rows = nlohmann::json::array();
  double soa_ms[2] = {0, 0};
  for (int update = 0; update < 2; ++update) {  // 0: all three positions, 1: x only
    const int fields_read = update == 0 ? 6 : 2, fields_written = update == 0 ? 3 : 1;
    for (bool is_soa : {true, false}) {
      // Fresh particles for each check: SoA from the random stream, AoS the same values regrouped.
      fill_random(soa.data(), total, context.seed + update, Distribution::uniform, stream.get());
      soa_to_aos_kernel<<<blocks_for(kParticles), kBlock, 0, stream.get()>>>(soa.data(), aos.data(), kParticles);
      CUDALAB_CUDA_CHECK(
          cudaMemcpyAsync(initial.data(), soa.data(), soa.bytes(), cudaMemcpyDeviceToHost, stream.get()));
      auto launch = [&](cudaStream_t s) {
        auto* particles = reinterpret_cast<Particle*>(aos.data());
        if (update == 0 && is_soa)
          soa_update_all_kernel<<<blocks_for(kParticles), kBlock, 0, s>>>(soa.data(), kParticles, kDt);
        if (update == 0 && !is_soa)
          aos_update_all_kernel<<<blocks_for(kParticles), kBlock, 0, s>>>(particles, kParticles, kDt);
        if (update == 1 && is_soa)
          soa_update_x_kernel<<<blocks_for(kParticles), kBlock, 0, s>>>(soa.data(), kParticles, kDt);
        if (update == 1 && !is_soa)
          aos_update_x_kernel<<<blocks_for(kParticles), kBlock, 0, s>>>(particles, kParticles, kDt);
      };
      launch(stream.get());
      CUDALAB_CUDA_CHECK(cudaGetLastError());
      const float* result = is_soa ? soa.data() : aos.data();
      CUDALAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), result, soa.bytes(), cudaMemcpyDeviceToHost, stream.get()));
      stream.synchronize();
      // fmaf on the device and std::fma on the host both round once: the results match bit for bit.
      for (std::int64_t i = 0; i < kParticles; ++i)
        for (int f = 0; f < kFields; ++f) {
          const float old = initial[soa_index(i, f)];
          const bool moved = f < fields_written;
          const float expected = moved ? std::fma(initial[soa_index(i, f + 3)], kDt, old) : old;
          const float got = host[is_soa ? soa_index(i, f) : aos_index(i, f)];
          if (got != expected)
            data_check_failed("aos_soa", "particle " + std::to_string(i) + " field " + std::to_string(f));
        }
      const std::string layout = is_soa ? "SoA" : "AoS";
      const std::string what = update == 0 ? "x,y,z += v dt" : "x += vx dt";
      if (context.progress) context.progress("aos_soa " + layout + " " + what);
      const Summary t = timer.time(launch, stream.get(), sweep_timing());
      if (is_soa) soa_ms[update] = t.median;
      const double useful = 4.0 * (fields_read + fields_written) * static_cast<double>(kParticles);
      const double rate = gbps(useful, t.median);
      // Sectors the layout touches per particle: SoA only the fields used; AoS every 32-byte
      // sector of the array as soon as one field per particle is read (24-byte records).
      const double touched = is_soa ? 4.0 * (fields_read + fields_written) : 24.0 * 2;
      rows.push_back({layout, what, t.median * 1e3, rate, 100.0 * rate / context.ceilings.copy_gbps(),
                      t.median / soa_ms[update], touched / (4.0 * (fields_read + fields_written))});
    }
  }
  return {
      {"name", "aos_soa"},
      {"op", "memory"},
      {"summary",
       "particle position update, 2^24 particles of 6 floats, array of structures vs structure of arrays (claim C07)"},
      {"columns",
       {"layout", "update", "median_us", "useful_gbps", "pct_of_copy", "time_vs_soa", "traffic_model_vs_used"}},
      {"rows", rows},
      {"notes",
       {"useful_gbps: the bytes of the fields the update reads and writes, over the median time (L2 flushed)",
        "traffic_model_vs_used: bytes of 32-byte sectors the layout touches (read + written) per byte used",
        "in place; each layout is checked bit for bit against a host update (fmaf) before timing"}}};
}

// ---- linked list vs array ---------------------------------------------------------------------

constexpr std::int64_t kNodes = std::int64_t{1} << 20;

struct Node {
  std::int32_t next;
  float value;
};

// One thread: every load waits for the previous one's address.
__global__ void list_sum_kernel(const Node* nodes, std::int32_t head, std::int64_t count, float* sum) {
  float total = 0;
  for (std::int64_t k = 0; k < count; ++k) {
    total += nodes[head].value;
    head = nodes[head].next;
  }
  *sum = total;
}

// One thread, the same values in list order as a plain array: addresses known in advance.
__global__ void array_sum_kernel(const float* values, std::int64_t count, float* sum) {
  float total = 0;
  for (std::int64_t k = 0; k < count; ++k) total += values[k];
  *sum = total;
}

nlohmann::json run_linked_list(const ExperimentContext& context) {
  // Nodes in a random order through the array, so consecutive nodes are never neighbours.
  std::vector<std::int32_t> order(kNodes);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(context.seed));
  std::vector<Node> nodes(kNodes);
  std::vector<float> in_order(kNodes);
  for (std::int64_t k = 0; k < kNodes; ++k) {
    in_order[k] = random_value(context.seed, k, kNodes, Distribution::uniform);
    nodes[order[k]] = {order[(k + 1) % kNodes], in_order[k]};
  }
  float expected = 0;
  for (float v : in_order) expected += v;  // the order both kernels add in
  Stream stream;
  KernelTimer timer;
  DeviceBuffer<Node> device_nodes(kNodes);
  DeviceBuffer<float> device_values(kNodes), sum(1);
  CUDALAB_CUDA_CHECK(cudaMemcpy(device_nodes.data(), nodes.data(), device_nodes.bytes(), cudaMemcpyHostToDevice));
  CUDALAB_CUDA_CHECK(cudaMemcpy(device_values.data(), in_order.data(), device_values.bytes(), cudaMemcpyHostToDevice));
  // 8 MiB of nodes fit in L2: timed warm, so the walk measures dependent L2 hits, not DRAM.
  TimingOptions options = sweep_timing(false);
  options.stopping.min_samples = 3;
  nlohmann::json rows = nlohmann::json::array();
  double array_ms = 0;
  for (bool list : {false, true}) {
    auto launch = [&](cudaStream_t s) {
      if (list)
        list_sum_kernel<<<1, 1, 0, s>>>(device_nodes.data(), order[0], kNodes, sum.data());
      else
        array_sum_kernel<<<1, 1, 0, s>>>(device_values.data(), kNodes, sum.data());
    };
    poison(sum.data(), sum.bytes(), stream.get());
    launch(stream.get());
    CUDALAB_CUDA_CHECK(cudaGetLastError());
    float got = 0;
    CUDALAB_CUDA_CHECK(cudaMemcpyAsync(&got, sum.data(), sizeof got, cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    if (got != expected)
      data_check_failed("linked_list", "sum " + format_general(got) + ", host " + format_general(expected));
    if (context.progress) context.progress(list ? "linked_list list" : "linked_list array");
    const Summary t = timer.time(launch, stream.get(), options);
    if (!list) array_ms = t.median;
    rows.push_back({list ? "linked list (random order)" : "array (in order)", kNodes, t.median * 1e3,
                    t.median * 1e6 / kNodes, t.median / array_ms});
  }
  return {{"name", "linked_list"},
          {"op", "memory"},
          {"summary", "one thread sums 2^20 floats through a linked list or an array (claim C07)"},
          {"columns", {"structure", "elements", "median_us", "ns_per_element", "time_vs_array"}},
          {"rows", rows},
          {"notes",
           {"one thread in both, so the difference is the access pattern alone: the list's next address is only known "
            "once the previous load returns",
            "8 MiB of nodes: L2-resident, timed warm (min 3 samples); the sums are checked exactly against the host's "
            "sum in the same order"}}};
}

double column_value(const nlohmann::json& table, const std::string& first, const std::string& second, int column) {
  for (const auto& row : table["rows"])
    if (row[0] == first && (second.empty() || row[1] == second)) return row[column].get<double>();
  return -1;
}

// C07, two parts. "6 transactions per field become 1": a 6x ratio, judged on the one-field
// update (x += vx dt), AoS time over SoA time; the sector model predicts 4x for it, since x and
// vx share each 24-byte record. "Linked list 60x slower than array for 1M elements": list time
// over array time, 2^20 elements.
nlohmann::json claim_c07(const nlohmann::json& results) {
  const auto* layouts = experiment(results, "aos_soa");
  const auto* list = experiment(results, "linked_list");
  if (layouts == nullptr || list == nullptr) return nullptr;
  const double x_only = column_value(*layouts, "AoS", "x += vx dt", 5);
  const double all = column_value(*layouts, "AoS", "x,y,z += v dt", 5);
  const double model = column_value(*layouts, "AoS", "x += vx dt", 6);
  const double list_ratio = column_value(*list, "linked list (random order)", "", 4);
  if (x_only <= 0 || all <= 0 || list_ratio <= 0) return nullptr;
  return claim_verdict("C07", "AoS/SoA time 6x on a one-field access; linked list/array time 60x at 1M elements",
                       "AoS/SoA time, 2^24 particles: x-only update " + format_fixed(x_only, 2) + "x (sector model " +
                           format_fixed(model, 1) + "x), all-fields update " + format_fixed(all, 2) +
                           "x; one thread summing 2^20 floats: list/array " + format_fixed(list_ratio, 2) +
                           "x (L2-resident)",
                       {judge_ratio("AoS to SoA: 6 transactions per field become 1 (6x)", 6.0, x_only),
                        judge_ratio("linked list 60x slower than array", 60.0, list_ratio)});
}

}  // namespace

void register_aos_soa(Registry& registry) {
  registry.add(Experiment{"aos_soa", "memory",
                          "particle update, array of structures vs structure of arrays (claim C07)", run_aos_soa,
                          bar_plot("Particle update: AoS vs SoA", nlohmann::json::array({"layout", "update"}),
                                   "useful_gbps", "useful GB/s (the bytes the update needs)")});
  registry.add(Experiment{"linked_list", "memory",
                          "one thread sums 2^20 floats through a linked list vs an array (claim C07)", run_linked_list,
                          bar_plot("One thread summing 2^20 floats", "structure", "ns_per_element", "ns per element")});
  registry.add(ClaimCheck{"C07", "memory", {}, claim_c07});
}

}  // namespace cudalab::harness::memory_experiments
