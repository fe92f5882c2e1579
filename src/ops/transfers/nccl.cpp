// NCCL's all-reduce for the all-reduce ladder's baseline (all_reduce.hpp), loaded with dlopen. The
// few NCCL types and values used are declared here, as NCCL's header (nccl.h, ABI version 2)
// defines them, so building cudalab needs no NCCL.
#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cudalab/error.hpp"
#include "ops/transfers/all_reduce.hpp"

namespace cudalab::transfers {
namespace {

using NcclComm = void*;
constexpr int kNcclSuccess = 0;
constexpr int kNcclSum = 0;
constexpr int kNcclFloat32 = 7;
constexpr int kNcclBfloat16 = 9;
using CommInitAllFn = int (*)(NcclComm*, int, const int*);
using CommDestroyFn = int (*)(NcclComm);
using AllReduceFn = int (*)(const void*, void*, std::size_t, int, int, NcclComm, cudaStream_t);
using GroupFn = int (*)();
using ErrorStringFn = const char* (*)(int);
using VersionFn = int (*)(int*);

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

// CUDALAB_NCCL_LIBRARY alone where it is set (a path that does not load leaves NCCL out), else
// libnccl.so.2 from the loader's path, then PyTorch's nvidia-nccl package in the active virtual
// environment or the usual Python locations; null where none loads.
void* load_nccl() {
  if (const char* path = std::getenv("CUDALAB_NCCL_LIBRARY"); path != nullptr && *path != '\0')
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
  std::vector<std::string> candidates = {"libnccl.so.2"};
  std::vector<std::string> patterns = {"/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
                                       "/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
                                       "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2"};
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv != nullptr && *venv != '\0')
    patterns.insert(patterns.begin(), std::string(venv) + "/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2");
  for (const std::string& pattern : patterns) {
    glob_t found{};
    if (glob(pattern.c_str(), 0, nullptr, &found) == 0)
      for (std::size_t i = 0; i < found.gl_pathc; ++i) candidates.emplace_back(found.gl_pathv[i]);
    globfree(&found);
  }
  for (const std::string& candidate : candidates)
    if (void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL); library != nullptr) return library;
  return nullptr;
}

}  // namespace

Nccl::Nccl(int gpus) : gpus_(gpus) {
  if (gpus < 1 || gpus > kAllReduceMaxGpus) {
    reason_ = "NCCL: 1 to 8 GPUs";
    return;
  }
  library_ = load_nccl();
  if (library_ == nullptr) {
    const char* path = std::getenv("CUDALAB_NCCL_LIBRARY");
    reason_ =
        path != nullptr && *path != '\0'
            ? std::string("NCCL did not load from CUDALAB_NCCL_LIBRARY=") + path
            : "NCCL not found (libnccl.so.2 on the loader's path, CUDALAB_NCCL_LIBRARY, or PyTorch's nvidia-nccl)";
    return;
  }
  auto init_all = symbol<CommInitAllFn>(library_, "ncclCommInitAll");
  auto error_string = symbol<ErrorStringFn>(library_, "ncclGetErrorString");
  if (init_all == nullptr || symbol<AllReduceFn>(library_, "ncclAllReduce") == nullptr ||
      symbol<GroupFn>(library_, "ncclGroupStart") == nullptr || symbol<GroupFn>(library_, "ncclGroupEnd") == nullptr) {
    reason_ = "NCCL: the library lacks ncclCommInitAll, ncclAllReduce or the group calls";
    return;
  }
  // NVLink multicast (NVLS) stays off unless the environment asks for it: on a shared NVSwitch host
  // a program using it can take the GPUs out of service for others.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  std::vector<int> devices(static_cast<std::size_t>(gpus));
  for (int g = 0; g < gpus; ++g) devices[static_cast<std::size_t>(g)] = g;
  const int status = init_all(comms_, gpus, devices.data());
  if (status != kNcclSuccess) {
    reason_ = std::string("ncclCommInitAll failed: ") + (error_string != nullptr ? error_string(status) : "");
    for (NcclComm& comm : comms_) comm = nullptr;
  }
}

Nccl::~Nccl() {
  if (library_ == nullptr) return;
  auto destroy = symbol<CommDestroyFn>(library_, "ncclCommDestroy");
  for (int g = 0; g < gpus_ && destroy != nullptr; ++g)
    if (comms_[g] != nullptr) destroy(comms_[g]);
  // The library stays loaded: NCCL keeps threads of its own that unloading would pull code from.
}

std::string Nccl::version() const {
  auto get = library_ != nullptr ? symbol<VersionFn>(library_, "ncclGetVersion") : nullptr;
  int code = 0;
  if (get == nullptr || get(&code) != kNcclSuccess) return "";
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

void Nccl::all_reduce(DType dtype, const void* const* inputs, void* const* outputs, std::int64_t count,
                      const cudaStream_t* streams) const {
  CUDALAB_REQUIRE(available(), reason_);
  CUDALAB_REQUIRE(dtype == DType::f32 || dtype == DType::bf16, "NCCL all-reduce: f32 or bf16");
  auto all_reduce = symbol<AllReduceFn>(library_, "ncclAllReduce");
  auto group_start = symbol<GroupFn>(library_, "ncclGroupStart");
  auto group_end = symbol<GroupFn>(library_, "ncclGroupEnd");
  auto error_string = symbol<ErrorStringFn>(library_, "ncclGetErrorString");
  const int type = dtype == DType::f32 ? kNcclFloat32 : kNcclBfloat16;
  const auto check = [&](int status, const char* call) {
    if (status != kNcclSuccess)
      throw Error(ErrorKind::library,
                  std::string(call) + " failed: " + (error_string != nullptr ? error_string(status) : ""), __FILE__,
                  __LINE__);
  };
  check(group_start(), "ncclGroupStart");
  for (int g = 0; g < gpus_; ++g)
    check(all_reduce(inputs[g], outputs[g], static_cast<std::size_t>(count), type, kNcclSum, comms_[g], streams[g]),
          "ncclAllReduce");
  check(group_end(), "ncclGroupEnd");
}

}  // namespace cudalab::transfers
