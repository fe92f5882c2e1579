"""cudalab's kernels as PyTorch custom ops (``torch.ops.cudalab.*``), with typed wrappers in
:mod:`cudalab.ops`. Every op runs on CUDA tensors on the current stream; CPU tensors are refused."""

import torch  # noqa: F401  (loads libtorch, libc10_cuda and torch's libcudart before _C needs them)

try:
    from . import _C  # noqa: F401  (loading it registers the ops)
except ImportError as error:
    raise ImportError(
        f"cudalab's extension did not load with torch {torch.__version__} ({error}); it must be built against "
        "the torch it runs with: pip install --no-build-isolation . in this environment"
    ) from error


def _release(version):
    return tuple(version.split("+")[0].split(".")[:2])


# torch's C++ ABI is kept within a minor release only.
if _release(_C.torch_version) != _release(torch.__version__):
    raise ImportError(
        f"cudalab was built against torch {_C.torch_version} and runs with torch {torch.__version__}: rebuild it "
        "in this environment (pip install --no-build-isolation .)"
    )

from . import distributed, nn, ops, optim  # noqa: F401  (fake kernels and autograd; drop-in modules)
from .distributed import all_reduce  # noqa: F401  (one process per GPU; distributed.close_all frees its buffers)
from .hf import patch  # noqa: F401  (Hugging Face models on cudalab's ops)
from . import _inductor

_inductor.install()  # torch.compile lowers each op as a plain extern call

__version__ = "0.1.0"
