#include "ops/select/reference.hpp"

#include <cstring>
#include <vector>

#include "harness/random.hpp"
#include "ops/select/variants.hpp"

namespace cudalab::harness {
namespace {

template <typename T>
bool is_poison(const T& value) {
  T poison;
  std::memset(&poison, kIntegerPoisonByte, sizeof poison);
  return std::memcmp(&value, &poison, sizeof poison) == 0;
}

}  // namespace

Comparison check_select(const std::int32_t* in, std::int64_t n, std::int32_t threshold, const std::int32_t* out,
                        std::int64_t count) {
  // Each host thread takes a contiguous piece of the input; the first pass counts what each piece
  // keeps, so the second knows where in the output each piece's kept elements start.
  const auto workers = static_cast<std::size_t>(parallel_workers(n));
  std::vector<std::int64_t> kept(workers + 1, 0);
  parallel_chunks(n, [&](int worker, std::int64_t begin, std::int64_t end) {
    std::int64_t k = 0;
    for (std::int64_t i = begin; i < end; ++i) k += select_variants::selected(in[i], threshold) ? 1 : 0;
    kept[static_cast<std::size_t>(worker) + 1] = k;
  });
  for (std::size_t w = 0; w < workers; ++w) kept[w + 1] += kept[w];
  const std::int64_t expected_count = kept[workers];

  std::vector<ComparisonBuilder> builders(workers, ComparisonBuilder(Tolerance::exact()));
  parallel_chunks(n, [&](int worker, std::int64_t begin, std::int64_t end) {
    ComparisonBuilder& b = builders[static_cast<std::size_t>(worker)];
    std::int64_t k = kept[static_cast<std::size_t>(worker)];
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int32_t x = in[i];
      if (!select_variants::selected(x, threshold)) continue;
      b.add(k, static_cast<double>(out[k]), static_cast<double>(x), is_poison(out[k]) && !is_poison(x));
      ++k;
    }
  });
  ComparisonBuilder total(Tolerance::exact());
  for (const ComparisonBuilder& b : builders) total.merge(b);
  total.add(expected_count, static_cast<double>(count), static_cast<double>(expected_count), is_poison(count));
  return total.finish();
}

}  // namespace cudalab::harness
