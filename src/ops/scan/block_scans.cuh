// The textbook shared-memory block scans (GPU Gems 3, ch. 39): used alone by the single-block
// variants and per tile by scan_then_propagate. Both take their shared memory as a pointer, sized
// by the launch (dynamic shared memory), so one kernel serves every power-of-two block size.
#pragma once

#include <cstddef>

#include "ops/scan/variants.hpp"

namespace cudalab::scan_variants {

// Hillis-Steele: thread t holds element t of a blockDim.x-element array; returns its prefix sum.
// `buffer` holds 2 * blockDim.x elements: each step reads one half and writes the other, so a
// step never reads a value the same step overwrote. Thread 0 also gets the array's total.
template <ScanKind Kind, typename T>
__device__ T hillis_steele_block_scan(T value, T* buffer, T* total) {
  const int t = static_cast<int>(threadIdx.x);
  const int size = static_cast<int>(blockDim.x);
  T* current = buffer;
  T* next = buffer + size;
  current[t] = value;
  __syncthreads();
  for (int offset = 1; offset < size; offset *= 2) {
    next[t] = t >= offset ? current[t - offset] + current[t] : current[t];
    __syncthreads();
    T* const swap = current;
    current = next;
    next = swap;
  }
  if (t == 0) *total = current[size - 1];
  if (Kind == ScanKind::inclusive) return current[t];
  return t == 0 ? T(0) : current[t - 1];
}

// Blelloch: a 2 * blockDim.x element array (blockDim.x a power of two) in which thread t holds
// elements t (`a`) and t + blockDim.x (`b`), the layout that keeps the loads coalesced; both are
// replaced by their prefix sums. `data` holds 2 * blockDim.x elements, plus one per 32 when Padded:
// element i then lives at i + i/32, so the tree's power-of-two strides spread over all 32 banks
// instead of piling onto a few. Thread 0 also gets the array's total.
template <ScanKind Kind, bool Padded, typename T>
__device__ void blelloch_block_scan(T& a, T& b, T* data, T* total) {
  const auto at = [](int i) { return Padded ? i + (i >> 5) : i; };
  const int t = static_cast<int>(threadIdx.x);
  const int half = static_cast<int>(blockDim.x);
  const int size = 2 * half;
  data[at(t)] = a;
  data[at(t + half)] = b;
  // Up-sweep: after it, element 2^k * (j+1) - 1 holds the sum of its 2^k-element subtree.
  int stride = 1;
  for (int active = half; active > 0; active /= 2) {
    __syncthreads();
    if (t < active) data[at(stride * (2 * t + 2) - 1)] += data[at(stride * (2 * t + 1) - 1)];
    stride *= 2;
  }
  __syncthreads();
  if (t == 0) {
    *total = data[at(size - 1)];
    data[at(size - 1)] = T(0);
  }
  // Down-sweep: each node passes its prefix to its left child and prefix + left sum to its right.
  for (int active = 1; active < size; active *= 2) {
    stride /= 2;
    __syncthreads();
    if (t < active) {
      const int left = at(stride * (2 * t + 1) - 1);
      const int right = at(stride * (2 * t + 2) - 1);
      const T left_sum = data[left];
      data[left] = data[right];
      data[right] += left_sum;
    }
  }
  __syncthreads();
  // data now holds the exclusive scan; the inclusive one adds the element itself.
  const T before_a = data[at(t)];
  const T before_b = data[at(t + half)];
  if (Kind == ScanKind::inclusive) {
    a = before_a + a;
    b = before_b + b;
  } else {
    a = before_a;
    b = before_b;
  }
}

// Shared-memory bytes of the two scans for a block of `threads` threads.
template <typename T>
constexpr std::size_t hillis_steele_shared_bytes(int threads) {
  return 2 * static_cast<std::size_t>(threads) * sizeof(T);
}
template <typename T>
constexpr std::size_t blelloch_shared_bytes(int threads, bool padded) {
  const std::size_t size = 2 * static_cast<std::size_t>(threads);
  return (size + (padded ? size / 32 : 0)) * sizeof(T);
}

}  // namespace cudalab::scan_variants
