#include "ops/attention/reference.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "harness/random.hpp"

namespace cudalab::harness {
namespace {

constexpr double kUnit = 0x1p-24;  // one fp32 rounding, relative
constexpr std::uint64_t kSampleSeed = 0xA77E5A3B1E5ull;

double tree_depth(std::int64_t n) { return n > 1 ? std::ceil(std::log2(static_cast<double>(n))) : 0.0; }

// reference.hpp's atol: a rounding of an output in fp16's subnormal range (its step), else fp32's
// smallest normal.
double absolute_floor(DType dtype) { return dtype == DType::f16 ? 0x1p-24 : 0x1p-126; }

// reference.hpp's eta_P: what rounding a probability can lose absolutely, below the normal range
// of what it is rounded to (half fp16's subnormal step; fp32's, and bf16's, smallest normal, where
// exp2f and the rounding may flush).
double probability_underflow(DType dtype) { return dtype == DType::f16 ? 0x1p-25 : 0x1p-126; }

// K and V of one (batch, kv head) widened to double, [seq, head_dim] each; a worker keeps one and
// refills it for each (batch, head) it checks.
struct KvHead {
  std::vector<double> k, v;

  template <typename Tensors>
  void load(const Tensors& t, std::int64_t kv_batch_head) {
    const std::int64_t count = t.seq * t.head_dim, first = kv_batch_head * count;
    k.resize(static_cast<std::size_t>(count));
    v.resize(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      k[static_cast<std::size_t>(i)] = element_to_double(t.dtype, t.k, first + i);
      v[static_cast<std::size_t>(i)] = element_to_double(t.dtype, t.v, first + i);
    }
  }
};

template <typename Tensors>
std::int64_t kv_batch_head_of(const Tensors& t, std::int64_t batch_index, std::int64_t head) {
  return batch_index * t.kv_heads + head / (t.heads / t.kv_heads);
}

// The query rows of Q a (batch, head) holds, and the keys sequence `batch_index` has (reference.hpp).
std::int64_t query_rows_of(const AttentionTensors& t) { return t.queries > 0 ? t.queries : t.seq; }
std::int64_t keys_of(const AttentionTensors& t, std::int64_t batch_index) {
  return t.lengths != nullptr ? std::min<std::int64_t>(t.lengths[batch_index], t.seq) : t.seq;
}

// The keys [first, end) of `length` that a query at `position` sees (reference.hpp): up to it when
// causal, within window_left before it and window_right after it where those are not -1.
template <typename Tensors>
std::pair<std::int64_t, std::int64_t> visible_keys(const Tensors& t, std::int64_t position, std::int64_t length) {
  std::int64_t first = 0, end = length;
  if (t.window_left >= 0) first = std::max<std::int64_t>(0, position - t.window_left);
  if (t.causal) end = std::min(end, position + 1);
  if (t.window_right >= 0) end = std::min(end, position + t.window_right + 1);
  return {first, std::max(first, end)};
}

// Per-key values of one row, kept between rows to avoid reallocating.
struct RowScratch {
  std::vector<double> q, p, score_error;
};

// reference.hpp's formulas for query `row` of (batch_head), its keys in `kv`.
void reference_row(const AttentionTensors& t, const KvHead& kv, std::int64_t batch_head, std::int64_t row,
                   RowScratch& w, AttentionRowReference& out) {
  const std::int64_t rows = query_rows_of(t), length = keys_of(t, batch_head / t.heads);
  const auto [first_key, key_end] = visible_keys(t, length - rows + row, length);
  const std::int64_t dim = t.head_dim, keys = key_end - first_key;
  const auto d_count = static_cast<std::size_t>(dim);
  const double scale = t.scale;
  w.q.resize(d_count);
  w.p.resize(static_cast<std::size_t>(keys));
  w.score_error.resize(static_cast<std::size_t>(keys));
  const std::int64_t q_first = (batch_head * rows + row) * dim;
  for (std::int64_t d = 0; d < dim; ++d)
    w.q[static_cast<std::size_t>(d)] = element_to_double(t.dtype, t.q, q_first + d);

  // Scores into p, their magnitudes sum_d |q_d k_jd| into score_error, for now.
  double max = -INFINITY;
  for (std::int64_t j = 0; j < keys; ++j) {
    const double* k_row = kv.k.data() + (first_key + j) * dim;
    double dot = 0.0, magnitude = 0.0;
    for (std::size_t d = 0; d < d_count; ++d) {
      const double product = w.q[d] * k_row[d];
      dot += product;
      magnitude += std::fabs(product);
    }
    const auto jj = static_cast<std::size_t>(j);
    w.p[jj] = scale * dot;
    w.score_error[jj] = magnitude;
    max = std::max(max, w.p[jj]);
  }
  double sum = 0.0;
  for (std::int64_t j = 0; j < keys; ++j) {
    const auto jj = static_cast<std::size_t>(j);
    const double s = w.p[jj];
    w.score_error[jj] = 2 * static_cast<double>(dim) * kUnit * scale * w.score_error[jj] +
                        4 * kUnit * (std::fabs(s) + std::fabs(max)) + 4 * kUnit;
    w.p[jj] = std::exp(s - max);
    sum += w.p[jj];
  }
  double lse_score_term = 0.0;
  for (std::int64_t j = 0; j < keys; ++j) {
    w.p[static_cast<std::size_t>(j)] /= sum;
    lse_score_term += w.p[static_cast<std::size_t>(j)] * w.score_error[static_cast<std::size_t>(j)];
  }

  out.o.assign(d_count, 0.0);
  std::vector<double> weighted_magnitude(d_count, 0.0), magnitude(d_count, 0.0), score_term(d_count, 0.0);
  for (std::int64_t j = 0; j < keys; ++j) {
    const double p = w.p[static_cast<std::size_t>(j)];
    const double* v_row = kv.v.data() + (first_key + j) * dim;
    for (std::size_t d = 0; d < d_count; ++d) {
      out.o[d] += p * v_row[d];
      weighted_magnitude[d] += p * std::fabs(v_row[d]);
      magnitude[d] += std::fabs(v_row[d]);
    }
  }
  for (std::int64_t j = 0; j < keys; ++j) {
    const double weight = w.p[static_cast<std::size_t>(j)] * w.score_error[static_cast<std::size_t>(j)];
    const double* v_row = kv.v.data() + (first_key + j) * dim;
    for (std::size_t d = 0; d < d_count; ++d) score_term[d] += weight * std::fabs(v_row[d] - out.o[d]);
  }

  const double u_p = traits(t.dtype).unit_roundoff, u_out = u_p;
  const double sums = attention_sum_factor(keys);
  const double atol = absolute_floor(t.dtype), underflow = probability_underflow(t.dtype);
  out.o_bound.resize(d_count);
  out.o_floor.resize(d_count);
  for (std::size_t d = 0; d < d_count; ++d) {
    out.o_floor[d] =
        atol + (2 * sums + 6) * kUnit * weighted_magnitude[d] + 2 * underflow * magnitude[d] + score_term[d];
    out.o_bound[d] = out.o_floor[d] + 2 * u_out * std::fabs(out.o[d]) + 2 * u_p * weighted_magnitude[d];
  }
  out.lse = max + std::log(sum);
  out.lse_bound = lse_score_term + (sums + 12) * kUnit + u_p + 4 * kUnit * std::fabs(out.lse);
}

bool is_poison(std::size_t size, unsigned char pattern, const void* values, std::int64_t index) {
  const auto* element = static_cast<const unsigned char*>(values) + static_cast<std::size_t>(index) * size;
  return std::all_of(element, element + size, [&](unsigned char c) { return c == pattern; });
}

// One worker's verdicts: a ComparisonBuilder that accepts every element its own bound passes and,
// through a builder that accepts nothing, records the others with their kind (unwritten, NaN, out
// of bounds); O's L2 sums; and O's element of largest error, which an L2 failure reports.
struct alignas(kHostCacheLine) Tally {  // a cache line of its own: one per host thread
  ComparisonBuilder verdicts{Tolerance{0.0, INFINITY}};
  L2Error l2;
  std::int64_t worst = -1;
  double worst_error = -1.0, worst_out = 0.0, worst_ref = 0.0;

  // `in_l2`: O's elements; L's stay out of the L2 sums.
  void add(std::int64_t index, double out, double ref, double bound, double floor, bool unwritten, bool in_l2) {
    const double error = std::fabs(out - ref);
    if (!unwritten && error <= bound) {
      verdicts.add(index, out, ref, false);
    } else {
      ComparisonBuilder failure(Tolerance{-1.0, -1.0});
      failure.add(index, out, ref, unwritten);
      verdicts.merge(failure);
    }
    if (!in_l2 || unwritten || !std::isfinite(out)) return;
    l2.add(error, ref, floor);
    if (error > worst_error) {
      worst = index;
      worst_error = error;
      worst_out = out;
      worst_ref = ref;
    }
  }

  void merge(const Tally& other) {
    verdicts.merge(other.verdicts);
    l2.merge(other.l2);
    if (other.worst_error > worst_error) {
      worst = other.worst;
      worst_error = other.worst_error;
      worst_out = other.worst_out;
      worst_ref = other.worst_ref;
    }
  }
};

// The rows a (batch, head) checks, times the work of one: how the check splits over workers.
std::int64_t work_per_head(std::int64_t queries, std::int64_t seq, std::int64_t head_dim, bool every_row) {
  const std::int64_t rows = every_row ? queries : std::min<std::int64_t>(queries, kAttentionSampledRows + 2);
  return std::max<std::int64_t>(1, rows * seq * head_dim);
}

// One (batch, head)'s Q, dO and O in double, with each row's D_i = dO_i . O_i and that dot
// product's fp32 error bound (reference.hpp).
struct QueryHead {
  std::vector<double> q, d_o, o, delta, delta_error;

  void load(const AttentionBackwardTensors& t, std::int64_t batch_head) {
    const std::int64_t count = t.seq * t.head_dim, first = batch_head * count;
    q.resize(static_cast<std::size_t>(count));
    d_o.resize(static_cast<std::size_t>(count));
    o.resize(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      const auto ii = static_cast<std::size_t>(i);
      q[ii] = element_to_double(t.dtype, t.q, first + i);
      d_o[ii] = element_to_double(t.dtype, t.d_o, first + i);
      o[ii] = element_to_double(t.dtype, t.o, first + i);
    }
    delta.assign(static_cast<std::size_t>(t.seq), 0.0);
    delta_error.assign(static_cast<std::size_t>(t.seq), 0.0);
    for (std::int64_t row = 0; row < t.seq; ++row) {
      double sum = 0.0, magnitude = 0.0;
      for (std::int64_t d = 0; d < t.head_dim; ++d) {
        const auto i = static_cast<std::size_t>(row * t.head_dim + d);
        sum += d_o[i] * o[i];
        magnitude += std::fabs(d_o[i] * o[i]);
      }
      delta[static_cast<std::size_t>(row)] = sum;
      delta_error[static_cast<std::size_t>(row)] = 2.0 * static_cast<double>(t.head_dim) * kUnit * magnitude;
    }
  }
};

// Query row i's and key j's term of the gradients, with the errors reference.hpp allows it.
struct PairTerm {
  double p, ds;              // P_ij and dS_ij
  double p_error, ds_error;  // P as rounded for dV, and dS, each with what the scores move them by
};

PairTerm pair_term(const AttentionBackwardTensors& t, const QueryHead& qh, const KvHead& kv, std::int64_t row,
                   std::int64_t key, double lse, double u_t, double eta) {
  const std::int64_t dim = t.head_dim;
  const double* q = qh.q.data() + row * dim;
  const double* d_o = qh.d_o.data() + row * dim;
  const double* k = kv.k.data() + key * dim;
  const double* v = kv.v.data() + key * dim;
  double dot = 0.0, dot_magnitude = 0.0, dp = 0.0, dp_magnitude = 0.0;
  for (std::int64_t d = 0; d < dim; ++d) {
    dot += q[d] * k[d];
    dot_magnitude += std::fabs(q[d] * k[d]);
    dp += d_o[d] * v[d];
    dp_magnitude += std::fabs(d_o[d] * v[d]);
  }
  const double scale = t.scale, s = scale * dot;
  const double score_error = 2.0 * static_cast<double>(dim) * kUnit * scale * dot_magnitude +
                             4.0 * kUnit * (std::fabs(s) + std::fabs(lse)) + 4.0 * kUnit;
  const auto r = static_cast<std::size_t>(row);
  const double p = std::exp(s - lse), centred = dp - qh.delta[r], ds = p * centred;
  const double dp_error = 2.0 * static_cast<double>(dim) * kUnit * dp_magnitude;
  return {p, ds, p * (score_error + u_t) + eta,
          (p * score_error + eta) * std::fabs(centred) + p * (dp_error + qh.delta_error[r]) +
              (u_t + 2.0 * kUnit) * std::fabs(ds) + eta};
}

// One output row's sums: value, the terms' errors and magnitudes, and how many terms.
struct GradientRow {
  std::vector<double> value, error, magnitude;
  std::int64_t terms = 0;

  explicit GradientRow(std::int64_t dim)
      : value(static_cast<std::size_t>(dim)),
        error(static_cast<std::size_t>(dim)),
        magnitude(static_cast<std::size_t>(dim)) {}

  void add(const double* x, double weight, double weight_error, double scale, std::int64_t dim) {
    for (std::int64_t d = 0; d < dim; ++d) {
      const auto dd = static_cast<std::size_t>(d);
      value[dd] += scale * weight * x[d];
      error[dd] += scale * weight_error * std::fabs(x[d]);
      magnitude[dd] += scale * std::fabs(weight * x[d]);
    }
  }

  // Each element against its bound; `first` is the row's first element index in the Comparison.
  void tally(Tally& tally, DType dtype, const void* out, std::int64_t out_first, std::int64_t index_first) const {
    const double u_out = traits(dtype).unit_roundoff;
    const double sums = (attention_sum_factor(terms) + 4.0) * kUnit;
    const unsigned char pattern = poison_byte(dtype);
    for (std::size_t d = 0; d < value.size(); ++d) {
      const auto i = out_first + static_cast<std::int64_t>(d);
      const double bound = absolute_floor(dtype) + 2.0 * u_out * std::fabs(value[d]) + error[d] + sums * magnitude[d];
      tally.add(index_first + static_cast<std::int64_t>(d), element_to_double(dtype, out, i), value[d], bound, 0.0,
                is_poison(size_of(dtype), pattern, out, i), false);
    }
  }
};

// The rows a (batch, kv head) checks, times the work of one: how the backward check splits.
std::int64_t backward_work_per_kv_head(const AttentionBackwardTensors& t, bool every_row) {
  const std::int64_t rows = every_row ? t.seq : std::min<std::int64_t>(t.seq, kAttentionSampledRows + 2);
  return std::max<std::int64_t>(1, (t.heads / t.kv_heads) * (2 * rows + 1) * t.seq * t.head_dim);
}

}  // namespace

float attention_default_scale(std::int64_t head_dim) {
  return head_dim > 0 ? 1.0f / std::sqrt(static_cast<float>(head_dim)) : 1.0f;
}

double attention_sum_factor(std::int64_t keys) { return 2.0 * static_cast<double>(keys) + tree_depth(keys); }

AttentionRowReference reference_attention_row(const AttentionTensors& t, std::int64_t batch_index, std::int64_t head,
                                              std::int64_t row) {
  KvHead kv;
  kv.load(t, kv_batch_head_of(t, batch_index, head));
  RowScratch scratch;
  AttentionRowReference out;
  reference_row(t, kv, batch_index * t.heads + head, row, scratch, out);
  return out;
}

bool attention_checks_every_row(std::int64_t batch, std::int64_t heads, std::int64_t seq, std::int64_t head_dim) {
  return static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(seq) * static_cast<double>(seq) *
             static_cast<double>(head_dim) <=
         kAttentionFullCheckMultiplyAdds;
}

std::vector<std::int64_t> attention_checked_rows(std::int64_t seq, std::int64_t batch_index, std::int64_t head,
                                                 bool every_row) {
  std::vector<std::int64_t> rows;
  if (every_row || seq <= kAttentionSampledRows + 2) {
    for (std::int64_t i = 0; i < seq; ++i) rows.push_back(i);
    return rows;
  }
  std::set<std::int64_t> picked = {0, seq - 1};
  std::uint64_t state =
      mix64(kSampleSeed ^ mix64(static_cast<std::uint64_t>(batch_index)) ^ mix64(~static_cast<std::uint64_t>(head)));
  // seq > 32 here, so 32 distinct rows exist; a bounded number of draws keeps the loop finite anyway.
  for (int draw = 0; draw < 64 * kAttentionSampledRows && picked.size() < kAttentionSampledRows + 2u; ++draw) {
    state = mix64(state);
    picked.insert(static_cast<std::int64_t>(state % static_cast<std::uint64_t>(seq)));
  }
  return {picked.begin(), picked.end()};
}

Comparison check_attention(const AttentionTensors& t) {
  const std::int64_t batch_heads = t.batch * t.heads, rows = query_rows_of(t);
  const std::int64_t o_count = batch_heads * rows * t.head_dim;
  const double u = traits(t.dtype).unit_roundoff;  // u_P and u_out alike
  // What the table shows: the bound's relative part for one key (ds = 0, sum_j p_j |v_jd| = |O_d|).
  const Tolerance shown{2 * u + 2 * u + 6 * kUnit, absolute_floor(t.dtype)};
  Comparison total;
  total.tolerance = shown;
  if (batch_heads == 0 || t.seq == 0 || t.head_dim == 0) return total;
  // A decode problem's few rows a (batch, head) are all checked.
  const bool every_row = t.queries > 0 || attention_checks_every_row(t.batch, t.heads, t.seq, t.head_dim);
  const std::int64_t per_head = work_per_head(rows, t.seq, t.head_dim, every_row);
  const std::int64_t n = batch_heads * per_head;
  const std::size_t element = size_of(t.dtype);
  const unsigned char pattern = poison_byte(t.dtype);
  std::vector<Tally> tallies(static_cast<std::size_t>(parallel_workers(n)));
  parallel_chunks(n, [&](int worker, std::int64_t begin, std::int64_t end) {
    Tally& tally = tallies[static_cast<std::size_t>(worker)];
    KvHead kv;
    RowScratch scratch;
    AttentionRowReference ref;
    for (std::int64_t batch_head = (begin + per_head - 1) / per_head; batch_head * per_head < end; ++batch_head) {
      const std::int64_t batch_index = batch_head / t.heads, head = batch_head % t.heads;
      kv.load(t, kv_batch_head_of(t, batch_index, head));
      for (const std::int64_t row : attention_checked_rows(rows, batch_index, head, every_row)) {
        reference_row(t, kv, batch_head, row, scratch, ref);
        const std::int64_t o_first = (batch_head * rows + row) * t.head_dim;
        for (std::int64_t d = 0; d < t.head_dim; ++d) {
          const auto dd = static_cast<std::size_t>(d);
          const std::int64_t i = o_first + d;
          tally.add(i, element_to_double(t.dtype, t.o, i), ref.o[dd], ref.o_bound[dd], ref.o_floor[dd],
                    is_poison(element, pattern, t.o, i), true);
        }
        const std::int64_t l_index = batch_head * rows + row;
        tally.add(o_count + l_index, static_cast<double>(t.lse[l_index]), ref.lse, ref.lse_bound, 0.0,
                  is_poison(sizeof(float), kFloatPoisonByte, t.lse, l_index), false);
      }
    }
  });
  Tally all;
  for (const Tally& tally : tallies) all.merge(tally);
  total = all.verdicts.finish();
  total.tolerance = shown;
  const L2Error& l2 = all.l2;
  total.rel_l2_error = l2.reference_squares > 0.0 ? std::sqrt(l2.error_squares / l2.reference_squares)
                                                  : (l2.error_squares > 0.0 ? INFINITY : 0.0);
  if (!l2.within(output_rel_l2_limit(t.dtype)) && total.mismatches == 0 && all.worst >= 0) {
    total.mismatches = 1;
    total.first_mismatch = all.worst;
    total.first_mismatch_out = all.worst_out;
    total.first_mismatch_ref = all.worst_ref;
  }
  return total;
}

std::size_t attention_check_host_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq,
                                       std::int64_t head_dim) {
  const bool every_row = attention_checks_every_row(batch, heads, seq, head_dim);
  const auto workers =
      static_cast<std::size_t>(parallel_workers(batch * heads * work_per_head(seq, seq, head_dim, every_row)));
  // K and V in double, and the row's per-key and per-dimension scratch.
  const auto per_worker = static_cast<std::size_t>(2 * seq * head_dim + 2 * seq + 6 * head_dim) * sizeof(double);
  return workers * per_worker;
}

Comparison check_attention_backward(const AttentionBackwardTensors& t) {
  const std::int64_t q_count = t.batch * t.heads * t.seq * t.head_dim;
  const std::int64_t kv_count = t.batch * t.kv_heads * t.seq * t.head_dim;
  const double u_t = traits(t.dtype).unit_roundoff, eta = probability_underflow(t.dtype);
  const Tolerance shown{2 * u_t + 2 * u_t + 6 * kUnit, absolute_floor(t.dtype)};
  Comparison total;
  total.tolerance = shown;
  if (q_count == 0 || t.kv_heads == 0) return total;
  const bool every_row = attention_checks_every_row(t.batch, t.heads, t.seq, t.head_dim);
  const std::int64_t group = t.heads / t.kv_heads, dim = t.head_dim;
  const std::int64_t per_unit = backward_work_per_kv_head(t, every_row);
  const std::int64_t n = t.batch * t.kv_heads * per_unit;
  std::vector<Tally> tallies(static_cast<std::size_t>(parallel_workers(n)));
  parallel_chunks(n, [&](int worker, std::int64_t begin, std::int64_t end) {
    Tally& tally = tallies[static_cast<std::size_t>(worker)];
    KvHead kv;
    QueryHead qh;
    for (std::int64_t unit = (begin + per_unit - 1) / per_unit; unit * per_unit < end; ++unit) {
      const std::int64_t batch_index = unit / t.kv_heads, kv_head = unit % t.kv_heads;
      kv.load(t, unit);
      const std::vector<std::int64_t> keys = attention_checked_rows(t.seq, batch_index, kv_head, every_row);
      std::vector<GradientRow> dk(keys.size(), GradientRow(dim)), dv(keys.size(), GradientRow(dim));
      for (std::int64_t head = kv_head * group; head < (kv_head + 1) * group; ++head) {
        const std::int64_t batch_head = batch_index * t.heads + head;
        qh.load(t, batch_head);
        const float* lse = t.lse + batch_head * t.seq;
        for (std::size_t c = 0; c < keys.size(); ++c) {
          const std::int64_t key = keys[c];
          for (std::int64_t row = 0; row < t.seq; ++row) {
            const auto [first_key, key_end] = visible_keys(t, row, t.seq);
            if (key < first_key || key >= key_end) continue;
            const PairTerm term = pair_term(t, qh, kv, row, key, lse[row], u_t, eta);
            dv[c].add(qh.d_o.data() + row * dim, term.p, term.p_error, 1.0, dim);
            dk[c].add(qh.q.data() + row * dim, term.ds, term.ds_error, t.scale, dim);
            ++dv[c].terms;
            ++dk[c].terms;
          }
        }
        for (const std::int64_t row : attention_checked_rows(t.seq, batch_index, head, every_row)) {
          GradientRow dq(dim);
          const auto [first_key, key_end] = visible_keys(t, row, t.seq);
          for (std::int64_t key = first_key; key < key_end; ++key) {
            const PairTerm term = pair_term(t, qh, kv, row, key, lse[row], u_t, eta);
            dq.add(kv.k.data() + key * dim, term.ds, term.ds_error, t.scale, dim);
            ++dq.terms;
          }
          const std::int64_t first = (batch_head * t.seq + row) * dim;
          dq.tally(tally, t.dtype, t.dq, first, first);
        }
      }
      for (std::size_t c = 0; c < keys.size(); ++c) {
        const std::int64_t first = (unit * t.seq + keys[c]) * dim;
        dk[c].tally(tally, t.dtype, t.dk, first, q_count + first);
        dv[c].tally(tally, t.dtype, t.dv, first, q_count + kv_count + first);
      }
    }
  });
  Tally all;
  for (const Tally& tally : tallies) all.merge(tally);
  total = all.verdicts.finish();
  total.tolerance = shown;
  return total;
}

std::size_t attention_backward_check_host_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq,
                                                std::int64_t head_dim) {
  const bool every_row = attention_checks_every_row(batch, heads, seq, head_dim);
  const std::int64_t rows = every_row ? seq : std::min<std::int64_t>(seq, kAttentionSampledRows + 2);
  const auto workers =
      static_cast<std::size_t>(parallel_workers(batch * heads * std::max<std::int64_t>(1, rows * seq * head_dim)));
  // K, V, Q, dO and O in double, D_i and its error, and dK's and dV's sums at the checked keys.
  const auto per_worker =
      static_cast<std::size_t>(5 * seq * head_dim + 2 * seq + 6 * rows * head_dim + 3 * head_dim) * sizeof(double);
  return workers * per_worker;
}

}  // namespace cudalab::harness
