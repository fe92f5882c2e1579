// RoPE as torch ops: q or k [batch, seq, heads, head_dim] (or with seq and heads swapped, as
// Hugging Face's [batch, heads, seq, head_dim]) rotated by fp32 cos and sin tables, and its
// backward; and the q and k heads of a fused projection's packed q-k-v (rope_packed). The tensor's strides go to the
// library as they are: a transposed view runs without a copy, and the output takes the input's layout.
#include <algorithm>
#include <iterator>
#include <type_traits>
#include <utility>

#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/rope.hpp"

namespace cudalab::torch_ops {
namespace {

// x's shape and strides for the library (seq at dimension seq_dim, heads at the other of 1 and 2),
// and the tables', all checked.
std::pair<RopeShape, RopeTables> describe(const char* op, const at::Tensor& x, const at::Tensor& cos,
                                          const at::Tensor& sin, std::int64_t seq_dim) {
  check_strided_tensor(op, "x", x, x.device(), c10::nullopt, scalar_types(RopeElements{}));
  TORCH_CHECK_VALUE(x.dim() == 4, "cudalab.", op, ": x must be [batch, seq, heads, head_dim] or [batch, heads, seq, ",
                    "head_dim], got ", x.sizes());
  TORCH_CHECK_VALUE(seq_dim == 1 || seq_dim == 2, "cudalab.", op, ": seq_dim must be 1 or 2, got ", seq_dim);
  TORCH_CHECK_VALUE(x.stride(3) == 1 || x.size(3) <= 1, "cudalab.", op, ": x's head_dim must be contiguous, strides ",
                    x.strides());
  for (const auto& [name, table] : {std::pair<const char*, const at::Tensor&>{"cos", cos}, {"sin", sin}}) {
    check_tensor(op, name, table, x.device(), at::kFloat, {at::kFloat});
    TORCH_CHECK_VALUE(table.dim() == 2 && table.size(1) == x.size(3) / 2, "cudalab.", op, ": ", name,
                      " must be [positions, head_dim / 2] = [positions, ", x.size(3) / 2, "], got ", table.sizes());
  }
  TORCH_CHECK_VALUE(cos.sizes() == sin.sizes(), "cudalab.", op, ": cos and sin must have one shape, got ", cos.sizes(),
                    " and ", sin.sizes());
  const std::int64_t heads_dim = 3 - seq_dim;
  RopeShape shape;
  shape.batch = x.size(0), shape.seq = x.size(seq_dim), shape.heads = x.size(heads_dim), shape.head_dim = x.size(3);
  shape.batch_stride = x.stride(0), shape.seq_stride = x.stride(seq_dim), shape.heads_stride = x.stride(heads_dim);
  const RopeTables tables{data<float>(cos), data<float>(sin), cos.size(0),
                          cos.size(0) > 1 ? cos.stride(0) : x.size(3) / 2};
  return {shape, tables};
}

// y = x rotated (or rotated back), through the library; y has x's strides.
template <bool kBackward>
void run(const char* op, const at::Tensor& x, at::Tensor y, const RopeShape& shape, const RopeTables& tables,
         bool interleaved, std::int64_t position_offset) {
  const RopePairs pairs = interleaved ? RopePairs::interleaved : RopePairs::half_split;
  with_element_type<RopeElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      if constexpr (kBackward) {
        cudalab::rope_backward(data<T>(x), mutable_data<T>(y), shape, tables, pairs, position_offset,
                               current_stream(x));
      } else {
        cudalab::rope(data<T>(x), mutable_data<T>(y), shape, tables, pairs, position_offset, current_stream(x));
      }
    });
  });
}

template <bool kBackward>
at::Tensor rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t seq_dim,
                  bool interleaved, std::int64_t position_offset) {
  constexpr const char* op = kBackward ? "rope_backward" : "rope";
  const auto [shape, tables] = describe(op, x, cos, sin, seq_dim);
  TORCH_CHECK_VALUE(x.is_non_overlapping_and_dense(), "cudalab.", op,
                    ": x must be dense (contiguous, or a transpose of a contiguous tensor); call .contiguous()");
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = at::empty_like(x);  // dense x: the same strides
  run<kBackward>(op, x, y, shape, tables, interleaved, position_offset);
  return y;
}

// RoPE on a fused q-k-v projection's output, attention_packed's layout: qkv [batch, seq, (heads +
// 2 * kv_heads) * head_dim] holds each position's q heads, then k's, then v's. The q and k heads
// are rotated (half-split pairs, Llama's), the v heads copied: the result goes to attention_packed
// as it is, and the projection's output needs no split. The backward rotates dy's back.
template <bool kBackward>
at::Tensor rotate_packed(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin, std::int64_t heads,
                         std::int64_t kv_heads, std::int64_t position_offset) {
  constexpr const char* op = kBackward ? "rope_packed_backward" : "rope_packed";
  check_tensor(op, "qkv", qkv, qkv.device(), c10::nullopt, scalar_types(RopeElements{}));
  TORCH_CHECK_VALUE(heads > 0 && kv_heads > 0, "cudalab.", op, ": heads and kv_heads must be > 0, got ", heads, " and ",
                    kv_heads);
  const std::int64_t all_heads = heads + 2 * kv_heads;
  TORCH_CHECK_VALUE(qkv.dim() == 3 && qkv.size(2) % all_heads == 0 && qkv.size(2) > 0, "cudalab.", op,
                    ": qkv must be [batch, seq, (heads + 2 * kv_heads) * head_dim] = [batch, seq, ", all_heads,
                    " * head_dim], got ", qkv.sizes());
  const std::int64_t head_dim = qkv.size(2) / all_heads;
  const at::Tensor x = qkv.view({qkv.size(0), qkv.size(1), all_heads, head_dim});
  const at::Tensor rotated = x.narrow(2, 0, heads + kv_heads);
  const auto [shape, tables] = describe(op, rotated, cos, sin, 1);
  const c10::cuda::CUDAGuard guard(qkv.device());
  at::Tensor out = at::empty_like(qkv);
  const at::Tensor y = out.view(x.sizes());
  run<kBackward>(op, rotated, y.narrow(2, 0, heads + kv_heads), shape, tables, false, position_offset);
  y.narrow(2, heads + kv_heads, kv_heads).copy_(x.narrow(2, heads + kv_heads, kv_heads));
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  define_op(m,
            "rope(Tensor x, Tensor cos, Tensor sin, int seq_dim=1, bool interleaved=False, int position_offset=0) "
            "-> Tensor",
            &rotate<false>, RopeElements{});
  define_op(m,
            "rope_backward(Tensor dy, Tensor cos, Tensor sin, int seq_dim=1, bool interleaved=False, "
            "int position_offset=0) -> Tensor",
            &rotate<true>, RopeElements{});
  define_op(m,
            "rope_packed(Tensor qkv, Tensor cos, Tensor sin, int heads, int kv_heads, int position_offset=0) -> Tensor",
            &rotate_packed<false>, RopeElements{});
  define_op(m,
            "rope_packed_backward(Tensor dy, Tensor cos, Tensor sin, int heads, int kv_heads, int position_offset=0) "
            "-> Tensor",
            &rotate_packed<true>, RopeElements{});
}

}  // namespace cudalab::torch_ops
