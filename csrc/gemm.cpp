// gemm as a torch op: out = alpha * a @ op(b) + beta * c over 2-D matrices or 3-D batches
// (gemm_batched), op(b) = b, or b^T for b stored n x k (b_transposed: nn.Linear's x @ W^T).
#include <type_traits>
#include <vector>

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/gemm.hpp"

namespace cudalab::torch_ops {
namespace {

at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& c, double alpha, double beta,
                bool b_transposed) {
  constexpr const char* op = "gemm";
  check_tensor(op, "a", a, a.device());
  check_tensor(op, "b", b, a.device(), a.scalar_type());
  TORCH_CHECK_VALUE(a.dim() == 2 || a.dim() == 3,
                    "cudalab.gemm: a must be a matrix [m, k] or a batch [batch, m, k], got ", a.sizes());
  TORCH_CHECK_VALUE(b.dim() == a.dim(), "cudalab.gemm: b must have a's rank ", a.dim(), ", got ", b.sizes());
  const bool batched = a.dim() == 3;
  const std::int64_t batch = batched ? a.size(0) : 1;
  TORCH_CHECK_VALUE(!batched || b.size(0) == batch, "cudalab.gemm: b must hold a's ", batch, " matrices, got ",
                    b.sizes());
  const std::int64_t m = a.size(-2), k = a.size(-1);
  const std::int64_t n = b_transposed ? b.size(-2) : b.size(-1);
  const std::int64_t b_k = b_transposed ? b.size(-1) : b.size(-2);
  TORCH_CHECK_VALUE(b_k == k, "cudalab.gemm: b must be ", b_transposed ? "[n, k]" : "[k, n]", " with k = ", k,
                    " (a's columns), got ", b.sizes());
  TORCH_CHECK_TYPE(!b_transposed || a.scalar_type() != at::kFloat,
                   "cudalab.gemm: b_transposed needs bfloat16 or float16 (the fp32 kernels take b as [k, n])");
  const c10::cuda::CUDAGuard guard(a.device());
  std::vector<std::int64_t> shape = batched ? std::vector<std::int64_t>{batch, m, n} : std::vector<std::int64_t>{m, n};
  at::Tensor out;
  if (c.has_value() && beta != 0.0) {
    check_tensor(op, "c", *c, a.device(), a.scalar_type());
    TORCH_CHECK_VALUE(c->sizes() == at::IntArrayRef(shape), "cudalab.gemm: c must have the output's shape ",
                      at::IntArrayRef(shape), ", got ", c->sizes());
    out = c->clone();  // the library computes in place: out = alpha a op(b) + beta out
  } else {
    out = at::empty(shape, a.options());
    beta = 0.0;  // never reads out
  }
  const Transpose transpose = b_transposed ? Transpose::yes : Transpose::no;
  const std::int64_t ldb = b_transposed ? k : n;
  with_element_type(a, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      const auto fa = static_cast<float>(alpha), fb = static_cast<float>(beta);
      if constexpr (std::is_same_v<T, float>) {
        if (batched) {
          cudalab::gemm_batched(batch, m, n, k, fa, data<T>(a), k, m * k, data<T>(b), ldb, k * n, fb,
                                mutable_data<T>(out), n, m * n, current_stream(a));
        } else {
          cudalab::gemm(m, n, k, fa, data<T>(a), k, data<T>(b), ldb, fb, mutable_data<T>(out), n, current_stream(a));
        }
      } else if (batched) {
        cudalab::gemm_batched(batch, m, n, k, fa, data<T>(a), k, m * k, data<T>(b), ldb, n * k, fb,
                              mutable_data<T>(out), n, m * n, current_stream(a), transpose);
      } else {
        cudalab::gemm(m, n, k, fa, data<T>(a), k, data<T>(b), ldb, fb, mutable_data<T>(out), n, current_stream(a),
                      transpose);
      }
    });
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  define_op(
      m, "gemm(Tensor a, Tensor b, Tensor? c=None, float alpha=1., float beta=0., bool b_transposed=False) -> Tensor",
      &gemm);
}

}  // namespace cudalab::torch_ops
