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


@requires_cuda
def test_quick_run_verifies_and_times_every_family(tmp_path):
    # An op or two of each family (every one compiles its own graphs: all of them take minutes).
    probe = tmp_path / "probe.json"
    probe.write_text(json.dumps({"schema": "cudalab-probe/1", "ceilings": committed("softmax.json")["ceilings"]}))
    out = tmp_path / "bench.json"
    chosen = ["layer_norm", "layer_norm_backward", "gemm", "histogram", "transpose"]
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
