// The stream-K schedule of a persistent GEMM, host and device: `tiles` output tiles of `k_steps`
// k-steps each, walked as one tile-major sequence of iterations (tile t's k-step s is iteration
// t * k_steps + s), which `units` CTAs split into contiguous ranges of equal length (to one
// iteration). A tile whose iterations fall in several ranges is computed in pieces: every piece
// but the last (in k) is published as an fp32 partial tile; the last piece's CTA, the tile's
// owner, adds the partials of its peers (the lower units holding the tile's earlier pieces) in
// increasing unit order and writes the output. So one tile's output has the same bits on every run.
//
// Each unit walks its range backwards: first the piece it publishes (where its range ends inside
// a tile), then its whole tiles, last the piece it owns (where its range starts inside a tile).
// A unit publishes at most once and owns at most once, and an owner waits only on lower units,
// which publish before they wait on anything: the schedule cannot deadlock whichever CTAs are
// resident, provided units take their ids in launch order (an atomic ticket, not blockIdx).
// Range boundaries within `snap` k-steps of a tile edge move to it, so no piece is that short
// (2 * snap < k_steps keeps the boundaries in order).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CUDALAB_STREAM_K_FN __host__ __device__ constexpr
#define CUDALAB_STREAM_K_WALK __host__ __device__
#else
#define CUDALAB_STREAM_K_FN constexpr
#define CUDALAB_STREAM_K_WALK
#endif

namespace cudalab::gemm_variants {

enum class StreamKRole : int { whole, publish, owner };

struct StreamKPiece {
  int tile = 0;
  int first_k = 0;  // first k-step of the piece
  int k_count = 0;  // k-steps in the piece
  StreamKRole role = StreamKRole::whole;
  int first_peer = 0;  // owner: its peers are the non-empty units first_peer .. owner - 1
};

struct StreamKPlan {
  int tiles = 0;
  int k_steps = 0;
  int units = 0;
  int snap = 0;

  CUDALAB_STREAM_K_FN std::int64_t iterations() const { return static_cast<std::int64_t>(tiles) * k_steps; }

  // The first iteration of unit u's range, u in [0, units] (boundary(units) is the end). 32-bit
  // arithmetic: the launch keeps iterations() below 2^31 (fits_32_bits), so no 64-bit division (a
  // subroutine call on the GPU) runs before a unit's first load.
  CUDALAB_STREAM_K_FN int boundary(int u) const {
    const int total = tiles * k_steps, q = total / units, r = total % units;
    int b = u * q + (u < r ? u : r);
    const int into = b % k_steps;
    if (into != 0 && into <= snap) b -= into;
    if (into != 0 && into > snap && k_steps - into <= snap) b += k_steps - into;
    return b;
  }
  CUDALAB_STREAM_K_FN bool fits_32_bits() const { return iterations() < (std::int64_t{1} << 31); }

  // The lowest unit whose range holds `iteration` (ranges may be empty after snapping).
  CUDALAB_STREAM_K_FN int unit_of(int iteration) const {
    int low = 0, high = units - 1;
    while (low < high) {
      const int middle = (low + high) / 2;
      if (boundary(middle + 1) > iteration) {
        high = middle;
      } else {
        low = middle + 1;
      }
    }
    return low;
  }

  // Unit u's pieces in walk order (see above): walk(u).piece(i) for i < walk(u).count. One loop
  // over an index, so a kernel inlines its work once rather than once per kind of piece.
  struct Walk {
    int count = 0;
    int publish_tile = 0, publish_first = 0, publish_steps = 0;  // publish_steps 0: no published piece
    int last_whole = 0, wholes = 0;                              // whole tiles last_whole, last_whole - 1, ...
    bool owns = false;
    int owned_tile = 0, owned_first = 0, first_peer = 0;
    int k_steps = 0;

    CUDALAB_STREAM_K_FN StreamKPiece piece(int i) const {
      if (publish_steps > 0) {
        if (i == 0) return {publish_tile, publish_first, publish_steps, StreamKRole::publish, 0};
        --i;
      }
      if (i < wholes) return {last_whole - i, 0, k_steps, StreamKRole::whole, 0};
      return {owned_tile, owned_first, k_steps - owned_first, StreamKRole::owner, first_peer};
    }
  };

  CUDALAB_STREAM_K_FN Walk walk(int u) const {
    Walk w;
    w.k_steps = k_steps;
    const int begin = boundary(u), end = boundary(u + 1);
    if (begin == end) return w;
    const int first_tile = begin / k_steps, last_tile = (end - 1) / k_steps;
    const int begin_step = begin % k_steps, end_step = end % k_steps;
    int first_whole = first_tile, last_whole = last_tile;
    if (end_step != 0) {  // the range ends inside a tile: that piece is published
      w.publish_tile = last_tile;
      w.publish_first = first_tile == last_tile ? begin_step : 0;
      w.publish_steps = first_tile == last_tile ? end - begin : end_step;
      --last_whole;
    }
    if (begin_step != 0 && !(first_tile == last_tile && end_step != 0)) {  // starts inside a tile: owned
      w.owns = true;
      w.owned_tile = first_tile;
      w.owned_first = begin_step;
      w.first_peer = unit_of(first_tile * k_steps);
      ++first_whole;
    }
    w.last_whole = last_whole;
    w.wholes = last_whole >= first_whole ? last_whole - first_whole + 1 : 0;
    w.count = (w.publish_steps > 0 ? 1 : 0) + w.wholes + (w.owns ? 1 : 0);
    return w;
  }

  // visit(piece) for each piece of unit u, in walk order.
  template <typename Visit>
  CUDALAB_STREAM_K_WALK void for_each_piece(int u, Visit&& visit) const {
    const Walk w = walk(u);
    for (int i = 0; i < w.count; ++i) visit(w.piece(i));
  }
};

}  // namespace cudalab::gemm_variants

#undef CUDALAB_STREAM_K_FN
#undef CUDALAB_STREAM_K_WALK
