// A problem: named dimensions, a dtype and named scalar parameters. Records, claims and the CLI
// identify problems by their key, never by element count: 64x8192x8192 and 8192x64x8192 are two
// problems, and so are the same sizes in f32 and bf16.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cudalab/dtype.hpp"

namespace cudalab::harness {

struct Dim {
  std::string name;  // "n", "M", "rows", "seq", ...: the op's dimension names, in its order
  std::int64_t size = 0;
  bool operator==(const Dim& other) const { return name == other.name && size == other.size; }
};

struct Param {
  std::string name;  // "exclusive", "bins", "selected_percent", "eps", "causal", ...
  double value = 0;
  bool operator==(const Param& other) const { return name == other.name && value == other.value; }
};

struct Problem {
  std::vector<Dim> dims;
  DType dtype = DType::f32;
  std::vector<Param> params;

  Problem() = default;
  Problem(std::vector<Dim> dimensions, DType type, std::vector<Param> parameters = {})
      : dims(std::move(dimensions)), dtype(type), params(std::move(parameters)) {}

  // The size of dimension `name`; throws cudalab::Error when the problem has no such dimension.
  std::int64_t dim(const std::string& name) const;
  bool has_dim(const std::string& name) const;
  // The value of parameter `name`; throws cudalab::Error when it is absent.
  double param(const std::string& name) const;
  bool has_param(const std::string& name) const;
  // The product of the dimensions: how sizes order within an op.
  std::int64_t elements() const;
  // "4096x4096x4096" or "n=1000003": the dimensions, as a table row shows them.
  std::string size_label() const;
  // "n=1000003 i32 exclusive=1": everything that tells this problem from another of the same op.
  std::string label() const;
  // A stable key for files and lookups: "dtype=i32;n=1000003;exclusive=1".
  std::string key() const;

  bool operator==(const Problem& other) const { return key() == other.key(); }
  bool operator!=(const Problem& other) const { return !(*this == other); }
};

// "1.5", "0", "4096": a parameter's value as the key and labels print it (shortest exact form).
std::string format_param(double value);

}  // namespace cudalab::harness
