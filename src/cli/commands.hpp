// The subcommands of `cudalab`. Each returns an exit code (cli.hpp) and throws cudalab::Error for
// the caller to report.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace cudalab::cli {

struct Context {
  std::ostream& out;
  std::ostream& err;  // progress lines and warnings
  std::string command_line;
};

struct ProbeArgs {
  std::string json_path;  // also write the ceilings here
};

struct RunArgs {
  std::string name;                   // an op or an experiment
  std::vector<std::string> variants;  // empty: all
  std::vector<std::string> sizes;     // as typed; empty: the op's bench sizes
  std::vector<std::string> shapes;    // as typed, for shaped ops ("4096x4096x4096")
  std::vector<std::string> dtypes;    // as typed ("f32", "i32"); empty: the op's first, or its bench dtypes
  std::vector<std::string> params;    // as typed ("exclusive=1"); the op's defaults for the rest
  bool check_only = false;
  bool profile = false;  // verify, then launch each variant once inside an NVTX range; no timing
  bool warm = false;     // skip the L2 flush between samples
  std::string json_path;
  std::string seed;  // empty: random, printed
  std::string distribution = "uniform";
  double budget_seconds = 1.0;  // per variant and size
};

struct BenchArgs {
  std::string out_path;  // empty: results/<gpu>/bench.json
  std::string seed;
  std::vector<std::string> only;  // ops or experiments; empty: everything
  bool resume = false;            // keep what an unfinished run of this build on this GPU wrote to out_path
};

struct ReportArgs {
  std::string results_path;
  std::vector<std::string> update_paths;
};

struct ClaimsArgs {
  std::vector<std::string> results_paths;  // empty: every results/<gpu>/*.json below the current folder
  bool json = false;
  std::vector<std::string> update_paths;  // docs whose <!-- cudalab:begin claims:all --> block to regenerate
};

struct ModelArgs {
  std::string request_path;  // a JSON request, "-" for standard input; empty: no problems
  bool gpu = false;          // add this GPU's provenance and L2 flush size
  std::string ceilings;      // a probe file, or "cache" for this GPU's cached ceilings
};

int command_probe(const ProbeArgs& args, Context& context);
int command_list(bool json, Context& context);
int command_run(const RunArgs& args, Context& context);
int command_bench(const BenchArgs& args, Context& context);
int command_report(const ReportArgs& args, Context& context);
int command_claims(const ClaimsArgs& args, Context& context);
int command_model(const ModelArgs& args, Context& context);

// A problem size as typed: a whole number >= 1 ("1000003") or a power of two ("2^28").
// Throws Error{invalid_argument} with a sentence saying what was wrong.
std::int64_t parse_element_count(const std::string& text);
// A shaped op's problem as typed: `rank` whole numbers joined by 'x' ("8192x64x8192"), each a
// size as parse_element_count takes it, their product at most 2^48. Throws like it.
std::vector<std::int64_t> parse_shape(const std::string& text, std::size_t rank);
// A parameter as typed: NAME=VALUE with a finite decimal value ("exclusive=1", "eps=1e-5").
std::pair<std::string, double> parse_param(const std::string& text);
// A seed as typed: decimal or 0x-prefixed hexadecimal.
std::uint64_t parse_seed(const std::string& text);

// Replaces each block between "<!-- cudalab:begin KEY -->" and "<!-- cudalab:end KEY -->" in
// `document` with blocks[KEY]; keys without a generated block are left alone.
std::string splice_generated_blocks(const std::string& document,
                                    const std::vector<std::pair<std::string, std::string>>& blocks);

}  // namespace cudalab::cli
