"""python -m cudalab.bench: its command line and errors, and that its roofline, statistics and
problem keys are the C++ harness's (checked against records the C++ bench committed). On a GPU, a
quick run of every family writes a results file whose records are verified and timed."""

import json
import math
import pathlib
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend

from cudalab import bench
from conftest import requires_cuda

RESULTS = pathlib.Path(__file__).resolve().parents[2] / "results" / "nvidia-h100-80gb-hbm3"


def run_module(*args):
    return subprocess.run([sys.executable, "-m", "cudalab.bench", *args], capture_output=True, text=True, timeout=300)


def test_help_describes_the_command():
    done = run_module("--help")
    assert done.returncode == 0
    assert "usage: python -m cudalab.bench" in done.stdout and "--quick" in done.stdout


def test_unknown_family_is_refused():
    done = run_module("--only", "nothing")
    assert done.returncode == 2 and "invalid choice: 'nothing'" in done.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present: the no-GPU error cannot occur")
def test_without_a_gpu_one_line_and_a_failure_status():
    done = run_module()
    assert done.returncode == 2
    assert done.stderr == "cudalab.bench: no CUDA device: torch.cuda.is_available() is False\n"


def committed(name):
    with open(RESULTS / name) as f:
        return json.load(f)


@pytest.mark.parametrize("name, variant", [("softmax.json", "three_pass"), ("gemm.json", "cublas_gemmex")])
def test_roofline_matches_the_cpp_harness(name, variant):
    # The C++ bench stored each record's roofline point; the Python formula must give the same one.
    document = committed(name)
    record = next(r for r in document["records"] if r["variant"] == variant and "time_ms" in r)
    point = bench.roofline(document["ceilings"], record["work"], record["unit"], record["time_ms"]["median"] / 1e3)
    for key, value in record["roofline"].items():
        assert point[key] == (value if key == "bound" else pytest.approx(value, rel=1e-9)), key


def test_problem_keys_match_the_cpp_harness():
    record = next(r for r in committed("gemm.json")["records"] if r["problem"]["params"])
    problem = record["problem"]
    dtype = {v: k for k, v in bench.DTYPE_NAMES.items()}[problem["dtype"]]
    dims = [(d["name"], d["size"]) for d in problem["dims"]]
    params = [(p["name"], p["value"]) for p in problem["params"]]
    assert bench.problem_json(dims, dtype, params)["key"] == problem["key"]


def test_sampling_stops_by_the_cpp_rule():
    assert not bench.should_stop([1.0] * 9, 0.0)
    assert bench.should_stop([1.0] * 10, 0.0)  # no spread
    assert not bench.should_stop([1.0, 2.0] * 5, 0.5)  # spread, time left
    assert bench.should_stop([1.0, 2.0] * 5, 1.0)  # spread, budget spent
    summary = bench.summarize([3.0, 1.0, 2.0])
    assert summary["median"] == 2.0 and summary["count"] == 3 and summary["stdrel"] == pytest.approx(0.5)


def test_comparison_fails_outside_the_tolerance_and_names_nan():
    ref = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    assert bench.compare((ref.float(),), (ref,), 1e-5)["mismatches"] == 0
    assert bench.compare((ref.float() * 1.01,), (ref,), 1e-5)["mismatches"] == 3
    exact = bench.compare((torch.tensor([1, 2, 4]),), (torch.tensor([1, 2, 3]),), 0.0)
    assert exact["mismatches"] == 1
    broken = bench.compare((torch.tensor([1.0, math.nan, 3.0]),), (ref,), 1e-5)
    assert broken["non_finite"] == 1 and broken["rel_l2_error"] == "nan"
    json.dumps(broken, allow_nan=False)  # a results file must stay valid JSON


def test_ceilings_errors_name_the_file(tmp_path):
    missing = tmp_path / "probe.json"
    with pytest.raises(bench.BenchError, match="run `cudalab probe` on this GPU first"):
        bench.load_ceilings(str(missing))
    missing.write_text('{"schema": "something-else"}')
    with pytest.raises(bench.BenchError, match="is not a cudalab probe file"):
        bench.load_ceilings(str(missing))


def test_comparison_takes_a_tolerance_per_output_and_only_the_outputs_given():
    ref = (torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([3.0, 4.0], dtype=torch.float64))
    loose = (ref[0].float() * 1.001, ref[1].float())
    assert bench.compare(loose, ref, (1e-2, 1e-5))["mismatches"] == 0
    assert bench.compare(loose, ref, (1e-5, 1e-2))["mismatches"] == 2
    only_first = bench.compare(loose[:1], ref, (1e-2, 1e-5))  # SDPA gives O, not the log-sum-exp
    assert only_first["mismatches"] == 0 and only_first["count"] == 2
    assert only_first["tolerance"]["rtol"] == 1e-2


def test_attention_family_cases():
    assert "attention" in bench.FAMILIES
    quick = bench.FAMILIES["attention"](True)
    assert [c.op for c in quick] == ["attention"] * 4 + ["attention_backward"] * 3
    assert all(c.dims[2] == ("seq", 512) for c in quick)
    every = bench.FAMILIES["attention"](False)
    cases = [c for c in every if c.op == "attention"]
    shapes = {(bench.DTYPE_NAMES[c.dtype], *(s for _, s in c.dims), dict(c.params)["causal"]) for c in cases}
    assert {("bf16", 4, 16, 4096, 128, 0), ("bf16", 4, 16, 4096, 128, 1), ("bf16", 4, 16, 4096, 64, 0)} <= shapes
    assert ("f16", 4, 16, 4096, 128, 0) in shapes
    for seq in (512, 1024, 2048, 4096, 8192, 16384):  # the sequence sweep at batch x seq = 16384
        for causal in (0, 1):
            assert ("bf16", 16384 // seq, 16, seq, 128, causal) in shapes
    assert len(cases) == len(shapes) == 14
    for c in cases:
        batch, heads, seq, head_dim = (s for _, s in c.dims)
        causal = dict(c.params)["causal"]
        assert c.unit == bench.TENSOR_CORE_UNIT[c.dtype]
        assert c.work["flops"] == 4 * batch * heads * seq * seq * head_dim / (2 if causal else 1)
        assert c.tolerance == (bench.ATTENTION_REL_L2[c.dtype], bench.ATTENTION_LSE_REL_L2)
        variants = {v.name: v for v in c.variants}
        assert list(variants) == ["sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_math", "compile", "cudalab"]
        assert "not timed" in variants["compile"].skip_reason and variants["compile"].prepare is None
        math_skipped = bool(variants["sdpa_math"].skip_reason)
        assert math_skipped == (seq > bench.SDPA_MATH_MAX_SEQ)
        assert all(variants[n].prepare is not None for n in ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "cudalab"))
    problem = bench.problem_json(cases[0].dims, cases[0].dtype, cases[0].params)
    assert problem["key"] == "dtype=bf16;batch=4;heads=16;seq=4096;head_dim=128;causal=0;kv_heads=0"
    backward = [c for c in every if c.op == "attention_backward"]
    shapes = [(bench.DTYPE_NAMES[c.dtype], *(s for _, s in c.dims), dict(c.params)["causal"]) for c in backward]
    assert shapes == [("bf16", 4, 16, 4096, 128, 0), ("bf16", 4, 16, 4096, 128, 1), ("bf16", 4, 16, 4096, 64, 0)]
    assert len(every) == len(cases) + len(backward)
    for c in backward:
        batch, heads, seq, head_dim = (s for _, s in c.dims)
        causal = dict(c.params)["causal"]
        assert c.unit == bench.TENSOR_CORE_UNIT[c.dtype]
        assert c.work["flops"] == 10 * batch * heads * seq * seq * head_dim / (2 if causal else 1)  # 2.5x the forward
        assert c.tolerance == 2 * bench.ATTENTION_REL_L2[c.dtype]
        variants = {v.name: v for v in c.variants}
        assert list(variants) == ["sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_math", "compile", "cudalab"]
        assert bool(variants["sdpa_math"].skip_reason) and variants["compile"].prepare is None


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kv_heads", [4, 2, 1])
@pytest.mark.parametrize("max_scores", [1, 100, 1 << 27])  # a row at a time, a few rows, everything at once
def test_attention_reference_in_chunks_is_sdpa_in_float64(causal, kv_heads, max_scores):
    torch.manual_seed(7)
    q = torch.randn(2, 4, 37, 16, dtype=torch.float64)
    k, v = torch.randn(2, 2, kv_heads, 37, 16, dtype=torch.float64).unbind(0)
    o, lse = bench.attention_reference(q, k, v, scale=0.3, causal=causal, max_scores=max_scores)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.3, enable_gqa=True)
    torch.testing.assert_close(o, expected, rtol=1e-12, atol=1e-12)
    scores = q @ k.repeat_interleave(4 // kv_heads, 1).mT * 0.3
    if causal:
        scores = scores.masked_fill(torch.ones(37, 37, dtype=torch.bool).triu(1), -math.inf)
    torch.testing.assert_close(lse, torch.logsumexp(scores, -1), rtol=1e-12, atol=1e-12)
    empty = bench.attention_reference(q[:, :, :0], k[:, :, :0], v[:, :, :0], causal=causal)
    assert empty[0].shape == (2, 4, 0, 16) and empty[1].shape == (2, 4, 0)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kv_heads", [4, 2, 1])
@pytest.mark.parametrize("max_scores", [1, 100, 1 << 27])
def test_attention_backward_reference_in_chunks_is_autograd_of_sdpa_in_float64(causal, kv_heads, max_scores):
    torch.manual_seed(8)
    q, dy = torch.randn(2, 2, 4, 37, 16, dtype=torch.float64).unbind(0)
    k, v = torch.randn(2, 2, kv_heads, 37, 16, dtype=torch.float64).unbind(0)
    grads = bench.attention_backward_reference(q, k, v, dy, scale=0.3, causal=causal, max_scores=max_scores)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    o = F.scaled_dot_product_attention(*leaves, is_causal=causal, scale=0.3, enable_gqa=True)
    for got, expected in zip(grads, torch.autograd.grad(o, leaves, dy)):
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    empty = bench.attention_backward_reference(q[:, :, :0], k[:, :, :0], v[:, :, :0], dy[:, :, :0], causal=causal)
    assert [g.shape for g in empty] == [(2, 4, 0, 16), (2, kv_heads, 0, 16), (2, kv_heads, 0, 16)]


def test_sdpa_backward_variant_differentiates_the_forced_backend():
    # On CPU the math backend runs: the variant gives dq, dk, dv, each sample from the same graph.
    inputs = {name: torch.randn(1, 2, 8, 16) for name in ("q", "k", "v", "dy")}
    run = bench.sdpa(SDPBackend.MATH, True, lambda fn: bench.backward(fn, ["q", "k", "v"]))(inputs)
    first, again = run(), run()
    assert [g.shape for g in first] == [(1, 2, 8, 16)] * 3
    for a, b in zip(first, again):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_a_refusing_sdpa_backend_says_why_in_one_line():
    # On CPU tensors cuDNN's backend cannot run: the variant raises its reason, which run_case
    # records as the skip reason (first line).
    inputs = {name: torch.randn(1, 2, 8, 16) for name in ("q", "k", "v")}
    with pytest.raises(RuntimeError, match="SDPA's CUDNN_ATTENTION backend refuses this case: .") as caught:
        bench.sdpa(SDPBackend.CUDNN_ATTENTION, False)(inputs)
    assert "\n" not in str(caught.value)
    run = bench.sdpa(SDPBackend.MATH, True)(inputs)  # the math backend runs anywhere
    (o,) = run()
    assert o.shape == (1, 2, 8, 16)


@requires_cuda
def test_quick_run_verifies_and_times_every_family(tmp_path):
    # An op or two of each family (every one compiles its own graphs: all of them take minutes).
    probe = tmp_path / "probe.json"
    probe.write_text(json.dumps({"schema": "cudalab-probe/1", "ceilings": committed("softmax.json")["ceilings"]}))
    out = tmp_path / "bench.json"
    chosen = ["layer_norm", "layer_norm_backward", "gemm", "histogram", "transpose", "attention", "attention_backward"]
    assert bench.main(["--quick", "--ceilings", str(probe), "--out", str(out), *(f"--op={op}" for op in chosen)]) == 0
    document = json.loads(out.read_text())
    assert document["schema"] == "cudalab-results/2"
    assert document["provenance"]["torch_version"] == torch.__version__
    records = document["records"]
    assert {r["op"] for r in records} == {"pytorch." + op for op in chosen}
    for r in records:
        assert r["outcome"] in ("passed", "skipped"), r
        if r["variant"] == "cudalab":
            assert r["outcome"] == "passed" and r["time_ms"]["count"] >= bench.MIN_SAMPLES, r
