"""What every family's cases are made of: a case is one problem of a C++ op (its name, dims, dtype and
parameters, which ``cudalab model`` turns into the problem key and work), its inputs, a float64
reference and the variants timed on it."""

import dataclasses
from typing import Callable

import torch

# Relative L2 of an output against float64, by dtype: cudalab's accuracy targets for the fused ops. A
# gradient is allowed twice that (one more fp32 reduction before the rounding to the dtype).
REL_L2 = {torch.float32: 1e-5, torch.bfloat16: 4e-3, torch.float16: 1e-3}
DTYPE_NAMES = {
    torch.float32: "f32",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
    torch.int32: "i32",
    torch.uint8: "u8",
}
COMPILE_TECHNIQUE = "torch.compile(fullgraph=True) of the eager code (Inductor, default mode)"


@dataclasses.dataclass
class Variant:
    name: str  # "eager", "compile", "cudalab", or an SDPA backend
    technique: str
    # prepare(inputs) -> a callable that runs the variant once and returns its outputs (a tuple).
    # It runs outside the timing: it builds the forward graph a backward needs, for instance.
    prepare: Callable
    skip_reason: str = ""


@dataclasses.dataclass
class Case:
    op: str  # the C++ op whose problem this is (`cudalab list`): records name it "pytorch.<op>"
    dims: list  # (name, size) in the op's order
    dtype: torch.dtype
    params: list  # (name, value); the op's defaults for the rest
    make_inputs: Callable  # (generator) -> dict of tensors
    reference: Callable  # (inputs) -> tuple of float64 (or exact) outputs
    variants: list
    tolerance: object  # relative L2 of each output (a float, or a tuple: one per output); 0: exact
    distribution: str = "normal"
    # What runs the arithmetic, as the C++ variants name it: "cuda_cores", or "by_dtype" (tensor cores
    # for bf16/f16) where the cudalab op and its baselines pick from the dtype.
    engine: str = "cuda_cores"

    def request(self, samples_ms=()):
        """The problem as ``cudalab model`` takes it, with the timed variants' samples."""
        return {
            "op": self.op,
            "dims": dict(self.dims),
            "dtype": DTYPE_NAMES[self.dtype],
            "params": dict(self.params),
            "engine": self.engine,
            "samples_ms": list(samples_ms),
        }

    def label(self):
        text = f"{self.op} {DTYPE_NAMES[self.dtype]} " + "x".join(str(s) for _, s in self.dims)
        return text + "".join(f" {n}={v:g}" for n, v in self.params)


# Inputs that are incoming gradients, one per output of the forward in order (the add_ norms' y
# and h), not arguments of it: each its own tensor, so a backward reads as many bytes as it counts.
GRADIENTS = ("dy", "dh")


def _arguments(inputs):
    return {k: v for k, v in inputs.items() if k not in GRADIENTS}


def forward(fn):
    """A variant that calls fn(**inputs) (its outputs a tensor or a tuple); the gradients among the
    inputs (GRADIENTS) are for the backward cases."""

    def prepare(inputs):
        args = _arguments(inputs)

        def run():
            out = fn(**args)
            return out if isinstance(out, tuple) else (out,)

        return run

    return prepare


def backward(fn, leaves):
    """A variant that times only the backward of fn(**inputs): the forward runs once outside the
    timing and each sample differentiates its graph again (retain_graph), as training would."""

    def prepare(inputs):
        args = {k: (v.detach().requires_grad_() if k in leaves else v) for k, v in _arguments(inputs).items()}
        y = fn(**args)
        dy = _gradients_of(y, inputs)
        wrt = [args[k] for k in leaves]
        return lambda: torch.autograd.grad(y, wrt, dy, retain_graph=True)

    return prepare


def _gradients_of(y, inputs, cast=lambda t: t):
    """The incoming gradient for each of fn's outputs, GRADIENTS in order."""
    if not isinstance(y, tuple):
        return cast(inputs["dy"])
    return tuple(cast(inputs[name]) for name in GRADIENTS[: len(y)])


def reference_backward(fn, leaves):
    def reference(inputs):
        args = {k: v.double().requires_grad_(k in leaves) for k, v in _arguments(inputs).items()}
        y = fn(**args)
        return torch.autograd.grad(y, [args[k] for k in leaves], _gradients_of(y, inputs, torch.Tensor.double))

    return reference


def reference_forward(fn):
    def reference(inputs):
        out = fn(**{k: v.double() if v.is_floating_point() else v for k, v in _arguments(inputs).items()})
        return out if isinstance(out, tuple) else (out,)

    return reference


def normal(generator, shape, dtype, scale=2.0, shift=0.5):
    return (torch.randn(shape, device="cuda", generator=generator) * scale + shift).to(dtype)


def three_ways(eager_technique, eager, cudalab_technique, cudalab, wrap, compile_note=""):
    """A case's variants: eager PyTorch, torch.compile of that same code, and the cudalab op, each
    made runnable by wrap (forward, or backward with the leaves to differentiate)."""
    compiled = torch.compile(eager, fullgraph=True, dynamic=False)
    return [
        Variant("eager", eager_technique, wrap(eager)),
        Variant("compile", COMPILE_TECHNIQUE + compile_note, wrap(compiled)),
        Variant("cudalab", cudalab_technique, wrap(cudalab)),
    ]


def not_compiled(eager_technique, eager, cudalab_technique, cudalab):
    """The variants of an op whose output's size depends on the data, which torch.compile with
    fullgraph=True cannot trace: eager and cudalab, the compile row skipped with that reason."""
    why = "not compiled: the output's size depends on the data, which fullgraph=True cannot trace"
    return [
        Variant("eager", eager_technique, forward(eager)),
        Variant("compile", COMPILE_TECHNIQUE, None, why),
        Variant("cudalab", cudalab_technique, forward(cudalab)),
    ]
