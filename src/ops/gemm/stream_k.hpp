// The stream-K schedule of a persistent GEMM, host and device: `tiles` output tiles of `k_steps`
// k-steps each. The first `dp_tiles` (a multiple of `units`) are whole tiles taken in turn, unit u
// computing tiles u, u + units, ... (data-parallel, as the persistent schedule: the tiles in flight
// at one time are neighbours in the L2 order and share their A and B panels). The rest are walked
// as one tile-major sequence of iterations (tile dp_tiles + t's k-step s is iteration
// t * k_steps + s), which the units split into contiguous ranges of equal length (to one
// iteration). A tile whose iterations fall in several ranges is computed in pieces: every piece
// but the last (in k) is published as an fp32 partial tile; the last piece's CTA, the tile's
// owner, adds the partials of its peers (the lower units holding the tile's earlier pieces) in
// increasing unit order and writes the output. So one tile's output has the same bits on every run.
//
// Each unit walks its whole data-parallel tiles first, then its range backwards: the piece it
// publishes (where its range ends inside a tile), its whole tiles, last the piece it owns (where
// its range starts inside a tile). A unit publishes at most once and owns at most once, and an
// owner waits only on lower units, which publish before they wait on anything: the schedule
// cannot deadlock whichever CTAs are resident, provided units take their ids in launch order (an
// atomic ticket, not blockIdx). Range boundaries within `snap` k-steps of a tile edge move to it,
// so no piece is that short (2 * snap < k_steps keeps the boundaries in order).
//
// stream_k_plan picks dp_tiles as CUTLASS's hybrid stream-K does: all but the last one or two
// waves' worth of tiles whole (none when the tiles make whole waves: then no tile is split), so the
// split tiles, whose units run at different k-offsets and share no panels in L2, are only the
// remainder that would otherwise leave SMs idle.
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
  int dp_tiles = 0;  // whole tiles taken in turn before the stream-K ones (a multiple of units)

  // The stream-K part's iterations (its tiles times k_steps).
  CUDALAB_STREAM_K_FN std::int64_t stream_iterations() const {
    return static_cast<std::int64_t>(tiles - dp_tiles) * k_steps;
  }

  // The first iteration of unit u's stream-K range, u in [0, units] (boundary(units) is the end).
  // 32-bit arithmetic: the launch keeps stream_iterations() below 2^31 (fits_32_bits), so no 64-bit
  // division (a subroutine call on the GPU) runs before a unit's first load.
  CUDALAB_STREAM_K_FN int boundary(int u) const {
    const int total = (tiles - dp_tiles) * k_steps, q = total / units, r = total % units;
    int b = u * q + (u < r ? u : r);
    const int into = b % k_steps;
    if (into != 0 && into <= snap) b -= into;
    if (into != 0 && into > snap && k_steps - into <= snap) b += k_steps - into;
    return b;
  }
  CUDALAB_STREAM_K_FN bool fits_32_bits() const { return stream_iterations() < (std::int64_t{1} << 31); }

  // The lowest unit whose range holds stream-K `iteration` (ranges may be empty after snapping).
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
    int unit = 0, units = 0, dp_count = 0;                       // data-parallel tiles unit, unit + units, ...
    int publish_tile = 0, publish_first = 0, publish_steps = 0;  // publish_steps 0: no published piece
    int last_whole = 0, wholes = 0;                              // whole tiles last_whole, last_whole - 1, ...
    bool owns = false;
    int owned_tile = 0, owned_first = 0, first_peer = 0;
    int k_steps = 0;

    CUDALAB_STREAM_K_FN StreamKPiece piece(int i) const {
      if (i < dp_count) return {unit + i * units, 0, k_steps, StreamKRole::whole, 0};
      i -= dp_count;
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
    w.unit = u;
    w.units = units;
    w.dp_count = dp_tiles / units;
    w.count = w.dp_count;
    const int begin = boundary(u), end = boundary(u + 1);
    if (begin == end) return w;
    const int first_tile = begin / k_steps, last_tile = (end - 1) / k_steps;
    const int begin_step = begin % k_steps, end_step = end % k_steps;
    int first_whole = first_tile, last_whole = last_tile;
    if (end_step != 0) {  // the range ends inside a tile: that piece is published
      w.publish_tile = dp_tiles + last_tile;
      w.publish_first = first_tile == last_tile ? begin_step : 0;
      w.publish_steps = first_tile == last_tile ? end - begin : end_step;
      --last_whole;
    }
    if (begin_step != 0 && !(first_tile == last_tile && end_step != 0)) {  // starts inside a tile: owned
      w.owns = true;
      w.owned_tile = dp_tiles + first_tile;
      w.owned_first = begin_step;
      w.first_peer = unit_of(first_tile * k_steps);
      ++first_whole;
    }
    w.last_whole = dp_tiles + last_whole;
    w.wholes = last_whole >= first_whole ? last_whole - first_whole + 1 : 0;
    w.count += (w.publish_steps > 0 ? 1 : 0) + w.wholes + (w.owns ? 1 : 0);
    return w;
  }

  // visit(piece) for each piece of unit u, in walk order.
  template <typename Visit>
  CUDALAB_STREAM_K_WALK void for_each_piece(int u, Visit&& visit) const {
    const Walk w = walk(u);
    for (int i = 0; i < w.count; ++i) visit(w.piece(i));
  }
};

// The hybrid plan (above): with w whole waves of tiles and a remainder, the first w - 1 waves whole
// when w >= 2 (the stream-K part then one to two waves' worth); every tile whole when there is no
// remainder; every tile in the stream-K part when there is less than two waves.
inline StreamKPlan stream_k_plan(int tiles, int k_steps, int units, int snap) {
  StreamKPlan plan{tiles, k_steps, units, snap, 0};
  if (units <= 0) return plan;  // no work (k_steps or tiles 0): nothing to plan
  const int waves = tiles / units;
  if (tiles % units == 0) {
    plan.dp_tiles = tiles;
  } else if (waves >= 2) {
    plan.dp_tiles = (waves - 1) * units;
  }
  return plan;
}

}  // namespace cudalab::gemm_variants

#undef CUDALAB_STREAM_K_FN
#undef CUDALAB_STREAM_K_WALK
