"""python -m cudalab.train: its refusals everywhere, a few steps of the torch-built model on the CPU
(the loop, the progress records and the language's floor), and on a GPU the cudalab-built model
learning the generated language."""

import json
import math
import subprocess
import sys

import pytest
import torch

import cudalab
from cudalab.train import SUCCESSOR_PROBABILITIES, MarkovLanguage, main
from conftest import requires_cuda

TINY = ["--layers", "1", "--d-model", "128", "--vocab", "97", "--seq", "32", "--batch", "4"]


@pytest.mark.parametrize("bad", [["--steps", "0"], ["--layers", "0"], ["--lr", "-1"], ["--device", "cpu"]])
def test_bad_arguments_exit_2(bad):
    assert main(bad) == 2  # the last: cudalab's ops on the CPU


def test_out_of_gpu_memory_is_one_line_and_exit_4(monkeypatch, capsys):
    import cudalab.train as command

    def too_big(args):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB\nmore detail")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(command, "_train", too_big)
    assert main(["--model", "llama-1b"]) == 4
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "Tried to allocate 9.00 GiB" in error[0] and "lower --batch" in error[0]


def test_the_language_follows_its_successor_table():
    language = MarkovLanguage(50, seed=3, device="cpu")
    tokens = language.sample(16, 40, torch.Generator().manual_seed(1))
    for row in tokens:
        for a, b in zip(row[:-1].tolist(), row[1:].tolist()):
            assert b in language.successors[a].tolist()
    assert language.entropy() == pytest.approx(-sum(p * math.log(p) for p in SUCCESSOR_PROBABILITIES))


@pytest.mark.parametrize("model", ["gpt", "gpt2-124m"])  # a named size, its width cut down
def test_torch_built_model_trains_on_the_cpu(tmp_path, model):
    out = tmp_path / "train.json"
    args = TINY + ["--model", model, "--ops", "torch", "--device", "cpu", "--dtype", "f32", "--steps", "6",
                   "--log-every", "3"]
    assert main(args + ["--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert [r["step"] for r in summary["records"]] == [3, 6]
    assert all(math.isfinite(r["loss"]) and math.isfinite(r["held_out_loss"]) for r in summary["records"])
    assert summary["tokens"] == 6 * 4 * 32 and summary["floor_nats"] < math.log(97)
    assert summary["commit"] == cudalab._C.commit  # the build that trained, for the results' provenance


def test_data_parallel_on_two_cpu_processes(tmp_path):
    # torchrun's two processes over gloo: each on its own batches, the replicas identical at the end.
    out = tmp_path / "ddp.json"
    args = TINY + ["--ops", "torch", "--device", "cpu", "--dtype", "f32", "--steps", "4", "--log-every", "2"]
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          "-m", "cudalab.train", *args, "--json", str(out)], capture_output=True, text=True, timeout=240)
    # The processes' own messages come first, torchrun's summary of the failure last.
    assert run.returncode == 0, run.stderr[:3000] + "\n...\n" + run.stderr[-1500:]
    summary = json.loads(out.read_text())
    assert summary["processes"] == 2 and summary["replicas_max_difference"] == 0.0
    assert summary["tokens"] == 2 * 4 * 4 * 32
    assert "largest difference from the first process's parameters 0" in run.stdout


@requires_cuda
def test_cudalab_built_model_learns_the_language(tmp_path):
    out = tmp_path / "train.json"
    assert main(TINY + ["--steps", "150", "--log-every", "50", "--json", str(out)]) == 0
    records = json.loads(out.read_text())["records"]
    # From log(97) = 4.57 nats (an untrained model) toward the floor of 1.21.
    assert records[-1]["held_out_loss"] < math.log(97) - 1.0
