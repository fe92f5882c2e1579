// The one workload every op runs on: it allocates the op's tensors for a problem, fills the inputs
// with fresh seeded values, poisons the outputs, restores what a launch consumes, copies results
// back and hands them to the op's check. No op writes its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cudalab/memory.hpp"
#include "harness/registry.hpp"

namespace cudalab::harness {

// Device and host bytes a run of `variants` on `problem` allocates: the tensors, the copies kept
// to restore them, the largest workspace and the check's own; the same sums require_fits tests.
std::size_t workload_device_bytes(const Op& op, const Problem& problem, const std::vector<const Variant*>& variants);
// The same for `variant` alone among `variants`: the tensors and copies they need, the check's bytes
// and that variant's workspace.
std::size_t variant_device_bytes(const Op& op, const Problem& problem, const std::vector<const Variant*>& variants,
                                 const Variant& variant);
std::size_t workload_host_bytes(const Op& op, const Problem& problem);

class Workload {
 public:
  // `keep_inputs`: some variant to be run writes into its inputs, so pristine device copies of
  // them are kept for prepare().
  Workload(const Op& op, const Problem& problem, bool keep_inputs);

  // Fresh inputs from `seed` on the device, and their host copies for the reference.
  void generate(std::uint64_t seed, Distribution distribution, cudaStream_t stream);
  // Fills every output with its dtype's poison pattern.
  void poison(cudaStream_t stream);
  // Before each launch (untimed): input_output tensors back to their generated values, and the
  // inputs too when `variant` consumes them.
  void prepare(const Variant& variant, cudaStream_t stream);
  // Zeroes (growing if needed) the workspace `variant` asks for at this problem.
  void reset_workspace(const Variant& variant, cudaStream_t stream);
  BoundLaunch bind(const Variant& variant);
  // The launch a check looks at: fresh inputs from `seed`, poisoned outputs, the variant's zeroed
  // workspace, restored inputs, then one launch, synchronized. Returns the bound launch (the
  // runner times it); check() then compares what it wrote.
  BoundLaunch launch_once(const Variant& variant, std::uint64_t seed, Distribution distribution, cudaStream_t stream);
  // Copies the outputs back and runs the op's check.
  Comparison check(const Variant& variant, Distribution distribution, cudaStream_t stream);

  Tensors& tensors() { return tensors_; }

 private:
  const Op& op_;
  Problem problem_;
  Tensors tensors_;
  std::vector<DeviceBuffer<unsigned char>> pristine_;  // per tensor; empty where none is kept
};

}  // namespace cudalab::harness
