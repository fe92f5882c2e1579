"""cudalab's kernels as PyTorch custom ops (``torch.ops.cudalab.*``), with typed wrappers in
:mod:`cudalab.ops`. Every op runs on CUDA tensors on the current stream; CPU tensors are refused."""

import torch  # noqa: F401  (loads libtorch, libc10_cuda and torch's libcudart before _C needs them)

from . import _C  # noqa: F401  (loading it registers the ops)
from . import nn, ops  # noqa: F401  (fake kernels and autograd; drop-in modules)

__version__ = "0.1.0"
