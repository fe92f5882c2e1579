// The `cudalab` command, callable in-process so tests can check its parsing and its errors.
#pragma once

#include <ostream>

namespace cudalab::cli {

// Exit codes: documented in docs/usage.md, "Command line".
enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,       // a variant failed verification, or a run failed
  kExitUsage = 2,        // bad arguments: unknown op or variant, bad size
  kExitNoDevice = 3,     // no CUDA device, driver too old, or no code for this GPU in the build
  kExitOutOfMemory = 4,  // the problem does not fit in device or host memory
};

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace cudalab::cli
