"""Builds cudalab._C: the torch.library bindings in csrc/, linked against the libcudalab.a that the
project's CMake builds (every kernel compiled once, by CMake, with its own sm_90 / sm_90a split).

    pip install --no-build-isolation .        # in the environment whose torch it will run with

The library is the developer build's (build/release/libcudalab.a, after `cmake --build --preset
release`) where there is one, else CMake builds the library alone into build/python-library
(CUDALAB_LIBRARY_ONLY: no CLI or tests, none of their dependencies; 3 to 4 minutes on 2 cores,
for the architectures of CUDAARCHS, sm_90 by default). CUDALAB_LIBRARY names another libcudalab.a
(built with position-independent code, as CMakeLists.txt sets). The extension holds .cpp files
only, so TORCH_CUDA_ARCH_LIST does not matter to it; it is set anyway, because torch's arch
detection fails (IndexError) on a machine without a GPU.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup

os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0a")
from torch.utils.cpp_extension import BuildExtension, CUDAExtension  # noqa: E402

import torch  # noqa: E402

root = Path(__file__).resolve().parent
(root / "build" / "python").mkdir(parents=True, exist_ok=True)  # egg_base must exist


def library():
    """libcudalab.a: CUDALAB_LIBRARY, else the developer build's, else the library alone built here."""
    if "CUDALAB_LIBRARY" in os.environ:
        named = Path(os.environ["CUDALAB_LIBRARY"])
        if not named.is_file():
            sys.exit(f"setup.py: CUDALAB_LIBRARY={named}: no such file")
        return named
    developer = root / "build" / "release" / "libcudalab.a"
    if developer.is_file():
        return developer
    if shutil.which("cmake") is None:
        sys.exit("setup.py: CMake (3.25 or newer) is needed to build libcudalab: install it, or set CUDALAB_LIBRARY")
    build = root / "build" / "python-library"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    print(f"setup.py: building libcudalab alone in {build} (a few minutes)", flush=True)
    subprocess.run(["cmake", "-S", str(root), "-B", str(build), *generator, "-DCMAKE_BUILD_TYPE=Release",
                    "-DCUDALAB_LIBRARY_ONLY=ON"], check=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "cudalab_library", "--parallel"], check=True)
    return build / "libcudalab.a"


class BuildWithLibrary(BuildExtension):
    """Builds (or finds) libcudalab.a first, then links the extension against it."""

    def run(self):
        path = str(library())
        for extension in self.extensions:
            extension.extra_objects = [path]
            # setuptools relinks only when a listed dependency is newer than the extension; the
            # static library is not a source, so a rebuilt libcudalab.a must be named here.
            extension.depends = [path]
        super().run()


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
            # Keep the static library's symbols out of the extension's exports; strip the rest.
            extra_link_args=["-Wl,--exclude-libs,ALL", "-s"],
            extra_compile_args={"cxx": ["-O2", "-std=c++17"]},
            define_macros=[
                ("CUDALAB_COMMIT", f'"{commit}"'),
                ("CUDALAB_DIRTY", str(dirty)),
                ("CUDALAB_TORCH_VERSION", f'"{torch.__version__}"'),
            ],
            py_limited_api=True,
        )
    ],
    cmdclass={"build_ext": BuildWithLibrary},
    # One wheel for every CPython from 3.10 (the limited API); setuptools' build folders under
    # build/python, beside build/release.
    options={
        "bdist_wheel": {"py_limited_api": "cp310"},
        "build": {"build_base": "build/python"},
        "egg_info": {"egg_base": "build/python"},
    },
)
