// `cudalab model`: the harness's model of a problem, for a program that times cudalab's ops itself
// (python -m cudalab.bench). It answers from the registry and the harness's own functions (problem
// keys, work models, compute units, the summary and roofline of timed samples, the stopping rule,
// provenance), so no caller keeps a second copy of them. A command rather than extension functions:
// the registry links every ladder kernel and the vendor libraries, which the PyTorch extension
// leaves out (it links libcudalab alone).
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cudalab/device.hpp"
#include "cudalab/error.hpp"
#include "harness/registry.hpp"
#include "harness/results.hpp"
#include "harness/statistics.hpp"
#include "harness/timer.hpp"
#include "probe/probe.hpp"

namespace cudalab::cli {
namespace {

[[noreturn]] void refuse(const std::string& what) {
  throw Error(ErrorKind::invalid_argument, what, __FILE__, __LINE__);
}

nlohmann::json read_request(const std::string& path) {
  if (path.empty()) return nlohmann::json::object();
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(path);
    if (!in) refuse("cannot read the request " + path);
    text << in.rdbuf();
  }
  const nlohmann::json request = nlohmann::json::parse(text.str(), nullptr, false);
  if (!request.is_object()) refuse("the request " + path + " is not a JSON object");
  return request;
}

harness::Engine parse_engine(const std::string& text) {
  for (const auto engine : {harness::Engine::cuda_cores, harness::Engine::tensor_cores, harness::Engine::by_dtype})
    if (text == harness::to_string(engine)) return engine;
  refuse("an engine is cuda_cores, tensor_cores or by_dtype, got '" + text + "'");
}

// The op's problem at the request's named dimensions, dtype and parameters (the op's defaults for
// the parameters it leaves out).
harness::Problem requested_problem(const harness::Op& op, const nlohmann::json& request) {
  std::string names;
  for (const std::string& name : op.dim_names) names += (names.empty() ? "" : ", ") + name;
  const nlohmann::json dims = request.value("dims", nlohmann::json::object());
  if (!dims.is_object() || dims.size() != op.dim_names.size())
    refuse(op.name + " takes the dimensions {" + names + "}, got " + dims.dump());
  std::vector<std::int64_t> sizes;
  for (const std::string& name : op.dim_names) {
    if (!dims.contains(name)) refuse(op.name + " takes the dimensions {" + names + "}, got " + dims.dump());
    sizes.push_back(dims[name].get<std::int64_t>());
  }
  DType dtype = op.dtypes.front();
  if (request.contains("dtype")) {
    const std::string typed = request["dtype"].get<std::string>();
    if (!parse_dtype(typed, &dtype)) refuse("unknown dtype '" + typed + "'");
  }
  std::vector<harness::Param> params;
  const nlohmann::json given = request.value("params", nlohmann::json::object());
  for (const auto& [name, value] : given.items()) params.push_back({name, value.get<double>()});
  return op.problem(sizes, dtype, params);
}

harness::Ceilings probe_file_ceilings(const std::string& path) {
  const nlohmann::json document = harness::read_json_file(path);
  if (document.value("schema", "") != "cudalab-probe/1" || !document.contains("ceilings"))
    refuse(path + " is not a cudalab probe file (schema cudalab-probe/1)");
  return document["ceilings"].get<harness::Ceilings>();
}

nlohmann::json stopping_rule_json(const harness::StoppingRule& rule) {
  return {{"min_samples", rule.min_samples},
          {"max_samples", rule.max_samples},
          {"target_stdrel", rule.target_stdrel},
          {"budget_seconds", rule.budget_seconds}};
}

}  // namespace

int command_model(const ModelArgs& args, Context& context) {
  const nlohmann::json request = read_request(args.request_path);
  nlohmann::json answer = {{"stopping_rule", stopping_rule_json(harness::StoppingRule{})}};
  std::optional<DeviceInfo> device;
  if (args.gpu || args.ceilings == "cache") {
    require_device();
    device = device_info();
  }
  if (args.gpu) {
    answer["provenance"] = harness::collect_provenance(*device, context.command_line);
    answer["l2_flush_bytes"] = harness::l2_flush_bytes(*device);
  }
  try {
    std::optional<harness::Ceilings> ceilings;
    if (request.contains("ceilings")) {
      ceilings = request["ceilings"].get<harness::Ceilings>();
    } else if (args.ceilings == "cache") {
      ceilings = probe::load_cached(*device);
      if (!ceilings)
        refuse("no ceilings cached for " + device->name + " at " + probe::cache_path(*device) +
               ": run `cudalab probe` on this GPU first (or pass a probe file)");
    } else if (!args.ceilings.empty()) {
      ceilings = probe_file_ceilings(args.ceilings);
    }
    if (ceilings) answer["ceilings"] = *ceilings;
    answer["problems"] = nlohmann::json::array();
    for (const auto& asked : request.value("problems", nlohmann::json::array())) {
      const std::string name = asked.value("op", "");
      const harness::Op* op = harness::builtin_registry().find_op(name);
      if (op == nullptr) refuse("unknown op '" + name + "' (see `cudalab list`)");
      const harness::Problem problem = requested_problem(*op, asked);
      const harness::Work work = op->work(problem);
      const harness::ComputeUnit unit = compute_unit(parse_engine(asked.value("engine", "cuda_cores")), problem.dtype);
      nlohmann::json timings = nlohmann::json::array();
      for (const auto& samples : asked.value("samples_ms", nlohmann::json::array())) {
        if (!ceilings) refuse("timed samples need ceilings: pass --ceilings or give the request's \"ceilings\"");
        // What the runner records of a timed variant: the samples' summary, the roofline at its median.
        const harness::Summary time = harness::summarize(samples.get<std::vector<double>>());
        timings.push_back(
            {{"time_ms", time}, {"roofline", harness::roofline(*ceilings, work, unit, time.median * 1e-3)}});
      }
      answer["problems"].push_back(
          {{"op", op->name}, {"problem", problem}, {"work", work}, {"unit", unit}, {"timings", timings}});
    }
  } catch (const nlohmann::json::exception& e) {
    refuse("the request " + args.request_path + " is not valid: " + e.what());
  }
  context.out << answer.dump(2) << "\n";
  return kExitOk;
}

}  // namespace cudalab::cli
