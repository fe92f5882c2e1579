#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/tables.hpp"
#include "core/format.hpp"
#include "cudalab/device.hpp"
#include "cudalab/error.hpp"
#include "cudalab/reduce.hpp"
#include "cudalab/vecadd.hpp"
#include "harness/registry.hpp"

namespace cudalab::cli {
namespace {

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome invoke(std::vector<const char*> args) {
  args.insert(args.begin(), "cudalab");
  std::ostringstream out, err;
  const int code = run(static_cast<int>(args.size()), args.data(), out, err);
  return {code, out.str(), err.str()};
}

int lines(const std::string& text) {
  int count = 0;
  for (char c : text) count += c == '\n';
  return count;
}

TEST(Cli, HelpOnEveryCommandSucceeds) {
  for (const char* command : {"probe", "list", "run", "bench", "report", "model"}) {
    const Outcome o = invoke({command, "--help"});
    EXPECT_EQ(o.code, kExitOk) << command;
    EXPECT_NE(o.out.find("Usage"), std::string::npos) << command;
  }
  const Outcome top = invoke({"--help"});
  EXPECT_EQ(top.code, kExitOk);
  EXPECT_NE(top.out.find("Exit codes"), std::string::npos);
}

TEST(Cli, NoSubcommandIsAUsageError) { EXPECT_EQ(invoke({}).code, kExitUsage); }

TEST(Cli, ListNeedsNoGpu) {
  const Outcome o = invoke({"list"});
  EXPECT_EQ(o.code, kExitOk);
  EXPECT_NE(o.out.find("vecadd"), std::string::npos);
  EXPECT_NE(o.out.find("thrust"), std::string::npos);
  const Outcome json = invoke({"list", "--json"});
  ASSERT_EQ(json.code, kExitOk);
  const auto document = nlohmann::json::parse(json.out);
  EXPECT_EQ(document["ops"][0]["name"], "vecadd");
  EXPECT_EQ(document["ops"][0]["dims"], nlohmann::json::array({"n"}));
  EXPECT_EQ(document["ops"][0]["dtypes"][0], "f32");
  EXPECT_FALSE(document["ops"][0]["bench_problems"].empty());
  // scripts/plots draws each experiment with the registry's plot specs.
  ASSERT_FALSE(document["experiments"].empty());
  for (const auto& e : document["experiments"]) EXPECT_FALSE(e["plots"].empty()) << e["name"];
}

// Each bad request is refused with one line on stderr and a non-zero exit, before any GPU work.
TEST(Cli, BadSizesAreRefusedInOneLine) {
  for (const char* size : {"0", "-1", "abc", "1.5", "2^49", "", "999999999999999999999"}) {
    const Outcome o = invoke({"run", "vecadd", "--n", size});
    EXPECT_EQ(o.code, kExitUsage) << size << ": " << o.err;
    EXPECT_EQ(lines(o.err), 1) << o.err;
    EXPECT_NE(o.err.find("size"), std::string::npos) << o.err;
  }
}

TEST(Cli, UnknownOpAndVariantAreRefused) {
  const Outcome variant = invoke({"run", "vecadd", "--variant", "nosuch"});
  EXPECT_EQ(variant.code, kExitUsage);
  EXPECT_NE(variant.err.find("unknown variant 'nosuch'"), std::string::npos) << variant.err;
  EXPECT_EQ(lines(variant.err), 1);
  const Outcome op = invoke({"run", "nosuch"});
  EXPECT_EQ(op.code, kExitUsage);
  EXPECT_NE(op.err.find("unknown op or experiment 'nosuch'"), std::string::npos);
  const Outcome distribution = invoke({"run", "vecadd", "--distribution", "zeros"});
  EXPECT_EQ(distribution.code, kExitUsage);
  const Outcome experiment_with_size = invoke({"run", "vecadd_host_pattern", "--n", "5"});
  EXPECT_EQ(experiment_with_size.code, kExitUsage);
  // all_reduce takes --n (its arrays' elements), checked as an op's sizes are.
  const Outcome all_reduce_zero = invoke({"run", "all_reduce", "--n", "0"});
  EXPECT_EQ(all_reduce_zero.code, kExitUsage);
  EXPECT_NE(all_reduce_zero.err.find("size"), std::string::npos) << all_reduce_zero.err;
  EXPECT_EQ(lines(all_reduce_zero.err), 1) << all_reduce_zero.err;
  const Outcome shape_of_1d_op = invoke({"run", "vecadd", "--shape", "64x64"});
  EXPECT_EQ(shape_of_1d_op.code, kExitUsage);
  EXPECT_NE(shape_of_1d_op.err.find("sized by --n"), std::string::npos) << shape_of_1d_op.err;
  const Outcome dtype = invoke({"run", "vecadd", "--dtype", "f13"});
  EXPECT_EQ(dtype.code, kExitUsage);
  EXPECT_NE(dtype.err.find("takes --dtype f32"), std::string::npos) << dtype.err;
  EXPECT_EQ(lines(dtype.err), 1) << dtype.err;
  const Outcome wrong_dtype = invoke({"run", "vecadd", "--n", "5", "--dtype", "u8"});
  EXPECT_EQ(wrong_dtype.code, kExitUsage) << "a dtype cudalab knows but the op does not take";
  for (const char* param : {"exclusive", "=1", "exclusive=", "exclusive=abc", "exclusive=nan"}) {
    const Outcome bad = invoke({"run", "vecadd", "--n", "5", "--param", param});
    EXPECT_EQ(bad.code, kExitUsage) << param;
    EXPECT_EQ(lines(bad.err), 1) << bad.err;
  }
  const Outcome unknown_param = invoke({"run", "vecadd", "--n", "5", "--param", "eps=1e-5"});
  EXPECT_EQ(unknown_param.code, kExitUsage);
  EXPECT_NE(unknown_param.err.find("no parameter 'eps'"), std::string::npos) << unknown_param.err;
  const Outcome experiment_profiled = invoke({"run", "vecadd_host_pattern", "--profile"});
  EXPECT_EQ(experiment_profiled.code, kExitUsage);
  EXPECT_EQ(lines(experiment_profiled.err), 1) << experiment_profiled.err;
  const Outcome bench_unknown = invoke({"bench", "--only", "nosuch"});
  EXPECT_EQ(bench_unknown.code, kExitUsage);
  EXPECT_NE(bench_unknown.err.find("unknown op, experiment or page 'nosuch'"), std::string::npos) << bench_unknown.err;
  EXPECT_EQ(lines(bench_unknown.err), 1) << bench_unknown.err;
}

TEST(Cli, HugeSizeIsRefusedAsNoDeviceOrOutOfMemory) {
  const Outcome o = invoke({"run", "vecadd", "--n", "99999999999999"});
  EXPECT_EQ(o.code, device_count() == 0 ? kExitNoDevice : kExitOutOfMemory) << o.err;
  EXPECT_EQ(lines(o.err), 1) << o.err;
}

TEST(Cli, GpuCommandsWithoutAGpuSayNoDevice) {
  if (device_count() > 0) GTEST_SKIP() << "a CUDA device is present; this checks the no-device path";
  for (std::vector<const char*> args : {std::vector<const char*>{"probe"}, {"bench"}, {"run", "vecadd"}}) {
    const Outcome o = invoke(args);
    EXPECT_EQ(o.code, kExitNoDevice);
    EXPECT_NE(o.err.find("no CUDA device"), std::string::npos) << o.err;
    EXPECT_EQ(lines(o.err), 1) << o.err;
  }
}

TEST(Cli, VersionNamesTheCommit) {
  const Outcome o = invoke({"--version"});
  EXPECT_EQ(o.code, kExitOk);
  EXPECT_EQ(o.out.rfind("cudalab ", 0), 0u) << o.out;
  EXPECT_NE(o.out.find("commit "), std::string::npos) << o.out;
}

TEST(CeilingsTable, PeerRowsOnlyWhereTheProbeFoundPeers) {
  harness::Ceilings c;
  const std::size_t single = ceilings_table(c).rows.size();
  c.peer_gpus = 3;
  c.peer_gbps = 393.3;
  c.peer_bidirectional_gbps = 766.0;
  c.peer_latency_us = 4.8;
  const Table t = ceilings_table(c);
  ASSERT_EQ(t.rows.size(), single + 3);
  EXPECT_EQ(t.rows[single][1], "393.3");
  EXPECT_EQ(t.rows[single + 1][1], "766.0");
  EXPECT_NE(t.rows[single][4].find("3 peer GPUs"), std::string::npos);
}

TEST(ParseParam, TakesNameEqualsAFiniteNumber) {
  EXPECT_EQ(parse_param("exclusive=1"), (std::pair<std::string, double>{"exclusive", 1.0}));
  EXPECT_EQ(parse_param("eps=1e-5").second, 1e-5);
  EXPECT_THROW(parse_param("eps"), Error);
  EXPECT_THROW(parse_param("eps=1e-5x"), Error);
  EXPECT_THROW(parse_param("eps=inf"), Error);
}

TEST(ParseBytes, TakesBytesOrABinaryUnit) {
  EXPECT_EQ(parse_bytes("21474836480", "limit"), std::uint64_t{20} << 30);
  EXPECT_EQ(parse_bytes("20GiB", "limit"), std::uint64_t{20} << 30);
  EXPECT_EQ(parse_bytes("20G", "limit"), std::uint64_t{20} << 30);
  EXPECT_EQ(parse_bytes("1.5M", "limit"), std::uint64_t{3} << 19);
  EXPECT_EQ(parse_bytes("1T", "limit"), std::uint64_t{1} << 40);
  for (const char* bad : {"", "GiB", "20GB", "20 G", "-1G", "0", "nan", "1e30"})
    EXPECT_THROW(parse_bytes(bad, "limit"), Error) << bad;
  try {
    parse_bytes("20GB", "CUDALAB_MEMORY_LIMIT");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDALAB_MEMORY_LIMIT='20GB' has an unknown unit 'GB'"), std::string::npos)
        << e.what();
  }
}

// A malformed limit is a usage error, found before the command looks for a GPU.
TEST(Cli, BenchRefusesAMalformedMemoryLimit) {
  setenv("CUDALAB_MEMORY_LIMIT", "twenty", 1);
  const Outcome o = invoke({"bench", "--only", "vecadd"});
  unsetenv("CUDALAB_MEMORY_LIMIT");
  EXPECT_EQ(o.code, kExitUsage) << o.err;
  EXPECT_NE(o.err.find("CUDALAB_MEMORY_LIMIT='twenty' is not a size"), std::string::npos) << o.err;
  EXPECT_EQ(lines(o.err), 1) << o.err;
}

TEST(ParseElementCount, AcceptsWholeNumbersAndPowersOfTwo) {
  EXPECT_EQ(parse_element_count("1"), 1);
  EXPECT_EQ(parse_element_count("1000003"), 1000003);
  EXPECT_EQ(parse_element_count("2^28"), 1 << 28);
  EXPECT_EQ(parse_element_count("2^48"), std::int64_t{1} << 48);
  EXPECT_THROW(parse_element_count("2^"), Error);
  EXPECT_THROW(parse_element_count("0x10"), Error);
  EXPECT_THROW(parse_element_count("281474976710657"), Error);  // 2^48 + 1
}

TEST(ParseShape, TakesOneSizePerDimension) {
  EXPECT_EQ(parse_shape("8192x64x8192", 3), (std::vector<std::int64_t>{8192, 64, 8192}));
  EXPECT_EQ(parse_shape("2^12x17", 2), (std::vector<std::int64_t>{4096, 17}));
  EXPECT_THROW(parse_shape("4096x4096", 3), Error);  // wrong rank
  EXPECT_THROW(parse_shape("4096x0x4", 3), Error);   // empty
  EXPECT_THROW(parse_shape("4096xx4", 3), Error);
  EXPECT_THROW(parse_shape("2^20x2^20x2^20", 3), Error);  // product past 2^56
  EXPECT_EQ(parse_shape("100000x100000x100000", 3).size(), 3u) << "refused later, by memory, with its bytes";
}

TEST(ParseSeed, DecimalAndHex) {
  EXPECT_EQ(parse_seed("42"), 42u);
  EXPECT_EQ(parse_seed("0xff"), 255u);
  EXPECT_THROW(parse_seed("-3"), Error);
  EXPECT_THROW(parse_seed("0x"), Error);
}

TEST(Splice, ReplacesOnlyMarkedBlocks) {
  const std::string doc =
      "intro\n<!-- cudalab:begin a -->\nold\n<!-- cudalab:end a -->\nkeep\n"
      "<!-- cudalab:begin b -->\nold b\n<!-- cudalab:end b -->\n";
  const std::string out = splice_generated_blocks(doc, {{"a", "new\n"}, {"zzz", "unused"}});
  EXPECT_EQ(out,
            "intro\n<!-- cudalab:begin a -->\nnew\n<!-- cudalab:end a -->\nkeep\n"
            "<!-- cudalab:begin b -->\nold b\n<!-- cudalab:end b -->\n");
  EXPECT_THROW(splice_generated_blocks("<!-- cudalab:begin a -->", {{"a", "x"}}), Error);
}

TEST(Claims, ListsAllThirtyFourWithoutAGpu) {
  const std::string path = ::testing::TempDir() + "cudalab_claims_test.json";
  {
    std::ofstream file(path);
    file << R"({"schema": "cudalab-results/2", "provenance": {"gpu_name": "Test GPU", "commit": "abcdef0123"},
      "records": [], "experiments": []})";
  }
  const Outcome text = invoke({"claims", path.c_str()});
  EXPECT_EQ(text.code, kExitOk) << text.err;
  EXPECT_NE(text.out.find("0 of 37 claims judged from 1 file(s)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not measured yet"), std::string::npos);
  const Outcome json = invoke({"claims", path.c_str(), "--json"});
  ASSERT_EQ(json.code, kExitOk);
  const auto all = nlohmann::json::parse(json.out);
  EXPECT_EQ(all.size(), 37u);
  EXPECT_EQ(all[36]["id"], "C37");
  EXPECT_TRUE(all[0]["judgements"].empty());
  // --update fills the one-line summary as well as the full table.
  const std::string page = ::testing::TempDir() + "cudalab_claims_page.md";
  {
    std::ofstream file(page);
    file << "<!-- cudalab:begin claims:summary -->\n<!-- cudalab:end claims:summary -->\n"
            "<!-- cudalab:begin claims:all -->\n<!-- cudalab:end claims:all -->\n";
  }
  ASSERT_EQ(invoke({"claims", path.c_str(), "--update", page.c_str()}).code, kExitOk);
  std::ifstream updated(page);
  const std::string text_out((std::istreambuf_iterator<char>(updated)), std::istreambuf_iterator<char>());
  EXPECT_NE(text_out.find("| claim | source | what it says | verdict |"), std::string::npos) << text_out;
  EXPECT_NE(text_out.find("| C34 | tutorial 004 |"), std::string::npos);
  EXPECT_NE(text_out.find("not measured yet |"), std::string::npos);
  std::remove(page.c_str());
  std::remove(path.c_str());
  EXPECT_EQ(invoke({"claims", path.c_str()}).code, kExitUsage) << "a missing file is a bad argument";
}

TEST(Report, RendersAResultsFileWithoutAGpu) {
  const std::string path = ::testing::TempDir() + "cudalab_report_test.json";
  {
    std::ofstream file(path);
    file << R"({"schema": "cudalab-results/2", "provenance": {"gpu_name": "Test GPU", "commit": "abc"},
      "ceilings": {"copy_kernel_gbps": 1000, "fp32_tflops": 10},
      "records": [{"op": "vecadd", "variant": "one_per_thread", "technique": "t", "role": "ladder",
                   "problem": {"dtype": "f32", "dims": [{"name": "n", "size": 1024}]}, "outcome": "passed",
                   "time_ms": {"count": 10, "median": 0.5, "min": 0.4, "max": 0.6},
                   "roofline": {"gbps": 100, "fraction": 0.1}},
                  {"op": "vecadd", "variant": "library", "technique": "t", "role": "baseline",
                   "problem": {"dtype": "f32", "dims": [{"name": "n", "size": 1024}]}, "outcome": "passed",
                   "time_ms": {"count": 10, "median": 0.75, "min": 0.7, "max": 0.8},
                   "roofline": {"gbps": 66, "fraction": 0.066}}],
      "experiments": []})";
  }
  const Outcome o = invoke({"report", path.c_str()});
  EXPECT_EQ(o.code, kExitOk) << o.err;
  EXPECT_NE(o.out.find("| one_per_thread |"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("| vecadd_f32 | n=1024 | one_per_thread | 500.00 us | 10.0% | library 750.00 us (1.50x) |"),
            std::string::npos)
      << "the baselines block: the best ladder variant against each baseline";
  EXPECT_NE(o.out.find("<!-- baselines:cudalab_report_test -->"), std::string::npos) << "named by the file";
  EXPECT_NE(o.out.find("Test GPU"), std::string::npos);
  EXPECT_NE(o.out.find("ranking:vecadd_f32"), std::string::npos) << "blocks are per configuration";
  // --update: a file that judges none of a page's claims leaves its claims block as it was.
  const std::string page = ::testing::TempDir() + "cudalab_report_page.md";
  {
    std::ofstream file(page);
    file << "<!-- cudalab:begin claims:vecadd -->\nkept\n<!-- cudalab:end claims:vecadd -->\n"
            "<!-- cudalab:begin ranking:vecadd_f32 -->\nold\n<!-- cudalab:end ranking:vecadd_f32 -->\n";
  }
  EXPECT_EQ(invoke({"report", path.c_str(), "--update", page.c_str()}).code, kExitOk);
  {
    std::ifstream file(page);
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("\nkept\n"), std::string::npos) << text;
    EXPECT_EQ(text.find("\nold\n"), std::string::npos) << "the ranking is regenerated: " << text;
  }
  std::remove(page.c_str());
  std::remove(path.c_str());
  // A schema-1 file renders only when it holds experiments alone (its records name problems the
  // old way).
  {
    std::ofstream file(path);
    file << R"({"schema": "cudalab-results/1", "records": [], "experiments": []})";
  }
  EXPECT_EQ(invoke({"report", path.c_str()}).code, kExitOk);
  {
    std::ofstream file(path);
    file << R"({"schema": "cudalab-results/1", "records": [{"op": "vecadd", "variant": "x", "problem": {"n": 5}}]})";
  }
  EXPECT_EQ(invoke({"report", path.c_str()}).code, kExitUsage);
  std::remove(path.c_str());
  EXPECT_EQ(invoke({"report", path.c_str()}).code, kExitUsage);  // now missing
}

harness::Record timed_record(const std::string& variant, harness::Role role, std::int64_t n, double median_ms) {
  harness::Record r;
  r.op = "reduce";
  r.variant = variant;
  r.role = role;
  r.distribution = "uniform";
  r.problem = harness::Problem({{"n", n}}, DType::f32);
  r.outcome = harness::Outcome::passed;
  r.timed = true;
  r.time_ms.median = median_ms;
  r.roofline_point.bound = "memory";
  r.roofline_point.gbps = 1.0 / median_ms;
  return r;
}

TEST(Report, HeadlineIsTheLargestTimedSizeOfTheFirstDistribution) {
  std::vector<harness::Record> records = {timed_record("a", harness::Role::ladder, 1000, 1.0),
                                          timed_record("a", harness::Role::ladder, 4000, 3.0)};
  harness::Record untimed = timed_record("a", harness::Role::ladder, 9000, 0.0);
  untimed.timed = false;
  untimed.outcome = harness::Outcome::skipped;
  harness::Record stress = timed_record("a", harness::Role::ladder, 16000, 9.0);
  stress.distribution = "all_equal";
  records.push_back(untimed);
  records.push_back(stress);
  EXPECT_EQ(configuration_id(records.front()), "reduce_f32");
  const Headline h = headline_problem(records, "reduce_f32");
  EXPECT_EQ(h.distribution, "uniform");
  EXPECT_EQ(h.problem.dim("n"), 4000);
}

TEST(Report, RankingPutsTheFastestFirstAndUntimedRowsLast) {
  harness::Record failed = timed_record("racy", harness::Role::broken, 100, 0.0);
  failed.timed = false;
  failed.outcome = harness::Outcome::failed;
  const std::vector<harness::Record> records = {failed, timed_record("slow", harness::Role::ladder, 100, 4.0),
                                                timed_record("lib", harness::Role::baseline, 100, 2.0),
                                                timed_record("fast", harness::Role::ladder, 100, 1.0)};
  const Table t = ranking_table(records);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.header.back(), "vs lib");
  EXPECT_EQ(t.rows[0][1], "fast");
  EXPECT_EQ(t.rows[0][6], "2.000x");  // twice the baseline's speed
  EXPECT_EQ(t.rows[1][1], "lib");
  EXPECT_EQ(t.rows[2][1], "slow");
  EXPECT_EQ(t.rows[2][6], "0.500x");
  EXPECT_EQ(t.rows[3][0], "-");
  EXPECT_EQ(t.rows[3][3], "failed verification: no time");
}

TEST(Registry, EveryExperimentHasATitledLineOrBarPlot) {
  for (const auto& e : harness::builtin_registry().experiments()) {
    ASSERT_FALSE(e.plots.empty()) << e.name << " has no plot";
    for (const auto& plot : e.plots) {
      const std::string kind = plot.value("kind", "line");
      EXPECT_TRUE(kind == "line" || kind == "bar") << e.name;
      EXPECT_FALSE(plot.value("title", "").empty()) << e.name;
    }
  }
}

TEST(LibraryArguments, VecaddValidatesBeforeTouchingTheGpu) {
  try {
    cudalab::vecadd(nullptr, nullptr, nullptr, -1);
    FAIL() << "n = -1 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
  }
  EXPECT_THROW(cudalab::vecadd(nullptr, nullptr, nullptr, 5), Error);
  EXPECT_NO_THROW(cudalab::vecadd(nullptr, nullptr, nullptr, 0));  // n == 0 does nothing
  EXPECT_THROW(cudalab::reduce_sum(static_cast<const float*>(nullptr), -1, static_cast<float*>(nullptr)), Error);
  EXPECT_THROW(cudalab::reduce_sum(static_cast<const float*>(nullptr), 5, static_cast<double*>(nullptr)), Error);
  EXPECT_THROW(cudalab::reduce_sum_workspace_bytes(-1), Error);
  EXPECT_THROW(cudalab::reduce_sum(static_cast<const float*>(nullptr), 5, static_cast<float*>(nullptr), nullptr, 0),
               Error);
  // A null workspace, however many bytes it claims: every sum needs its tickets.
  const auto* in = reinterpret_cast<const float*>(std::uintptr_t{0x10000});
  auto* out = reinterpret_cast<float*>(std::uintptr_t{0x20000});
  try {
    cudalab::reduce_sum(in, 5, out, nullptr, std::size_t{1} << 20);
    FAIL() << "a null workspace was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
  }
}

// `cudalab model` answers a request written to a file (standard input is the benchmark's route).
Outcome model(const nlohmann::json& request, std::vector<const char*> flags = {}) {
  const std::string path = ::testing::TempDir() + "cudalab_model_request.json";
  {
    std::ofstream file(path);
    file << request.dump();
  }
  flags.insert(flags.begin(), {"model", path.c_str()});
  return invoke(flags);
}

TEST(Cli, ModelGivesTheOpsProblemKeyAndWork) {
  const Outcome o = model({{"problems",
                            {{{"op", "layer_norm"}, {"dims", {{"rows", 16384}, {"features", 8192}}}, {"dtype", "bf16"}},
                             {{"op", "gemm"},
                              {"dims", {{"M", 8192}, {"N", 8192}, {"K", 8192}}},
                              {"dtype", "bf16"},
                              {"params", {{"alpha", 1}, {"beta", 0}}},
                              {"engine", "by_dtype"}}}}});
  ASSERT_EQ(o.code, kExitOk) << o.err;
  const auto answer = nlohmann::json::parse(o.out);
  const auto& norm = answer["problems"][0];
  EXPECT_EQ(norm["problem"]["key"], "dtype=bf16;rows=16384;features=8192;eps=1e-05");  // eps: the op's default
  // x, gamma and beta read in bf16; y written, and mean and rstd in fp32; 8 flops an element.
  const double m = 16384.0 * 8192, f = 8192, rows = 16384;
  EXPECT_EQ(norm["work"]["bytes_read"], 2 * (m + 2 * f));
  EXPECT_EQ(norm["work"]["bytes_written"], 2 * m + 2 * 4 * rows);
  EXPECT_EQ(norm["work"]["flops"], 8 * m);
  EXPECT_EQ(norm["unit"], "fp32_cuda_cores");
  const auto& gemm = answer["problems"][1];
  EXPECT_EQ(gemm["problem"]["key"], "dtype=bf16;M=8192;N=8192;K=8192;alpha=1;beta=0;transpose_a=0;transpose_b=0");
  const double n = 8192;
  EXPECT_EQ(gemm["work"]["bytes_read"], 2 * 2 * n * n);  // beta 0 never reads C
  EXPECT_EQ(gemm["work"]["bytes_written"], 2 * n * n);
  EXPECT_EQ(gemm["work"]["flops"], 2 * n * n * n);
  EXPECT_EQ(gemm["unit"], "bf16_tensor_cores");
  EXPECT_EQ(answer["stopping_rule"]["min_samples"], 10);
  EXPECT_EQ(answer["stopping_rule"]["target_stdrel"], 0.01);
  EXPECT_FALSE(answer.contains("provenance"));
}

TEST(Cli, ModelTimesSamplesAsTheHarnessDoes) {
  // Reads at 2500 GB/s and copies at 2000 GB/s price a written byte at 2/2000 - 1/2500 s per GB: 1666.7 GB/s.
  const nlohmann::json ceilings = {{"copy_kernel_gbps", 2000.0}, {"read_gbps", 2500.0}, {"fp32_tflops", 50.0}};
  const Outcome o = model({{"ceilings", ceilings},
                           {"problems",
                            {{{"op", "softmax"},
                              {"dims", {{"rows", 1000}, {"features", 1000}}},
                              {"samples_ms", {{3.0, 1.0, 2.0}, nlohmann::json::array({4.0})}}}}}});
  ASSERT_EQ(o.code, kExitOk) << o.err;
  const auto answer = nlohmann::json::parse(o.out);
  EXPECT_EQ(answer["ceilings"]["copy_kernel_gbps"], 2000.0);
  const auto& timings = answer["problems"][0]["timings"];
  ASSERT_EQ(timings.size(), 2u);
  EXPECT_EQ(timings[0]["time_ms"]["median"], 2.0);
  EXPECT_EQ(timings[0]["time_ms"]["count"], 3);
  EXPECT_NEAR(timings[0]["time_ms"]["stdrel"].get<double>(), 0.5, 1e-12);
  // 4 MB read in 1.6 us and 4 MB written in 2.4 us: a 4 us floor against 2 ms, at 4 GB/s.
  const auto& point = timings[0]["roofline"];
  EXPECT_NEAR(point["floor_seconds"].get<double>(), 4e-6, 1e-15);
  EXPECT_NEAR(point["fraction"].get<double>(), 2e-3, 1e-12);
  EXPECT_NEAR(point["gbps"].get<double>(), 4.0, 1e-12);
  EXPECT_EQ(point["bound"], "memory");
  EXPECT_NEAR(timings[1]["roofline"]["fraction"].get<double>(), 1e-3, 1e-12);
}

TEST(Cli, ModelRefusesABadRequestInOneLine) {
  const nlohmann::json norm = {{"op", "layer_norm"}, {"dims", {{"rows", 2}, {"features", 8}}}};
  std::vector<nlohmann::json> bad = {
      {{"op", "nothing"}, {"dims", nlohmann::json::object()}},
      {{"op", "layer_norm"}, {"dims", {{"rows", 2}}}},
      {{"op", "layer_norm"}, {"dims", {{"rows", 2}, {"cols", 8}}}},
      norm,
      norm,
      norm,
  };
  bad[3]["params"] = {{"activation", 1}};
  bad[4]["dtype"] = "i32";
  bad[5]["samples_ms"] = nlohmann::json::array({nlohmann::json::array({1.0})});  // samples without ceilings
  for (const auto& problem : bad) {
    const Outcome o = model({{"problems", nlohmann::json::array({problem})}});
    EXPECT_EQ(o.code, kExitUsage) << problem.dump();
    EXPECT_EQ(lines(o.err), 1) << o.err;
  }
  const Outcome missing = model(nlohmann::json::object(), {"--ceilings", "/nonexistent/probe.json"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_NE(missing.err.find("/nonexistent/probe.json"), std::string::npos) << missing.err;
  const Outcome unreadable = invoke({"model", "/nonexistent/request.json"});
  EXPECT_EQ(unreadable.code, kExitUsage);
  EXPECT_EQ(lines(unreadable.err), 1) << unreadable.err;
}

}  // namespace
}  // namespace cudalab::cli
