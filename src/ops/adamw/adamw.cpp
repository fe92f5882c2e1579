#include "cudalab/adamw.hpp"

#include <cstdint>
#include <string>

#include "core/arguments.hpp"
#include "cudalab/error.hpp"
#include "ops/adamw/variants.hpp"

namespace cudalab {

namespace {

void check_hyperparameters(const char* call, std::int64_t count, const void* tensors, const AdamWHyperparameters& h) {
  const std::string c = call;
  CUDALAB_REQUIRE(count >= 0, c + ": count must be >= 0, got " + std::to_string(count));
  CUDALAB_REQUIRE(count == 0 || tensors != nullptr, c + ": tensors is null");
  CUDALAB_REQUIRE(h.step >= 1, c + ": step must be >= 1 (the first step is 1), got " + std::to_string(h.step));
  CUDALAB_REQUIRE(h.lr >= 0 && h.eps >= 0 && h.weight_decay >= 0, c + ": lr, eps and weight_decay must be >= 0");
  CUDALAB_REQUIRE(h.beta1 >= 0 && h.beta1 < 1 && h.beta2 >= 0 && h.beta2 < 1, c + ": betas must be in [0, 1)");
}

}  // namespace

// The multi-tensor rung: a launch per 48 tensors.
template <typename T, typename>
void adamw(const AdamWTensor<T>* tensors, std::int64_t count, const AdamWHyperparameters& h, cudaStream_t stream) {
  check_hyperparameters("adamw", count, tensors, h);
  for (std::int64_t i = 0; i < count; ++i) {
    const AdamWTensor<T>& t = tensors[i];
    const std::string call = "adamw (tensor " + std::to_string(i) + ")";
    CUDALAB_REQUIRE(t.n >= 0, call + ": n must be >= 0, got " + std::to_string(t.n));
    require_arrays(call.c_str(), {{t.grad, t.n, sizeof(T), "grad"}},
                   {{t.param, t.n, sizeof(T), "param"},
                    {t.exp_avg, t.n, sizeof(T), "exp_avg"},
                    {t.exp_avg_sq, t.n, sizeof(T), "exp_avg_sq"}});
  }
  adamw_variants::AdamWArgs<T> args;
  args.tensors.assign(tensors, tensors + count);
  args.hyper = h;
  adamw_variants::multi_tensor(args, stream);
}

template <typename T, typename>
void adamw_master(const AdamWMasterTensor<T>* tensors, std::int64_t count, const AdamWHyperparameters& h,
                  cudaStream_t stream) {
  check_hyperparameters("adamw_master", count, tensors, h);
  for (std::int64_t i = 0; i < count; ++i) {
    const AdamWMasterTensor<T>& t = tensors[i];
    const std::string call = "adamw_master (tensor " + std::to_string(i) + ")";
    CUDALAB_REQUIRE(t.n >= 0, call + ": n must be >= 0, got " + std::to_string(t.n));
    require_arrays(call.c_str(), {{t.grad, t.n, sizeof(T), "grad"}},
                   {{t.param, t.n, sizeof(T), "param"},
                    {t.master, t.n, sizeof(float), "master"},
                    {t.exp_avg, t.n, sizeof(float), "exp_avg"},
                    {t.exp_avg_sq, t.n, sizeof(float), "exp_avg_sq"}});
  }
  adamw_variants::AdamWMasterArgs<T> args;
  args.tensors.assign(tensors, tensors + count);
  args.hyper = h;
  adamw_variants::multi_tensor_master(args, stream);
}

#define CUDALAB_ADAMW_ENTRIES(T, a, b) \
  template void adamw(const AdamWTensor<T>*, std::int64_t, const AdamWHyperparameters&, cudaStream_t);
CUDALAB_ADAMW_ELEMENTS(CUDALAB_ADAMW_ENTRIES, , )

#define CUDALAB_ADAMW_MASTER_ENTRIES(T, a, b) \
  template void adamw_master(const AdamWMasterTensor<T>*, std::int64_t, const AdamWHyperparameters&, cudaStream_t);
CUDALAB_ADAMW_MASTER_ELEMENTS(CUDALAB_ADAMW_MASTER_ENTRIES, , )

}  // namespace cudalab
