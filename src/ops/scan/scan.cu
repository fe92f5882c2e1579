#include "cudalab/scan.hpp"

#include <string>

#include "core/vector.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "ops/scan/variants.hpp"

namespace cudalab {
namespace {

using scan_variants::ScanArgs;
using scan_variants::ScanKind;

// The library takes decoupled_lookback: single pass, 2n memory traffic, and the fastest verified
// variant in the bench on an H100 at 2^20 and 2^28 (1.05x CUB for inclusive and exclusive scans;
// docs/scan.md). `caller` is the caller's scratch, or null for the stream-ordered allocator's.
template <typename T>
void scan(const char* name, const T* in, T* out, std::int64_t n, ScanKind kind, Workspace* caller,
          cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, std::string(name) + ": n must be >= 0, got " + std::to_string(n));
  if (n == 0) return;
  CUDALAB_REQUIRE(in != nullptr && out != nullptr,
                  std::string(name) + ": in and out must be device pointers, got a null pointer");
  ScanArgs<T> args;
  args.in = in;
  args.out = out;
  args.n = n;
  args.kind = kind;
  args.workspace_bytes = scan_variants::decoupled_lookback_workspace_bytes(n);
  StreamOrderedWorkspace allocated(stream);
  Workspace& scratch = caller != nullptr ? *caller : allocated;
  args.workspace = scratch.reserve(args.workspace_bytes);
  scan_variants::decoupled_lookback(args, stream);
}

template <typename T>
void scan_with(const char* name, const T* in, T* out, std::int64_t n, ScanKind kind, void* workspace,
               std::size_t workspace_bytes, cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, std::string(name) + ": n must be >= 0, got " + std::to_string(n));
  if (n == 0) return;
  CUDALAB_REQUIRE(workspace != nullptr, std::string(name) + ": the workspace is a null pointer");
  CUDALAB_REQUIRE(is_aligned16(workspace), std::string(name) + ": the workspace must be 16-byte aligned");
  CallerWorkspace caller(workspace, workspace_bytes, name, "scan_workspace_bytes");
  scan(name, in, out, n, kind, &caller, stream);
}

}  // namespace

std::size_t scan_workspace_bytes(std::int64_t n) {
  CUDALAB_REQUIRE(n >= 0, "scan_workspace_bytes: n must be >= 0, got " + std::to_string(n));
  return scan_variants::decoupled_lookback_workspace_bytes(n);
}

void inclusive_scan(const std::int32_t* in, std::int32_t* out, std::int64_t n, cudaStream_t stream) {
  scan("inclusive_scan", in, out, n, ScanKind::inclusive, nullptr, stream);
}
void inclusive_scan(const float* in, float* out, std::int64_t n, cudaStream_t stream) {
  scan("inclusive_scan", in, out, n, ScanKind::inclusive, nullptr, stream);
}
void exclusive_scan(const std::int32_t* in, std::int32_t* out, std::int64_t n, cudaStream_t stream) {
  scan("exclusive_scan", in, out, n, ScanKind::exclusive, nullptr, stream);
}
void exclusive_scan(const float* in, float* out, std::int64_t n, cudaStream_t stream) {
  scan("exclusive_scan", in, out, n, ScanKind::exclusive, nullptr, stream);
}

void inclusive_scan(const std::int32_t* in, std::int32_t* out, std::int64_t n, void* workspace,
                    std::size_t workspace_bytes, cudaStream_t stream) {
  scan_with("inclusive_scan", in, out, n, ScanKind::inclusive, workspace, workspace_bytes, stream);
}
void inclusive_scan(const float* in, float* out, std::int64_t n, void* workspace, std::size_t workspace_bytes,
                    cudaStream_t stream) {
  scan_with("inclusive_scan", in, out, n, ScanKind::inclusive, workspace, workspace_bytes, stream);
}
void exclusive_scan(const std::int32_t* in, std::int32_t* out, std::int64_t n, void* workspace,
                    std::size_t workspace_bytes, cudaStream_t stream) {
  scan_with("exclusive_scan", in, out, n, ScanKind::exclusive, workspace, workspace_bytes, stream);
}
void exclusive_scan(const float* in, float* out, std::int64_t n, void* workspace, std::size_t workspace_bytes,
                    cudaStream_t stream) {
  scan_with("exclusive_scan", in, out, n, ScanKind::exclusive, workspace, workspace_bytes, stream);
}

}  // namespace cudalab
