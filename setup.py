"""Builds cudalab._C: the torch.library bindings in csrc/, linked against the libcudalab.a that the
project's CMake builds (every kernel compiled once, by CMake, with its own sm_90 / sm_90a split).

    cmake --preset release && cmake --build --preset release
    pip install --no-build-isolation --no-deps .        # scripts/python-test does this in build/venv

CUDALAB_LIBRARY names another libcudalab.a (built with position-independent code, as CMakeLists.txt
sets). The extension holds .cpp files only, so TORCH_CUDA_ARCH_LIST does not matter to it; it is
set anyway, because torch's arch detection fails (IndexError) on a machine without a GPU.
"""

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup

os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0a")
from torch.utils.cpp_extension import BuildExtension, CUDAExtension  # noqa: E402

root = Path(__file__).resolve().parent
library = Path(os.environ.get("CUDALAB_LIBRARY", root / "build" / "release" / "libcudalab.a"))
(root / "build" / "python").mkdir(parents=True, exist_ok=True)  # egg_base must exist
if not library.is_file():
    sys.exit(f"setup.py: {library} not found: build the library first "
             "(cmake --preset release && cmake --build --preset release) or set CUDALAB_LIBRARY")


def checkout():
    """The commit this package is built from, and whether the checkout has uncommitted changes
    (what `cudalab --version` says of the C++ build); "unknown" outside a git checkout."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True)
        return commit.stdout.strip(), int(bool(status.stdout.strip()))
    except (OSError, subprocess.CalledProcessError):
        return "unknown", 0


commit, dirty = checkout()
setup(
    ext_modules=[
        CUDAExtension(
            "cudalab._C",
            sorted(str(p.relative_to(root)) for p in (root / "csrc").glob("*.cpp")),
            include_dirs=[str(root / "include")],
            extra_objects=[str(library)],
            # setuptools relinks only when a listed dependency is newer than the extension; the
            # static library is not a source, so a rebuilt libcudalab.a must be named here.
            depends=[str(library)],
            # Keep the static library's symbols out of the extension's exports; strip the rest.
            extra_link_args=["-Wl,--exclude-libs,ALL", "-s"],
            extra_compile_args={"cxx": ["-O2", "-std=c++17"]},
            define_macros=[("CUDALAB_COMMIT", f'"{commit}"'), ("CUDALAB_DIRTY", str(dirty))],
            py_limited_api=True,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    # One wheel for every CPython from 3.10 (the limited API); setuptools' build folders under
    # build/python, beside build/release.
    options={
        "bdist_wheel": {"py_limited_api": "cp310"},
        "build": {"build_base": "build/python"},
        "egg_info": {"egg_base": "build/python"},
    },
)
