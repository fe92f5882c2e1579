#include "cli/commands.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/tables.hpp"
#include "core/format.hpp"
#include "cudalab/error.hpp"
#include "harness/claim_catalog.hpp"
#include "harness/registry.hpp"
#include "harness/results.hpp"
#include "harness/runner.hpp"
#include "probe/probe.hpp"

namespace cudalab::cli {
namespace {

using harness::Record;

// Sizes past this are refused before any device is asked: 2^48 elements of anything is beyond
// every GPU, and byte counts of larger sizes could overflow.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 48;
// A shape's product may go further (a 100000^3 GEMM names 10^15 multiply-adds but 3 x 10^10
// elements), so such a request reaches the memory check and is refused with the bytes it needs;
// below 2^56 every tensor's byte count fits in 64 bits.
constexpr std::int64_t kMaxShapeProduct = std::int64_t{1} << 56;

// "[step/total m:ss] what": the time since the first step, so a long run shows its pace.
harness::Progress progress_printer(Context& context, int total) {
  auto step = std::make_shared<int>(0);
  auto start = std::make_shared<std::chrono::steady_clock::time_point>();
  return [&context, total, step, start](const std::string& what) {
    if (++*step == 1) *start = std::chrono::steady_clock::now();
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - *start).count();
    char elapsed[32];
    std::snprintf(elapsed, sizeof elapsed, " %lld:%02lld", static_cast<long long>(seconds / 60),
                  static_cast<long long>(seconds % 60));
    context.err << "[" << (total > 0 ? std::to_string(*step) + "/" + std::to_string(total) : std::to_string(*step))
                << elapsed << "] " << what << std::endl;
  };
}

std::uint64_t choose_seed(const std::string& typed, Context& context) {
  std::uint64_t seed = 0;
  if (typed.empty()) {
    std::random_device entropy;
    seed = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
  } else {
    seed = parse_seed(typed);
  }
  std::ostringstream hex;
  hex << "0x" << std::hex << seed;
  context.err << "seed " << hex.str() << " (repeat with --seed " << hex.str() << ")" << std::endl;
  return seed;
}

// The device, checked for presence and for code this build can run on it.
DeviceInfo usable_device() {
  require_device();
  require_kernel_image();
  return device_info();
}

std::string device_line(const DeviceInfo& d, const harness::Ceilings& c) {
  return d.name + " (sm_" + std::to_string(d.compute_capability()) + ", " + std::to_string(d.sm_count) +
         " SMs); roofline: copy " + format_fixed(c.copy_gbps(), 0) + " GB/s, read " + format_fixed(c.read_gbps, 0) +
         " GB/s, FP32 " + format_fixed(c.fp32_tflops, 1) + " TFLOP/s";
}

void print_records(const std::vector<Record>& records, Context& context) {
  if (records.empty()) return;
  context.out << "\n"
              << records.front().op << "  " << records.front().problem.label() << "  " << records.front().distribution
              << " inputs\n"
              << records_table(records).text();
}

void print_experiment(const nlohmann::json& experiment, Context& context) {
  context.out << "\n"
              << experiment.value("name", "") << ": " << experiment.value("summary", "") << "\n"
              << experiment_table(experiment).text();
  for (const auto& note : experiment.value("notes", nlohmann::json::array()))
    context.out << "  note: " << note.get<std::string>() << "\n";
}

bool any_unexpected_failure(const std::vector<Record>& records) {
  for (const Record& r : records)
    if (r.outcome == harness::Outcome::failed && r.role != harness::Role::broken) return true;
  return false;
}

harness::ExperimentContext experiment_context(const DeviceInfo& device, const harness::Ceilings& ceilings,
                                              std::uint64_t seed, harness::Progress progress) {
  harness::ExperimentContext context;
  context.device = device;
  context.ceilings = ceilings;
  context.seed = seed;
  context.progress = std::move(progress);
  return context;
}

// The command of `p` as a reader would type it in a checkout: the program by its name, and a
// results file (--out, --json) where the repository keeps it, results/<gpu>/<file>. The measuring
// machine's own paths (its build and scratch folders) tell a reader nothing.
std::string reader_command(const harness::Provenance& p) {
  std::istringstream words(p.command_line);
  std::string command, word;
  bool results_file = false;
  while (words >> word) {
    if (command.empty()) {
      word = std::filesystem::path(word).filename().string();
    } else if (results_file) {
      word = "results/" + harness::gpu_slug(p.gpu_name) + "/" + std::filesystem::path(word).filename().string();
    }
    results_file = word == "--out" || word == "--json";
    command += (command.empty() ? "" : " ") + word;
  }
  return command;
}

// " Resumed on <date> from record N (on another card of this model, <uuid>); ...", or "".
std::string resumptions_text(const harness::Provenance& p) {
  std::string text;
  for (const harness::Resumption& r : p.resumed) {
    text += (text.empty() ? " Resumed on " : "; on ") + r.date_utc + " from record " + std::to_string(r.first_record);
    if (r.gpu_uuid != p.gpu_uuid) text += " (on another card of this model, " + r.gpu_uuid + ")";
  }
  return text.empty() ? text : text + ".";
}

std::string provenance_line(const harness::Provenance& p) {
  return "Measured on " + p.gpu_name + " (" + std::to_string(p.sm_count) + " SMs, sm_" +
         std::to_string(p.compute_capability) + ", driver " + (p.driver_version.empty() ? "?" : p.driver_version) +
         ", CUDA runtime " + std::to_string(p.runtime_cuda_version / 1000) + "." +
         std::to_string(p.runtime_cuda_version % 1000 / 10) +
         (p.torch_version.empty() ? "" : ", PyTorch " + p.torch_version) + ") at cudalab commit `" +
         p.commit.substr(0, 12) + "`" + (p.dirty ? " (with uncommitted changes)" : "") + " on " + p.date_utc +
         ", command `" + reader_command(p) + "`; SM clock " + std::to_string(p.sm_clock_mhz_start) + " MHz at start, " +
         std::to_string(p.sm_clock_mhz_end) + " MHz at end." + resumptions_text(p);
}

// The best verified non-broken variant of each configuration at its largest size, beside its
// baseline.
Table summary_table(const std::vector<Record>& records, const harness::Ceilings& ceilings) {
  Table t;
  t.header = {"op",
              "size",
              "best variant",
              "median",
              "GB/s",
              "% of roofline",
              "% of copy rate",
              "baseline",
              "baseline median",
              "best vs baseline"};
  for (const std::string& configuration : configurations(records)) {
    const auto [largest, primary] = headline_problem(records, configuration);
    const Record* best = nullptr;
    const Record* baseline = nullptr;
    for (const Record& r : records) {
      if (configuration_id(r) != configuration || !r.timed || r.problem != largest || r.distribution != primary)
        continue;
      if (r.role == harness::Role::baseline && baseline == nullptr) baseline = &r;
      if (r.role == harness::Role::ladder && (best == nullptr || r.time_ms.median < best->time_ms.median)) best = &r;
    }
    if (best == nullptr) continue;
    t.rows.push_back(
        {configuration, largest.size_label(), best->variant, format_time_ms(best->time_ms.median),
         format_fixed(best->roofline_point.gbps, 0), format_fixed(100 * best->roofline_point.fraction, 1) + "%",
         ceilings.copy_gbps() > 0 ? format_fixed(100 * best->roofline_point.gbps / ceilings.copy_gbps(), 1) + "%" : "-",
         baseline ? baseline->variant : "-", baseline ? format_time_ms(baseline->time_ms.median) : "-",
         baseline ? format_fixed(baseline->time_ms.median / best->time_ms.median, 3) + "x" : "-"});
  }
  return t;
}

// The best verified ladder variant of each configuration at its largest size against every
// baseline measured beside it (the PyTorch benchmark has two: eager and torch.compile).
Table baselines_table(const std::vector<Record>& records) {
  Table t;
  t.header = {"configuration", "size", "best variant", "median", "% of roofline", "baselines (best's speedup)"};
  for (const std::string& configuration : configurations(records)) {
    const auto [largest, primary] = headline_problem(records, configuration);
    const Record* best = nullptr;
    std::vector<const Record*> baselines;
    for (const Record& r : records) {
      if (configuration_id(r) != configuration || !r.timed || r.problem != largest || r.distribution != primary)
        continue;
      if (r.role == harness::Role::baseline) baselines.push_back(&r);
      if (r.role == harness::Role::ladder && (best == nullptr || r.time_ms.median < best->time_ms.median)) best = &r;
    }
    if (best == nullptr || baselines.empty()) continue;
    std::string against;
    for (const Record* b : baselines)
      against += (against.empty() ? "" : ", ") + b->variant + " " + format_time_ms(b->time_ms.median) + " (" +
                 format_fixed(b->time_ms.median / best->time_ms.median, 2) + "x)";
    t.rows.push_back({configuration, largest.size_label(), best->variant, format_time_ms(best->time_ms.median),
                      format_fixed(100 * best->roofline_point.fraction, 1) + "%", against});
  }
  return t;
}

}  // namespace

std::int64_t parse_element_count(const std::string& text) {
  const std::string what = "a size must be a whole number of elements from 1 to 2^48 (or 2^k), got '" + text + "'";
  if (text.empty()) throw Error(ErrorKind::invalid_argument, what, __FILE__, __LINE__);
  if (text.rfind("2^", 0) == 0) {
    const std::string exponent = text.substr(2);
    if (exponent.empty() || exponent.size() > 2 || exponent.find_first_not_of("0123456789") != std::string::npos)
      throw Error(ErrorKind::invalid_argument, what, __FILE__, __LINE__);
    const int k = std::stoi(exponent);
    if (k > 48) throw Error(ErrorKind::invalid_argument, what + ": too large", __FILE__, __LINE__);
    return std::int64_t{1} << k;
  }
  if (text.find_first_not_of("0123456789") != std::string::npos)
    throw Error(ErrorKind::invalid_argument, what, __FILE__, __LINE__);
  if (text.size() > 15) throw Error(ErrorKind::invalid_argument, what + ": too large", __FILE__, __LINE__);
  const std::int64_t n = std::stoll(text);
  if (n < 1) throw Error(ErrorKind::invalid_argument, what + ": there is nothing to compute", __FILE__, __LINE__);
  if (n > kMaxElements) throw Error(ErrorKind::invalid_argument, what + ": too large", __FILE__, __LINE__);
  return n;
}

std::vector<std::int64_t> parse_shape(const std::string& text, std::size_t rank) {
  std::vector<std::int64_t> dimensions;
  std::size_t start = 0;
  while (true) {
    const std::size_t x = text.find('x', start);
    dimensions.push_back(
        parse_element_count(text.substr(start, x == std::string::npos ? std::string::npos : x - start)));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  if (dimensions.size() != rank)
    throw Error(ErrorKind::invalid_argument,
                "a shape here has " + std::to_string(rank) + " dimensions joined by 'x', got '" + text + "'", __FILE__,
                __LINE__);
  double product = 1;
  for (std::int64_t d : dimensions) product *= double(d);
  if (product > double(kMaxShapeProduct))
    throw Error(ErrorKind::invalid_argument, "the shape '" + text + "' is too large", __FILE__, __LINE__);
  return dimensions;
}

std::uint64_t parse_seed(const std::string& text) {
  const bool hex = text.rfind("0x", 0) == 0 || text.rfind("0X", 0) == 0;
  const std::string digits = hex ? text.substr(2) : text;
  const char* allowed = hex ? "0123456789abcdefABCDEF" : "0123456789";
  if (digits.empty() || digits.size() > (hex ? 16u : 19u) || digits.find_first_not_of(allowed) != std::string::npos)
    throw Error(ErrorKind::invalid_argument,
                "a seed must be a decimal or 0x-hexadecimal 64-bit number, got '" + text + "'", __FILE__, __LINE__);
  return std::stoull(digits, nullptr, hex ? 16 : 10);
}

std::pair<std::string, double> parse_param(const std::string& text) {
  const std::size_t equals = text.find('=');
  const std::string what = "a parameter is NAME=VALUE with a decimal value, got '" + text + "'";
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
    throw Error(ErrorKind::invalid_argument, what, __FILE__, __LINE__);
  const std::string value_text = text.substr(equals + 1);
  char* end = nullptr;
  const double value = std::strtod(value_text.c_str(), &end);
  if (end != value_text.c_str() + value_text.size() || !std::isfinite(value))
    throw Error(ErrorKind::invalid_argument, what, __FILE__, __LINE__);
  return {text.substr(0, equals), value};
}

std::string splice_generated_blocks(const std::string& document,
                                    const std::vector<std::pair<std::string, std::string>>& blocks) {
  std::string result = document;
  for (const auto& [key, content] : blocks) {
    const std::string begin = "<!-- cudalab:begin " + key + " -->";
    const std::string end = "<!-- cudalab:end " + key + " -->";
    const std::size_t b = result.find(begin);
    if (b == std::string::npos) continue;
    const std::size_t e = result.find(end, b);
    if (e == std::string::npos)
      throw Error(ErrorKind::invalid_argument, "'" + begin + "' has no matching '" + end + "'", __FILE__, __LINE__);
    result = result.substr(0, b + begin.size()) + "\n" + content + result.substr(e);
  }
  return result;
}

int command_probe(const ProbeArgs& args, Context& context) {
  const DeviceInfo device = usable_device();
  context.err << "probing " << device.name << " (a few seconds)" << std::endl;
  const harness::Ceilings ceilings =
      probe::measure_ceilings(device, progress_printer(context, probe::measurement_count()));
  probe::save_cache(device, ceilings);
  context.out << device.name << ", sm_" << device.compute_capability() << ", " << device.sm_count << " SMs, "
              << format_bytes(double(device.global_memory_bytes)) << "\n"
              << ceilings_table(ceilings).text() << "copy kernel / cudaMemcpy D2D: "
              << format_fixed(100 * ceilings.copy_kernel_gbps / ceilings.memcpy_d2d_gbps, 1) << "%\ncached in "
              << probe::cache_path(device) << "\n";
  if (!args.json_path.empty()) {
    harness::write_json_file(args.json_path, {{"schema", "cudalab-probe/1"},
                                              {"provenance", harness::collect_provenance(device, context.command_line)},
                                              {"ceilings", ceilings}});
    context.out << "wrote " << args.json_path << "\n";
  }
  return kExitOk;
}

namespace {

std::string dtype_names(const std::vector<DType>& dtypes) {
  std::string text;
  for (DType d : dtypes) text += (text.empty() ? "" : ",") + std::string(to_string(d));
  return text;
}

std::string shape_names(const harness::Op& op) {
  std::string names;
  for (const std::string& name : op.dim_names) names += (names.empty() ? "" : "x") + name;
  return names;
}

// The problems `run` was asked for: each size (or the op's bench sizes) in each dtype, with the
// parameters given (the op's defaults for the rest).
std::vector<harness::Problem> requested_problems(const harness::Op& op, const RunArgs& args) {
  const std::size_t rank = op.dim_names.size();
  if (rank > 1 && !args.sizes.empty())
    throw Error(ErrorKind::invalid_argument, op.name + " is sized by --shape " + shape_names(op) + ", not --n",
                __FILE__, __LINE__);
  if (rank == 1 && !args.shapes.empty())
    throw Error(ErrorKind::invalid_argument, op.name + " is sized by --n, not --shape", __FILE__, __LINE__);
  std::vector<DType> dtypes;
  for (const std::string& typed : args.dtypes) {
    DType dtype;
    if (!parse_dtype(typed, &dtype) || std::find(op.dtypes.begin(), op.dtypes.end(), dtype) == op.dtypes.end())
      throw Error(ErrorKind::invalid_argument,
                  op.name + " takes --dtype " + dtype_names(op.dtypes) + ", got '" + typed + "'", __FILE__, __LINE__);
    dtypes.push_back(dtype);
  }
  std::vector<harness::Param> params;
  for (const std::string& typed : args.params) {
    const auto [name, value] = parse_param(typed);
    params.push_back({name, value});
  }
  std::vector<std::vector<std::int64_t>> sizes;
  for (const std::string& size : args.sizes) sizes.push_back({parse_element_count(size)});
  for (const std::string& shape : args.shapes) sizes.push_back(parse_shape(shape, rank));
  std::vector<harness::Problem> problems;
  if (sizes.empty()) {
    // The op's bench problems, narrowed to the dtypes and parameters asked for; an unknown
    // parameter name is refused by op.problem below or here.
    for (const harness::Problem& p : op.bench_problems) {
      const bool dtype_ok = dtypes.empty() || std::find(dtypes.begin(), dtypes.end(), p.dtype) != dtypes.end();
      bool params_ok = true;
      for (const harness::Param& asked : params) {
        if (!p.has_param(asked.name))
          throw Error(ErrorKind::invalid_argument, op.name + " has no parameter '" + asked.name + "'", __FILE__,
                      __LINE__);
        params_ok = params_ok && p.param(asked.name) == asked.value;
      }
      if (dtype_ok && params_ok) problems.push_back(p);
    }
    if (problems.empty())
      throw Error(ErrorKind::invalid_argument,
                  op.name + " benches no problem of that dtype and those parameters: give sizes with " +
                      (rank > 1 ? "--shape" : "--n"),
                  __FILE__, __LINE__);
    return problems;
  }
  if (dtypes.empty()) dtypes = {op.dtypes.front()};
  for (DType dtype : dtypes)
    for (const auto& size : sizes) problems.push_back(op.problem(size, dtype, params));
  return problems;
}

}  // namespace

int command_list(bool json, Context& context) {
  const auto& registry = harness::builtin_registry();
  if (json) {
    nlohmann::json document = {{"ops", nlohmann::json::array()}, {"experiments", nlohmann::json::array()}};
    for (const auto& op : registry.ops()) {
      nlohmann::json variants = nlohmann::json::array();
      for (const auto& v : op.variants) {
        nlohmann::json dtypes = nlohmann::json::array();
        for (DType d : v.dtypes) dtypes.push_back(to_string(d));
        variants.push_back({{"id", v.id},
                            {"technique", v.technique},
                            {"role", harness::to_string(v.role)},
                            {"engine", harness::to_string(v.engine)},
                            {"dtypes", dtypes}});
      }
      nlohmann::json dtypes = nlohmann::json::array();
      for (DType d : op.dtypes) dtypes.push_back(to_string(d));
      document["ops"].push_back({{"name", op.name},
                                 {"summary", op.summary},
                                 {"dims", op.dim_names},
                                 {"dtypes", dtypes},
                                 {"params", op.params},
                                 {"bench_problems", op.bench_problems},
                                 {"test_problems", op.test_problems},
                                 {"variants", variants}});
    }
    for (const auto& e : registry.experiments())
      document["experiments"].push_back(
          {{"name", e.name}, {"op", e.op}, {"summary", e.summary}, {"plots", e.plots}, {"sizes", e.sizes}});
    context.out << document.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& op : registry.ops()) {
    std::string params;
    for (const auto& p : op.params) params += " " + p.name + "=" + harness::format_param(p.value);
    context.out << op.name << ": " << op.summary << "\n  " << (op.dim_names.size() > 1 ? "--shape " : "--")
                << shape_names(op) << "  --dtype " << dtype_names(op.dtypes)
                << (params.empty() ? "" : "  --param (defaults):" + params) << "\n";
    Table t;
    t.header = {"  variant", "role", "dtypes", "technique"};
    for (const auto& v : op.variants)
      t.rows.push_back({"  " + v.id, harness::to_string(v.role), dtype_names(v.dtypes), v.technique});
    context.out << t.text();
  }
  if (!registry.experiments().empty()) context.out << "experiments:\n";
  for (const auto& e : registry.experiments()) {
    context.out << "  " << e.name << ": " << e.summary << "\n";
    if (!e.sizes.empty()) context.out << "      --n: " << e.sizes << "\n";
  }
  return kExitOk;
}

int command_run(const RunArgs& args, Context& context) {
  const auto& registry = harness::builtin_registry();
  const harness::Op* op = registry.find_op(args.name);
  const harness::Experiment* experiment = registry.find_experiment(args.name);
  if (op == nullptr && experiment == nullptr)
    throw Error(ErrorKind::invalid_argument, "unknown op or experiment '" + args.name + "' (see `cudalab list`)",
                __FILE__, __LINE__);
  if (experiment != nullptr &&
      (!args.variants.empty() || (!args.sizes.empty() && experiment->sizes.empty()) || !args.shapes.empty() ||
       !args.dtypes.empty() || !args.params.empty() || args.check_only || args.profile))
    throw Error(ErrorKind::invalid_argument,
                "'" + args.name + "' is an experiment: it takes no --variant, " +
                    (experiment->sizes.empty() ? "--n, " : "") + "--shape, --dtype, --param, --check-only or --profile",
                __FILE__, __LINE__);
  std::vector<std::int64_t> experiment_sizes;
  if (experiment != nullptr)
    for (const std::string& text : args.sizes) experiment_sizes.push_back(parse_element_count(text));
  std::vector<harness::Problem> problems;
  if (op != nullptr) {
    for (const std::string& id : args.variants)
      if (op->find_variant(id) == nullptr)
        throw Error(ErrorKind::invalid_argument,
                    "unknown variant '" + id + "' of " + op->name + " (see `cudalab list`)", __FILE__, __LINE__);
    problems = requested_problems(*op, args);
  }
  harness::Distribution distribution;
  if (!harness::parse_distribution(args.distribution, &distribution))
    throw Error(ErrorKind::invalid_argument, "unknown distribution '" + args.distribution + "'", __FILE__, __LINE__);
  if (!(args.budget_seconds > 0 && args.budget_seconds <= 600))
    throw Error(ErrorKind::invalid_argument, "--budget must be between 0 and 600 seconds", __FILE__, __LINE__);

  const DeviceInfo device = usable_device();
  if (op != nullptr)
    for (const auto& problem : problems) {
      // A problem no selected variant can take is a bad request, not a run of skipped rows.
      std::string first_reason;
      bool runnable = false;
      for (const harness::Variant& v : op->variants) {
        if (!args.variants.empty() &&
            std::find(args.variants.begin(), args.variants.end(), v.id) == args.variants.end())
          continue;
        const std::string reason = harness::why_not(v, device, problem);
        runnable = runnable || reason.empty();
        if (first_reason.empty()) first_reason = v.id + ": " + reason;
      }
      if (!runnable)
        throw Error(ErrorKind::invalid_argument,
                    "no " + std::string(args.variants.empty() ? "" : "selected ") + "variant of " + op->name +
                        " can run " + problem.label() + " (" + first_reason + ")",
                    __FILE__, __LINE__);
      harness::require_fits(*op, problem, args.variants);
    }
  const std::uint64_t seed = choose_seed(args.seed, context);
  harness::Provenance provenance = harness::collect_provenance(device, context.command_line);
  // A check needs no roofline; anything timed is put against the cached (or newly measured) one.
  const bool timed = !args.check_only && !args.profile;
  const harness::Ceilings ceilings =
      timed ? probe::ceilings_for(device, false, progress_printer(context, 0)) : harness::Ceilings{};
  if (timed) context.out << device_line(device, ceilings) << "\n";

  std::vector<Record> all;
  nlohmann::json experiments = nlohmann::json::array();
  if (op != nullptr) {
    harness::RunOptions options;
    options.variants = args.variants;
    options.seed = seed;
    options.distribution = distribution;
    options.check_only = args.check_only;
    options.profile = args.profile;
    options.timing.cold = !args.warm;
    options.timing.stopping.budget_seconds = args.budget_seconds;
    harness::KernelTimer timer;
    const std::size_t variant_count = args.variants.empty() ? op->variants.size() : args.variants.size();
    auto progress = progress_printer(context, static_cast<int>(problems.size() * variant_count * (timed ? 2 : 1)));
    for (const auto& problem : problems) {
      auto records = harness::run_problem(*op, problem, options, ceilings, timer, progress);
      print_records(records, context);
      all.insert(all.end(), records.begin(), records.end());
    }
  } else {
    harness::ExperimentContext run_context = experiment_context(device, ceilings, seed, progress_printer(context, 0));
    run_context.sizes = experiment_sizes;
    auto result = harness::run_experiment(*experiment, run_context);
    print_experiment(result, context);
    experiments.push_back(std::move(result));
  }
  harness::record_end_clocks(provenance, device);
  if (!args.json_path.empty()) {
    harness::write_json_file(args.json_path, harness::make_results(provenance, ceilings, all, experiments));
    context.out << "wrote " << args.json_path << "\n";
  }
  if (any_unexpected_failure(all)) {
    context.err << "cudalab: a variant failed verification (rows marked NO)" << std::endl;
    return kExitFailed;
  }
  return kExitOk;
}

namespace {

// What an unfinished results file at `path` already holds, for bench --resume: its records,
// experiments, provenance and ceilings, kept when the same build ran them on the same model of GPU
// (harness::resume_refusal); a missing file is an empty start.
struct EarlierRun {
  std::vector<Record> records;
  nlohmann::json experiments = nlohmann::json::array();
  std::optional<harness::Provenance> provenance;
  harness::Ceilings ceilings;
};
EarlierRun earlier_run(const std::string& path, const harness::Provenance& now) {
  EarlierRun earlier;
  if (!std::filesystem::exists(path)) return earlier;
  const nlohmann::json results = harness::read_json_file(path);
  const auto refuse = [&](const std::string& why) {
    throw Error(ErrorKind::invalid_argument, "cannot resume " + path + ": " + why + "; move it aside or drop --resume",
                __FILE__, __LINE__);
  };
  if (results.value("schema", "") != harness::kResultsSchema) refuse("it is not a results file of this version");
  const auto then = results.value("provenance", nlohmann::json::object()).get<harness::Provenance>();
  if (const std::string why = harness::resume_refusal(then, now); !why.empty()) refuse(why);
  earlier.records = results.value("records", nlohmann::json::array()).get<std::vector<Record>>();
  earlier.experiments = results.value("experiments", nlohmann::json::array());
  earlier.provenance = then;
  earlier.ceilings = results.value("ceilings", nlohmann::json::object()).get<harness::Ceilings>();
  return earlier;
}

// (op, problem, distribution): what one run_problem call measures.
std::string problem_id(const std::string& op, const harness::Problem& problem, const std::string& distribution) {
  return op + " " + problem.key() + " " + distribution;
}

}  // namespace

int command_bench(const BenchArgs& args, Context& context) {
  const auto& registry = harness::builtin_registry();
  // A name is an op, an experiment, or a page of experiments ("memory", "transfers").
  for (const std::string& name : args.only) {
    const bool page = std::any_of(registry.experiments().begin(), registry.experiments().end(),
                                  [&](const harness::Experiment& e) { return e.op == name; });
    if (registry.find_op(name) == nullptr && registry.find_experiment(name) == nullptr && !page)
      throw Error(ErrorKind::invalid_argument, "unknown op, experiment or page '" + name + "' (see `cudalab list`)",
                  __FILE__, __LINE__);
  }
  auto chosen = [&](const std::string& name, const std::string& page_op) {
    return args.only.empty() || std::find(args.only.begin(), args.only.end(), name) != args.only.end() ||
           std::find(args.only.begin(), args.only.end(), page_op) != args.only.end();
  };
  harness::memory_limit();  // a malformed CUDALAB_MEMORY_LIMIT is refused before anything runs
  const DeviceInfo device = usable_device();
  const std::uint64_t seed = choose_seed(args.seed, context);
  harness::Provenance provenance = harness::collect_provenance(device, context.command_line);
  const std::string path =
      args.out_path.empty() ? "results/" + harness::gpu_slug(device.name) + "/bench.json" : args.out_path;
  EarlierRun earlier = args.resume ? earlier_run(path, provenance) : EarlierRun{};
  std::vector<Record> all = std::move(earlier.records);
  nlohmann::json experiments = std::move(earlier.experiments);
  // A continued run keeps its start's provenance and ceilings, and records where it was taken up:
  // on another card of the model, its records' roofline fractions are of that card's ceilings.
  if (earlier.provenance) {
    const harness::Resumption resumption{provenance.gpu_uuid, provenance.hostname, provenance.date_utc,
                                         static_cast<std::int64_t>(all.size()),
                                         static_cast<std::int64_t>(experiments.size())};
    provenance = *earlier.provenance;
    provenance.resumed.push_back(resumption);
    if (resumption.gpu_uuid != provenance.gpu_uuid)
      context.err << "resuming on another card of this model (" << resumption.gpu_uuid << "; the run began on "
                  << provenance.gpu_uuid << "): the file records from which record on" << std::endl;
  }
  std::vector<std::string> done;
  for (const Record& r : all) done.push_back(problem_id(r.op, r.problem, r.distribution));
  const auto is_done = [&](const std::string& id) { return std::find(done.begin(), done.end(), id) != done.end(); };
  const auto experiment_done = [&](const std::string& name) {
    return std::any_of(experiments.begin(), experiments.end(),
                       [&](const nlohmann::json& e) { return e.value("name", "") == name; });
  };
  if (args.resume)
    context.err << "resuming " << path << ": " << all.size() << " records and " << experiments.size()
                << " experiments kept" << std::endl;

  context.err << "measuring this GPU's ceilings (cached for later runs)" << std::endl;
  const harness::Ceilings ceilings =
      probe::ceilings_for(device, true, progress_printer(context, probe::measurement_count()));
  context.out << device_line(device, ceilings) << "\n";
  const harness::Ceilings& file_ceilings = earlier.provenance ? earlier.ceilings : ceilings;

  int steps = 0;
  for (const auto& e : registry.experiments()) steps += chosen(e.name, e.op) && !experiment_done(e.name);
  for (const auto& op : registry.ops()) {
    if (!chosen(op.name, op.name)) continue;
    for (const auto distribution : op.bench_distributions)
      for (const auto& problem : op.bench_problems)
        if (!is_done(problem_id(op.name, problem, harness::to_string(distribution))))
          steps += static_cast<int>(op.variants.size() * 2);
  }
  auto progress = progress_printer(context, steps);

  // The file is rewritten after every problem and experiment, marked incomplete until the end: a
  // run that stops (power, a full disk, a fault) keeps what it measured, and --resume goes on.
  const auto write = [&](bool complete) {
    harness::record_end_clocks(provenance, device);
    nlohmann::json results = harness::make_results(provenance, file_ceilings, all, experiments);
    results["complete"] = complete;
    harness::write_json_file(path, results);
    return results;
  };
  harness::KernelTimer timer;
  harness::RunOptions options;
  options.seed = seed;
  for (const auto& op : registry.ops()) {
    if (!chosen(op.name, op.name)) continue;
    for (const auto distribution : op.bench_distributions) {
      options.distribution = distribution;
      for (const auto& problem : op.bench_problems) {
        if (is_done(problem_id(op.name, problem, harness::to_string(distribution)))) continue;
        std::vector<Record> records;
        try {
          records = harness::run_problem(op, problem, options, ceilings, timer, progress);
        } catch (const Error& error) {
          // A problem too large for this GPU is skipped with its sizes; any other failure stops the
          // run (the CUDA context may be unusable), with what was measured already written.
          if (error.kind() != ErrorKind::out_of_memory) throw;
          (void)cudaGetLastError();  // an allocation failure leaves no sticky error; clear the last one
          records = harness::skipped_problem(op, problem, options, error.what());
        }
        print_records(records, context);
        all.insert(all.end(), records.begin(), records.end());
        write(false);
      }
    }
  }
  for (const auto& e : registry.experiments()) {
    if (!chosen(e.name, e.op) || experiment_done(e.name)) continue;
    progress(e.name);
    auto result = harness::run_experiment(e, experiment_context(device, ceilings, seed, nullptr));
    print_experiment(result, context);
    experiments.push_back(std::move(result));
    write(false);
  }
  const nlohmann::json results = write(true);
  context.out << "\nclaims\n" << claims_table(results["claims"]).text();
  context.out << "\nwrote " << path << "\n";
  if (any_unexpected_failure(all)) {
    context.err << "cudalab: a variant failed verification (rows marked NO)" << std::endl;
    return kExitFailed;
  }
  return kExitOk;
}

int command_report(const ReportArgs& args, Context& context) {
  const nlohmann::json results = harness::read_json_file(args.results_path);
  // Schema 1 differs only in how records name their problem, so a schema-1 file of experiments
  // alone (no records) still renders.
  const std::string schema = results.value("schema", "");
  const bool experiments_only_v1 =
      schema == "cudalab-results/1" && results.value("records", nlohmann::json::array()).empty();
  if (schema != harness::kResultsSchema && !experiments_only_v1)
    throw Error(ErrorKind::invalid_argument,
                args.results_path + " is not a cudalab results file of schema " + harness::kResultsSchema +
                    " (or schema 1 without records)",
                __FILE__, __LINE__);
  nlohmann::json evaluated = results;
  harness::evaluate_claims(evaluated);  // claims judged by this build's rules
  const auto records = results.value("records", nlohmann::json::array()).get<std::vector<Record>>();
  const auto provenance = results.value("provenance", nlohmann::json::object()).get<harness::Provenance>();
  const auto ceilings = results.value("ceilings", nlohmann::json::object()).get<harness::Ceilings>();

  std::vector<std::pair<std::string, std::string>> blocks;
  blocks.emplace_back("provenance", provenance_line(provenance) + "\n");
  blocks.emplace_back("ceilings", ceilings_table(ceilings).markdown());
  blocks.emplace_back("summary", summary_table(records, ceilings).markdown());
  // Named by the file ("baselines:pytorch" for pytorch.json), so docs/results.md can hold one file's
  // table while the main bench file, rendered last, keeps the generic blocks.
  blocks.emplace_back("baselines:" + std::filesystem::path(args.results_path).stem().string(),
                      baselines_table(records).markdown());
  std::vector<std::string> ops;
  for (const Record& r : records)
    if (std::find(ops.begin(), ops.end(), r.op) == ops.end()) ops.push_back(r.op);
  // Every problem of a configuration, one table each ("op:<configuration>").
  for (const std::string& configuration : configurations(records)) {
    std::string text;
    std::vector<std::pair<std::string, harness::Problem>> groups;  // (distribution, problem), in run order
    for (const Record& r : records) {
      const std::pair<std::string, harness::Problem> group{r.distribution, r.problem};
      if (configuration_id(r) == configuration && std::find(groups.begin(), groups.end(), group) == groups.end())
        groups.push_back(group);
    }
    for (const auto& [distribution, problem] : groups) {
      std::vector<Record> in_group;
      for (const Record& r : records)
        if (configuration_id(r) == configuration && r.problem == problem && r.distribution == distribution)
          in_group.push_back(r);
      // Folded: a page's reader sees the conclusions and the headline ranking first, and opens the
      // sizes they want.
      text += "\n<details><summary>" + problem.label() + ", " + distribution + " inputs</summary>\n\n" +
              records_table(in_group).markdown() + "\n</details>\n";
    }
    blocks.emplace_back("op:" + configuration, text);
  }
  // The claims shown on each op's page.
  for (const std::string& op : ops) {
    nlohmann::json op_claims = nlohmann::json::array();
    for (const auto& claim : evaluated["claims"]) {
      const auto* check = [&]() -> const harness::ClaimCheck* {
        for (const auto& c : harness::builtin_registry().claims())
          if (c.id == claim.value("id", "")) return &c;
        return nullptr;
      }();
      if (check != nullptr && check->page == op) op_claims.push_back(claim);
    }
    // A file that judges none of the page's claims (one experiment's run) leaves its block as it is.
    if (!op_claims.empty()) blocks.emplace_back("claims:" + op, claims_table(op_claims).markdown());
  }
  // A ranking per configuration (an op at one dtype and parameter set), at its headline problem.
  for (const std::string& configuration : configurations(records)) {
    const auto [headline, headline_distribution] = headline_problem(records, configuration);
    std::vector<Record> headline_group;
    for (const Record& r : records)
      if (configuration_id(r) == configuration && r.problem == headline && r.distribution == headline_distribution)
        headline_group.push_back(r);
    blocks.emplace_back("ranking:" + configuration, "\n**" + headline.label() + ", " + headline_distribution +
                                                        " inputs, fastest first**\n\n" +
                                                        ranking_table(headline_group).markdown());
  }
  // Pages made of experiments alone (docs/memory.md) get their claims block too.
  std::vector<std::string> experiment_pages;
  for (const auto& e : results.value("experiments", nlohmann::json::array())) {
    const std::string page = e.value("op", "");
    if (!page.empty() && std::find(ops.begin(), ops.end(), page) == ops.end() &&
        std::find(experiment_pages.begin(), experiment_pages.end(), page) == experiment_pages.end())
      experiment_pages.push_back(page);
  }
  for (const std::string& page : experiment_pages) {
    nlohmann::json page_claims = nlohmann::json::array();
    for (const auto& claim : evaluated["claims"])
      for (const auto& c : harness::builtin_registry().claims())
        if (c.id == claim.value("id", "") && c.page == page) page_claims.push_back(claim);
    if (!page_claims.empty()) blocks.emplace_back("claims:" + page, claims_table(page_claims).markdown());
  }
  for (const auto& e : results.value("experiments", nlohmann::json::array())) {
    std::string text = experiment_table(e).markdown();
    for (const auto& note : e.value("notes", nlohmann::json::array())) text += "\n- " + note.get<std::string>();
    blocks.emplace_back("experiment:" + e.value("name", ""), text + "\n");
  }

  if (args.update_paths.empty()) {
    for (const auto& [key, content] : blocks) context.out << "<!-- " << key << " -->\n" << content << "\n";
    return kExitOk;
  }
  for (const std::string& path : args.update_paths) {
    std::ifstream in(path);
    if (!in) throw Error(ErrorKind::invalid_argument, "cannot read " + path, __FILE__, __LINE__);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string updated = splice_generated_blocks(buffer.str(), blocks);
    std::ofstream out(path);
    out << updated;
    if (!out) throw Error(ErrorKind::invalid_argument, "cannot write " + path, __FILE__, __LINE__);
    context.out << "updated " << path << "\n";
  }
  return kExitOk;
}

namespace {

// The results files `claims` reads by default: results/<gpu>/*.json, sorted, archives left out.
std::vector<std::string> default_results_files() {
  std::vector<std::string> files;
  const std::filesystem::path root("results");
  if (!std::filesystem::is_directory(root)) return files;
  for (const auto& gpu : std::filesystem::directory_iterator(root)) {
    if (!gpu.is_directory()) continue;
    for (const auto& file : std::filesystem::directory_iterator(gpu.path()))
      if (file.path().extension() == ".json") files.push_back(file.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Reads a results file of either schema; evaluates this build's claims on it. Probe files and
// other JSON are skipped (they hold no claims).
bool load_results(const std::string& path, nlohmann::json* results) {
  *results = harness::read_json_file(path);
  const std::string schema = results->value("schema", "");
  if (schema != harness::kResultsSchema && schema != "cudalab-results/1") return false;
  if (schema != harness::kResultsSchema) (*results)["records"] = nlohmann::json::array();  // problems of schema 1
  harness::evaluate_claims(*results);
  return true;
}

}  // namespace

int command_claims(const ClaimsArgs& args, Context& context) {
  const std::vector<std::string> paths = args.results_paths.empty() ? default_results_files() : args.results_paths;
  if (paths.empty())
    throw Error(ErrorKind::invalid_argument, "no results files: name them, or run from a folder with results/<gpu>/",
                __FILE__, __LINE__);
  // Every verdict any file gives, with where it came from. A claim whose data spans files of one GPU
  // (C17's records in bench.json, its -G experiment in another file) is also judged on all of that
  // GPU's files merged; that verdict replaces the single-file ones when it judges more parts.
  std::map<std::string, nlohmann::json> judged;                 // id -> array of verdicts
  std::map<std::string, nlohmann::json> merged;                 // gpu -> merged results document
  std::map<std::string, std::vector<std::string>> merged_from;  // gpu -> "file (commit)"
  for (const std::string& path : paths) {
    nlohmann::json results;
    if (!load_results(path, &results)) continue;
    const auto provenance = results.value("provenance", nlohmann::json::object()).get<harness::Provenance>();
    for (nlohmann::json verdict : results["claims"]) {
      verdict["file"] = path;
      verdict["commit"] = provenance.commit.substr(0, 7);
      verdict["gpu"] = provenance.gpu_name;
      judged[verdict.value("id", "")].push_back(std::move(verdict));
    }
    nlohmann::json& into = merged[provenance.gpu_name];
    if (into.is_null())
      into = {{"schema", harness::kResultsSchema},
              {"ceilings", results.value("ceilings", nlohmann::json::object())},
              {"records", nlohmann::json::array()},
              {"experiments", nlohmann::json::array()}};
    for (const auto& r : results["records"]) into["records"].push_back(r);
    for (const auto& e : results.value("experiments", nlohmann::json::array())) into["experiments"].push_back(e);
    merged_from[provenance.gpu_name].push_back(std::filesystem::path(path).filename().string() + " " +
                                               provenance.commit.substr(0, 7));
  }
  for (auto& [gpu, document] : merged) {
    harness::evaluate_claims(document);
    for (nlohmann::json verdict : document["claims"]) {
      nlohmann::json& verdicts = judged[verdict.value("id", "")];
      std::size_t most_parts = 0;
      for (const auto& v : verdicts)
        if (v.value("gpu", "") == gpu) most_parts = std::max(most_parts, v["parts"].size());
      if (verdict["parts"].size() <= most_parts) continue;
      std::string files;
      for (const std::string& f : merged_from[gpu]) files += (files.empty() ? "" : ", ") + f;
      verdict["file"] = "merged: " + files;
      verdict["commit"] = "";
      verdict["gpu"] = gpu;
      nlohmann::json kept = nlohmann::json::array();
      for (auto& v : verdicts)
        if (v.value("gpu", "") != gpu) kept.push_back(std::move(v));
      kept.push_back(std::move(verdict));
      verdicts = std::move(kept);
    }
  }
  nlohmann::json all = nlohmann::json::array();
  for (const harness::ClaimText& text : harness::claim_catalog()) {
    nlohmann::json entry = {{"id", text.id},
                            {"claim", text.claim},
                            {"source", std::string("tutorial ") + text.sources},
                            {"measured_by", text.measured_by}};
    const auto found = judged.find(text.id);
    entry["judgements"] = found == judged.end() ? nlohmann::json::array() : found->second;
    all.push_back(std::move(entry));
  }
  if (args.json) {
    context.out << all.dump(2) << "\n";
    return kExitOk;
  }
  Table t;
  t.header = {"claim", "source", "what it says", "predicted", "measured here", "verdict"};
  int measured = 0;
  for (const auto& entry : all) {
    if (entry["judgements"].empty()) {
      t.rows.push_back({entry["id"], entry["source"], entry["claim"], "-",
                        "not measured yet (" + entry["measured_by"].get<std::string>() + ")", "-"});
      continue;
    }
    ++measured;
    for (const auto& j : entry["judgements"])
      t.rows.push_back(
          {entry["id"], entry["source"], entry["claim"], j.value("predicted", ""),
           j.value("measured", "") + " (" + std::filesystem::path(j.value("file", "")).filename().string() + ", " +
               (j.value("commit", "").empty() ? "" : j.value("commit", "") + ", ") + j.value("gpu", "") + ")",
           j.value("verdict", "")});
  }
  const std::string summary = std::to_string(measured) + " of " + std::to_string(all.size()) + " claims judged from " +
                              std::to_string(paths.size()) + " file(s)\n";
  // One line a claim: its parts' outcomes counted over every judgement of it.
  Table compact;
  compact.header = {"claim", "source", "what it says", "verdict"};
  for (const auto& entry : all) {
    int parts = 0, holds = 0, partly = 0;
    for (const auto& j : entry["judgements"])
      for (const auto& part : j.value("parts", nlohmann::json::array())) {
        ++parts;
        const std::string outcome = part.value("outcome", "");
        holds += outcome == "holds";
        partly += outcome == "holds partly";
      }
    const int fails = parts - holds - partly;
    std::string verdict = "not measured yet";
    if (parts == 1) {
      verdict = holds == 1 ? "holds" : partly == 1 ? "holds partly" : "does not hold";
    } else if (parts > 0 && holds == parts) {
      verdict = "holds (all " + std::to_string(parts) + " parts)";
    } else if (parts > 0 && fails == parts) {
      verdict = "does not hold (any of " + std::to_string(parts) + " parts)";
    } else if (parts > 0) {
      verdict = "of " + std::to_string(parts) + " parts: " + std::to_string(holds) + " hold, " +
                std::to_string(partly) + " partly, " + std::to_string(fails) + " do not";
    }
    compact.rows.push_back({entry["id"], entry["source"], entry["claim"], verdict});
  }
  if (args.update_paths.empty()) {
    context.out << t.text() << summary;
    return kExitOk;
  }
  for (const std::string& path : args.update_paths) {
    std::ifstream in(path);
    if (!in) throw Error(ErrorKind::invalid_argument, "cannot read " + path, __FILE__, __LINE__);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string updated = splice_generated_blocks(
        buffer.str(), {{"claims:all", t.markdown() + "\n" + summary}, {"claims:summary", compact.markdown()}});
    std::ofstream out(path);
    out << updated;
    if (!out) throw Error(ErrorKind::invalid_argument, "cannot write " + path, __FILE__, __LINE__);
    context.out << "updated " << path << "\n";
  }
  return kExitOk;
}

}  // namespace cudalab::cli
