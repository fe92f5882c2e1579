"""python -m cudalab.bench: its command line and errors, its cases (each a problem the C++ registry
knows, whose work and roofline the `cudalab model` command gives), its comparisons and float64
references. On a GPU, a quick run of every family writes a results file whose records are verified
and timed, and that `cudalab report` renders."""

import json
import math
import pathlib
import re
import subprocess
import sys
import time

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend

from cudalab.bench.cases import FAMILIES
from cudalab.bench.cases.attention import (
    ATTENTION_LSE_REL_L2,
    ATTENTION_REL_L2,
    SDPA_MATH_MAX_SEQ,
    attention_backward_reference,
    attention_reference,
    sdpa,
)
from cudalab.bench.cases.common import DTYPE_NAMES, backward
from cudalab.bench.model import BenchError, Model, find_cli
from cudalab.bench.records import compare
from cudalab.bench.timing import enough_samples, sleep_cycles
from cudalab.bench.mlp import _time_interleaved
from cudalab.bench import command_line
from conftest import requires_cuda

RESULTS = pathlib.Path(__file__).resolve().parents[2] / "results" / "nvidia-h100-80gb-hbm3"


def run_module(*args):
    return subprocess.run([sys.executable, "-m", "cudalab.bench", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def model():
    """The cudalab command the benchmark would use ($CUDALAB_CLI, PATH or build/release/cudalab)."""
    try:
        return Model(find_cli())
    except BenchError as error:
        pytest.skip(str(error))


def test_help_describes_the_command():
    done = run_module("--help")
    assert done.returncode == 0
    assert "usage: python -m cudalab.bench" in done.stdout and "--quick" in done.stdout and "--cli" in done.stdout


def test_unknown_family_is_refused():
    done = run_module("--only", "nothing")
    assert done.returncode == 2 and "invalid choice: 'nothing'" in done.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present: the no-GPU error cannot occur")
def test_without_a_gpu_one_line_and_a_failure_status():
    done = run_module()
    assert done.returncode == 2
    assert done.stderr == "cudalab.bench: no CUDA device: torch.cuda.is_available() is False\n"


def run_bench(module, *args):
    return subprocess.run(
        [sys.executable, "-m", f"cudalab.bench.{module}", *args], capture_output=True, text=True, timeout=300
    )


# The standalone benchmark commands: each module, an option its --help names, a size to set to 0
# and the sizes its error lists.
BENCH_COMMANDS = [
    ("mlp", "--activation", "--hidden", "--tokens, --d-model, --hidden and --repeats"),
    ("lm_head", "--vocab", "--vocab", "--tokens, --hidden, --vocab and --steps"),
]


@pytest.mark.parametrize("module, option, size, sizes", BENCH_COMMANDS)
def test_bench_commands_help_and_bad_sizes(module, option, size, sizes):
    done = run_bench(module, "--help")
    assert done.returncode == 0 and "--tokens" in done.stdout and option in done.stdout
    done = run_bench(module, size, "0")
    assert done.returncode == 2
    assert done.stderr == f"cudalab.bench.{module}: {sizes} must be positive\n"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present: the no-GPU error cannot occur")
@pytest.mark.parametrize("module", [command[0] for command in BENCH_COMMANDS])
def test_bench_commands_without_a_gpu_one_line_and_status_3(module):
    done = run_bench(module, "--tokens", "8")
    assert done.returncode == 3
    assert done.stderr == f"cudalab.bench.{module}: needs a CUDA GPU; torch sees none\n"


@requires_cuda
def test_mlp_checks_every_way_and_times_it():
    done = run_bench("mlp", "--tokens", "512", "--d-model", "256", "--repeats", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FAILED" not in done.stdout and done.stdout.count(" us ") >= 9


def test_a_missing_cudalab_command_is_named(tmp_path, monkeypatch):
    with pytest.raises(BenchError, match=re.escape(f"no cudalab command at {tmp_path / 'cudalab'}")):
        find_cli(str(tmp_path / "cudalab"))
    monkeypatch.setenv("CUDALAB_CLI", str(tmp_path / "elsewhere"))
    with pytest.raises(BenchError, match="no cudalab command at .*elsewhere"):
        find_cli()


@pytest.mark.parametrize("quick", [True, False])
def test_every_case_is_a_problem_of_the_cpp_registry(model, quick):
    cases = [c for family in sorted(FAMILIES) for c in FAMILIES[family](quick)]
    answers = model.ask([c.request() for c in cases])["problems"]
    assert len(answers) == len(cases)
    for case, answer in zip(cases, answers):
        assert answer["op"] == case.op
        problem = answer["problem"]
        assert problem["dtype"] == DTYPE_NAMES[case.dtype]
        assert [(d["name"], d["size"]) for d in problem["dims"]] == case.dims
        given = {p["name"]: p["value"] for p in problem["params"]}
        assert all(given[name] == value for name, value in case.params), (case.op, problem["key"])


def by_key(model, quick=False):
    cases = [c for family in sorted(FAMILIES) for c in FAMILIES[family](quick)]
    return {(a["op"], a["problem"]["key"]): a for a in model.ask([c.request() for c in cases])["problems"]}


def test_the_cases_work_is_the_hand_computed_traffic(model):
    answers = by_key(model)
    m, f, r = 16384 * 8192, 8192, 16384
    norm = answers["layer_norm", "dtype=bf16;rows=16384;features=8192;eps=1e-05"]  # LayerNorm: x, gamma, beta in; y, mean, rstd out
    assert norm["work"] == {"bytes_read": 2 * (m + 2 * f), "bytes_written": 2 * m + 8 * r, "flops": 8 * m}
    assert norm["unit"] == "fp32_cuda_cores"
    n = 8192
    gemm = answers["gemm", "dtype=f16;M=8192;N=8192;K=8192;alpha=1;beta=0;transpose_a=0;transpose_b=0"]  # a @ b: C never read
    assert gemm["work"] == {"bytes_read": 4 * n * n, "bytes_written": 2 * n * n, "flops": 2 * n**3}
    assert gemm["unit"] == "fp16_tensor_cores"
    assert answers["gemm", "dtype=f32;M=8192;N=8192;K=8192;alpha=1;beta=0;transpose_a=0;transpose_b=0"]["unit"] == "fp32_cuda_cores"
    n = 1 << 28
    select = answers["select_if", f"dtype=i32;n={n};selected_percent=50"]  # 17 of the 33 values -16..16 kept, and the count
    assert select["work"]["bytes_written"] == pytest.approx(4 * n * 17 / 33 + 8, rel=1e-15)
    assert select["unit"] == "integer"
    b, h, s, d = 4, 16, 4096, 128
    key = f"dtype=bf16;batch={b};heads={h};seq={s};head_dim={d};causal=1;kv_heads=0;window_left=-1;window_right=-1"
    causal = answers["attention", key]
    assert causal["work"]["flops"] == 4 * b * h * s * s * d / 2  # two products over half the pairs
    assert causal["work"]["bytes_written"] == 2 * b * h * s * d + 4 * b * h * s  # O in bf16, L in fp32
    assert causal["unit"] == "bf16_tensor_cores"
    assert answers["attention_backward", key]["work"]["flops"] == 2.5 * causal["work"]["flops"]  # FlashAttention's
    # A causal window of 4096 keys at 16384 (Mistral's): row i sees min(i + 1, 4096) keys.
    window = "dtype=bf16;batch=1;heads=32;seq=16384;head_dim=128;causal=1;kv_heads=8;window_left=4095;window_right=-1"
    pairs = 4096 * 4097 // 2 + (16384 - 4096) * 4096
    assert answers["attention", window]["work"]["flops"] == 4 * 32 * pairs * 128


def test_a_case_the_registry_refuses_is_named(model):
    with pytest.raises(BenchError, match="layer_norm has no parameter|no parameter 'activation'"):
        model.ask([{"op": "layer_norm", "dims": {"rows": 2, "features": 8}, "params": {"activation": 1}}])
    with pytest.raises(BenchError, match="no cudalab probe file|cannot read"):
        model.ask(ceilings_source="/nonexistent/probe.json")


def test_timings_are_the_harness_summary_and_roofline(model):
    # Reads at 2500 GB/s and copies at 2000 GB/s price writes at 1666.7 GB/s: softmax's 4 MB read and
    # 4 MB written take 1.6 + 2.4 us, 0.2% of a 2 ms median.
    ceilings = {"copy_kernel_gbps": 2000.0, "read_gbps": 2500.0, "fp32_tflops": 50.0}
    request = {"op": "softmax", "dims": {"rows": 1000, "features": 1000}, "samples_ms": [[3.0, 1.0, 2.0]]}
    answer = model.ask([request], ceilings=ceilings)
    assert answer["ceilings"]["read_gbps"] == 2500.0
    (timing,) = answer["problems"][0]["timings"]
    assert timing["time_ms"]["median"] == 2.0 and timing["time_ms"]["stdrel"] == pytest.approx(0.5)
    assert timing["roofline"]["fraction"] == pytest.approx(2e-3)
    assert timing["roofline"]["gbps"] == pytest.approx(4.0)


def test_sampling_stops_by_the_harness_rule(model):
    rule = model.ask()["stopping_rule"]
    fewest = rule["min_samples"]
    assert not enough_samples([1.0] * (fewest - 1), 0.0, rule)
    assert enough_samples([1.0] * fewest, 0.0, rule)  # no spread
    assert not enough_samples([1.0, 2.0] * fewest, 0.0, rule)  # spread, time left
    assert enough_samples([1.0, 2.0] * fewest, rule["budget_seconds"], rule)  # spread, budget spent
    assert enough_samples([1.0, 2.0] * rule["max_samples"], 0.0, rule)


def test_sleep_outlasts_the_hosts_enqueueing():
    assert sleep_cycles(0.0) == 2_000_000  # about 1 ms on an H100
    assert sleep_cycles(1e-4) == 2_000_000
    assert sleep_cycles(0.01) == 70_000_000  # twice 10 ms at the 3.5 GHz ceiling


@requires_cuda
def test_interleaved_times_are_the_gpus_not_the_hosts():
    # A call whose host side takes 3 ms and whose GPU side takes microseconds: with the sleep too
    # short to cover the host, its time would read about 3 ms.
    x = torch.zeros(1024, device="cuda")

    def slow_host():
        time.sleep(0.003)
        x.add_(1)

    row = {"part": "test", "variant": "slow_host"}
    _time_interleaved([(row, slow_host)], 5)
    assert row["enqueue_ms"] >= 3.0
    assert 0 < row["median_ms"] < 0.5, row
    assert "dropped_samples" not in row  # the sleep, sized from the warm calls, covered every call


def test_comparison_fails_outside_the_tolerance_and_names_nan():
    ref = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    assert compare((ref.float(),), (ref,), 1e-5)["mismatches"] == 0
    assert compare((ref.float() * 1.01,), (ref,), 1e-5)["mismatches"] == 3
    exact = compare((torch.tensor([1, 2, 4]),), (torch.tensor([1, 2, 3]),), 0.0)
    assert exact["mismatches"] == 1
    broken = compare((torch.tensor([1.0, math.nan, 3.0]),), (ref,), 1e-5)
    assert broken["non_finite"] == 1 and broken["rel_l2_error"] == "nan"
    json.dumps(broken, allow_nan=False)  # a results file must stay valid JSON


def test_comparison_takes_a_tolerance_per_output_and_only_the_outputs_given():
    ref = (torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([3.0, 4.0], dtype=torch.float64))
    loose = (ref[0].float() * 1.001, ref[1].float())
    assert compare(loose, ref, (1e-2, 1e-5))["mismatches"] == 0
    assert compare(loose, ref, (1e-5, 1e-2))["mismatches"] == 2
    only_first = compare(loose[:1], ref, (1e-2, 1e-5))  # SDPA gives O, not the log-sum-exp
    assert only_first["mismatches"] == 0 and only_first["count"] == 2
    assert only_first["tolerance"]["rtol"] == 1e-2


def test_attention_family_cases():
    assert "attention" in FAMILIES
    quick = FAMILIES["attention"](True)
    assert [c.op for c in quick] == ["attention"] * 4 + ["attention_backward"] * 3
    assert all(c.dims[2] == ("seq", 512) for c in quick)
    every = FAMILIES["attention"](False)
    cases = [c for c in every if c.op == "attention"]
    shapes = {(DTYPE_NAMES[c.dtype], *(s for _, s in c.dims), dict(c.params)["causal"]) for c in cases}
    assert {("bf16", 4, 16, 4096, 128, 0), ("bf16", 4, 16, 4096, 128, 1), ("bf16", 4, 16, 4096, 64, 0)} <= shapes
    assert ("f16", 4, 16, 4096, 128, 0) in shapes
    for seq in (256, 512, 1024, 2048, 4096, 8192, 16384, 32768):  # the sweep at batch x seq = 16384
        for head_dim in (64, 128):
            for causal in (0, 1):
                assert ("bf16", max(16384 // seq, 1), 16, seq, head_dim, causal) in shapes
    for head_dim, seqs in ((256, (512, 2048, 8192)), (96, (1024, 4096))):  # the other head_dims
        for seq in seqs:
            for causal in (0, 1):
                assert ("bf16", 16384 // seq, 16, seq, head_dim, causal) in shapes
    assert len(cases) == len(shapes) == 8 * 2 * 2 + 5 * 2 + 1
    for c in cases:
        seq = dict(c.dims)["seq"]
        assert c.engine == "by_dtype"
        assert c.tolerance == (ATTENTION_REL_L2[c.dtype], ATTENTION_LSE_REL_L2)
        variants = {v.name: v for v in c.variants}
        assert list(variants) == ["sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_math", "compile", "cudalab"]
        assert "not timed" in variants["compile"].skip_reason and variants["compile"].prepare is None
        math_skipped = bool(variants["sdpa_math"].skip_reason)
        assert math_skipped == (seq > SDPA_MATH_MAX_SEQ)
        assert all(variants[n].prepare is not None for n in ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "cudalab"))
    backward_cases = [c for c in every if c.op == "attention_backward"]
    shapes = [(DTYPE_NAMES[c.dtype], *(s for _, s in c.dims), dict(c.params)["causal"]) for c in backward_cases]
    assert shapes == [
        ("bf16", 16384 // seq, 16, seq, head_dim, causal)
        for head_dim in (128, 64)
        for seq in (1024, 2048, 4096, 8192, 16384)
        for causal in (0, 1)
    ] + [("bf16", 16384 // seq, 16, seq, 96, causal) for seq in (1024, 4096) for causal in (0, 1)]
    assert len(every) == len(cases) + len(backward_cases)
    for c in backward_cases:
        assert c.tolerance == 2 * ATTENTION_REL_L2[c.dtype]
        variants = {v.name: v for v in c.variants}
        assert list(variants) == [
            "sdpa_flash",
            "sdpa_efficient",
            "sdpa_cudnn",
            "sdpa_math",
            "compile",
            "cudalab",
            "cudalab_deterministic",
        ]
        assert bool(variants["sdpa_math"].skip_reason) == (dict(c.dims)["seq"] > SDPA_MATH_MAX_SEQ)
        assert variants["compile"].prepare is None
        assert variants["cudalab_deterministic"].prepare is not None


def test_varlen_family_cases():
    # Equal lengths (the dense problem, forward and backward), each with the dense rows, SDPA on
    # nested tensors and the varlen op.
    quick, every = FAMILIES["varlen"](True), FAMILIES["varlen"](False)
    assert [c.op for c in quick] == ["attention", "attention_backward"]
    assert [c.op for c in every] == ["attention"] * 4 + ["attention_backward"] * 4
    for c in every:
        assert dict(c.params)["causal"] == 1 and c.engine == "by_dtype"
        names = [v.name for v in c.variants]
        assert names[-2:] == ["sdpa_jagged", "cudalab_varlen"] and "cudalab" in names


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kv_heads", [4, 2, 1])
@pytest.mark.parametrize("max_scores", [1, 100, 1 << 27])  # a row at a time, a few rows, everything at once
def test_attention_reference_in_chunks_is_sdpa_in_float64(causal, kv_heads, max_scores):
    torch.manual_seed(7)
    q = torch.randn(2, 4, 37, 16, dtype=torch.float64)
    k, v = torch.randn(2, 2, kv_heads, 37, 16, dtype=torch.float64).unbind(0)
    o, lse = attention_reference(q, k, v, scale=0.3, causal=causal, max_scores=max_scores)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.3, enable_gqa=True)
    torch.testing.assert_close(o, expected, rtol=1e-12, atol=1e-12)
    scores = q @ k.repeat_interleave(4 // kv_heads, 1).mT * 0.3
    if causal:
        scores = scores.masked_fill(torch.ones(37, 37, dtype=torch.bool).triu(1), -math.inf)
    torch.testing.assert_close(lse, torch.logsumexp(scores, -1), rtol=1e-12, atol=1e-12)
    empty = attention_reference(q[:, :, :0], k[:, :, :0], v[:, :, :0], causal=causal)
    assert empty[0].shape == (2, 4, 0, 16) and empty[1].shape == (2, 4, 0)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kv_heads", [4, 2, 1])
@pytest.mark.parametrize("max_scores", [1, 100, 1 << 27])
def test_attention_backward_reference_in_chunks_is_autograd_of_sdpa_in_float64(causal, kv_heads, max_scores):
    torch.manual_seed(8)
    q, dy = torch.randn(2, 2, 4, 37, 16, dtype=torch.float64).unbind(0)
    k, v = torch.randn(2, 2, kv_heads, 37, 16, dtype=torch.float64).unbind(0)
    grads = attention_backward_reference(q, k, v, dy, scale=0.3, causal=causal, max_scores=max_scores)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    o = F.scaled_dot_product_attention(*leaves, is_causal=causal, scale=0.3, enable_gqa=True)
    for got, expected in zip(grads, torch.autograd.grad(o, leaves, dy)):
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    empty = attention_backward_reference(q[:, :, :0], k[:, :, :0], v[:, :, :0], dy[:, :, :0], causal=causal)
    assert [g.shape for g in empty] == [(2, 4, 0, 16), (2, kv_heads, 0, 16), (2, kv_heads, 0, 16)]


def test_sdpa_backward_variant_differentiates_the_forced_backend():
    # On CPU the math backend runs: the variant gives dq, dk, dv, each sample from the same graph.
    inputs = {name: torch.randn(1, 2, 8, 16) for name in ("q", "k", "v", "dy")}
    run = sdpa(SDPBackend.MATH, True, lambda fn: backward(fn, ["q", "k", "v"]))(inputs)
    first, again = run(), run()
    assert [g.shape for g in first] == [(1, 2, 8, 16)] * 3
    for a, b in zip(first, again):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_a_refusing_sdpa_backend_says_why_in_one_line():
    # On CPU tensors cuDNN's backend cannot run: the variant raises its reason, which run_case
    # records as the skip reason (first line).
    inputs = {name: torch.randn(1, 2, 8, 16) for name in ("q", "k", "v")}
    with pytest.raises(RuntimeError, match="SDPA's CUDNN_ATTENTION backend refuses this case: .") as caught:
        sdpa(SDPBackend.CUDNN_ATTENTION, False)(inputs)
    assert "\n" not in str(caught.value)
    run = sdpa(SDPBackend.MATH, True)(inputs)  # the math backend runs anywhere
    (o,) = run()
    assert o.shape == (1, 2, 8, 16)


@requires_cuda
def test_quick_run_verifies_and_times_every_family(tmp_path, model):
    # An op or two of each family (every one compiles its own graphs: all of them take minutes).
    probe = tmp_path / "probe.json"
    ceilings = json.loads((RESULTS / "softmax.json").read_text())["ceilings"]
    probe.write_text(json.dumps({"schema": "cudalab-probe/1", "ceilings": ceilings}))
    out = tmp_path / "bench.json"
    chosen = ["layer_norm", "layer_norm_backward", "gemm", "histogram", "transpose", "attention", "attention_backward"]
    arguments = ["--quick", "--ceilings", str(probe), "--out", str(out), "--cli", model.cli]
    assert command_line.main(arguments + [f"--op={op}" for op in chosen]) == 0
    document = json.loads(out.read_text())
    assert document["schema"] == "cudalab-results/2"
    assert document["provenance"]["torch_version"] == torch.__version__
    records = document["records"]
    assert {r["op"] for r in records} == {"pytorch." + op for op in chosen}
    fewest = model.ask()["stopping_rule"]["min_samples"]
    for r in records:
        assert r["outcome"] in ("passed", "skipped"), r
        if r["variant"] == "cudalab":
            assert r["outcome"] == "passed" and r["time_ms"]["count"] >= fewest, r
            assert 0 < r["roofline"]["fraction"] < 2, r
    report = subprocess.run([model.cli, "report", str(out)], capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    assert "pytorch.layer_norm_f32_eps1e-05" in report.stdout
