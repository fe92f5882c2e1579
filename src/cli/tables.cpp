#include "cli/tables.hpp"

#include <algorithm>

#include "core/format.hpp"
#include "harness/registry.hpp"

namespace cudalab::cli {

std::string Table::text() const {
  std::vector<std::size_t> width(header.size(), 0);
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      out += cell + std::string(width[c] - cell.size() + (c + 1 < width.size() ? 2 : 0), ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string Table::markdown() const {
  auto line = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (const auto& cell : cells) {
      std::string escaped;
      for (char ch : cell) escaped += ch == '|' ? std::string("\\|") : std::string(1, ch);
      out += " " + escaped + " |";
    }
    return out + "\n";
  };
  std::string out = line(header);
  out += "|";
  for (std::size_t c = 0; c < header.size(); ++c) out += " --- |";
  out += "\n";
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string format_time_ms(double ms) {
  if (ms >= 1.0) return format_fixed(ms, 3) + " ms";
  return format_fixed(ms * 1e3, 2) + " us";
}

Table records_table(const std::vector<harness::Record>& records) {
  Table t;
  t.header = {"variant", "role", "technique", "median",     "min",     "max",
              "samples", "GB/s", "TFLOP/s",   "% roofline", "speedup", "verified"};
  for (const auto& r : records) {
    std::vector<std::string> row = {r.variant, harness::to_string(r.role), r.technique};
    if (r.timed) {
      row.insert(row.end(),
                 {format_time_ms(r.time_ms.median), format_time_ms(r.time_ms.min), format_time_ms(r.time_ms.max),
                  std::to_string(r.time_ms.count), format_fixed(r.roofline_point.gbps, 1),
                  format_fixed(r.roofline_point.tflops, 3), format_fixed(100 * r.roofline_point.fraction, 1) + "%",
                  r.speedup_vs_first > 0 ? format_fixed(r.speedup_vs_first, 2) + "x" : "-"});
    } else {
      row.insert(row.end(), 8, "-");
    }
    switch (r.outcome) {
      case harness::Outcome::passed: row.push_back("yes"); break;
      case harness::Outcome::failed: row.push_back("NO: " + r.comparison.summary()); break;
      case harness::Outcome::skipped: row.push_back("skipped: " + r.skip_reason); break;
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string configuration_id(const harness::Record& record) {
  std::string id = record.op + "_" + to_string(record.problem.dtype);
  const harness::Op* op = harness::builtin_registry().find_op(record.op);
  for (const harness::Param& p : record.problem.params) {
    bool is_default = false;
    if (op != nullptr)
      for (const harness::Param& d : op->params) is_default = is_default || d == p;
    if (!is_default) id += "_" + p.name + harness::format_param(p.value);
  }
  return id;
}

std::vector<std::string> configurations(const std::vector<harness::Record>& records) {
  std::vector<std::string> ids;
  for (const auto& r : records) {
    const std::string id = configuration_id(r);
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

Headline headline_problem(const std::vector<harness::Record>& records, const std::string& configuration) {
  Headline h;
  bool found = false;
  for (const auto& r : records)
    if (h.distribution.empty() && configuration_id(r) == configuration) h.distribution = r.distribution;
  // The largest timed size; the largest size at all when nothing was timed.
  for (const bool timed_only : {true, false}) {
    for (const auto& r : records) {
      if (configuration_id(r) != configuration || r.distribution != h.distribution || (timed_only && !r.timed))
        continue;
      if (!found || r.problem.elements() > h.problem.elements()) h.problem = r.problem;
      found = true;
    }
    if (found) break;
  }
  return h;
}

Table ranking_table(const std::vector<harness::Record>& records) {
  std::vector<const harness::Record*> order;
  const harness::Record* baseline = nullptr;
  for (const auto& r : records) {
    order.push_back(&r);
    if (r.timed && r.role == harness::Role::baseline && baseline == nullptr) baseline = &r;
  }
  std::stable_sort(order.begin(), order.end(), [](const harness::Record* a, const harness::Record* b) {
    if (a->timed != b->timed) return a->timed;
    return a->timed && a->time_ms.median < b->time_ms.median;
  });
  const bool compute_bound = !order.empty() && order.front()->timed && order.front()->roofline_point.bound == "compute";
  Table t;
  t.header = {"rank",
              "variant",
              "role",
              "median",
              compute_bound ? "TFLOP/s" : "GB/s",
              "% roofline",
              baseline ? "vs " + baseline->variant : "vs baseline"};
  int rank = 0;
  for (const auto* r : order) {
    if (!r->timed) {
      const std::string why =
          r->outcome == harness::Outcome::failed ? "failed verification: no time" : "skipped: " + r->skip_reason;
      t.rows.push_back({"-", r->variant, harness::to_string(r->role), why, "-", "-", "-"});
      continue;
    }
    const double rate = compute_bound ? r->roofline_point.tflops : r->roofline_point.gbps;
    t.rows.push_back({std::to_string(++rank), r->variant, harness::to_string(r->role),
                      format_time_ms(r->time_ms.median), format_fixed(rate, compute_bound ? 2 : 0),
                      format_fixed(100 * r->roofline_point.fraction, 1) + "%",
                      baseline ? format_fixed(baseline->time_ms.median / r->time_ms.median, 3) + "x" : "-"});
  }
  return t;
}

Table ceilings_table(const harness::Ceilings& c) {
  auto ratio = [](double measured, double datasheet) {
    return datasheet > 0 ? format_fixed(100 * measured / datasheet, 1) + "%" : std::string("-");
  };
  auto sheet = [](double value, int digits) { return value > 0 ? format_fixed(value, digits) : std::string("n/a"); };
  Table t;
  t.header = {"ceiling", "measured", "datasheet", "measured / datasheet", "how"};
  t.rows = {
      {"device copy (GB/s, read+write)", format_fixed(c.copy_kernel_gbps, 1), sheet(c.datasheet_dram_gbps, 1),
       ratio(c.copy_kernel_gbps, c.datasheet_dram_gbps), "float4 copy kernel, 2 x 1 GiB, L2 flushed"},
      {"cudaMemcpy D2D (GB/s, read+write)", format_fixed(c.memcpy_d2d_gbps, 1), sheet(c.datasheet_dram_gbps, 1),
       ratio(c.memcpy_d2d_gbps, c.datasheet_dram_gbps), "cudaMemcpyAsync device to device, 1 GiB"},
      {"read-only stream (GB/s)", format_fixed(c.read_gbps, 1), sheet(c.datasheet_dram_gbps, 1),
       ratio(c.read_gbps, c.datasheet_dram_gbps), "float4 loads, nothing written"},
      {"FP32 FMA (TFLOP/s)", format_fixed(c.fp32_tflops, 2), sheet(c.datasheet_fp32_tflops, 2),
       ratio(c.fp32_tflops, c.datasheet_fp32_tflops), "8 independent FFMA chains per thread"},
      {"BF16 tensor GEMM (TFLOP/s)", format_fixed(c.bf16_tensor_tflops, 1), sheet(c.datasheet_bf16_tflops, 1),
       ratio(c.bf16_tensor_tflops, c.datasheet_bf16_tflops), "cublasGemmEx 8192^3, fp32 accumulate, random data"},
      // Results files written before the probe measured these hold no value for them.
      {"FP16 tensor GEMM (TFLOP/s)", c.fp16_tensor_tflops > 0 ? format_fixed(c.fp16_tensor_tflops, 1) : "-", "-", "-",
       "cublasGemmEx 8192^3, fp32 accumulate, random data"},
      {"TF32 tensor GEMM (TFLOP/s)", c.tf32_tensor_tflops > 0 ? format_fixed(c.tf32_tensor_tflops, 1) : "-", "-", "-",
       "cublasGemmEx 8192^3 fp32, CUBLAS_COMPUTE_32F_FAST_TF32, random data"},
      {"FP8 tensor GEMM (TFLOP/s)", c.fp8_tensor_tflops > 0 ? format_fixed(c.fp8_tensor_tflops, 1) : "-", "-", "-",
       "cublasLtMatmul 8192^3 e4m3 -> bf16, fp32 accumulate, random data"},
      {"H2D pageable (GB/s)", format_fixed(c.h2d_pageable_gbps, 2), sheet(c.datasheet_pcie_gbps, 2),
       ratio(c.h2d_pageable_gbps, c.datasheet_pcie_gbps), "cudaMemcpyAsync 256 MiB from malloc'd memory"},
      {"H2D pinned (GB/s)", format_fixed(c.h2d_pinned_gbps, 2), sheet(c.datasheet_pcie_gbps, 2),
       ratio(c.h2d_pinned_gbps, c.datasheet_pcie_gbps), "cudaMemcpyAsync 256 MiB from cudaHostAlloc memory"},
      {"D2H pageable (GB/s)", format_fixed(c.d2h_pageable_gbps, 2), sheet(c.datasheet_pcie_gbps, 2),
       ratio(c.d2h_pageable_gbps, c.datasheet_pcie_gbps), "cudaMemcpyAsync 256 MiB to malloc'd memory"},
      {"D2H pinned (GB/s)", format_fixed(c.d2h_pinned_gbps, 2), sheet(c.datasheet_pcie_gbps, 2),
       ratio(c.d2h_pinned_gbps, c.datasheet_pcie_gbps), "cudaMemcpyAsync 256 MiB to cudaHostAlloc memory"},
      {"launch + sync round trip (us)", format_fixed(c.launch_latency_us, 2), "-", "-",
       "empty kernel, then cudaStreamSynchronize"},
      {"back-to-back launch (us each)", format_fixed(c.launch_throughput_us, 2), "-", "-",
       "10000 empty kernels, one synchronize"},
  };
  // A host of one GPU (or a results file from before these were measured) has no peer rows.
  if (c.peer_gpus > 0) {
    const std::string to = "to the best of " + std::to_string(c.peer_gpus) + " peer GPU" + (c.peer_gpus > 1 ? "s" : "");
    t.rows.push_back({"peer copy (GB/s)", format_fixed(c.peer_gbps, 1), "-", "-", "cudaMemcpyPeerAsync 256 MiB " + to});
    t.rows.push_back({"peer copy both ways (GB/s, both directions)", format_fixed(c.peer_bidirectional_gbps, 1), "-",
                      "-", "cudaMemcpyPeerAsync 256 MiB each way at once, " + to});
    t.rows.push_back({"peer copy of 4 bytes (us)", format_fixed(c.peer_latency_us, 2), "-", "-",
                      "CUDA events around one cudaMemcpyPeerAsync, " + to});
  }
  return t;
}

Table experiment_table(const nlohmann::json& e) {
  Table t;
  for (const auto& column : e.value("columns", nlohmann::json::array())) t.header.push_back(column.get<std::string>());
  for (const auto& row : e.value("rows", nlohmann::json::array())) {
    std::vector<std::string> cells;
    for (const auto& value : row) {
      if (value.is_string())
        cells.push_back(value.get<std::string>());
      else if (value.is_number_integer())
        cells.push_back(std::to_string(value.get<std::int64_t>()));
      else if (value.is_number())
        cells.push_back(format_significant(value.get<double>(), 4));
      else
        cells.push_back(value.dump());
    }
    t.rows.push_back(std::move(cells));
  }
  return t;
}

Table claims_table(const nlohmann::json& claims) {
  Table t;
  t.header = {"claim", "source", "what it says", "predicted", "measured here", "ratio", "verdict"};
  for (const auto& c : claims)
    t.rows.push_back({c.value("id", ""), c.value("source", ""), c.value("claim", ""), c.value("predicted", ""),
                      c.value("measured", ""), format_fixed(c.value("ratio", 0.0), 3), c.value("verdict", "")});
  return t;
}

}  // namespace cudalab::cli
