// The execution page's experiments: warp divergence, the cost of single
// instructions, occupancy and the cost of synchronization. Like the memory page's, they are
// experiments, not ops: each produces a table (and checks what its kernels compute) rather than a
// ladder of one computation.
#include "harness/registry.hpp"

namespace cudalab::harness {
namespace execution_experiments {
void register_divergence(Registry& registry);
void register_instruction_costs(Registry& registry);
void register_occupancy(Registry& registry);
void register_sync_costs(Registry& registry);
}  // namespace execution_experiments

void register_execution(Registry& registry) {
  execution_experiments::register_divergence(registry);
  execution_experiments::register_instruction_costs(registry);
  execution_experiments::register_occupancy(registry);
  execution_experiments::register_sync_costs(registry);
}

}  // namespace cudalab::harness
