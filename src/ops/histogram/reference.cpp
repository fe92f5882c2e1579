#include "ops/histogram/reference.hpp"

#include <algorithm>
#include <thread>

namespace cudalab::harness {

template <typename Key>
std::vector<std::uint64_t> reference_histogram(const Key* keys, std::int64_t n, int bins) {
  // Below a million samples a thread costs more than it saves.
  constexpr std::int64_t kMinPerThread = std::int64_t{1} << 20;
  const std::int64_t cores = std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  const std::int64_t parts = std::clamp<std::int64_t>(n / kMinPerThread, 1, cores);
  std::vector<std::vector<std::uint64_t>> partial(parts, std::vector<std::uint64_t>(bins, 0));
  const auto count = [&](std::int64_t part) {
    std::vector<std::uint64_t>& mine = partial[part];
    const std::int64_t end = n * (part + 1) / parts;
    for (std::int64_t i = n * part / parts; i < end; ++i)
      if (keys[i] < bins) ++mine[keys[i]];
  };
  std::vector<std::thread> threads;
  for (std::int64_t part = 1; part < parts; ++part) threads.emplace_back(count, part);
  count(0);
  for (std::thread& t : threads) t.join();
  for (std::int64_t part = 1; part < parts; ++part)
    for (int b = 0; b < bins; ++b) partial[0][b] += partial[part][b];
  return std::move(partial[0]);
}

template std::vector<std::uint64_t> reference_histogram(const std::uint8_t*, std::int64_t, int);
template std::vector<std::uint64_t> reference_histogram(const std::uint16_t*, std::int64_t, int);

}  // namespace cudalab::harness
