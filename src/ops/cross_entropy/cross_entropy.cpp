#include "cudalab/cross_entropy.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "core/arguments.hpp"
#include "cudalab/error.hpp"
#include "ops/cross_entropy/variants.hpp"

namespace cudalab {

namespace v = cross_entropy_variants;

namespace {

// Sizes, options and the arrays every call shares; the element count of the logits.
std::int64_t check_shape(const char* call, std::int64_t rows, std::int64_t vocab, const CrossEntropyOptions& options) {
  CUDALAB_REQUIRE(rows >= 0 && vocab >= 0, std::string(call) + ": rows and vocab must be >= 0, got rows=" +
                                               std::to_string(rows) + " vocab=" + std::to_string(vocab));
  CUDALAB_REQUIRE(rows == 0 || vocab > 0, std::string(call) + ": vocab must be >= 1 when there are rows");
  CUDALAB_REQUIRE(
      options.label_smoothing >= 0.0f && options.label_smoothing <= 1.0f,
      std::string(call) + ": label_smoothing must be in [0, 1], got " + std::to_string(options.label_smoothing));
  CUDALAB_REQUIRE(std::isfinite(options.z_loss) && options.z_loss >= 0.0f,
                  std::string(call) + ": z_loss must be >= 0 and finite, got " + std::to_string(options.z_loss));
  CUDALAB_REQUIRE(
      std::isfinite(options.softcap) && options.softcap >= 0.0f,
      std::string(call) + ": softcap must be >= 0 and finite (0: none), got " + std::to_string(options.softcap));
  return checked_product(call, "rows * vocab", {rows, vocab});
}

}  // namespace

// resident, online_vectorized or persistent by the rows per SM and the row's size (variants.hpp:
// library_choice).
template <typename T, typename>
void cross_entropy(const T* logits, const std::int64_t* target, std::int64_t rows, std::int64_t vocab, float* loss,
                   float* lse, T* dlogits, const float* grad_scale, const CrossEntropyOptions& options,
                   cudaStream_t stream) {
  const std::int64_t n = check_shape("cross_entropy", rows, vocab, options);
  // The gradient may lie exactly over the logits (in place): every rung reads an element before its
  // thread writes it, and the target's logit before any thread writes. Any other overlap is refused.
  const bool in_place = dlogits != nullptr && static_cast<const void*>(dlogits) == static_cast<const void*>(logits);
  require_arrays("cross_entropy",
                 {{logits, n, sizeof(T), "logits"},
                  {target, rows, sizeof(std::int64_t), "target"},
                  {grad_scale, grad_scale != nullptr && rows > 0 ? 1 : 0, sizeof(float), "grad_scale"}},
                 {{loss, rows, sizeof(float), "loss"},
                  {lse, rows, sizeof(float), "lse"},
                  {dlogits, dlogits != nullptr && !in_place ? n : 0, sizeof(T), "dlogits"}});
  v::CrossEntropyArgs<T> args;
  args.logits = logits, args.target = target, args.loss = loss, args.lse = lse;
  args.dlogits = dlogits, args.grad_scale = grad_scale, args.rows = rows, args.vocab = vocab;
  args.ignore_index = options.ignore_index, args.label_smoothing = options.label_smoothing;
  args.z_loss = options.z_loss, args.softcap = options.softcap;
  v::library_choice(args, stream);
}

template <typename T, typename>
void cross_entropy_backward(const T* logits, const std::int64_t* target, const float* lse, const float* dloss,
                            std::int64_t dloss_stride, std::int64_t rows, std::int64_t vocab, T* dlogits,
                            const CrossEntropyOptions& options, cudaStream_t stream) {
  const std::int64_t n = check_shape("cross_entropy_backward", rows, vocab, options);
  CUDALAB_REQUIRE(dloss_stride == 0 || dloss_stride == 1,
                  "cross_entropy_backward: dloss_stride must be 0 (one value) or 1 (one per row), got " +
                      std::to_string(dloss_stride));
  require_arrays("cross_entropy_backward",
                 {{logits, n, sizeof(T), "logits"},
                  {target, rows, sizeof(std::int64_t), "target"},
                  {lse, rows, sizeof(float), "lse"},
                  {dloss, rows > 0 ? (dloss_stride == 0 ? 1 : rows) : 0, sizeof(float), "dloss"}},
                 {{dlogits, n, sizeof(T), "dlogits"}});
  v::CrossEntropyBackwardArgs<T> args;
  args.logits = logits, args.target = target, args.lse = lse, args.dloss = dloss, args.dloss_stride = dloss_stride;
  args.dlogits = dlogits, args.rows = rows, args.vocab = vocab;
  args.ignore_index = options.ignore_index, args.label_smoothing = options.label_smoothing;
  args.z_loss = options.z_loss, args.softcap = options.softcap;
  v::backward_persistent(args, stream);
}

template <typename T, typename>
void cross_entropy_scale_gradient(T* dlogits, std::int64_t n, const float* dloss, cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, "cross_entropy_scale_gradient: n must be >= 0, got " + std::to_string(n));
  require_arrays("cross_entropy_scale_gradient", {{dloss, n > 0 ? 1 : 0, sizeof(float), "dloss"}},
                 {{dlogits, n, sizeof(T), "dlogits"}});
  v::scale_gradient(dlogits, n, dloss, stream);
}

#define CUDALAB_CROSS_ENTROPY_ENTRIES(T, a, b)                                                                    \
  template void cross_entropy(const T*, const std::int64_t*, std::int64_t, std::int64_t, float*, float*, T*,      \
                              const float*, const CrossEntropyOptions&, cudaStream_t);                            \
  template void cross_entropy_backward(const T*, const std::int64_t*, const float*, const float*, std::int64_t,   \
                                       std::int64_t, std::int64_t, T*, const CrossEntropyOptions&, cudaStream_t); \
  template void cross_entropy_scale_gradient(T*, std::int64_t, const float*, cudaStream_t);
CUDALAB_CROSS_ENTROPY_ELEMENTS(CUDALAB_CROSS_ENTROPY_ENTRIES, , )

}  // namespace cudalab
