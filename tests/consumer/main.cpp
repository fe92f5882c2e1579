// Calls the installed library from outside the project: host-only calls that need no GPU, so the
// check runs in CI. Exit 0 when every expectation holds.
#include <cstdio>

#include <cudalab/device.hpp>
#include <cudalab/dtype.hpp>
#include <cudalab/error.hpp>
#include <cudalab/vecadd.hpp>

int main() {
  // Argument validation comes before any device work: a negative size is refused on any machine.
  try {
    cudalab::vecadd(nullptr, nullptr, nullptr, -1);
    std::puts("consumer: vecadd accepted n = -1");
    return 1;
  } catch (const cudalab::Error& e) {
    if (e.kind() != cudalab::ErrorKind::invalid_argument) {
      std::printf("consumer: vecadd(n = -1) threw the wrong kind: %s\n", e.what());
      return 1;
    }
  }
  if (cudalab::size_of(cudalab::DType::bf16) != 2) return 1;
  std::printf("consumer: cudalab %s, %d CUDA device(s) visible\n", cudalab::built_architectures(),
              cudalab::device_count());
  return 0;
}
