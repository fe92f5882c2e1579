// Named NVTX ranges, so a profiler's timeline (Nsight Systems, `ncu --nvtx`) shows which variant,
// problem and step a kernel belongs to: "reduce_sum/tile_atomic n=268435456 f32 time", and inside
// it "sample 3". Without a profiler attached a range costs a few nanoseconds of host time.
#pragma once

#include <string>

#include <nvtx3/nvToolsExt.h>

namespace cudalab::harness {

class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
  ~NvtxRange() { nvtxRangePop(); }
};

}  // namespace cudalab::harness
