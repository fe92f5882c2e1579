// The results file: provenance, the measured ceilings, one record per (variant, size), the
// experiments' tables and the claims' verdicts, as JSON. Every table in docs/ is
// generated from such a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cudalab/device.hpp"
#include "harness/roofline.hpp"
#include "harness/runner.hpp"

namespace cudalab::harness {

// Version 2 keys records by problem (dims, dtype, parameters) instead of element count.
inline constexpr const char* kResultsSchema = "cudalab-results/2";

// A run continued by `bench --resume`: on which card (this one, or another of the same model),
// when, and from which record and experiment on.
struct Resumption {
  std::string gpu_uuid;
  std::string hostname;
  std::string date_utc;
  std::int64_t first_record = 0;
  std::int64_t first_experiment = 0;
};

struct Provenance {
  std::string cudalab_version;
  std::string commit;
  bool dirty = false;
  std::string gpu_name;
  std::string gpu_uuid;
  int compute_capability = 0;
  int sm_count = 0;
  double memory_gib = 0;
  std::string driver_version;   // NVML's, e.g. "580.159.04"; "" when NVML is absent
  int driver_cuda_version = 0;  // the CUDA version the driver supports, e.g. 13000
  int runtime_cuda_version = 0;
  int max_sm_clock_mhz = 0;
  unsigned sm_clock_mhz_start = 0;
  unsigned memory_clock_mhz_start = 0;
  unsigned sm_clock_mhz_end = 0;
  unsigned memory_clock_mhz_end = 0;
  std::string date_utc;  // ISO 8601
  std::string command_line;
  std::string hostname;
  std::string torch_version;        // set by the PyTorch package's benchmark (python -m cudalab.bench)
  std::vector<Resumption> resumed;  // in order; the fields above are the run's start
};

// Why a results file written under `then` may not be continued under `now`, or "" where it may:
// the same build (commit, uncommitted changes) on the same model of GPU (name, compute
// capability, SMs, memory). Another card of that model is allowed, and recorded as a Resumption.
std::string resume_refusal(const Provenance& then, const Provenance& now);

// "cudalab 0.1.0, commit <sha>[ with uncommitted changes]": what `cudalab --version` prints and
// logs start with.
std::string version_line();

// Fills everything but the end clocks; record_end_clocks() takes those after the run.
Provenance collect_provenance(const DeviceInfo& device, const std::string& command_line);
void record_end_clocks(Provenance& provenance, const DeviceInfo& device);

// "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3": the results/ folder of a GPU.
std::string gpu_slug(const std::string& gpu_name);

NLOHMANN_JSON_SERIALIZE_ENUM(Role, {{Role::ladder, "ladder"}, {Role::baseline, "baseline"}, {Role::broken, "broken"}})
NLOHMANN_JSON_SERIALIZE_ENUM(Outcome,
                             {{Outcome::passed, "passed"}, {Outcome::failed, "failed"}, {Outcome::skipped, "skipped"}})
NLOHMANN_JSON_SERIALIZE_ENUM(ComputeUnit, {{ComputeUnit::fp32_cuda_cores, "fp32_cuda_cores"},
                                           {ComputeUnit::fp64_cuda_cores, "fp64_cuda_cores"},
                                           {ComputeUnit::integer, "integer"},
                                           {ComputeUnit::tf32_tensor_cores, "tf32_tensor_cores"},
                                           {ComputeUnit::bf16_tensor_cores, "bf16_tensor_cores"},
                                           {ComputeUnit::fp16_tensor_cores, "fp16_tensor_cores"},
                                           {ComputeUnit::fp8_tensor_cores, "fp8_tensor_cores"}})

// Readers take defaults for missing keys, so files written before a field existed still load.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Dim, name, size)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Param, name, value)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Work, bytes_read, bytes_written, flops)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Tolerance, rtol, atol)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Summary, count, median, min, max, mean, stdrel)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RooflinePoint, gbps, tflops, memory_ceiling_gbps,
                                                compute_ceiling_tflops, floor_seconds, bound, fraction)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Ceilings, copy_kernel_gbps, memcpy_d2d_gbps, read_gbps, fp32_tflops,
                                                bf16_tensor_tflops, fp16_tensor_tflops, tf32_tensor_tflops,
                                                fp8_tensor_tflops, h2d_pageable_gbps, h2d_pinned_gbps,
                                                d2h_pageable_gbps, d2h_pinned_gbps, launch_latency_us,
                                                launch_throughput_us, peer_gpus, peer_gbps, peer_bidirectional_gbps,
                                                peer_latency_us, datasheet_dram_gbps, datasheet_fp32_tflops,
                                                datasheet_bf16_tflops, datasheet_pcie_gbps)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Resumption, gpu_uuid, hostname, date_utc, first_record,
                                                first_experiment)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Provenance, cudalab_version, commit, dirty, gpu_name, gpu_uuid,
                                                compute_capability, sm_count, memory_gib, driver_version,
                                                driver_cuda_version, runtime_cuda_version, max_sm_clock_mhz,
                                                sm_clock_mhz_start, memory_clock_mhz_start, sm_clock_mhz_end,
                                                memory_clock_mhz_end, date_utc, command_line, hostname, torch_version,
                                                resumed)

// {"dtype": "f32", "dims": [{"name": "n", "size": 1024}], "params": [...], "key": "..."}: the key
// is written for readers and lookups; reading rebuilds the problem from its parts.
void to_json(nlohmann::json& j, const Problem& p);
void from_json(const nlohmann::json& j, Problem& p);

// A failed check's values may be NaN or infinite, which JSON has no number for: they are written as
// the strings "nan", "inf" and "-inf" (and null, what files written before this read back as NaN).
void to_json(nlohmann::json& j, const Comparison& c);
void from_json(const nlohmann::json& j, Comparison& c);

void to_json(nlohmann::json& j, const Record& r);
void from_json(const nlohmann::json& j, Record& r);

nlohmann::json make_results(const Provenance& provenance, const Ceilings& ceilings, const std::vector<Record>& records,
                            const nlohmann::json& experiments);

// Writes `document` (pretty, 2-space) creating parent folders, through a file beside it renamed
// over it at the end (a stopped write never leaves half a file); throws cudalab::Error on failure.
void write_json_file(const std::string& path, const nlohmann::json& document);
// Reads a JSON file; throws cudalab::Error naming the path when it is missing or malformed.
nlohmann::json read_json_file(const std::string& path);

// Re-evaluates every registered claim against `results` and stores them under "claims".
void evaluate_claims(nlohmann::json& results);

}  // namespace cudalab::harness
