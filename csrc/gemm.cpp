// gemm as torch ops: out = alpha * a @ op(b) + beta * c (c of the output's shape, or a row of n values
// broadcast over its rows) over 2-D matrices or 3-D batches
// (gemm_batched), op(b) = b, or b^T for b stored n x k (b_transposed: nn.Linear's x @ W^T), into a
// new tensor (gemm) or in place into c (gemm_). Operands are taken as they lie: a matrix whose rows
// or whose columns are contiguous (so a .mT view too) goes to the library as is, its layout passed
// as transpose_a / transpose_b. Its autograd is in autograd.cpp. linear (nn.Linear's product and
// bias) is a composite of gemm. gemm_activation and its backward fuse a Linear's activation into
// the products (their autograd: cudalab.ops.mlp and linear_activation, in Python);
// gemm_weight_gradient is a Linear's weight and bias gradients in one product (used by gemm's autograd).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common.hpp"
#include "cudalab/gemm.hpp"
#include "cudalab/quantize.hpp"

namespace cudalab::torch_ops {
namespace {

constexpr const char* kOp = "gemm";

// float on CUDA cores, the 16-bit types on tensor cores.
using GemmElements = TypeList<float, __nv_bfloat16, __half>;

// How an operand's logical matrix [rows, cols] lies in memory: rows contiguous (row-major, rows
// `ld` apart) or columns contiguous (`transposed`: stored cols x rows row-major, columns `ld`
// apart), and `batch_stride` elements between a batch's matrices (0: one matrix for all).
struct Storage {
  bool transposed = false;
  std::int64_t ld = 1;
  std::int64_t batch_stride = 0;
};

// The storage of t's matrices, or of t.mT's when `flipped` (b given as [n, k] for op(b) = b^T).
// Rows are preferred where both fit (the fp32 kernels and the larger tensor-core tiles take them
// only). ld is at least 1 and at least the stored row's length, as the library requires even of
// empty matrices.
Storage storage_of(const char* name, const at::Tensor& t, bool flipped) {
  const std::int64_t r = flipped ? -1 : -2, c = flipped ? -2 : -1;
  const std::int64_t rows = t.size(r), cols = t.size(c), row_step = t.stride(r), col_step = t.stride(c);
  Storage s;
  s.batch_stride = t.dim() == 3 ? t.stride(0) : 0;
  if (rows_contiguous(rows, cols, row_step, col_step)) {
    s.ld = std::max({rows <= 1 ? std::int64_t{0} : row_step, cols, std::int64_t{1}});
    return s;
  }
  if (rows_contiguous(cols, rows, col_step, row_step)) {
    s.transposed = true;
    s.ld = std::max({cols <= 1 ? std::int64_t{0} : col_step, rows, std::int64_t{1}});
    return s;
  }
  TORCH_CHECK_VALUE(false, "cudalab.gemm: ", name, " of shape ", t.sizes(), " and strides ", t.strides(),
                    " has neither contiguous rows nor contiguous columns; gemm needs one or the other (a matrix "
                    "or its .mT view): call .contiguous() on it first");
  return s;
}

// One product's sizes and operand storage, from the checks every entry shares.
struct Product {
  bool batched = false;
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  Storage sa, sb;
  std::vector<std::int64_t> shape;  // the output's
};

Product describe(const at::Tensor& a, const at::Tensor& b, bool b_transposed) {
  check_strided_tensor(kOp, "a", a, a.device());
  check_strided_tensor(kOp, "b", b, a.device());
  TORCH_CHECK_TYPE(b.scalar_type() == a.scalar_type(), "cudalab.gemm: b must be ", a.scalar_type(), " like a, got ",
                   b.scalar_type());
  TORCH_CHECK_VALUE(a.dim() == 2 || a.dim() == 3,
                    "cudalab.gemm: a must be a matrix [m, k] or a batch [batch, m, k], got ", a.sizes());
  TORCH_CHECK_VALUE(b.dim() == a.dim(), "cudalab.gemm: b must have a's rank ", a.dim(), ", got ", b.sizes());
  Product p;
  p.batched = a.dim() == 3;
  p.batch = p.batched ? a.size(0) : 1;
  TORCH_CHECK_VALUE(!p.batched || b.size(0) == p.batch, "cudalab.gemm: b must hold a's ", p.batch, " matrices, got ",
                    b.sizes());
  p.m = a.size(-2), p.k = a.size(-1);
  p.n = b_transposed ? b.size(-2) : b.size(-1);
  const std::int64_t b_k = b_transposed ? b.size(-1) : b.size(-2);
  TORCH_CHECK_VALUE(b_k == p.k, "cudalab.gemm: b must be ", b_transposed ? "[n, k]" : "[k, n]", " with k = ", p.k,
                    " (a's columns), got ", b.sizes());
  // a as [m, k] and op(b) as [k, n]: the library's transpose_a / transpose_b are their columns
  // being the contiguous ones.
  p.sa = storage_of("a", a, false);
  p.sb = storage_of("b", b, b_transposed);
  if (a.scalar_type() == at::kFloat) {
    const char* which = p.sa.transposed ? (p.sb.transposed ? "a and op(b) have" : "a has") : "op(b) has";
    TORCH_CHECK_VALUE(!p.sa.transposed && !p.sb.transposed, "cudalab.gemm: the fp32 kernels take a as [m, k] and b as ",
                      "[k, n] with contiguous rows; call .contiguous() (", which,
                      " contiguous columns, b_transposed=", b_transposed ? "True" : "False",
                      "; bfloat16 and float16 take either layout)");
  }
  p.shape = p.batched ? std::vector<std::int64_t>{p.batch, p.m, p.n} : std::vector<std::int64_t>{p.m, p.n};
  return p;
}

// out = alpha a op(b) + beta C for a contiguous `out` of the product's shape, C being out itself or,
// for a 16-bit single product, `c` where given (rows c.stride(0) apart, 0 for a broadcast bias row;
// its columns contiguous); beta 0 reads neither.
void run_product(const Product& p, const at::Tensor& a, const at::Tensor& b, at::Tensor& out, double alpha, double beta,
                 const at::Tensor* c = nullptr) {
  const c10::cuda::CUDAGuard guard(a.device());
  const std::int64_t ldc = std::max<std::int64_t>(p.n, 1);
  const Transpose transpose_a = p.sa.transposed ? Transpose::yes : Transpose::no;
  const Transpose transpose_b = p.sb.transposed ? Transpose::yes : Transpose::no;
  with_element_type<GemmElements>(a, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(kOp, [&] {
      const auto fa = static_cast<float>(alpha), fb = static_cast<float>(beta);
      if constexpr (std::is_same_v<T, float>) {
        if (p.batched) {
          cudalab::gemm_batched(p.batch, p.m, p.n, p.k, fa, data<T>(a), p.sa.ld, p.sa.batch_stride, data<T>(b), p.sb.ld,
                                p.sb.batch_stride, fb, mutable_data<T>(out), ldc, p.m * p.n, current_stream(a));
        } else {
          cudalab::gemm(p.m, p.n, p.k, fa, data<T>(a), p.sa.ld, data<T>(b), p.sb.ld, fb, mutable_data<T>(out), ldc,
                        current_stream(a));
        }
      } else if (p.batched) {
        cudalab::gemm_batched(p.batch, p.m, p.n, p.k, fa, data<T>(a), p.sa.ld, p.sa.batch_stride, data<T>(b), p.sb.ld,
                              p.sb.batch_stride, fb, mutable_data<T>(out), ldc, p.m * p.n, current_stream(a),
                              transpose_b, transpose_a);
      } else {
        // Scratch for operand copies from torch's caching allocator: the stream-ordered allocator's
        // default pool keeps nothing past a synchronisation, so each step would allocate it anew.
        const std::size_t bytes = cudalab::gemm_workspace_bytes(p.m, p.n, p.k, data<T>(a), p.sa.ld, data<T>(b), p.sb.ld,
                                                                data<T>(out), ldc, transpose_b, transpose_a);
        const at::Tensor scratch = bytes == 0 ? at::Tensor() : workspace(a, bytes);
        T* d = mutable_data<T>(out);
        const bool separate = c != nullptr;
        cudalab::gemm(p.m, p.n, p.k, fa, data<T>(a), p.sa.ld, data<T>(b), p.sb.ld, fb, separate ? data<T>(*c) : d,
                      separate ? c->stride(0) : ldc, d, ldc, bytes == 0 ? nullptr : scratch.data_ptr(), bytes,
                      current_stream(a), transpose_b, transpose_a);
      }
    });
  });
}

at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& given_c, double alpha,
                double beta, bool b_transposed) {
  const Product p = describe(a, b, b_transposed);
  c10::optional<at::Tensor> c = given_c;
  at::Tensor out;
  if (c.has_value() && beta != 0.0) {
    check_strided_tensor(kOp, "c", *c, a.device());
    TORCH_CHECK_TYPE(c->scalar_type() == a.scalar_type(), "cudalab.gemm: c must be ", a.scalar_type(), " like a, got ",
                     c->scalar_type());
    // A row of n values (a bias) is broadcast over every row of the output.
    const at::Tensor full = c->dim() == 1 && c->size(0) == p.n ? c->expand(p.shape) : *c;
    TORCH_CHECK_VALUE(full.sizes() == at::IntArrayRef(p.shape), "cudalab.gemm: c must have the output's shape ",
                      at::IntArrayRef(p.shape), " or be a row of ", p.n, " values, got ", c->sizes());
    c = full;
    // A 16-bit single product reads c where it lies when its columns are contiguous (a Linear's
    // bias, expanded over the rows, has row stride 0); otherwise c is copied into the output first.
    const bool readable = a.scalar_type() != at::kFloat && !p.batched && (p.n <= 1 || c->stride(1) == 1) &&
                          (c->stride(0) == 0 || c->stride(0) >= p.n);
    if (readable) {
      out = at::empty(p.shape, a.options());
      run_product(p, a, b, out, alpha, beta, &*c);
      return out;
    }
    out = c->clone(at::MemoryFormat::Contiguous);  // computed in place: out = alpha a op(b) + beta out
  } else {
    out = at::empty(p.shape, a.options());
    beta = 0.0;  // never reads out
  }
  run_product(p, a, b, out, alpha, beta);
  return out;
}

// c = alpha a op(b) + beta c in place: c contiguous, of the output's shape and a's dtype, sharing
// no memory with a or b (an accumulation across calls, such as a weight's gradient over chunks).
void gemm_(at::Tensor c, const at::Tensor& a, const at::Tensor& b, double alpha, double beta, bool b_transposed) {
  const Product p = describe(a, b, b_transposed);
  check_strided_tensor("gemm_", "c", c, a.device());
  TORCH_CHECK_TYPE(c.scalar_type() == a.scalar_type(), "cudalab.gemm_: c must be ", a.scalar_type(), " like a, got ",
                   c.scalar_type());
  TORCH_CHECK_VALUE(c.sizes() == at::IntArrayRef(p.shape) && c.is_contiguous(),
                    "cudalab.gemm_: c must be contiguous with the output's shape ", at::IntArrayRef(p.shape), ", got ",
                    c.sizes(), " with strides ", c.strides());
  TORCH_CHECK_VALUE(!c.is_alias_of(a) && !c.is_alias_of(b), "cudalab.gemm_: c must not share memory with a or b");
  run_product(p, a, b, c, alpha, beta);
}

// x @ weight^T + bias over x's last dimension (torch.nn.functional.linear): the GEMM on x's rows
// with the weight read as stored ([out, in]; in fp32 a transposed copy, as those kernels take B
// row-major) and the bias as its C, a row broadcast over the rows. Composite: autograd and torch.compile
// see the GEMM and the views, so it needs neither a backward nor a fake kernel of its own, and an
// nn.Linear layer costs one call from Python.
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias) {
  TORCH_CHECK_VALUE(weight.dim() == 2, "cudalab.linear: weight must be [out_features, in_features], got ",
                    weight.sym_sizes());
  const c10::SymInt &in_features = weight.sym_size(1), &out_features = weight.sym_size(0);
  TORCH_CHECK_VALUE(x.dim() >= 1 && x.sym_size(-1) == in_features, "cudalab.linear: x's last dimension must be ",
                    in_features, " (the weight's in_features), got x of shape ", x.sym_sizes());
  const bool with_bias = bias.has_value() && bias->defined();
  TORCH_CHECK_VALUE(!with_bias || (bias->dim() == 1 && bias->sym_size(0) == out_features),
                    "cudalab.linear: bias must be [out_features] = [", out_features, "], got ", bias->sym_sizes());
  static const auto gemm_op = c10::Dispatcher::singleton()
                                  .findSchemaOrThrow("cudalab::gemm", "")
                                  .typed<at::Tensor(const at::Tensor&, const at::Tensor&,
                                                    const c10::optional<at::Tensor>&, double, double, bool)>();
  // Sizes as SymInts: under torch.compile a dynamic size stays dynamic. The rows are counted, not
  // inferred (-1), so in_features 0 works as in F.linear.
  c10::SymInt rows = 1;
  for (std::int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.sym_size(d);
  const at::Tensor matrix = x.reshape_symint({rows, in_features});
  // The bias as gemm's row c: its gradient is gemm's column sum of dout (cudalab::bias_gradient).
  const c10::optional<at::Tensor> c = with_bias ? bias : c10::nullopt;
  const bool fp32 = x.scalar_type() == at::kFloat;
  const at::Tensor y =
      gemm_op.call(matrix, fp32 ? weight.t().contiguous() : weight, c, 1.0, with_bias ? 1.0 : 0.0, !fp32);
  std::vector<c10::SymInt> shape = x.sym_sizes().vec();
  shape.back() = out_features;
  return y.reshape_symint(shape);
}

// A fused-epilogue op's product: a single 16-bit one, described, with its output's row pitch and
// the operands' layouts as the library takes them.
struct FusedProduct : Product {
  std::int64_t ld = 1;
  Transpose transpose_a = Transpose::no, transpose_b = Transpose::no;
};

FusedProduct describe_fused(const char* op, const at::Tensor& a, const at::Tensor& b, bool b_transposed) {
  TORCH_CHECK_TYPE(a.scalar_type() == at::kBFloat16 || a.scalar_type() == at::kHalf, "cudalab.", op,
                   ": a must be bfloat16 or float16, got ", a.scalar_type());
  TORCH_CHECK_VALUE(a.dim() == 2, "cudalab.", op, ": a must be a matrix [m, k], got ", a.sizes());
  FusedProduct p;
  static_cast<Product&>(p) = describe(a, b, b_transposed);
  p.ld = std::max<std::int64_t>(p.n, 1);
  p.transpose_a = p.sa.transposed ? Transpose::yes : Transpose::no;
  p.transpose_b = p.sb.transposed ? Transpose::yes : Transpose::no;
  return p;
}

// call(T*) with T a's element type, inside call_library.
template <typename Call>
void call_fused(const char* op, const at::Tensor& a, Call&& call) {
  with_element_type<TypeList<__nv_bfloat16, __half>>(a, [&](auto* tag) { call_library(op, [&] { call(tag); }); });
}

// (act(v), act'(v)) for v = a @ op(b) + bias: a Linear layer with its activation, and the
// derivative its backward multiplies by (cudalab::gemm_activation); an empty tensor in its place
// without `derivative` (inference: one output written). a [m, k]; b [n, k] with b_transposed (a
// weight as stored), else [k, n]; each with contiguous rows or columns, as gemm takes them; bias
// [n] or None; bfloat16 or float16.
std::tuple<at::Tensor, at::Tensor> gemm_activation(const at::Tensor& a, const at::Tensor& b,
                                                   const c10::optional<at::Tensor>& bias, c10::string_view activation,
                                                   bool b_transposed, bool derivative) {
  constexpr const char* op = "gemm_activation";
  const FusedProduct p = describe_fused(op, a, b, b_transposed);
  const bool with_bias = bias.has_value() && bias->defined();
  if (with_bias) {
    check_tensor(op, "bias", *bias, a.device(), a.scalar_type());
    check_vector(op, "bias", *bias, p.n);
  }
  const Activation act = activation_of(op, activation);
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor y = at::empty(p.shape, a.options());
  at::Tensor g = derivative ? at::empty(p.shape, a.options()) : at::empty({0}, a.options());
  call_fused(op, a, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const std::size_t bytes = cudalab::gemm_workspace_bytes(p.m, p.n, p.k, data<T>(a), p.sa.ld, data<T>(b), p.sb.ld,
                                                            data<T>(y), p.ld, p.transpose_b, p.transpose_a);
    const at::Tensor scratch = bytes == 0 ? at::Tensor() : workspace(a, bytes);
    cudalab::gemm_activation(p.m, p.n, p.k, 1.0f, data<T>(a), p.sa.ld, data<T>(b), p.sb.ld, with_bias ? 1.0f : 0.0f,
                             with_bias ? data<T>(*bias) : nullptr, 0, mutable_data<T>(y), p.ld, act,
                             derivative ? mutable_data<T>(g) : nullptr, bytes == 0 ? nullptr : scratch.data_ptr(),
                             bytes, current_stream(a), p.transpose_b, p.transpose_a);
  });
  return {y, g};
}

// (dz, dbias) = ((a @ op(b)) * derivative, dz's column sums): the backward through
// gemm_activation's activation fused into the product that makes its output's gradient
// (cudalab::gemm_activation_backward): for y = W2 act(v), a = dy, b = W2 ([k, n], as stored) and
// derivative = act'(v) as gemm_activation kept it ([m, n] contiguous, a's dtype); dbias [n] when
// bias_gradient, else an empty tensor.
std::tuple<at::Tensor, at::Tensor> gemm_activation_backward(const at::Tensor& a, const at::Tensor& b,
                                                            const at::Tensor& derivative, bool b_transposed,
                                                            bool bias_gradient) {
  constexpr const char* op = "gemm_activation_backward";
  const FusedProduct p = describe_fused(op, a, b, b_transposed);
  check_tensor(op, "derivative", derivative, a.device(), a.scalar_type());
  TORCH_CHECK_VALUE(derivative.sizes() == at::IntArrayRef(p.shape), "cudalab.", op,
                    ": derivative must have the product's shape ", at::IntArrayRef(p.shape), ", got ",
                    derivative.sizes());
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor dz = at::empty(p.shape, a.options());
  at::Tensor dbias = at::empty({bias_gradient ? p.n : 0}, a.options());
  call_fused(op, a, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const std::size_t bytes = cudalab::gemm_activation_backward_workspace_bytes(
        p.m, p.n, p.k, data<T>(a), p.sa.ld, data<T>(b), p.sb.ld, data<T>(dz), p.ld, p.transpose_b, p.transpose_a);
    const at::Tensor scratch = bytes == 0 ? at::Tensor() : workspace(a, bytes);
    cudalab::gemm_activation_backward(
        p.m, p.n, p.k, 1.0f, data<T>(a), p.sa.ld, data<T>(b), p.sb.ld, data<T>(derivative), p.ld, mutable_data<T>(dz),
        p.ld, bias_gradient ? mutable_data<T>(dbias) : nullptr, bytes == 0 ? nullptr : scratch.data_ptr(), bytes,
        current_stream(a), p.transpose_b, p.transpose_a);
  });
  return {dz, dbias};
}

// (alpha * dy^T @ x, dy's column sums): a Linear layer's weight gradient and its bias's gradient in
// one call (cudalab::gemm_weight_gradient, used by gemm's autograd), for dy [tokens, out] and x
// [tokens, in], each made dense if it is not; the sums [out] in dy's dtype, not scaled by alpha.
// bfloat16 or float16.
std::tuple<at::Tensor, at::Tensor> gemm_weight_gradient(const at::Tensor& dy, const at::Tensor& x, double alpha) {
  constexpr const char* op = "gemm_weight_gradient";
  TORCH_CHECK_VALUE(dy.dim() == 2 && x.dim() == 2 && dy.size(0) == x.size(0), "cudalab.", op,
                    ": dy must be [tokens, out] and x [tokens, in], got ", dy.sizes(), " and ", x.sizes());
  const at::Tensor dense_dy = dy.contiguous(), dense_x = x.contiguous();
  const FusedProduct p = describe_fused(op, dense_dy.mT(), dense_x, false);
  const c10::cuda::CUDAGuard guard(dy.device());
  at::Tensor dw = at::empty(p.shape, dy.options());
  at::Tensor sums = at::empty({p.m}, dy.options());
  call_fused(op, dense_dy, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const std::size_t bytes = cudalab::gemm_weight_gradient_workspace_bytes(
        p.m, p.n, p.k, data<T>(dense_dy), data<T>(dense_x), p.sb.ld, data<T>(dw), p.ld);
    const at::Tensor scratch = bytes == 0 ? at::Tensor() : workspace(dy, bytes);
    cudalab::gemm_weight_gradient(p.m, p.n, p.k, static_cast<float>(alpha), data<T>(dense_dy), data<T>(dense_x),
                                  p.sb.ld, mutable_data<T>(dw), p.ld, mutable_data<T>(sums),
                                  bytes == 0 ? nullptr : scratch.data_ptr(), bytes, current_stream(dy));
  });
  return {dw, sums};
}

// C (bf16, [m, n]) = alpha * scale_a * scale_b * a b^T for float8_e4m3fn a [m, k] and b [n, k] (a
// Linear's activations and its weight as stored), both contiguous; each scale a float32 tensor of
// one element on a's device, as torch._scaled_mm takes them, or None for 1. Hopper. Not
// differentiable.
at::Tensor gemm_fp8(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& scale_a,
                    const c10::optional<at::Tensor>& scale_b, double alpha) {
  constexpr const char* op = "gemm_fp8";
  check_tensor(op, "a", a, a.device(), c10::nullopt, {at::kFloat8_e4m3fn});
  check_tensor(op, "b", b, a.device(), at::kFloat8_e4m3fn, {at::kFloat8_e4m3fn});
  TORCH_CHECK_VALUE(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(1), "cudalab.gemm_fp8: a must be [m, k] and ",
                    "b [n, k] (a weight as stored), got ", a.sizes(), " and ", b.sizes());
  const float* scales[2] = {nullptr, nullptr};
  const c10::optional<at::Tensor>* given[2] = {&scale_a, &scale_b};
  for (int i = 0; i < 2; ++i) {
    if (!given[i]->has_value() || !(*given[i])->defined()) continue;
    const at::Tensor& s = **given[i];
    const char* name = i == 0 ? "scale_a" : "scale_b";
    check_tensor(op, name, s, a.device(), at::kFloat, {at::kFloat});
    TORCH_CHECK_VALUE(s.numel() == 1, "cudalab.gemm_fp8: ", name, " must hold one value, got ", s.sizes());
    scales[i] = data<float>(s);
  }
  const std::int64_t m = a.size(0), n = b.size(0), k = a.size(1);
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor c = at::empty({m, n}, a.options().dtype(at::kBFloat16));
  call_library(op, [&] {
    cudalab::gemm_fp8(m, n, k, static_cast<float>(alpha), data<__nv_fp8_e4m3>(a), k, data<__nv_fp8_e4m3>(b), k,
                      mutable_data<__nv_bfloat16>(c), n, scales[0], scales[1], current_stream(a));
  });
  return c;
}

// x quantized to float8_e4m3fn with one scale from its own largest magnitude
// (cudalab::quantize_fp8): q of x's shape, then the dequantization scale (amax / 448) and amax, each
// a float32 tensor of one element on x's device: q and scale as gemm_fp8 takes an input. Not
// differentiable.
std::tuple<at::Tensor, at::Tensor, at::Tensor> quantize_fp8(const at::Tensor& x) {
  constexpr const char* op = "quantize_fp8";
  check_tensor(op, "x", x, x.device(), c10::nullopt, scalar_types(QuantizeElements{}));
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor q = at::empty(x.sizes(), x.options().dtype(at::kFloat8_e4m3fn));
  at::Tensor scale = at::empty({1}, x.options().dtype(at::kFloat));
  at::Tensor amax = at::empty({1}, x.options().dtype(at::kFloat));
  with_element_type<QuantizeElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::quantize_fp8(data<T>(x), mutable_data<__nv_fp8_e4m3>(q), mutable_data<float>(scale),
                            mutable_data<float>(amax), x.numel(), current_stream(x));
    });
  });
  return {q, scale, amax};
}

// x quantized to float8_e4m3fn with a scale given, and x's amax (cudalab::quantize_fp8_scaled):
// delayed scaling, one read of x. scale: a float32 tensor of one element on x's device. Returns q of
// x's shape and amax, a float32 tensor of one element. Not differentiable.
std::tuple<at::Tensor, at::Tensor> quantize_fp8_scaled(const at::Tensor& x, const at::Tensor& scale) {
  constexpr const char* op = "quantize_fp8_scaled";
  check_tensor(op, "x", x, x.device(), c10::nullopt, scalar_types(QuantizeElements{}));
  check_tensor(op, "scale", scale, x.device(), at::kFloat, {at::kFloat});
  TORCH_CHECK_VALUE(scale.numel() == 1, "cudalab.", op, ": scale must have one element, got ", scale.sizes());
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor q = at::empty(x.sizes(), x.options().dtype(at::kFloat8_e4m3fn));
  at::Tensor amax = at::empty({1}, x.options().dtype(at::kFloat));
  with_element_type<QuantizeElements>(x, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    call_library(op, [&] {
      cudalab::quantize_fp8_scaled(data<T>(x), data<float>(scale), mutable_data<__nv_fp8_e4m3>(q),
                                   mutable_data<float>(amax), x.numel(), current_stream(x));
    });
  });
  return {q, amax};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  m.def("linear(Tensor x, Tensor weight, Tensor? bias=None) -> Tensor");
  m.impl("linear", torch::dispatch(c10::DispatchKey::CompositeImplicitAutograd, &linear));
  define_op(
      m, "gemm(Tensor a, Tensor b, Tensor? c=None, float alpha=1., float beta=0., bool b_transposed=False) -> Tensor",
      &gemm, GemmElements{});
  define_op(m, "gemm_(Tensor(a!) c, Tensor a, Tensor b, float alpha=1., float beta=0., bool b_transposed=False) -> ()",
            &gemm_, GemmElements{});
  define_op(m,
            "gemm_activation(Tensor a, Tensor b, Tensor? bias, str activation, bool b_transposed=False, bool "
            "derivative=True) -> (Tensor, Tensor)",
            &gemm_activation, TypeList<__nv_bfloat16, __half>{});
  define_op(m,
            "gemm_activation_backward(Tensor a, Tensor b, Tensor derivative, bool b_transposed=False, bool "
            "bias_gradient=True) -> (Tensor, Tensor)",
            &gemm_activation_backward, TypeList<__nv_bfloat16, __half>{});
  define_op(m, "gemm_weight_gradient(Tensor dy, Tensor x, float alpha=1.) -> (Tensor, Tensor)", &gemm_weight_gradient,
            TypeList<__nv_bfloat16, __half>{});
  define_op(m, "gemm_fp8(Tensor a, Tensor b, Tensor? scale_a=None, Tensor? scale_b=None, float alpha=1.) -> Tensor",
            &gemm_fp8, TypeList<__nv_fp8_e4m3>{});
  define_op(m, "quantize_fp8(Tensor x) -> (Tensor, Tensor, Tensor)", &quantize_fp8, QuantizeElements{});
  define_op(m, "quantize_fp8_scaled(Tensor x, Tensor scale) -> (Tensor, Tensor)", &quantize_fp8_scaled,
            QuantizeElements{});
}

}  // namespace cudalab::torch_ops
