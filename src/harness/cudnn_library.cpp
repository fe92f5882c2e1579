#include "harness/cudnn_library.hpp"

#include <cstdlib>

namespace cudalab::harness {
namespace {

struct Loaded {
  void* library = nullptr;
  std::string missing;
};

Loaded open_library() {
  Loaded loaded;
  std::string tried = "libcudnn.so.9";
  loaded.library = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (loaded.library == nullptr) {
    if (const char* directory = std::getenv("CUDALAB_CUDNN_DIR")) {
      const std::string path = std::string(directory) + "/libcudnn.so.9";
      tried += ", " + path;
      loaded.library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    } else {
      tried += " (set CUDALAB_CUDNN_DIR to the folder holding it to try there)";
    }
  }
  if (loaded.library == nullptr) loaded.missing = "cuDNN not found: tried " + tried;
  return loaded;
}

}  // namespace

void* cudnn_library(std::string* missing) {
  static const Loaded loaded = open_library();
  if (missing != nullptr) *missing = loaded.missing;
  return loaded.library;
}

}  // namespace cudalab::harness
