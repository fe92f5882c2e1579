"""The C++ harness's model of each problem, asked of the ``cudalab model`` command: problem keys, work
(bytes read and written, flops), compute units, the summary and roofline of the timed samples, the
stopping rule, provenance and the probe's ceilings. The benchmark keeps no copy of any of them, so a
record it writes is computed as ``cudalab run`` computes one."""

import json
import os
import shutil
import subprocess

# Where ``cmake --build --preset release`` puts the command, from the checkout's root.
BUILT_CLI = os.path.join("build", "release", "cudalab")


class BenchError(Exception):
    """A condition the user must fix (no GPU, no ceilings, no cudalab command): one line, exit status 2."""


def find_cli(path=None):
    """The ``cudalab`` command: ``path`` (--cli), else $CUDALAB_CLI, else ``cudalab`` on PATH, else
    build/release/cudalab below the current folder."""
    named = path or os.environ.get("CUDALAB_CLI")
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise BenchError(f"no cudalab command at {named}")
        return named
    found = shutil.which("cudalab") or (BUILT_CLI if os.access(BUILT_CLI, os.X_OK) else None)
    if found is None:
        raise BenchError(
            "no cudalab command: build it (cmake --preset release && cmake --build --preset release) and run from "
            "the checkout, or pass --cli PATH or set CUDALAB_CLI"
        )
    return found


class Model:
    def __init__(self, cli):
        self.cli = cli

    def ask(self, problems=(), ceilings=None, gpu=False, ceilings_source=None):
        """The answer of ``cudalab model`` to these problems (request dicts: op, dims, dtype, params,
        engine, samples_ms), with the ceilings given (a dict), or read from ceilings_source (a probe
        file, or "cache": this GPU's); gpu adds this GPU's provenance and L2 flush size."""
        request = {"problems": list(problems)}
        if ceilings is not None:
            request["ceilings"] = ceilings
        command = [self.cli, "model", "-"] + (["--gpu"] if gpu else [])
        command += ["--ceilings", ceilings_source] if ceilings_source else []
        try:
            done = subprocess.run(command, input=json.dumps(request), capture_output=True, text=True, timeout=300)
        except OSError as error:
            raise BenchError(f"cannot run {self.cli}: {error}") from None
        if done.returncode != 0:
            why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit status {done.returncode}"
            raise BenchError(f"{self.cli} model: {why.removeprefix('cudalab: ')}")
        return json.loads(done.stdout)
