#include "cli/cli.hpp"

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cudalab/error.hpp"
#include "harness/results.hpp"

namespace cudalab::cli {
namespace {

int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_argument: return kExitUsage;
    case ErrorKind::no_device:
    case ErrorKind::unsupported_device: return kExitNoDevice;
    case ErrorKind::out_of_memory: return kExitOutOfMemory;
    case ErrorKind::cuda:
    case ErrorKind::library: return kExitFailed;
  }
  return kExitFailed;
}

std::string joined(int argc, const char* const* argv) {
  std::string text;
  for (int i = 0; i < argc; ++i) text += (i ? " " : "") + std::string(argv[i]);
  return text;
}

}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "cudalab: CUDA kernel ladders, each variant verified against a CPU reference and timed as a fraction of "
      "this GPU's measured ceilings, beside the vendor library.",
      "cudalab"};
  app.require_subcommand(1);
  app.set_version_flag("--version", harness::version_line());
  app.footer(
      "Exit codes: 0 ok, 1 a variant failed verification or a run failed, 2 bad arguments, "
      "3 no usable CUDA device, 4 out of memory.\n");

  ProbeArgs probe_args;
  auto* probe =
      app.add_subcommand("probe",
                         "Measure this GPU's ceilings (bandwidth, FP32, BF16/FP16/TF32/FP8 tensor GEMMs, PCIe, "
                         "launch latency), print them beside the datasheet and cache them");
  probe->add_option("--json", probe_args.json_path, "Also write the ceilings and provenance to this file");

  bool list_json = false;
  auto* list = app.add_subcommand("list", "List ops, their variants and experiments (no GPU needed)");
  list->add_flag("--json", list_json, "Print as JSON");

  RunArgs run_args;
  auto* run = app.add_subcommand("run", "Verify and time the variants of one op (or run one experiment)");
  run->add_option("name", run_args.name, "Op or experiment, as `cudalab list` names it")->required();
  run->add_option("--variant", run_args.variants, "Variant id (repeatable; default: all)");
  run->add_option("--n", run_args.sizes,
                  "Problem size in elements, e.g. 1000003 or 2^28 (repeatable; default: the op's bench sizes)")
      ->allow_extra_args(false);
  run->add_option("--shape", run_args.shapes,
                  "Problem shape of a matrix or image op, e.g. 4096x4096x4096 for a GEMM's MxNxK (repeatable; "
                  "`cudalab list` names each op's dimensions)")
      ->allow_extra_args(false);
  run->add_option("--dtype", run_args.dtypes,
                  "Element type, e.g. f32, i32, bf16 (repeatable; default: the op's bench dtypes, or its first "
                  "when sizes are given; `cudalab list` names each op's dtypes)")
      ->allow_extra_args(false);
  run->add_option("--param", run_args.params,
                  "A named parameter as NAME=VALUE, e.g. exclusive=1 or bins=4096 (repeatable; `cudalab list` names "
                  "each op's parameters and defaults)")
      ->allow_extra_args(false);
  run->add_flag("--check-only", run_args.check_only, "Verify only; do not time");
  run->add_flag("--profile", run_args.profile,
                "Verify, then launch each variant once inside an NVTX range \"<op>/<variant> <problem> profile\", "
                "untimed: for ncu --nvtx (docs/profiling.md)");
  run->add_flag("--warm", run_args.warm, "Do not flush L2 between timed samples");
  run->add_option("--json", run_args.json_path, "Write a results file here");
  run->add_option("--seed", run_args.seed, "Input seed (decimal or 0x hex; default: random, printed)");
  run->add_option("--distribution", run_args.distribution,
                  "Input distribution: uniform, normal, integers, all_equal, sorted, large_magnitude")
      ->capture_default_str();
  run->add_option("--budget", run_args.budget_seconds, "Seconds of timing per variant and size, at most")
      ->capture_default_str();

  BenchArgs bench_args;
  auto* bench = app.add_subcommand("bench",
                                   "Probe, then verify and time every op at its default sizes and run "
                                   "every experiment; write a results file");
  bench->add_option("--out", bench_args.out_path, "Results file (default: results/<gpu>/bench.json)");
  bench->add_option("--seed", bench_args.seed, "Input seed (decimal or 0x hex; default: random, printed)");
  bench
      ->add_option("--only", bench_args.only,
                   "Bench only this op (with the experiments shown on its page), experiment, or page of experiments "
                   "(memory, transfers); repeatable")
      ->allow_extra_args(false);
  bench->add_flag("--resume", bench_args.resume,
                  "Keep the records of the results file from an earlier, unfinished run of this build on this GPU "
                  "or another card of its model (the file records where the run was taken up), and run only what "
                  "it lacks");

  ReportArgs report_args;
  auto* report = app.add_subcommand("report",
                                    "Render a results file as markdown tables, or update the generated "
                                    "blocks of docs (no GPU needed)");
  report->add_option("results", report_args.results_path, "Results file written by bench or run --json")->required();
  report->add_option("--update", report_args.update_paths,
                     "Markdown file whose <!-- cudalab:begin KEY --> blocks to regenerate (repeatable)");

  ClaimsArgs claims_args;
  auto* claims = app.add_subcommand("claims",
                                    "Judge every tutorial claim (C01-C37) from results files under the one verdict "
                                    "rule, part by part (no GPU needed)");
  claims->add_option("results", claims_args.results_paths,
                     "Results files (default: every results/<gpu>/*.json below the current folder)");
  claims->add_flag("--json", claims_args.json, "Print as JSON");
  claims->add_option("--update", claims_args.update_paths,
                     "Markdown file whose <!-- cudalab:begin claims:all --> block to regenerate (repeatable)");

  ModelArgs model_args;
  auto* model = app.add_subcommand(
      "model",
      "Print, as JSON, the harness's model of the problems a JSON request names: each problem's key, work (bytes "
      "read and written, flops) and compute unit, the summary and roofline of samples timed elsewhere, and the "
      "stopping rule (no GPU needed unless --gpu or --ceilings cache); python -m cudalab.bench reads it");
  model->add_option("request", model_args.request_path,
                    "Request file, - for standard input: {\"ceilings\": {...}, \"problems\": [{\"op\", \"dims\": "
                    "{NAME: SIZE}, \"dtype\", \"params\": {NAME: VALUE}, \"engine\", \"samples_ms\": [[MS, ...], "
                    "...]}]}");
  model->add_flag("--gpu", model_args.gpu, "Add this GPU's provenance and the bytes an L2 flush reads");
  model->add_option("--ceilings", model_args.ceilings,
                    "Ceilings for the rooflines: a probe file (cudalab probe --json), or 'cache' for this GPU's "
                    "cached ones");

  Context context{out, err, joined(argc, argv)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  }
  try {
    if (*probe) return command_probe(probe_args, context);
    if (*list) return command_list(list_json, context);
    if (*run) return command_run(run_args, context);
    if (*bench) return command_bench(bench_args, context);
    if (*report) return command_report(report_args, context);
    if (*claims) return command_claims(claims_args, context);
    if (*model) return command_model(model_args, context);
  } catch (const Error& e) {
    err << "cudalab: " << e.what() << std::endl;
    return exit_code_for(e.kind());
  } catch (const std::exception& e) {
    err << "cudalab: unexpected error: " << e.what() << std::endl;
    return kExitFailed;
  }
  return kExitUsage;
}

}  // namespace cudalab::cli
