// cuDNN for the baselines that compare against it (conv2d, softmax), loaded at run time so the
// project builds and runs without it: libcudnn.so.9 from the loader's path, else from
// $CUDALAB_CUDNN_DIR (e.g. the lib folder of PyTorch's nvidia-cudnn wheel).
#pragma once

#include <dlfcn.h>

#include <string>

namespace cudalab::harness {

// The cuDNN 9 library, opened once per process and kept loaded (cuDNN keeps threads and
// sub-libraries of its own), or null with `*missing` saying where it was looked for.
void* cudnn_library(std::string* missing);

// Points `slot` at the library's function `name`; false when the library lacks it.
template <typename Fn>
bool bind_cudnn(void* library, const char* name, Fn* slot) {
  *slot = reinterpret_cast<Fn>(dlsym(library, name));
  return *slot != nullptr;
}

}  // namespace cudalab::harness
