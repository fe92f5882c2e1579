// The warp's size and the mask of all its lanes, named once for every kernel that shuffles or
// votes across a warp.
#pragma once

namespace cudalab {

inline constexpr int kWarpSize = 32;
inline constexpr unsigned kFullWarpMask = 0xffffffffu;

}  // namespace cudalab
