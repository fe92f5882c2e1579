"""torch.compile: every cudalab op gets an explicit fallback lowering (Inductor calls the op as an
extern kernel, as it would anyway).

Without one, Inductor takes its implicit-fallback path for each op, which formats the op's
arguments as text for a log line before checking whether the log is on. That text is the whole IR
behind the arguments, and where one op feeds two inputs of the next (add_layer_norm's normed output
and residual stream) it doubles with each layer: the GPT of ``python -m cudalab.models`` did not
finish compiling in 9 minutes. With the fallbacks registered, that path is never taken.

Importing Inductor's lowering module takes about 1.5 s, so the fallbacks are registered when
something else imports it (torch.compile's first Inductor compile), not when cudalab is imported.
"""

import importlib.abc
import importlib.util
import sys

import torch

_LOWERING = "torch._inductor.lowering"


def cudalab_ops():
    """Every overload of every op in the cudalab namespace."""
    for qualified in sorted(torch._C._dispatch_get_all_op_names()):
        namespace, _, name = qualified.partition("::")
        if namespace == "cudalab":
            base, _, overload = name.partition(".")
            yield getattr(getattr(torch.ops.cudalab, base), overload or "default")


def _register_fallbacks(lowering):
    # Ops that Inductor decomposes (the composite ones, such as linear) never reach a lowering.
    for op in cudalab_ops():
        if op not in lowering.lowerings and op not in lowering.decompositions:
            lowering.make_fallback(op, warn=False)


class _AfterLoweringImport(importlib.abc.MetaPathFinder):
    """Finds Inductor's lowering module once, through the other finders, and registers the
    fallbacks right after the module runs."""

    def find_spec(self, name, path=None, target=None):
        if name != _LOWERING:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _register_fallbacks(module)

        spec.loader.exec_module = exec_module
        return spec


def install():
    if _LOWERING in sys.modules:
        _register_fallbacks(sys.modules[_LOWERING])
    elif not any(isinstance(finder, _AfterLoweringImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterLoweringImport())
