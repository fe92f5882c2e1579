// The second, small kernel of both backward rungs: dgamma and dbeta (one launch) from the
// per-chunk column partials the first kernel left in the workspace, added in a fixed order by the column-sum
// scheme bias_act's backward shares (core/column_sums.cuh): the same bits on every run.
#include <cstdint>

#include "core/column_sums.cuh"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {

template <typename T>
void sum_column_partials(const float* partials, std::int64_t stride, std::int64_t count, std::int64_t features,
                         T* dgamma, T* dbeta, cudaStream_t stream) {
  ColumnSums<T> sums;
  sums.partials[0] = partials;
  sums.out[0] = dgamma;
  if (dbeta != nullptr) {
    sums.partials[1] = partials + stride * features;
    sums.out[1] = dbeta;
    sums.outputs = 2;
  }
  launch_column_partials_sum(sums, count, features, stream);
}

#define CUDALAB_SUM_COLUMN_PARTIALS(T, a, b) \
  template void sum_column_partials<T>(const float*, std::int64_t, std::int64_t, std::int64_t, T*, T*, cudaStream_t);
CUDALAB_NORM_ELEMENTS(CUDALAB_SUM_COLUMN_PARTIALS, , )

}  // namespace cudalab::norms_variants
