// The hierarchical scans (scan_then_propagate, reduce_then_scan) keep one array of tile sums per
// level until one tile holds them all; this sizes and places those arrays in the workspace.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cudalab::scan_variants {

// Sub-arrays start on 256-byte boundaries, so each level's loads can be vectorized.
inline std::size_t workspace_align(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Bytes of the tile-sum arrays of every level for n elements in tiles of tile_items.
inline std::size_t level_sums_bytes(std::int64_t n, std::int64_t tile_items, std::size_t element_bytes) {
  std::size_t bytes = 0;
  while (n > tile_items) {
    n = (n + tile_items - 1) / tile_items;
    bytes += workspace_align(static_cast<std::size_t>(n) * element_bytes);
  }
  return bytes;
}

}  // namespace cudalab::scan_variants
