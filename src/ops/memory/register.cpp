// The memory-access experiments of docs/memory.md: coalescing, data layout, shared-memory bank
// conflicts and load latency. They are experiments, not ops: each produces a table (and checks
// the data its kernels move) rather than a ladder of one computation.
#include "harness/registry.hpp"

namespace cudalab::harness {
namespace memory_experiments {
void register_coalescing(Registry& registry);
void register_aos_soa(Registry& registry);
void register_bank_conflicts(Registry& registry);
void register_latency(Registry& registry);
}  // namespace memory_experiments

void register_memory(Registry& registry) {
  memory_experiments::register_coalescing(registry);
  memory_experiments::register_aos_soa(registry);
  memory_experiments::register_bank_conflicts(registry);
  memory_experiments::register_latency(registry);
}

}  // namespace cudalab::harness
